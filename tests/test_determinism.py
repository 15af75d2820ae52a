"""Same spec + same data = same manifest bytes and digests, across processes, hash seeds,
source row order and worker counts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import CONTEXT_REASONING, TEXT2SPEECH, cli, other_hash_seed
from specfiles import TABLE, write_mini


def _compile(spec: Path, out: Path, cache: Path, *extra: str, seed: str | None = "0") -> dict:
    """Compile in a fresh process under ``seed``, or (``seed=None``) in this one."""
    cli("compile", spec, "-o", out, "--cache", cache, "--no-memo", *extra,
        env=None if seed is None else {"PYTHONHASHSEED": seed}, check=True)
    return json.loads((out / "lock.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("spec", [TEXT2SPEECH, CONTEXT_REASONING], ids=["text2speech", "context_reasoning"])
def test_two_processes_with_different_hash_seeds_agree(tmp_path: Path, spec: Path) -> None:
    """This process against a fresh one under another hash seed (see ``other_hash_seed``)."""
    a = _compile(spec, tmp_path / "a", tmp_path / "cache-a", seed=None)
    b = _compile(spec, tmp_path / "b", tmp_path / "cache-b", seed=other_hash_seed())
    assert a == b
    assert (tmp_path / "a" / "items.parquet").read_bytes() == (tmp_path / "b" / "items.parquet").read_bytes()


def test_source_row_order_does_not_matter(tmp_path: Path) -> None:
    spec = write_mini(tmp_path, n=10)
    first = _compile(spec, tmp_path / "a", tmp_path / "cache")
    table = tmp_path / "data" / TABLE
    header, *rows = table.read_text().splitlines(keepends=True)
    random.Random(7).shuffle(rows)
    table.write_text(header + "".join(rows))
    second = _compile(spec, tmp_path / "b", tmp_path / "cache")
    assert first["manifest_digest"] == second["manifest_digest"]
    assert first["source"]["files"][0]["sha256"] != second["source"]["files"][0]["sha256"]
    assert (tmp_path / "a" / "items.parquet").read_bytes() == (tmp_path / "b" / "items.parquet").read_bytes()


def test_one_or_two_workers_give_the_same_manifest(tmp_path: Path) -> None:
    one = _compile(CONTEXT_REASONING, tmp_path / "one", tmp_path / "cache-1", "--set", "sample.n=8")
    two = _compile(CONTEXT_REASONING, tmp_path / "two", tmp_path / "cache-2", "--set", "sample.n=8", "-j", "2")
    assert one == two


def test_explicit_defaults_hash_like_implicit_ones(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    text = CONTEXT_REASONING.read_text()
    spec.write_text(text)
    implicit = _compile(spec, tmp_path / "a", tmp_path / "cache", "--set", "sample.n=4")
    spec.write_text(text.replace('repeat = 3', 'repeat = 3\nparams.pad = 0.05\nparams.box_field = "object.bbox"'))
    explicit = _compile(spec, tmp_path / "b", tmp_path / "cache", "--set", "sample.n=4")
    assert implicit["manifest_digest"] == explicit["manifest_digest"]
    assert implicit["spec_digest"] == explicit["spec_digest"]


def test_unchanged_recompile_is_answered_from_the_memo(tmp_path: Path) -> None:
    spec = write_mini(tmp_path, n=5)
    args = ("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "cache")
    assert "(unchanged)" not in cli(*args, check=True).stdout
    assert "(unchanged)" in cli(*args, check=True).stdout
    spec.write_text(spec.read_text().replace("n = 5", "n = 6"))
    assert "(unchanged)" not in cli(*args, check=True).stdout


@settings(max_examples=25)
@given(st.lists(st.text(alphabet="abcdef0123", min_size=1, max_size=6), min_size=1, max_size=30, unique=True),
       st.integers(min_value=1, max_value=40), st.randoms())
def test_sampling_is_independent_of_record_order(ids: list[str], n: int, rnd) -> None:
    from types import SimpleNamespace

    from benchc.compiler.select import sample
    from benchc.compiler.spec.models import Sample
    from benchc.compiler.values import Record

    loaded = SimpleNamespace(spec=SimpleNamespace(sample=Sample(n=n), benchmark=SimpleNamespace(seed=3)))
    records = [Record(id=i, fields={}) for i in ids]
    shuffled = list(records)
    rnd.shuffle(shuffled)
    assert [r.id for r in sample(loaded, records)] == [r.id for r in sample(loaded, shuffled)]
    assert len(sample(loaded, records)) == min(n, len(ids))

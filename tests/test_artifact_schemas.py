"""Typed artifacts: the lock, an item row, the run record, scores and a metric result have frozen
models whose committed JSON schemas (generated/schemas/) are current, and the models read and
write the files byte for byte as benchc writes them. The response store refuses a newer schema."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from pydantic import ValidationError

from benchc import api
from benchc.compiler.artifacts import ItemRow, Lock
from benchc.compiler.canonical import canonical_json
from benchc.compiler.errors import BenchcError
from benchc.compiler.manifest import ITEM_SCHEMA, ManifestModifiedError, lock_text, read_manifest
from benchc.runtime.artifacts import SCHEMA_DIR, SCHEMAS, RunRecord, Scores, main, schema_texts
from benchc.runtime.run.store import STORE_SCHEMA_VERSION, ResponseStore, StoreTooNewError
from conftest import ROOT
from test_run_plan import _spec  # also registers the test-echo backend

LOCKS = sorted((ROOT / "generated").glob("*/*.lock.json"))


def test_committed_schemas_are_current() -> None:
    texts = schema_texts()
    assert sorted(texts) == sorted(f"{n}.schema.json" for n in ("lock", "item", "run", "scores", "metric_result"))
    for name, text in texts.items():
        path = SCHEMA_DIR / name
        assert path.is_file() and path.read_text(encoding="utf-8") == text, \
            f"generated/schemas/{name} is stale: run `python -m benchc.runtime.artifacts --write`"
    assert main([]) == 0  # the --check form agrees
    assert sorted(p.name for p in SCHEMA_DIR.iterdir()) == sorted(texts)  # no leftover schema


@pytest.mark.parametrize("path", LOCKS, ids=[str(p.relative_to(ROOT / "generated")) for p in LOCKS])
def test_every_bundled_lock_fits_the_model_and_round_trips_byte_for_byte(path: Path) -> None:
    raw = path.read_text(encoding="utf-8")
    lock = Lock.model_validate(json.loads(raw))
    assert lock_text(lock) == raw and lock_text(lock.to_json()) == raw


def test_bundled_locks_exist() -> None:
    assert len(LOCKS) >= 20


def test_models_are_frozen_strict_and_closed() -> None:
    lock = Lock.model_validate(json.loads(LOCKS[0].read_text(encoding="utf-8")))
    with pytest.raises(ValidationError):
        lock.item_count = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):  # no coercion: "3" is not 3
        Lock.model_validate({**lock.to_json(), "item_count": str(lock.item_count)})
    with pytest.raises(ValidationError):  # no unknown keys
        Lock.model_validate({**lock.to_json(), "surprise": 1})


def test_an_older_lock_reads_with_defaults_and_writes_back_unchanged() -> None:
    value = json.loads(LOCKS[0].read_text(encoding="utf-8"))
    del value["model_steps"], value["dropped"]  # lock v1
    lock = Lock.model_validate(value)
    assert lock.model_steps == {} and lock.dropped == {} and lock.select is None
    assert lock.to_json() == value


def test_item_row_columns_are_the_items_table() -> None:
    assert list(ItemRow.model_fields) == list(ITEM_SCHEMA)


def test_compiler_artifacts_is_a_leaf() -> None:
    """compiler/ never imports runtime/: the compiler's models load without it."""
    code = ("import sys, benchc.compiler.artifacts, benchc.compiler.manifest; "
            "sys.exit(any(m.startswith('benchc.runtime') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("artifacts")
    common = {"cache_dir": root / "cache", "store_dir": root / "store", "progress": False}
    manifest = api.compile(_spec(root / "spec"), root / "m", overrides=["sample.n=3"], **common).manifest_dir
    api.run(manifest, root / "r", model="test-echo", **common)
    api.score(root / "r", cache_dir=root / "cache", store_dir=root / "store")
    return {"root": root, "manifest": manifest, "run": root / "r"}


def test_a_compiled_manifest_and_a_scored_run_fit_their_models_byte_for_byte(scored: dict[str, Path]) -> None:
    manifest = read_manifest(scored["manifest"])
    assert manifest.locked == Lock.model_validate(manifest.lock)
    assert lock_text(manifest.locked) == (scored["manifest"] / "lock.json").read_text(encoding="utf-8")
    rows = pl.read_parquet(scored["manifest"] / "items.parquet").to_dicts()
    assert rows and all(canonical_json(ItemRow.model_validate(r).to_json()) == canonical_json(r) for r in rows)
    for name, model in (("run.json", RunRecord), ("scores.json", Scores)):
        raw = (scored["run"] / name).read_text(encoding="utf-8")
        assert json.dumps(model.model_validate(json.loads(raw)).to_json(), indent=2, sort_keys=True) + "\n" == raw
    from benchc.runtime.score.rules import RULES_VERSION

    assert json.loads((scored["run"] / "scores.json").read_text())["rules"] == RULES_VERSION


def test_a_lock_that_does_not_fit_the_model_is_a_modified_manifest(scored: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "m"
    shutil.copytree(scored["manifest"], copy)
    lock = json.loads((copy / "lock.json").read_text(encoding="utf-8"))
    lock["libraries"]["numpy"] = 2  # digests unchanged: only the model sees it
    (copy / "lock.json").write_text(lock_text(lock), encoding="utf-8")
    with pytest.raises(ManifestModifiedError, match=r"does not fit the lock schema: libraries\.numpy"):
        read_manifest(copy)


def test_all_five_schemas_are_models() -> None:
    assert set(SCHEMAS) == {"lock", "item", "run", "scores", "metric_result"}


# the response store's schema version -----------------------------------------------------------

def _set_schema(root: Path, value: str) -> None:
    ResponseStore(root).close()
    with sqlite3.connect(root / "responses.sqlite") as con:
        con.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (value,))
    con.close()


def test_the_store_opens_its_own_schema_version(tmp_path: Path) -> None:
    _set_schema(tmp_path / "s", str(STORE_SCHEMA_VERSION))
    ResponseStore(tmp_path / "s").close()


def test_the_store_refuses_a_newer_schema_version(tmp_path: Path) -> None:
    root = tmp_path / "s"
    _set_schema(root, str(STORE_SCHEMA_VERSION + 1))
    before = (root / "responses.sqlite").read_bytes()
    with pytest.raises(StoreTooNewError) as caught:
        ResponseStore(root)
    text = caught.value.render()
    assert str(root) in text and f"schema version {STORE_SCHEMA_VERSION + 1}" in text
    assert f"supports schema version {STORE_SCHEMA_VERSION}" in text and "upgrade benchc" in text
    assert isinstance(caught.value, BenchcError)
    assert (root / "responses.sqlite").read_bytes() == before  # nothing written to it


def test_the_store_refuses_a_schema_version_that_is_not_a_number(tmp_path: Path) -> None:
    _set_schema(tmp_path / "s", "two")
    with pytest.raises(StoreTooNewError, match="unreadable schema version 'two'"):
        ResponseStore(tmp_path / "s")

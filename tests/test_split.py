"""[split]: records go to named splits by a seeded hash of their key, whatever the row order,
process, PYTHONHASHSEED or worker count; the assignment is in the lock; a spec without [split]
hashes as before."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchc.compiler.compile import CompileOptions, compile_spec
from benchc.compiler.errors import SpecError
from benchc.compiler.spec.models import Split
from benchc.compiler.spec.parse import load_spec
from benchc.compiler.split import bounds, split_of
from benchc.compiler.values import Record
from specfiles import QUESTION_NODE
from conftest import ROOT, cli

FRACTIONS = {"train": 0.7, "val": 0.1, "test": 0.2}
ids = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=40, unique=True)
shares = st.lists(st.integers(1, 20), min_size=1, max_size=5)


def _fractions(parts: list[int]) -> dict[str, float]:
    return {f"s{i}": part / sum(parts) for i, part in enumerate(parts)}


@given(ids, st.integers(0, 2**32), st.randoms(use_true_random=False))
def test_a_records_split_depends_on_its_key_alone_not_on_order_or_company(names, seed, rng) -> None:
    split = Split(fractions=FRACTIONS, seed=seed)
    alone = {n: split_of(split, Record(n, {})) for n in names}
    shuffled = list(names)
    rng.shuffle(shuffled)
    assert {n: split_of(split, Record(n, {})) for n in shuffled} == alone


@given(st.lists(st.tuples(st.text(max_size=6), st.integers(0, 5)), min_size=1, max_size=40), shares)
def test_records_of_one_group_key_share_a_split(rows, parts) -> None:
    split = Split(key="image.id", fractions=_fractions(parts))
    seen: dict[int, str] = {}
    for index, (_, group) in enumerate(rows):
        name = split_of(split, Record(f"r{index}", {"image": {"id": group}}))
        assert seen.setdefault(group, name) == name


@given(shares)
def test_bounds_cover_the_hash_space_in_name_order(parts) -> None:
    found = bounds(_fractions(parts))
    assert [name for _, name in found] == sorted(_fractions(parts))
    assert found[-1][0] == 2**64 and all(a <= b for (a, _), (b, _) in zip(found, found[1:]))


def test_fractions_are_honoured_on_many_keys() -> None:
    split = Split(fractions=FRACTIONS)
    names = [split_of(split, Record(f"r{i}", {})) for i in range(20_000)]
    for name, share in FRACTIONS.items():
        assert abs(names.count(name) / len(names) - share) < 0.015


SCRIPT = """
import json, sys
from benchc.compiler.spec.models import Split
from benchc.compiler.split import split_of
from benchc.compiler.values import Record
split = Split(key="g", fractions={"train": 0.5, "val": 0.25, "test": 0.25}, seed=7)
print(json.dumps([split_of(split, Record(f"r{i}", {"g": f"group-{i % 17}"})) for i in range(200)]))
"""


def test_the_same_records_split_the_same_in_processes_with_other_hash_seeds() -> None:
    runs = [subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("0", "12345", "random")]
    assert runs[0] == runs[1] == runs[2] and len(json.loads(runs[0])) == 200


# --- the spec table ------------------------------------------------------------------------------

SPEC = """
[benchmark]
name = "t/split"
version = "1.0.0"

[source]
loader = "table"
path = "rows.jsonl"
id = "id"

[split]
key = "group"
fractions = {fractions}
keep = {keep}
{extra}
""" + QUESTION_NODE + """
[[node]]
id = "cased"
op = "text.case"
input = "question"
params.mode = {{ grid = ["upper", "lower"] }}

[prompt]
template = "{{{{ text }}}}"

[[metric]]
name = "general.accuracy"
target = "answer"
"""


def write_project(folder: Path, *, fractions: str = "{ train = 0.6, val = 0.2, test = 0.2 }",
                  keep: str = '["train"]', extra: str = "", name: str = "spec.toml", rows: int = 30,
                  shuffle: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"q{i:03d}", "group": f"img{i // 3}", "question": f"Question {i}?",
                         "answer": f"a{i}"}) for i in range(rows)]
    if shuffle is not None:
        random.Random(shuffle).shuffle(lines)
    (folder / "rows.jsonl").write_text("\n".join(lines) + "\n")
    spec = folder / name
    spec.write_text(SPEC.format(fractions=fractions, keep=keep, extra=extra))
    return spec


def _compile(spec: Path, out: Path, cache: Path, workers: int = 1) -> dict:
    return compile_spec(spec, out, CompileOptions(cache_dir=cache, workers=workers)).lock


def test_items_carry_their_split_and_the_lock_records_the_assignment(tmp_path: Path) -> None:
    lock = _compile(write_project(tmp_path / "p"), tmp_path / "m", tmp_path / "c")
    split = lock["split"]
    assert split["key"] == "group" and split["keep"] == ["train"] and split["seed"] == 0
    assert split["fractions"] == {"test": 0.2, "train": 0.6, "val": 0.2} and split["seed_recipe"] == 1
    assert sum(split["records"].values()) == 30 and split["kept"] == split["records"]["train"]
    assert lock["item_count"] == 2 * split["kept"]
    rows = cli("show", tmp_path / "m", "-n", "1000", "--format", "json", check=True).stdout
    items = json.loads(rows)
    assert {i["attrs"]["split"] for i in items} == {"train"}
    groups: dict[str, set[str]] = {}
    for item in items:
        groups.setdefault(item["record_id"], set()).add(item["attrs"]["split"])
    assert all(len(s) == 1 for s in groups.values())


def test_splits_partition_the_records_and_keep_groups_together(tmp_path: Path) -> None:
    kept: dict[str, set[str]] = {}
    for name in ("train", "val", "test"):
        spec = write_project(tmp_path / name, keep=f'["{name}"]')
        _compile(spec, tmp_path / f"m-{name}", tmp_path / "c")
        done = cli("show", tmp_path / f"m-{name}", "-n", "1000", "--format", "json", check=True)
        kept[name] = {i["record_id"] for i in json.loads(done.stdout)}
    assert set().union(*kept.values()) == {f"q{i:03d}" for i in range(30)}
    assert not (kept["train"] & kept["val"] or kept["train"] & kept["test"] or kept["val"] & kept["test"])
    for names in kept.values():  # all three questions of an image in one split
        assert {f"q{3 * (int(n[1:]) // 3) + k:03d}" for n in names for k in range(3)} == names


def test_row_order_and_workers_do_not_move_the_split(tmp_path: Path) -> None:
    digests = {_compile(write_project(tmp_path / f"p{i}", shuffle=i), tmp_path / f"m{i}", tmp_path / f"c{i}",
                        workers=1 + i % 2)["manifest_digest"] for i in range(3)}
    assert len(digests) == 1


def test_a_compile_in_another_process_with_another_hash_seed_gives_the_same_manifest(tmp_path: Path) -> None:
    spec = write_project(tmp_path / "p")
    here = _compile(spec, tmp_path / "m1", tmp_path / "c1")["manifest_digest"]
    cli("compile", spec, "-o", tmp_path / "m2", "--cache", tmp_path / "c2", "-j", "2",
        env={"PYTHONHASHSEED": "4242"}, check=True)
    there = json.loads((tmp_path / "m2" / "lock.json").read_text())["manifest_digest"]
    assert here == there


@pytest.mark.parametrize(("fractions", "keep", "key", "message", "hint"), [
    ("{ train = 0.8, test = 0.1 }", '["train"]', "split.fractions", "sum to 0.9, not 1", "make them sum to 1"),
    ("{ train = 0.8, test = 0.2 }", '["trian"]', "split.keep[0]", "'trian' is not a split", "did you mean 'train'"),
    ("{ train = 1.5 }", '["train"]', "split.fractions.train", "not a share", "leave out"),
])
def test_bad_split_tables_name_the_key_and_a_hint(tmp_path: Path, fractions, keep, key, message, hint) -> None:
    spec = write_project(tmp_path, fractions=fractions, keep=keep)
    with pytest.raises(SpecError) as raised:
        load_spec(spec)
    problem = raised.value.problems[0]
    assert (problem.key, problem.line is not None) == (key, True)
    assert message in problem.message and hint in (problem.hint or "")
    done = cli("validate", spec)
    assert done.returncode == 2 and key in done.stderr and "hint:" in done.stderr and "Traceback" not in done.stderr


def test_a_missing_key_field_is_named_with_the_fields_there_are(tmp_path: Path) -> None:
    spec = write_project(tmp_path / "p")
    spec.write_text(spec.read_text().replace('key = "group"', 'key = "grop"'))
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert done.returncode == 2 and "split.key" in done.stderr and "did you mean 'group'" in done.stderr


def test_keeping_an_empty_split_is_refused_with_the_counts(tmp_path: Path) -> None:
    spec = write_project(tmp_path / "p", fractions="{ train = 0.999999, test = 0.000001 }", keep='["test"]', rows=3)
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert done.returncode == 2 and "0 in the kept splits" in done.stderr and "split.keep" in done.stderr


def test_a_spec_without_split_hashes_as_before(tmp_path: Path) -> None:
    """The spec document leaves out an absent [split]: the committed locks stay as they are
    (tests/test_golden.py checks every bundled spec; this one says why)."""
    from benchc.compiler.compile import spec_document
    from benchc.compiler.resolve import resolve

    doc = spec_document(resolve(load_spec(ROOT / "specs/examples/paraphrase.toml")))
    assert "split" not in doc
    lock = json.loads((ROOT / "generated/examples/paraphrase.lock.json").read_text())
    assert "split" not in lock


def test_an_op_that_sets_the_splits_attribute_is_refused_not_overwritten(tmp_path: Path) -> None:
    """Issue 28 item 1: `attribute = "perturbation"` (or any attribute an op sets) was silently
    overwritten by the op's value, so an export by that attribute mixed train and test records."""
    spec = write_project(tmp_path / "p", extra='attribute = "perturbation"')
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "m").exists()
    assert "spec.toml:" in done.stderr and "split.attribute" in done.stderr
    assert "also set by node 'cased'" in done.stderr and 'attribute = "fold"' in done.stderr

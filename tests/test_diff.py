"""`benchc diff`: two versions of a spec differ by exactly the changes that were made, at the
spec level (every bundled spec) and at the item level (one change at a time on a small spec),
each changed item with its cause; output formats, exit codes and bad inputs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchc import api
from benchc.cli import main
from benchc.compiler.compile import spec_document
from benchc.compiler.diff import bump_made, spec_changes
from benchc.compiler.errors import BenchcError
from benchc.compiler.resolve import resolve
from benchc.compiler.spec.parse import load_spec
from conftest import ROOT, SPECS, cli

BUNDLED = sorted(SPECS.rglob("*.toml"))
QR = SPECS / "mm_r3" / "question_rephrasing.toml"
QR_DATA = SPECS / "mm_r3" / "data" / "easy_vqa_rephrasings"


def _doc(spec: Path, overrides: list[str] | None = None) -> dict:
    return spec_document(resolve(load_spec(spec, overrides)))


def _paths(changes: list) -> list[str]:
    return [c.path for c in changes]


# spec level: every bundled spec --------------------------------------------------------------

@pytest.mark.parametrize("spec", BUNDLED, ids=[f"{p.parent.name}/{p.stem}" for p in BUNDLED])
def test_a_bumped_and_reworded_copy_of_every_bundled_spec_differs_by_those_two_keys(spec: Path, tmp_path: Path) -> None:
    copy = tmp_path / spec.parent.name
    copy.mkdir()
    for sibling in spec.parent.glob("*.toml"):  # a base it extends comes along
        shutil.copy(sibling, copy / sibling.name)
    text = spec.read_text()
    text, bumped = re.subn(r'(?m)^version = "[^"]*"', 'version = "99.0.0"', text, count=1)
    text, reworded = re.subn(r'(?m)^description = "', 'description = "Reworded. ', text, count=1)
    assert bumped == 1
    (copy / spec.name).write_text(text)
    result = api.diff(spec, copy / spec.name, items=False)
    expected = ["benchmark.version"] + (["benchmark.description"] if reworded else [])
    assert sorted(_paths(result.spec)) == sorted(expected)
    assert not result.equal and result.items is None
    assert api.diff(spec, spec, items=False).equal


@pytest.mark.parametrize("spec", BUNDLED, ids=[f"{p.parent.name}/{p.stem}" for p in BUNDLED])
def test_each_single_edit_of_every_bundled_spec_is_the_only_change(spec: Path) -> None:
    before = _doc(spec)
    edits = {"benchmark.seed=12345": "benchmark.seed", "generation.max_new_tokens=7": "generation.max_new_tokens",
             'prompt.template="Edited: {{ record_id }}"': "prompt.template", "sample.n=7777": "sample.n"}
    for override, path in edits.items():
        changes = spec_changes(before, _doc(spec, [override]))
        assert _paths(changes) == [path], override
        assert changes[0].kind == "changed" and changes[0].after != changes[0].before


def test_writing_a_default_out_is_no_change() -> None:
    doc = _doc(QR)
    assert spec_changes(doc, _doc(QR, ["generation.top_p=1.0", "sample.per=''"]))[0].path == "sample.per"
    assert spec_changes(doc, _doc(QR, ["generation.top_p=1.0", "source.on_error='fail'"])) == []


def test_bump_made_reads_semver() -> None:
    assert [bump_made("1.0.0", v) for v in ("2.0.0", "1.1.0", "1.0.1", "1.0.0", "0.9.0")] == \
        ["major", "minor", "patch", "none", "none"]


# item level: one change at a time on a small spec ------------------------------------------------

def _copy_spec(folder: Path, edit=None, data_edit=None) -> Path:
    """question_rephrasing.toml and its data in ``folder``, the spec text through ``edit`` and
    the questions.jsonl rows through ``data_edit``."""
    shutil.copytree(QR_DATA, folder / "data" / "easy_vqa_rephrasings")
    spec = folder / QR.name
    spec.write_text(edit(QR.read_text()) if edit else QR.read_text())
    if data_edit:
        table = folder / "data" / "easy_vqa_rephrasings" / "questions.jsonl"
        rows = [json.loads(line) for line in table.read_text().splitlines()]
        data_edit(rows)
        table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return spec


def _diff(tmp_path: Path, edit=None, data_edit=None, overrides: list[str] | None = None):
    a = _copy_spec(tmp_path / "a")
    b = _copy_spec(tmp_path / "b", edit, data_edit)
    return api.diff(a, b, overrides=overrides, cache_dir=tmp_path.parent / "diff-cache",
                    store_dir=tmp_path / "store")


@pytest.fixture
def qr_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("qr") / "case"


def test_a_version_bump_alone_changes_no_item(qr_tmp: Path) -> None:
    result = _diff(qr_tmp, lambda t: t.replace('version = "3.0.0"', 'version = "3.0.1"'))
    assert _paths(result.spec) == ["benchmark.version"]
    assert result.items.equal and result.items.items_a == 96
    assert _paths(result.lock) == []  # the version is shown once, in the spec section
    assert result.bump() == {"from": "3.0.0", "to": "3.0.1", "made": "patch", "needed": "none"}


def test_removing_a_grid_value_removes_exactly_its_items(qr_tmp: Path) -> None:
    result = _diff(qr_tmp, lambda t: t.replace("grid = [0, 1, 2, 3]", "grid = [0, 1, 3]"))
    assert _paths(result.spec) == ["node[question].params.index.grid"]
    items = result.items
    assert (items.added, items.removed, items.changed) == (0, 24, 0)
    assert all(e["item_id"].endswith("#question[index=2]") for e in items.examples["removed"])
    assert result.bump()["needed"] == "major"


def test_inserting_a_grid_value_mid_list_only_adds_items(qr_tmp: Path) -> None:
    """Item ids name grid values, not positions: a value inserted in the middle of a sweep adds
    its items and moves no other item (issue 12: it used to change every later item)."""
    base = (ROOT / "specs/mm_r3/question_rephrasing.toml").read_text()
    spec = qr_tmp.parent / "sweep" / "spec.toml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    a = spec.with_name("a.toml")
    shutil.copytree(ROOT / "specs/mm_r3/data", spec.parent / "data", dirs_exist_ok=True)
    a.write_text(base.replace("grid = [0, 1, 2, 3]", "grid = [0, 3]"))
    b = spec.with_name("b.toml")
    b.write_text(a.read_text().replace("grid = [0, 3]", "grid = [0, 1, 3]"))
    done = cli("diff", a, b, "--format", "json", "--cache", qr_tmp.parent / "sweep-cache")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert (report["items"]["added"], report["items"]["removed"], report["items"]["changed"]) == (24, 0, 0)
    assert report["bump"]["needed"] == "minor"


def test_a_template_changes_every_prompt_and_nothing_else(qr_tmp: Path) -> None:
    result = _diff(qr_tmp, lambda t: t.replace('template = "{{ text }}"', 'template = "Q: {{ text }}"'))
    assert _paths(result.spec) == ["prompt.template"]
    assert (result.items.changed, result.items.causes, result.items.fields) == (96, {"template": 96}, {"prompt": 96})
    example = result.items.examples["template"][0]
    assert example["after"]["prompt"] == "Q: " + example["before"]["prompt"]


def test_a_filter_removes_items_and_changes_none(qr_tmp: Path) -> None:
    result = _diff(qr_tmp, lambda t: t + '\n[[filter]]\nwhere = "question_type"\nequals = "shape"\n')
    assert _paths(result.spec) == ["filter[question_type]"]
    assert result.spec[0].kind == "added" and result.spec[0].after == {"where": "question_type", "equals": "shape"}
    items = result.items
    assert (items.added, items.changed, items.removed) == (0, 0, 80)
    assert items.removed_causes == {"filter": 80}
    assert {c.path for c in result.lock} == {"spec_digest", "manifest_digest", "item_count", "source.selected"}


def test_the_seed_changes_node_keys_and_the_sample(qr_tmp: Path) -> None:
    result = _diff(qr_tmp, lambda t: t.replace("seed = 0", "seed = 3", 1), overrides=["sample.n=12"])
    assert _paths(result.spec) == ["benchmark.seed"]
    items = result.items
    assert items.items_a == items.items_b == 48 and items.changed and items.added == items.removed > 0
    assert set(items.causes) == {"seed"} and items.fields == {"lineage": items.changed}
    assert set(items.added_causes) == set(items.removed_causes) == {"seed"}


def test_one_source_row_changes_only_the_items_of_its_record(qr_tmp: Path) -> None:
    def edit(rows: list[dict]) -> None:
        rows[0]["answer"] = "square"

    result = _diff(qr_tmp, data_edit=edit)
    assert result.spec == []
    assert {c.path for c in result.lock} == {
        "manifest_digest", "source.digest", "source.files[data/easy_vqa_rephrasings/questions.jsonl].sha256"}
    items = result.items
    assert (items.added, items.removed, items.changed) == (0, 0, 4)
    assert items.causes == {"source_row": 4}
    assert set(items.fields) == {"record_digest", "targets", "lineage"}
    assert all(e["item_id"].startswith("train/000000#") for e in items.examples["source_row"])
    assert items.examples["source_row"][0]["after"]["targets"] == '{"answer":["square"]}'


def test_a_manifest_and_its_spec_are_equal(tmp_path: Path, shared_cache: Path) -> None:
    manifest = api.compile(QR, tmp_path / "m", cache_dir=shared_cache, store_dir=tmp_path / "s",
                           check_version=False).manifest_dir
    result = api.diff(QR, manifest, cache_dir=shared_cache, store_dir=tmp_path / "s")
    assert result.equal and result.items.items_a == result.items.items_b == 96
    locks = api.diff(manifest / "lock.json", manifest, cache_dir=shared_cache)
    assert locks.equal and locks.items is None and any("lock file" in n for n in locks.notes)


# the command line ---------------------------------------------------------------------------------

def _main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_formats_and_exit_codes(tmp_path: Path, shared_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _copy_spec(tmp_path / "a")
    b = _copy_spec(tmp_path / "b", lambda t: t.replace('template = "{{ text }}"', 'template = "Q: {{ text }}"'))
    common = ("--cache", shared_cache, "--store", tmp_path / "s")
    code, out, _ = _main(capsys, "diff", a, a, *common)
    assert code == 0 and "no differences" in out
    code, out, err = _main(capsys, "diff", a, b, *common, "--format", "json")
    assert code == 1, err
    report = json.loads(out)
    assert report["equal"] is False and report["items"]["causes"] == {"template": 96}
    assert [c["path"] for c in report["spec"]] == ["prompt.template"] and report["bump"]["needed"] == "major"
    code, out, _ = _main(capsys, "diff", a, b, *common, "-f", "markdown")
    assert code == 1 and '| templates | `prompt.template` | "{{ text }}" | "Q: {{ text }}" |' in out
    code, out, _ = _main(capsys, "diff", a, b, *common)
    assert 'prompt.template: "{{ text }}" -> "Q: {{ text }}"' in out and "changed by cause: template 96" in out


@pytest.mark.slow
def test_the_installed_command_exits_1_on_a_difference(tmp_path: Path) -> None:
    a = _copy_spec(tmp_path / "a")
    b = tmp_path / "b.toml"
    b.write_text(a.read_text().replace("max_new_tokens = 100", "max_new_tokens = 50"))
    done = cli("diff", a, b, "--spec-only")
    assert done.returncode == 1 and "generation.max_new_tokens: 100 -> 50" in done.stdout


@pytest.mark.parametrize(("args", "fragment"), [
    (("nope.toml", "nope.toml"), "no such file or folder"),
    (("{spec}@no-such-revision", "{spec}"), "at revision 'no-such-revision'"),
    (("{spec}", "{spec}", "--format", "yaml"), "unknown format 'yaml'"),
    (("{spec}", "README.md"), "cannot tell what this file is"),
    (("{spec}", "generated"), "not a compiled manifest"),
    (("{spec}", "pyproject.toml"), "unknown key"),
])
def test_bad_inputs_exit_2_with_one_message(args: tuple[str, ...], fragment: str,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, _, err = _main(capsys, "diff", *(a.format(spec=QR.relative_to(ROOT)) for a in args), "--spec-only")
    assert code == 2, err
    assert fragment in err and "Traceback" not in err and err.startswith("error: ")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_a_spec_at_a_git_revision_reads_data_from_the_working_tree(tmp_path: Path, shared_cache: Path) -> None:
    repo = tmp_path / "repo"
    spec = _copy_spec(repo)
    _git(repo, "init", "-q")
    _git(repo, "add", QR.name)  # the data is not committed: the revision's spec reads the working tree's
    _git(repo, "commit", "-q", "-m", "v1")
    spec.write_text(spec.read_text().replace('template = "{{ text }}"', 'template = "Q: {{ text }}"'))
    result = api.diff(f"{spec}@HEAD", spec, cache_dir=shared_cache, store_dir=tmp_path / "s")
    assert _paths(result.spec) == ["prompt.template"] and result.items.causes == {"template": 96}
    assert result.a.label.endswith("@HEAD")
    (repo / "data").rename(repo / "elsewhere")
    with pytest.raises(BenchcError) as caught:  # errors name PATH@REV, not a scratch copy
        api.diff(f"{spec}@HEAD", f"{spec}@HEAD", cache_dir=shared_cache, store_dir=tmp_path / "s")
    assert caught.value.problems[0].file == f"{spec}@HEAD"


@pytest.mark.slow
def test_the_benchmark_script_runs_and_finds_what_it_built() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "diff_manifests.py"), "--items", "8000",
                           "--repeat", "1"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "item diff (in-memory frames)" in done.stdout and "ok" in done.stdout


def test_the_bump_needed_follows_the_readme() -> None:
    from benchc.compiler.diff import Change, needed_bump
    from benchc.compiler.diff.items import ItemDiff

    def change(section: str, path: str, kind: str = "changed") -> Change:
        return Change(section, path, 1, 2, kind)

    same = ItemDiff(10, 10)
    assert needed_bump([], [], same) == "none"
    assert needed_bump([change("benchmark", "benchmark.description")], [], same) == "patch"
    assert needed_bump([change("source", "source.pin")], [], same) == "patch"
    assert needed_bump([change("nodes", "node[q].params.x")], [], ItemDiff(10, 12, added=2)) == "minor"
    assert needed_bump([change("stages", "stage[check]", "added")], [], same) == "minor"
    assert needed_bump([change("metrics", "metric[general.accuracy]", "added")], [], same) == "minor"
    # a key added inside an existing metric changes what its score means
    assert needed_bump([change("metrics", "metric[mmr3.all].where.index", "added")], [], same) == "major"
    assert needed_bump([change("stages", "stage[answer]", "removed")], [], same) == "major"
    assert needed_bump([change("generation", "generation.max_new_tokens")], [], same) == "major"
    assert needed_bump([change("nodes", "node[q].params.x")], [], ItemDiff(10, 10, changed=1)) == "major"
    assert needed_bump([], [change("lock", "spec_digest")], None) == "major"  # items unknown


def test_a_damaged_manifest_is_one_clear_error(tmp_path: Path, shared_cache: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    manifest = api.compile(QR, tmp_path / "m", cache_dir=shared_cache, store_dir=tmp_path / "s",
                           check_version=False).manifest_dir
    damaged = tmp_path / "damaged"
    shutil.copytree(manifest, damaged)
    (damaged / "items.parquet").write_bytes(b"not parquet")
    code, _, err = _main(capsys, "diff", manifest, damaged)
    assert code == 2 and "cannot read the manifest" in err and "recompile it" in err
    (damaged / "lock.json").write_text("{")
    code, _, err = _main(capsys, "diff", damaged, manifest)
    assert code == 2 and "cannot read the manifest" in err

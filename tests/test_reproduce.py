"""`benchc reproduce`: a paper file's tables and figures regenerated from two real runs (espeak at
two speeds on a text-to-speech mini spec, re-scored from their responses), checked against the
hashes `--record` wrote; a changed answer fails naming the artifact and the cells."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from benchc import api
from benchc.cli import main
from benchc.compiler.canonical import digest_file
from benchc.runtime.report.tables import read_csv
from benchc.runtime.score.rules import RULES_VERSION
from conftest import ROOT
from specfiles import MINI_SPEC, TABLE, write_mini
from support.demo import Demo

pytestmark = pytest.mark.slow

PAPER = """# Example: consistency of espeak at two speeds
[paper]
title = "Mini text2speech"
output = "artifacts"

[[run]]
id = "fast"
path = "{a}"
spec = "test/mini"
version = "{version}"
label = "espeak 175 wpm"

[[run]]
id = "slow"
path = "{b}"
spec = "test/mini"
version = "1.0.0"
label = "espeak 120 wpm"

[[table]]
name = "table4"
title = "Consistency (max 300)"
metric = "mmcbench.consistency"
columns = ["score", "max"]

[[table]]
name = "per_corruption"
metric = "mmcbench.consistency"
layout = "details"
detail = "per_corruption_x100"

[[table]]
name = "by_severity"
runs = ["slow", "fast"]
metric = "mmcbench.consistency"
layout = "breakdown"
columns = ["score"]
formats = ["tex", "csv"]

[[figure]]
name = "radar"
kind = "radar"
metric = "mmcbench.consistency"
detail = "per_corruption_x100"
normalize = "best"

[[figure]]
name = "bars"
kind = "bar"
runs = ["fast"]
metric = "mmcbench.consistency"
columns = ["score"]
formats = ["svg"]
"""
FILES = {"table4.md", "table4.tex", "table4.csv", "per_corruption.md", "per_corruption.tex", "per_corruption.csv",
         "by_severity.tex", "by_severity.csv", "radar.csv", "radar.png", "radar.svg", "bars.csv", "bars.svg"}


@dataclass(frozen=True)
class Tree:
    root: Path
    paper: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/a and runs/b: one manifest (4 versions of one sentence) spoken at two speeds, scored."""
    root = tmp_path_factory.mktemp("paper-runs")
    text = MINI_SPEC.format(table=TABLE, n=1).replace('"random_swap"]', '"random_swap", "abbreviate_word"]')
    manifest = api.compile(write_mini(root, text=text), root / "m", cache_dir=root / "c").manifest_dir
    common = {"cache_dir": root / "c", "store_dir": root / "s", "progress": False}
    for name, model in (("a", "espeak"), ("b", "espeak:speed=120")):
        api.run(manifest, root / "runs" / name, model=model, **common)
        api.score(root / "runs" / name)
    return root / "runs"


def _tree(runs: Path, folder: Path, version: str = "1.0.0") -> Tree:
    shutil.copytree(runs, folder / "runs")
    (folder / "paper").mkdir()
    paper = folder / "paper" / "paper.toml"
    rel = {k: os.path.relpath(folder / "runs" / k, paper.parent) for k in "ab"}
    paper.write_text(PAPER.format(version=version, **rel))
    return Tree(folder, paper)


@pytest.fixture(scope="module")
def recorded(runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Tree:
    tree = _tree(runs, tmp_path_factory.mktemp("recorded"))
    assert main(["reproduce", str(tree.paper), "--record"]) == 0
    return tree


def _copy(tree: Tree, folder: Path) -> Tree:
    shutil.copytree(tree.root, folder, dirs_exist_ok=True)
    return Tree(folder, folder / tree.paper.relative_to(tree.root))


def _reproduce(tree: Tree, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    code = main(["reproduce", str(tree.paper), *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _edit_answer(run: Path, stage: str, text: str, keep_checksum: bool = True) -> None:
    responses = pl.read_parquet(run / "responses.parquet")
    first = responses.filter(pl.col("stage") == stage)["item_id"][0]
    responses = responses.with_columns(pl.when((pl.col("item_id") == first) & (pl.col("stage") == stage))
                                       .then(pl.lit(text)).otherwise(pl.col("text")).alias("text"))
    responses.write_parquet(run / "responses.parquet", statistics=False)
    if keep_checksum:
        record = json.loads((run / "run.json").read_text())
        record["responses_sha256"] = digest_file(run / "responses.parquet")
        (run / "run.json").write_text(json.dumps(record))


def test_record_then_reproduce_passes(recorded: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _copy(recorded, tmp_path)
    text = tree.paper.read_text()
    assert text.startswith(PAPER.split("\n", 1)[0]) and "[recorded.artifacts]" in text
    code, out, err = _reproduce(tree, capsys)
    assert code == 0, err
    assert f"all {len(FILES)} file(s) match the recorded hashes" in out
    artifacts = tree.paper.parent / "artifacts"
    assert {p.name for p in artifacts.iterdir()} == FILES
    # re-recording the same runs changes nothing in the paper file
    assert _reproduce(tree, capsys, "--record")[0] == 0 and tree.paper.read_text() == text
    # the layouts: two runs side by side, the radar normalised to the best run per corruption
    columns, rows = read_csv((artifacts / "table4.csv").read_text())
    assert columns == ["run", "severity", "score", "max"]
    assert [r[0] for r in rows] == ["espeak 175 wpm", "espeak 120 wpm"] and {r[3] for r in rows} == {"300"}
    columns, rows = read_csv((artifacts / "radar.csv").read_text())
    assert columns == ["key", "espeak 175 wpm heavy", "espeak 120 wpm heavy"]
    assert [r[0] for r in rows] == ["abbreviate_word", "leet_letters", "random_swap"]
    assert all(max(float(v) for v in r[1:]) == 1.0 for r in rows)
    tex = (artifacts / "by_severity.tex").read_text()
    assert r"\multicolumn{1}{c}{heavy}" in tex and "espeak 120 wpm &" in tex.split(r"\midrule")[1].splitlines()[1]
    for name in FILES - {"radar.png"}:
        assert "test/mini 1.0.0 · manifest" in (artifacts / name).read_text(), name


def test_an_edited_answer_fails_naming_the_artifact_and_the_cells(recorded: Tree, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    tree = _copy(recorded, tmp_path)
    artifacts = tree.paper.parent / "artifacts"
    before = (artifacts / "table4.csv").read_bytes()
    _edit_answer(tree.root / "runs" / "b", "transcript", "nothing like what was said")
    code, out, err = _reproduce(tree, capsys)
    assert code == 1 and "Traceback" not in err
    assert "CHANGED  table4.csv" in out and "     ok  bars.svg" in out  # bars shows run a only
    assert "table[0]: artifact 'table4' changed: table4.md, table4.tex, table4.csv differ" in err
    assert "row run='espeak 120 wpm', column 'score': " in err, err
    assert "artifact 'per_corruption' changed" in err and "artifact 'radar' changed" in err
    assert "artifact 'bars'" not in err and "hint: if the change is intended, rerun with --record" in err
    assert (artifacts / "table4.csv").read_bytes() == before  # the recorded copy stays for the next comparison
    assert (artifacts / "drift" / "table4.csv").read_bytes() != before
    # an answer edited behind the run record's back is refused before anything is compared
    _edit_answer(tree.root / "runs" / "a", "transcript", "something else", keep_checksum=False)
    code, _, err = _reproduce(tree, capsys)
    assert code == 2 and "run[0].path: run 'fast': responses.parquet is not the file this run recorded" in err


def test_scores_json_is_not_read_every_run_is_scored_again(recorded: Tree, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    tree = _copy(recorded, tmp_path)
    scores_file = tree.root / "runs" / "a" / "scores.json"
    scores = json.loads(scores_file.read_text())
    scores["metrics"][0]["rows"][0]["score"] = 299.0
    scores_file.write_text(json.dumps(scores))
    assert _reproduce(tree, capsys)[0] == 0


def test_pins_that_do_not_hold(runs: Path, recorded: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(runs, tmp_path / "v2", version="2.0.0")
    code, _, err = _reproduce(tree, capsys, "--record")
    assert code == 1 and "run[0]: run 'fast' is a run of test/mini 1.0.0, but the paper pins test/mini 2.0.0" in err
    moved = _copy(recorded, tmp_path / "moved")
    text = moved.paper.read_text()
    digest = json.loads((moved.root / "runs" / "a" / "run.json").read_text())["manifest_digest"]
    moved.paper.write_text(text.replace(f'"fast" = "{digest}"', f'"fast" = "{"0" * 64}"'))
    code, _, err = _reproduce(moved, capsys)
    assert code == 1 and "run 'fast': manifest digest changed: recorded 0000000000000000, now " + digest[:16] in err
    fresh = _tree(runs, tmp_path / "fresh")
    code, out, err = _reproduce(fresh, capsys)
    assert code == 1 and "NEW  table4.md" in out and "the paper file has no recorded hashes yet" in err


def _fresh_example(folder: Path) -> Path:
    """papers/example.toml and its artifacts as a fresh clone has them (no out/demo), with the
    run and manifest folders moved under ``folder`` so that nothing is written in the repo."""
    papers = folder / "papers"
    shutil.copytree(ROOT / "papers", papers)
    paper = papers / "example.toml"
    text = paper.read_text().replace('"../specs/', f'"{ROOT / "specs"}/').replace('"../out/demo/', f'"{folder}/demo/')
    paper.write_text(text)
    return paper


@pytest.mark.xdist_group("demo")
def test_the_example_paper_reproduces_in_a_fresh_clone_without_make_demo(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], demo: Demo) -> None:
    """A clone where `make demo` never ran (no out/demo): the paper's [run.make] compiles and runs
    it. The answers come from the store of this session's `make demo` (tests/support/demo.py),
    where the default .benchc/store of a checkout that once ran it would have them: the run is
    made anew, its files are the recorded ones, and no backend is asked again."""
    paper = _fresh_example(tmp_path)
    monkeypatch.chdir(tmp_path)  # the default .benchc/cache and .benchc/store of make demo
    demo.copy_store_and_cache(tmp_path)
    assert not (tmp_path / "demo").exists()
    code = main(["reproduce", str(paper)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "made run 'espeak' from its [run.make]" in out
    assert "all 11 file(s) match the recorded hashes" in out
    assert (tmp_path / "demo" / "run" / "run.json").is_file() and (tmp_path / "demo" / "manifest").is_dir()
    stages = json.loads((tmp_path / "demo" / "run" / "run.json").read_text())["stages"]
    assert [(s["stage"], s["ran"]) for s in stages] == [("speech", 0), ("transcript", 0)]  # all from the store
    # the run exists now: nothing is made again, the artifacts still match
    code = main(["reproduce", str(paper)])
    out, _ = capsys.readouterr()
    assert code == 0 and "made run" not in out and "all 11 file(s) match" in out


def test_without_make_a_missing_run_is_an_error_naming_it(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    paper = _fresh_example(tmp_path)
    assert main(["reproduce", str(paper), "--no-make"]) == 2
    err = capsys.readouterr().err
    assert "run[0].path" in err and "run 'espeak'" in err and "Traceback" not in err
    assert not (tmp_path / "demo").exists()


def test_a_recipe_key_typo_is_caught_with_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paper = _fresh_example(tmp_path)
    paper.write_text(paper.read_text().replace("workers = 2\n", "worker = 2\n", 1))
    assert main(["reproduce", str(paper)]) == 2
    err = capsys.readouterr().err
    assert "run[0].make.worker" in err and "unknown key" in err and "workers" in err
    assert not (tmp_path / "demo").exists()


def test_a_run_made_with_other_backend_settings_is_named_as_the_cause(recorded: Tree, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    tree = _copy(recorded, tmp_path)
    text = tree.paper.read_text()
    assert f"rules = {RULES_VERSION}" in text and '[recorded.backends."fast"]' in text and '"speed":175' in text
    runs = tree.root / "runs"
    shutil.move(runs / "a", runs / "old-a")
    shutil.copytree(runs / "b", runs / "a")  # run 'fast' is now the 120 wpm run
    code, _, err = _reproduce(tree, capsys)
    assert code == 1 and "Traceback" not in err
    assert "run[0]: run 'fast' was made with other backend settings than the recorded run: " in err, err
    assert "speech.speed: recorded 175, now 120" in err and "run 'slow' was made" not in err
    assert "artifact 'table4' changed" in err  # the cause comes with the change it explains


def test_a_scoring_rules_difference_is_named_as_the_cause(recorded: Tree, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    tree = _copy(recorded, tmp_path)
    # recorded before there were rules versions
    tree.paper.write_text(tree.paper.read_text().replace(f"rules = {RULES_VERSION}\n", ""))
    assert _reproduce(tree, capsys)[0] == 0  # the same numbers: nothing to explain
    _edit_answer(tree.root / "runs" / "b", "transcript", "nothing like what was said")
    code, _, err = _reproduce(tree, capsys)
    assert code == 1
    assert ("recorded: the scoring rules changed: recorded under rules version 1 (unversioned: benchc 0.1.0), "
            f"scored now under {RULES_VERSION}") in err, err

"""Run folders: written all at once, tied to their manifest (absolute path + digest) and to their
responses (sha256), scored with `--manifest` when the manifest moved, and metrics on audio refused."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchc import api
from benchc.cli import main
from benchc.compiler.errors import BenchcError
from conftest import ROOT
from specfiles import TABLE, MINI_SPEC, write_mini

pytestmark = pytest.mark.slow  # real espeak, pocketsphinx and MiniLM


@dataclass(frozen=True)
class Runs:
    """One manifest, run twice with differently voiced speech (so the answers differ)."""

    root: Path
    manifest: Path
    a: Path
    b: Path
    scores_a: dict
    scores_b: dict

    def run_args(self, model: str) -> dict:
        return {"model": model, "cache_dir": self.root / "c", "store_dir": self.root / "s", "progress": False}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("runs")
    manifest = api.compile(write_mini(root, n=1), root / "m", cache_dir=root / "c").manifest_dir
    common = {"cache_dir": root / "c", "store_dir": root / "s", "progress": False}
    api.run(manifest, root / "a", model="espeak", **common)
    api.run(manifest, root / "b", model="espeak:speed=120", **common)
    scores_a, scores_b = api.score(root / "a"), api.score(root / "b")
    assert scores_a["metrics"] != scores_b["metrics"]  # else mixing the two could go unseen
    return Runs(root, manifest, root / "a", root / "b", scores_a, scores_b)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


class Interrupted(BaseException):
    """Stands for a kill: nothing after the failing rename runs but ``finally`` clean-ups."""


def _interrupt_at(monkeypatch: pytest.MonkeyPatch, call: int) -> list[int]:
    """Make the ``call``-th ``os.replace``/``os.rename`` (1-based) raise; 0 only counts them."""
    count = [0]
    for name in ("replace", "rename"):
        real = getattr(os, name)

        def patched(src, dst, *args, _real=real, **kwargs):
            count[0] += 1
            if count[0] == call:
                raise Interrupted
            return _real(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, name, patched)
    return count


def test_an_interrupted_run_never_leaves_a_folder_that_score_misreads(
        runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rerun B into A's folder and interrupt it at every rename it makes: the folder then holds
    A or B whole, or is refused with a clear error; never B's answers under A's record."""
    args = runs.run_args("espeak:speed=120")
    with monkeypatch.context() as patch:
        renames = _interrupt_at(patch, 0)
        api.run(runs.manifest, _copy(runs.a, tmp_path / "count"), **args)
    assert renames[0] >= 2
    for call in range(1, renames[0] + 1):
        target = _copy(runs.a, tmp_path / f"r{call}")
        with monkeypatch.context() as patch:
            _interrupt_at(patch, call)
            with pytest.raises(Interrupted):
                api.run(runs.manifest, target, **args)
        try:
            scores = api.score(target)
        except BenchcError:
            continue
        assert scores in (runs.scores_a, runs.scores_b), f"interrupted at rename {call}"


def test_a_new_run_drops_the_scores_and_report_of_the_previous_one(runs: Runs, tmp_path: Path) -> None:
    target = _copy(runs.a, tmp_path / "r")
    api.report(target)
    assert (target / "scores.json").exists() and (target / "report.md").exists()
    api.run(runs.manifest, target, **runs.run_args("espeak:speed=120"))
    assert not (target / "scores.json").exists() and not (target / "report.md").exists()
    assert api.score(target) == runs.scores_b


def test_responses_from_another_run_are_refused(runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _copy(runs.a, tmp_path / "r")
    shutil.copy(runs.b / "responses.parquet", target / "responses.parquet")
    code, err = _cli(capsys, "score", target)
    assert code == 2 and "responses.parquet is not the file this run recorded in run.json" in err


def test_the_run_records_an_absolute_manifest_path(runs: Runs, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(runs.manifest, tmp_path / "m")
    monkeypatch.chdir(tmp_path)
    api.run(Path("m"), Path("r"), **runs.run_args("espeak"))
    record = json.loads((tmp_path / "r" / "run.json").read_text())
    assert record["manifest"] == str(tmp_path / "m") and record["manifest_digest"]
    monkeypatch.chdir(ROOT)
    assert api.score(tmp_path / "r")["metrics"] == runs.scores_a["metrics"]


def test_score_with_a_moved_manifest(runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _copy(runs.manifest, tmp_path / "m")
    run = tmp_path / "r"
    api.run(manifest, run, **runs.run_args("espeak"))
    moved = tmp_path / "moved"
    manifest.rename(moved)
    code, err = _cli(capsys, "score", run)
    assert code == 2 and "the manifest this run was made from is gone" in err and "--manifest" in err
    code, err = _cli(capsys, "score", run, "--manifest", moved)
    assert code == 0, err
    other = api.compile(write_mini(tmp_path / "other", n=2), tmp_path / "other-m", cache_dir=runs.root / "c")
    code, err = _cli(capsys, "score", run, "--manifest", other.manifest_dir)
    assert code == 2 and "--manifest" in err and "but this run was made from a manifest with digest" in err
    assert str(manifest) in err  # the hint names the manifest the run recorded


def test_a_run_never_replaces_a_folder_that_is_not_a_run(runs: Runs, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, err = _cli(capsys, "run", runs.manifest, "-o", mine, "--model", "espeak", "--cache", runs.root / "c",
                     "--store", tmp_path / "s")
    assert code == 2 and "is not a benchc run folder; refusing to replace it" in err
    assert (mine / "notes.txt").read_text() == "keep me" and not (tmp_path / "s").exists()


AUDIO_METRIC = MINI_SPEC.format(table=TABLE, n=1).replace('stage = "transcript"\nby', 'stage = "speech"\nby')


def test_scoring_speech_is_refused_with_the_metric_and_the_text_stages(runs: Runs, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_mini(tmp_path, text=AUDIO_METRIC)
    code, err = _cli(capsys, "validate", spec)
    assert code == 2 and "metric[0].stage" in err and "scores stage 'speech'" in err
    assert "outputs are audio" in err and "hint: metrics read text: set stage to one of 'transcript'" in err
    manifest = api.compile(spec, tmp_path / "m", cache_dir=runs.root / "c").manifest_dir
    api.run(manifest, tmp_path / "r", **runs.run_args("espeak"))
    code, err = _cli(capsys, "score", tmp_path / "r")
    assert code == 2 and "spec.json metric[0].stage" in err and "set stage to one of 'transcript'" in err
    assert err.count("error:") == 1 and not (tmp_path / "r" / "scores.json").exists()

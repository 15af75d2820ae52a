"""`[run.make] answers = ...`: a paper file pins a run of answers made elsewhere (imported as
`benchc import` does) and regenerates its table from them in a fresh folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchc import api
from benchc.cli import main
from benchc.runtime.report.tables import read_csv
from conftest import ROOT

SPEC = ROOT / "specs" / "examples" / "paraphrase.toml"
TRUTH = {"q1": "Paris", "q2": "8", "q3": "yellow", "q4": "Mercury", "q5": "100", "q6": "blue"}


def _answers(path: Path, manifest: Path) -> None:
    """Right on the original and the paraphrases, "I do not know." on the lowercased question."""
    import polars as pl

    items = pl.read_parquet(manifest / "items.parquet")
    rows = []
    for item_id, target in zip(items["item_id"], items["targets"], strict=True):
        wrong = "/lowercased" in item_id
        rows.append({"item_id": item_id, "response": "I do not know." if wrong else json.loads(target)["answer"][0]})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _paper(folder: Path) -> Path:
    paper = folder / "paper.toml"
    paper.write_text(f"""[paper]
title = "Paraphrase invariance of imported answers"
output = "tables"

[[run]]
id = "outside"
path = "runs/outside"
spec = "examples/paraphrase"
version = "{_version()}"
label = "outside model"

[run.make]
spec_file = "{SPEC}"
answers = "answers.jsonl"
model = "outside-model"

[[table]]
name = "accuracy"
metric = "general.accuracy"
layout = "rows"
formats = ["csv"]
""")
    return paper


def _version() -> str:
    import tomllib

    return str(tomllib.loads(SPEC.read_text())["benchmark"]["version"])


def test_a_recipe_with_answers_imports_them_and_the_table_is_counted_by_hand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    api.compile(SPEC, tmp_path / "m", progress=False)
    _answers(tmp_path / "answers.jsonl", tmp_path / "m")
    paper = _paper(tmp_path)
    code = main(["reproduce", str(paper), "--record"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "made run 'outside' from its [run.make]" in out
    run = json.loads((tmp_path / "runs" / "outside" / "run.json").read_text())
    assert run["model"] == "outside-model"
    header, cells = read_csv((tmp_path / "tables" / "accuracy.csv").read_text())
    rows = {cell[0]: dict(zip(header, cell, strict=True)) for cell in cells}
    # 6 questions: right on the original and both paraphrases, wrong on every lowercased one
    assert float(rows["original"]["accuracy"]) == 100.0
    assert float(rows["paraphrased"]["accuracy"]) == 100.0 and rows["paraphrased"]["items"] == "12"
    assert float(rows["lowercased"]["accuracy"]) == 0.0
    assert main(["reproduce", str(paper)]) == 0
    assert "made run" not in capsys.readouterr().out


def test_answers_and_backends_together_are_refused_naming_the_key(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    paper = _paper(tmp_path)
    paper.write_text(paper.read_text().replace('model = "outside-model"\n',
                                               'model = "outside-model"\nbackends = { answer = "espeak" }\n'))
    assert main(["reproduce", str(paper)]) == 2
    err = capsys.readouterr().err
    assert "run[0].make" in err and "answers" in err and "Traceback" not in err


@pytest.mark.parametrize("answers", ["/etc/passwd", "../outside.jsonl", "link.jsonl"])
def test_answers_outside_the_paper_folder_are_refused(tmp_path: Path, answers: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28 item 7: a paper file's answers were read from anywhere, also through a symlink."""
    folder = tmp_path / "paper"
    folder.mkdir()
    (tmp_path / "outside.jsonl").write_text('{"item_id": "x", "response": "secret"}\n')
    (folder / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    paper = _paper(folder)
    paper.write_text(paper.read_text().replace('answers = "answers.jsonl"', f'answers = "{answers}"'))
    assert main(["reproduce", str(paper)]) == 2
    err = capsys.readouterr().err
    assert "run[0].make.answers" in err and "outside the paper file's folder" in err and "Traceback" not in err
    assert "secret" not in err and not (folder / "runs").exists()

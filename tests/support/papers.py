"""A reference paper file reproduced as in a fresh clone: papers/<name>.toml and its folder copied
into a scratch folder (no runs yet), its spec paths pointed at the repository's specs and its
runs at ``<scratch>/runs``, then `benchc reproduce` made to build every run from its recipe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchc.cli import main
from benchc.runtime.report.tables import read_csv

ROOT = Path(__file__).resolve().parents[2]


def fresh_paper(folder: Path, name: str) -> Path:
    """papers/<name>.toml and papers/<name>/ under ``folder``/papers, runs going to ``folder``/runs."""
    papers = folder / "papers"
    papers.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "papers" / name, papers / name, ignore=shutil.ignore_patterns("drift"))
    text = (ROOT / "papers" / f"{name}.toml").read_text()
    paper = papers / f"{name}.toml"
    paper.write_text(text.replace('"../specs/', f'"{ROOT / "specs"}/').replace(f'"../out/{name}/', f'"{folder}/runs/'))
    return paper


def reproduce_fresh(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                    runs: int, files: int) -> Path:
    """Reproduce papers/<name>.toml from nothing: every run made from its [run.make], every
    artifact equal to the recorded hash. Returns the folder of the artifacts."""
    paper = fresh_paper(folder, name)
    monkeypatch.chdir(folder)
    code = main(["reproduce", str(paper)])
    out, err = capsys.readouterr()
    assert code == 0, err + out
    assert out.count("from its [run.make]") == runs, out
    assert f"all {files} file(s) match the recorded hashes" in out, out
    return paper.parent / name


def table(path: Path) -> dict[str, dict[str, str]]:
    """A paper table's CSV: its rows by their first cell, each a column -> cell mapping."""
    header, cells = read_csv(path.read_text())
    return {row[0]: dict(zip(header, row, strict=True)) for row in cells}


def numbers(row: dict[str, str]) -> dict[str, float | None]:
    """A row's cells as numbers (the first, the row's label, left out; an empty cell is None: n/a)."""
    return {column: float(cell) if cell != "" else None for column, cell in list(row.items())[1:]}

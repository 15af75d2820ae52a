"""papers/mmcbench.toml (MMCBench Table 4, text-to-speech) reproduces in a fresh folder from its
committed, hand-built answers, and every cell is the count made by hand:

* oracle (the clean sentence for every version) and silent ("" for every version): every
  similarity is 1, so each cell is 100 x 23 = 2300 and so is the average;
* char-robust (the clean sentence on the clean version and the 11 character-level corruptions,
  on light tables the 8 word-level ones too, "" otherwise): a cell is 100 x (k + (23 - k) x m)
  with k = 11 on heavy tables, 19 on light ones, and m the mean over the table's 2 sentences of
  the cosine of a clean sentence with "" (the one number not counted by hand: MiniLM's).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from benchc.cli import main
from benchc.runtime.embed import load_embedder
from benchc.runtime.report_tables import read_csv
from conftest import ROOT

COLUMNS = {("hard", "heavy"): "Hard Heavy/score", ("hard", "light"): "Hard Light/score",
           ("random", "heavy"): "Random Heavy/score", ("random", "light"): "Random Light/score"}
ROBUST = {"heavy": 11, "light": 19}  # character-level; light: + word-level


def _fresh(folder: Path) -> Path:
    """papers/mmcbench.toml as a fresh clone has it, with its runs made under ``folder``."""
    papers = folder / "papers"
    papers.mkdir()
    shutil.copytree(ROOT / "papers" / "mmcbench", papers / "mmcbench",
                    ignore=shutil.ignore_patterns("drift"))
    text = (ROOT / "papers" / "mmcbench.toml").read_text()
    text = text.replace('"../specs/', f'"{ROOT / "specs"}/').replace('"../out/mmcbench/', f'"{folder}/runs/')
    paper = papers / "mmcbench.toml"
    paper.write_text(text)
    return paper


def _hand_counts(manifest: Path) -> dict[tuple[str, str], float]:
    items = pl.read_parquet(manifest / "items.parquet")
    clean: dict[tuple[str, str], list[str]] = {}
    for text, attrs in zip(items["text"], items["attrs"], strict=True):
        a = json.loads(attrs)
        if a["corruption"] == "clean":
            clean.setdefault((a["selection"], a["severity"]), []).append(text.lower().strip())
    embedder = load_embedder("minilm")
    empty = embedder.encode([""])[0]
    out = {}
    for (selection, severity), sentences in clean.items():
        assert len(sentences) == 2
        m = float(np.mean(embedder.encode(sentences) @ empty))
        k = ROBUST[severity]
        out[(selection, severity)] = 100 * (k + (23 - k) * m)
    return out


def test_mmcbench_table4_reproduces_and_matches_the_hand_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    paper = _fresh(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(["reproduce", str(paper)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.count("from its [run.make]") == 3 and "all 5 file(s) match the recorded hashes" in out

    header, cells = read_csv((paper.parent / "mmcbench" / "table4.csv").read_text())
    rows = {row[0]: dict(zip(header, row, strict=True)) for row in cells}
    assert header == ["model", *COLUMNS.values(), "Average"] and set(rows) == {"oracle", "silent", "char-robust"}
    for model in ("oracle", "silent"):
        for column in [*COLUMNS.values(), "Average"]:
            assert float(rows[model][column]) == pytest.approx(2300, abs=0.01), (model, column)
    expected = _hand_counts(tmp_path / "runs" / "char-robust" / "run.manifest")
    for key, column in COLUMNS.items():
        assert float(rows["char-robust"][column]) == pytest.approx(expected[key], abs=0.01), column
    assert float(rows["char-robust"]["Average"]) == pytest.approx(np.mean(list(expected.values())), abs=0.01)
    assert [row[0] for row in cells][-1] == "char-robust"  # sorted by the average, best first

    header, cells = read_csv((paper.parent / "mmcbench" / "table4_char_robust.csv").read_text())
    per = {row[0]: dict(zip(header, row, strict=True)) for row in cells}
    assert len(per) == 23
    for label in ("heavy/hard", "heavy/random", "light/hard", "light/random"):
        hundreds = sum(1 for row in per.values() if float(row[label]) == pytest.approx(100, abs=0.01))
        assert hundreds == ROBUST[label.split("/")[0]], label

"""papers/mmcbench.toml (MMCBench Table 4, text-to-speech) reproduces in a fresh folder from its
committed, hand-built answers, and every cell is the count made by hand:

* oracle (the clean sentence for every version) and silent ("" for every version): every
  similarity is of two identical texts, exactly 1, so each cell is exactly 100 x 23 = 2300 and so
  is the average, on any CPU;
* char-robust (the clean sentence on the clean version and the 11 character-level corruptions,
  on light tables the 8 word-level ones too, "" otherwise): a cell is 100 x (k + (23 - k) x m)
  with k = 11 on heavy tables, 19 on light ones, and m the mean over the table's 2 sentences of
  the cosine of a clean sentence with "" (the one number not counted by hand: MiniLM's).

As in the paper, the cells are printed as integers and the Average is the mean of those integers
(``average_of = "rounded"``, named in the table's note).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from benchc.runtime.score.embed import load_embedder
from benchc.runtime.score.metrics.errors import normalize_text
from support.papers import reproduce_fresh, table

COLUMNS = {("hard", "heavy"): "Hard Heavy/score", ("hard", "light"): "Hard Light/score",
           ("random", "heavy"): "Random Heavy/score", ("random", "light"): "Random Light/score"}
ROBUST = {"heavy": 11, "light": 19}  # character-level; light: + word-level


def _empty_cosines(manifest: Path) -> dict[tuple[str, str], float]:
    """m of each table: the mean over its 2 clean sentences of their cosine with ""."""
    items = pl.read_parquet(manifest / "items.parquet")
    clean: dict[tuple[str, str], list[str]] = {}
    for text, attrs in zip(items["text"], items["attrs"], strict=True):
        a = json.loads(attrs)
        if a["corruption"] == "clean":
            clean.setdefault((a["selection"], a["severity"]), []).append(text.lower().strip())
    embedder = load_embedder("minilm")
    empty = embedder.encode([""])[0]
    assert all(len(sentences) == 2 for sentences in clean.values())
    return {key: float(np.mean(embedder.encode(sentences) @ empty)) for key, sentences in clean.items()}


def _hand_counts(manifest: Path) -> dict[tuple[str, str], float]:
    """Each table's char-robust cell: 100 x (k + (23 - k) x m)."""
    return {(selection, severity): 100 * (ROBUST[severity] + (23 - ROBUST[severity]) * m)
            for (selection, severity), m in _empty_cosines(manifest).items()}


def test_mmcbench_table4_reproduces_and_matches_the_hand_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    output = reproduce_fresh(tmp_path, "mmcbench", monkeypatch, capsys, runs=6, files=11)

    rows = table(output / "table4.csv")
    assert list(next(iter(rows.values()))) == ["model", *COLUMNS.values(), "Average"]
    assert set(rows) == {"oracle", "silent", "char-robust"}
    for model in ("oracle", "silent"):
        for column in [*COLUMNS.values(), "Average"]:
            assert rows[model][column] == "2300.0", (model, column)  # exactly, not 2300.0001
    expected = _hand_counts(tmp_path / "runs" / "char-robust" / "run.manifest")
    printed = {key: float(round(value)) for key, value in expected.items()}
    for key, column in COLUMNS.items():
        assert float(rows["char-robust"][column]) == printed[key], column
    assert float(rows["char-robust"]["Average"]) == pytest.approx(sum(printed.values()) / 4, abs=1e-9)
    assert "each cell rounded to 0 decimals first" in (output / "table4.md").read_text()
    assert list(rows)[-1] == "char-robust"  # sorted by the average, best first

    per = table(output / "table4_char_robust.csv")
    assert len(per) == 23
    for label in ("heavy/hard", "heavy/random", "light/hard", "light/random"):
        hundreds = sum(1 for row in per.values() if float(row[label]) == pytest.approx(100, abs=0.01))
        assert hundreds == ROBUST[label.split("/")[0]], label

    # Figure 2's text-to-speech panel: each model per corruption relative to the best model (the
    # oracle's 100): oracle and silent 1 everywhere; char-robust 1 where it kept the sentence, else
    # m, its table's cosine of a clean sentence with "" (rounded as the figure's CSV prints it)
    radar = table(output / "fig2_text_to_speech.csv")
    assert len(radar) == 23
    cosines = _empty_cosines(tmp_path / "runs" / "char-robust" / "run.manifest")
    for corruption, row in radar.items():
        for label in ("heavy/hard", "heavy/random", "light/hard", "light/random"):
            assert float(row[f"oracle {label}"]) == float(row[f"silent {label}"]) == 1.0
            severity, selection = label.split("/")
            kept = float(per[corruption][label]) == pytest.approx(100, abs=0.01)
            wanted = 1.0 if kept else cosines[(selection, severity)]
            assert float(row[f"char-robust {label}"]) == pytest.approx(wanted, abs=0.0006), (corruption, label)


    _check_speech_to_text(output, tmp_path / "runs" / "s2t-noise-robust" / "run.manifest")


SPEECH_KEPT = {"heavy": 8, "light": 12}  # corruptions noise-robust transcribes right (make_speech_answers.py)


def _check_speech_to_text(output: Path, manifest: Path) -> None:
    """Table 3: oracle and silent give identical transcripts everywhere (exactly 1600); noise-robust
    keeps the sentence under k of the 16 corruptions and says "" under the rest: a cell is
    100 x (k + (16 - k) x m), m the cosine of the selection's Whisper-normalised sentence with ""."""
    import csv

    data = Path(__file__).resolve().parents[1] / "specs" / "mmcbench" / "data"
    items = pl.read_parquet(manifest / "items.parquet")
    records = {json.loads(a)["selection"]: r for r, a in zip(items["record_id"], items["attrs"], strict=True)}
    embedder = load_embedder("minilm")
    empty = embedder.encode([""])[0]
    rows = table(output / "table3.csv")
    assert list(rows) == ["oracle", "silent", "noise-robust"]  # sorted by the average (ties kept in order)
    printed = {}
    for selection, record in records.items():
        name = {"hard": "text2speech_heavy_corrupted_hard_1k_first50.csv",
                "random": "text2speech_heavy_corrupted_random_1k.csv"}[selection]
        with (data / name).open(newline="") as handle:
            sentence = next(r["transcription"] for r in csv.DictReader(handle) if r["path"] == record.split("/", 1)[1])
        m = float(embedder.encode([normalize_text("whisper", sentence).strip()])[0] @ empty)
        for severity, kept in SPEECH_KEPT.items():
            column = f"{selection.title()} {severity.title()}/score"
            assert rows["oracle"][column] == rows["silent"][column] == "1600.0", column
            printed[column] = float(round(100 * (kept + (16 - kept) * m)))
            assert float(rows["noise-robust"][column]) == printed[column], column
    assert float(rows["noise-robust"]["Average"]) == pytest.approx(sum(printed.values()) / 4, abs=1e-9)

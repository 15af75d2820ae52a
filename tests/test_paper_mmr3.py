"""papers/mm_r3.toml reproduced in a fresh folder (its runs made from [run.make]: the six bundled
MM-R3 specs compiled, the committed made-up answers imported) matches its recorded hashes, and
its cells are the counts made here by hand from the answers' rules (papers/mm_r3/make_answers.py):
"oracle" answers each item's ground truth, "constant" answers "zebra" to everything."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from benchc.runtime.score.embed import load_embedder
from benchc.runtime.report.tables import read_csv
from support.papers import numbers, reproduce_fresh, table

TASKS = ("Question Rephrasing", "Image Restyling", "Context Reasoning")
# The targets of the scored answers (each spec's manifest, counted once by hand; the Sampling
# setting has the same shares, so its S_GT is the same):
# - question rephrasing: 24 easy-VQA questions, the 3 rephrasings of each scored (index 1-3);
#   Sampling: the original question, 4 samples each
# - image restyling: 6 scene images, one Grayscale item each (Sampling: 4 samples each)
# - context reasoning: 40 objects x 3 masks (Sampling: 1 mask, 4 samples each)
# Answers per group: 3, 1, 3 (All Data); 4, 4, 4 (Sampling).
TARGETS = {
    "Question Rephrasing": {"yes": 8, "no": 8, "blue": 2, "rectangle": 2, "triangle": 2, "brown": 1, "red": 1},
    "Image Restyling": {"circle": 2, "square": 2, "diamond": 1, "star": 1},
    "Context Reasoning": {"square": 18, "circle": 7, "cross": 7, "diamond": 6, "triangle": 2},
}


SPEC_FILES = {"Question Rephrasing": "question_rephrasing", "Image Restyling": "image_restyling",
              "Context Reasoning": "context_reasoning"}
PER_GROUP = {("table2", "Question Rephrasing"): 3, ("table2", "Image Restyling"): 1,
             ("table2", "Context Reasoning"): 3}


def _targets(manifest: Path) -> Counter[str]:
    """The target of each scored item in a manifest the reproduction compiled."""
    items = pl.read_parquet(manifest / "items.parquet")
    return Counter(json.loads(t).popitem()[1][0] for i, t in zip(items["item_id"], items["targets"], strict=True)
                   if not i.endswith("[index=0]"))  # question rephrasing scores the rephrasings only


def _constant_s_gt(embedder: Any, task: str) -> float:
    """S_GT of "zebra": the mean over answers of its cosine with the answer's target, x100."""
    counts = TARGETS[task]
    emb = embedder.encode(["zebra", *counts])
    cosines = emb[1:] @ emb[0]
    return 100 * float(np.average(cosines, weights=list(counts.values())))


def test_mmr3_paper_reproduces_and_its_cells_are_counted_by_hand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    output = reproduce_fresh(tmp_path, "mm_r3", monkeypatch, capsys, runs=20, files=51)
    embedder = load_embedder("minilm")

    for name in ("table2", "table2_sampling"):
        rows = {label: numbers(row) for label, row in table(output / f"{name}.csv").items()}
        assert list(rows) == ["oracle", "constant"]
        oracle, constant = rows["oracle"], rows["constant"]
        for task in TASKS:
            # the hand counts of the targets are the manifests' (groups per target)
            spec = SPEC_FILES[task] + ("" if name == "table2" else "_sampling")
            per_group = PER_GROUP.get((name, task), 1)  # Sampling: one item a group, 4 samples
            assert _targets(tmp_path / "runs" / f"oracle-{spec}.manifest") == Counter(
                {t: n * per_group for t, n in TARGETS[task].items()}), (name, task)
            single = name == "table2" and task == "Image Restyling"  # one answer a group: no pair
            # oracle: every answer is its target (substring: Acc 100; cosine 1: S_GT 100), the
            # answers of a group are one string (every pair cosine 1 > 0.7: Con 100, S_C 100);
            # O_all = harmonic mean of 100 and 100
            expected = {"Acc": 100.0, "S_GT": 100.0, "Con": 100.0, "S_C": 100.0, "O_all": 100.0}
            if single:
                expected.update(Con=None, S_C=None, O_all=None)  # n/a, and O_all with them
            for column, value in expected.items():
                cell = oracle[f"{task}/{column}"]
                assert cell == value, (name, task, column)  # exactly: identical texts have similarity 1
            # constant: "zebra" holds no target (Acc 0); S_GT its cosine with the targets; its
            # answers are one string (Con 100, S_C 100); O_all = H(S_GT / 2, 100). Cells are
            # written at the table's 2 decimals: a hand count agrees to half a unit of the last.
            s_gt = _constant_s_gt(embedder, task)
            assert 0 < s_gt < 50
            assert constant[f"{task}/Acc"] == 0.0
            assert constant[f"{task}/S_GT"] == pytest.approx(s_gt, abs=0.005 + 1e-9)
            if single:
                assert [constant[f"{task}/{c}"] for c in ("Con", "S_C", "O_all")] == [None, None, None]
            else:
                assert constant[f"{task}/Con"] == constant[f"{task}/S_C"] == 100.0
                assert constant[f"{task}/O_all"] == pytest.approx(statistics.harmonic_mean([s_gt / 2, 100.0]),
                                                                   abs=0.005 + 1e-9)

    # the n/a cells read n/a in the Markdown table, never 0 or empty
    md = (output / "table2.md").read_text()
    oracle_row = next(line for line in md.splitlines() if line.startswith("| oracle |"))
    # cells 7-11: Image Restyling's Acc, S_GT, Con, S_C, O_all
    assert oracle_row.split("|")[7:12] == [" 100.00 ", " 100.00 ", " n/a ", " n/a ", " n/a "]

    # Tables 9-11: Context Reasoning by the mask's colour, lines and shape. The oracle is right
    # and consistent under every mask (100 everywhere); "zebra" is never right (Acc 0), always
    # consistent (Con, S_C 100), and its S_GT under a mask value is its mean cosine with the
    # targets of the answers under that value (counted from the manifest's items)
    items = pl.read_parquet(tmp_path / "runs" / "constant-context_reasoning.manifest" / "items.parquet")
    for name, attribute in (("table9", "color"), ("table10", "lines"), ("table11", "shape")):
        rows = {label: numbers(row) for label, row in table(output / f"{name}.csv").items()}
        per_value: dict[str, Counter[str]] = {}
        for attrs, targets in zip(items["attrs"], items["targets"], strict=True):
            value = str(json.loads(attrs)[attribute])
            per_value.setdefault(value, Counter())[json.loads(targets).popitem()[1][0]] += 1
        assert len(per_value) == {"color": 6, "lines": 4, "shape": 2}[attribute]
        for value, counts in per_value.items():
            assert [rows["oracle"][f"{value}/{c}"] for c in ("Acc", "S_GT", "Con", "S_C", "O_all")] == [100.0] * 5
            emb = embedder.encode(["zebra", *counts])
            s_gt = 100 * float(np.average(emb[1:] @ emb[0], weights=list(counts.values())))
            constant = rows["constant"]
            assert constant[f"{value}/Acc"] == 0.0 and constant[f"{value}/Con"] == constant[f"{value}/S_C"] == 100.0
            assert constant[f"{value}/S_GT"] == pytest.approx(s_gt, abs=0.005 + 1e-9), (name, value)
            assert constant[f"{value}/O_all"] == pytest.approx(statistics.harmonic_mean([s_gt / 2, 100.0]),
                                                               abs=0.005 + 1e-9), (name, value)

    _check_model_tables(output, tmp_path)


METRICS = ("Acc", "S_GT", "Con", "S_C", "O_all")


def _check_model_tables(output: Path, runs: Path) -> None:
    """Tables 3, 4, 5, 7 and 12 and Figure 7, counted from Table 2's cells (checked by hand
    above): each lays out the same stand-in runs another way."""
    table2 = {label: numbers(row) for label, row in table(output / "table2.csv").items()}
    sampling = {label: numbers(row) for label, row in table(output / "table2_sampling.csv").items()}
    # Tables 3, 5 and 12: Table 2's rows, renamed for the paper's models, with a note per rename
    for name, renamed in (("table3", {"constant": "base", "oracle": "+ adapter"}),
                          ("table5", {"constant": "small", "oracle": "large"}),
                          ("table12", {"constant": "Adapt (Sep)", "oracle": "Adapt (joint)"})):
        rows = {label: numbers(row) for label, row in table(output / f"{name}.csv").items()}
        assert rows == {renamed[label]: cells for label, cells in table2.items()}, name
        md = (output / f"{name}.md").read_text()
        for run, label in renamed.items():
            assert f"'{label}': the rows of run '{run}'." in md, name
    # Table 4: failures only. The oracle has none (every cell n/a); every answer of "zebra" is a
    # failure, so its cells are Table 2's
    rows = {label: numbers(row) for label, row in table(output / "table4.csv").items()}
    assert set(rows["oracle"].values()) == {None}
    assert rows["constant"] == table2["constant"]
    assert "Re-scored with subset = 'failures'" in (output / "table4.md").read_text()
    # Table 7: a row per model and temperature; the stand-ins answer alike at every temperature,
    # so each row is the model's Sampling row of Table 2 (the same items, four samples each)
    header, cells = read_csv((output / "table7.csv").read_text())
    assert header[:2] == ["model", "temperature"]
    assert [(r[0], r[1]) for r in cells] == [(m, t) for m in ("oracle", "constant") for t in ("0.2", "0.7", "1.0")]
    for row in cells:
        values = {c: float(v) if v != "" else None for c, v in zip(header[2:], row[2:], strict=True)}
        assert values == sampling[row[0]], row[:2]
    for task in ("question_rephrasing", "image_restyling", "context_reasoning"):
        items = pl.read_parquet(runs / "runs" / f"oracle-{task}_temperature.manifest" / "items.parquet")
        temperatures = Counter(json.loads(a)["temperature"] for a in items["attrs"])
        assert temperatures == {0.2: len(items) // 3, 0.7: len(items) // 3, 1.0: len(items) // 3}, task
    # Figure 7: per task, the bars of Acc, Con and O_all per temperature are Table 7's cells
    table7 = {(r[0], r[1]): dict(zip(header, r, strict=True)) for r in cells}
    for short, task in (("question_rephrasing", "Question Rephrasing"), ("image_restyling", "Image Restyling"),
                        ("context_reasoning", "Context Reasoning")):
        fig_header, fig_rows = read_csv((output / f"fig7_{short}.csv").read_text())
        series = [f"{model} {column}" for model in ("oracle", "constant") for column in ("Acc", "Con", "O_all")]
        assert fig_header == ["temperature", *series]
        for row in fig_rows:
            for column, cell in zip(fig_header[1:], row[1:], strict=True):
                model, metric = column.split()
                assert cell == table7[(model, row[0])][f"{task}/{metric}"], (short, row[0], column)
        assert (output / f"fig7_{short}.png").read_bytes()[:4] == b"\x89PNG"

    _check_statistics_and_styles(output, table2)


def _check_statistics_and_styles(output: Path, table2: dict[str, dict[str, float | None]]) -> None:
    """Table 1: groups and answers per task of the bundled subset (TARGETS' counts, 3 variants a
    question and a masked object, 1 a restyled image). Tables 6 and 8, Figure 6: Grayscale only,
    so the constant's S_GT is Table 2's Image Restyling one at every resolution and style, and
    Con, S_C and O_all are n/a (one style an image: no pair)."""
    [row] = [numbers(r) for r in table(output / "table1.csv").values()]
    assert list(table(output / "table1.csv")) == ["bundled subset"]
    for task, per_group in (("Question Rephrasing", 3), ("Image Restyling", 1), ("Context Reasoning", 3)):
        groups = sum(TARGETS[task].values())
        assert (row[f"{task}/groups"], row[f"{task}/responses"]) == (groups, groups * per_group), task
    s_gt = table2["constant"]["Image Restyling/S_GT"]
    for name, values in (("table6", ("224", "640", "1024")), ("table8", ("grayscale",))):
        rows = {label: numbers(r) for label, r in table(output / f"{name}.csv").items()}
        assert list(rows["oracle"]) == [f"{v}/{c}" for v in values for c in METRICS], name
        for value in values:
            assert [rows["oracle"][f"{value}/{c}"] for c in METRICS] == [100.0, 100.0, None, None, None]
            assert [rows["constant"][f"{value}/{c}"] for c in METRICS] == [0.0, s_gt, None, None, None]
    header, cells = read_csv((output / "fig6.csv").read_text())
    assert header == ["size", "oracle Acc", "oracle S_GT", "constant Acc", "constant S_GT"]
    assert cells == [[size, "100.0", "100.0", "0.0", str(s_gt)] for size in ("224", "640", "1024")]

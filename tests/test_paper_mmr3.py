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

from benchc.runtime.embed import load_embedder
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
    output = reproduce_fresh(tmp_path, "mm_r3", monkeypatch, capsys, runs=12, files=15)
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

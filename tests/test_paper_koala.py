"""papers/koala.toml reproduces in a fresh folder from its committed answers (imported by
[run.make] `answers`), and its cells are the hand counts of the two made-up models (see
papers/koala/make_answers.py): "refuser" always answers Koala's refusal; "echo" answers each
edited item with its own expected answer, each original item "No." and each negative sample "no"."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import ROOT
from benchc.runtime.report.tables import read_csv
from support.papers import reproduce_fresh, table

# 10 runs compiled, imported and scored

CELLS = ("img_old_label_old", "img_new_label_old", "img_old_label_new", "img_new_label_new", "img_old_label_ret",
         "img_new_label_ret")
GROUPS = ("WebQA perturbed", "WebQA conflicting", "WebQA counterfactual", "VQAv2 counterfactual",
          "OK-VQA counterfactual")


def test_the_koala_paper_reproduces_and_its_cells_are_the_hand_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    output = reproduce_fresh(tmp_path, "koala", monkeypatch, capsys, runs=10, files=12)
    results = table(output / "results.csv")
    assert list(results) == ["refuser", "echo"]
    for model, row in results.items():
        for group in GROUPS:
            # the bundled file holds no original labels (the originals are derived from image names)
            assert row[f"{group}/img_old_label_old"] == row[f"{group}/img_new_label_old"] == "", (model, group)
    expected = {
        # refuser: a refusal everywhere, so label_ret is 100 on both images; label_new is Koala's
        # refusal text as a substring on VQAv2/OK-VQA (100), and WebQA's bag-of-words finds no
        # colour, shape or yes/no word in a refusal (0)
        "refuser": {"WebQA perturbed": (0, 0, 100, 100), "WebQA conflicting": (0, 0, 100, 100),
                    "WebQA counterfactual": (0, 0, 100, 100), "VQAv2 counterfactual": (100, 100, 100, 100),
                    "OK-VQA counterfactual": (100, 100, 100, 100)},
        # echo: the new label on every edited image (each of the 81 accepted perturbed answers has
        # a colour or shape word; the refusals on counterfactual and conflicting items), "No." on
        # every original image (neither the new label nor an acknowledgment)
        "echo": {"WebQA perturbed": (0, 100, 0, 0), "WebQA conflicting": (0, 0, 0, 100),
                 "WebQA counterfactual": (0, 0, 0, 100), "VQAv2 counterfactual": (0, 100, 0, 100),
                 "OK-VQA counterfactual": (0, 100, 0, 100)},
    }
    for model, groups in expected.items():
        for group, values in groups.items():
            got = tuple(float(results[model][f"{group}/{c}"]) for c in CELLS[2:])
            assert got == values, (model, group, got)
    table4 = table(output / "table4.csv")
    # negative samples: the refusal is an acknowledgment, "no" is not (count_no is off by default)
    assert {m: [float(v) for k, v in row.items() if k != "model"] for m, row in table4.items()} == {
        "refuser": [100.0] * 4, "echo": [0.0] * 4}

    _check_contextualization(output, tmp_path / "runs" / "refuser-contextualization.manifest")


def test_the_committed_answers_cover_the_bundled_items_by_hand_count() -> None:
    """Items per spec: the accepted edited items plus one original each (shared by edits of one
    image), and one negative sample per single-image counterfactual item (100 + 100 + 47)."""
    counts = {}
    for path in sorted((ROOT / "papers" / "koala" / "answers").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        counts[path.stem] = (len(rows), sum("/original/" in r["item_id"] for r in rows))
    assert counts["refuser-counterfactual"] == (536, 268)  # 268 accepted (92 VQAv2, 89 OK-VQA, 87 WebQA)
    assert counts["refuser-parametric"] == (141, 60)        # 81 accepted perturbed, 60 original images
    assert counts["refuser-source_conflict"] == (126, 41)   # 85 accepted conflicting, 41 original pairs
    assert counts["refuser-negative_samples"] == (247, 0)
    assert counts["refuser-contextualization"] == (268, 0)  # the accepted counterfactual items
    assert all(counts[f"echo-{k.split('-', 1)[1]}"] == v for k, v in counts.items() if k.startswith("refuser"))


def _check_contextualization(output: Path, manifest: Path) -> None:
    """Figure 6 with the stand-in judge (echo of len(question) % 10 + 1, the question being the
    item's prompt): per score, its counterfactual items; the refuser acknowledges every one, echo
    ("Yes.") none."""
    items = pl.read_parquet(manifest / "items.parquet")
    per_score: dict[int, int] = {}
    for prompt in items["prompt"]:
        per_score[len(prompt) % 10 + 1] = per_score.get(len(prompt) % 10 + 1, 0) + 1
    assert sum(per_score.values()) == len(items) == 268
    header, rows = read_csv((output / "fig6.csv").read_text())
    assert header == ["run", "context", "answers", "acknowledged"]
    expected = [[model, str(score), str(per_score[score]), rate] for model, rate in (("refuser", "100.0"),
                                                                                     ("echo", "0.0"))
                for score in sorted(per_score)]
    assert rows == expected
    assert "Stand-in judge" in (output / "fig6.md").read_text()
    header, rows = read_csv((output / "fig6_plot.csv").read_text())
    assert header == ["context", "refuser", "echo"]
    assert rows == [[str(score), "100.0", "0.0"] for score in sorted(per_score)]

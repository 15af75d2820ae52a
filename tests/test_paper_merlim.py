"""papers/merlim.toml reproduced in a fresh folder (its runs made from [run.make]: the bundled
specs compiled, the committed made-up answers imported) matches its recorded hashes, and its
cells are the counts made here by hand from the answers' rules (papers/merlim/answers/README.md)
and MERLIM's released annotations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SPECS
from support.papers import numbers, reproduce_fresh, table

DATA = SPECS / "merlim" / "data"
RELATIONS = {"Random Set": "rel_task_set_eval_random_v3_first25imgs.json",
             "Curated Set": "rel_task_set_eval_curated_v3_first25imgs.json"}
COUNTING_IMAGES = [724, 872, 1296, 1490, 1503, 1993, 5992]  # counting.toml's filter


def _released(name: str) -> list[dict]:
    return [item for per_image in json.loads((DATA / name).read_text()).values() for item in per_image]


def test_merlim_paper_reproduces_and_its_cells_are_counted_by_hand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    output = reproduce_fresh(tmp_path, "merlim", monkeypatch, capsys, runs=6, files=6)

    table2 = {label: numbers(row) for label, row in table(output / "table2.csv").items()}
    yes, right = table2["always-yes"], table2["originals-only"]
    for part, name in RELATIONS.items():
        items = _released(name)
        assert len(items) == 88
        # always-yes is right where MERLIM's answer is yes: 18 of 88 originals, 3 of 88 edited
        # (affirmative); 70 and 85 of 88 (negated). Both sets have these counts.
        share = {key: 100 * sum(i[key] == "yes" for i in items) / 88
                 for key in ("orig answer", "inp answer", "orig neg answer", "inp neg answer")}
        assert share == pytest.approx({"orig answer": 100 * 18 / 88, "inp answer": 100 * 3 / 88,
                                       "orig neg answer": 100 * 70 / 88, "inp neg answer": 100 * 85 / 88})
        assert yes[f"{part}/Acc_org"] == round(share["orig answer"], 2)      # 20.45
        assert yes[f"{part}/Acc_ed"] == round(share["inp answer"], 2)        # 3.41
        assert yes[f"{part}/dAcc"] == round(100 * 15 / 88, 2)                # 17.05
        assert yes[f"{part}, negated/Acc_org"] == round(share["orig neg answer"], 2)  # 79.55
        assert yes[f"{part}, negated/Acc_ed"] == round(share["inp neg answer"], 2)    # 96.59
        # originals-only: right on every original, wrong on every edited image
        assert [right[f"{part}/{c}"] for c in ("Acc_org", "Acc_ed", "dAcc")] == [100.0, 0.0, 100.0]
        assert [right[f"{part}, negated/{c}"] for c in ("Acc_org", "Acc_ed")] == [100.0, 0.0]

    counting = {label: numbers(row) for label, row in table(output / "counting.csv").items()}
    per_image = json.loads((DATA / "in_data_v3_sample50imgs.json").read_text())
    left = np.array([i["removed_obj"]["num_rem_obj"] for k in COUNTING_IMAGES for i in per_image[str(k)]])
    # 20 items: 10 with no instance left, 7 with one, 3 with four; truth original = left + 1, edited = left
    assert sorted(left.tolist()) == [0] * 10 + [1] * 7 + [4] * 3
    yes = counting["always-yes"]  # counts "1" everywhere, confirms every follow-up
    assert yes["original/MAE"] == round(19 / 20, 2)   # |1 - (left+1)| = left: 7 + 12
    assert yes["edited/MAE"] == round(19 / 20, 2)     # |1 - left|: 10 x 1 + 3 x 3
    assert yes["original/MAE_std"] == round(np.std(left), 2)
    assert yes["edited/MAE_std"] == round(np.std(np.abs(1 - left)), 2)
    assert yes["edited/dMAE"] == 0.0
    assert yes["original/follow_up"] == yes["edited/follow_up"] == 100.0
    right = counting["originals-only"]  # the original's count on both images; "No." to the edited follow-ups
    assert [right[c] for c in ("original/MAE", "original/MAE_std", "original/follow_up")] == [0.0, 0.0, 100.0]
    assert [right[c] for c in ("edited/MAE", "edited/MAE_std", "edited/dMAE", "edited/follow_up")] == [
        1.0, 0.0, 1.0, 0.0]

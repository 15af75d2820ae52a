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
from benchc.runtime.report.tables import read_csv
from support.papers import numbers, reproduce_fresh, table

DATA = SPECS / "merlim" / "data"
RELATIONS = {"Random Set": "rel_task_set_eval_random_v3_first25imgs.json",
             "Curated Set": "rel_task_set_eval_curated_v3_first25imgs.json"}
COUNTING_IMAGES = [724, 872, 1296, 1490, 1503, 1993, 5992]  # counting.toml's filter
RECOGNITION_IMAGES = ["139_0.png", "632_0.png", "724_1.png", "776_0.png", "785_0.png", "802_0.png", "872_0.png",
                      "885_0.png", "1000_0.png", "1268_0.png"]  # object_recognition.toml's filter
INSTRUCTIONS = {"List the objects that appear in the image.": 1, "Enumerate the items visible in the picture.": 2,
                "Itemize the things seen in the image.": 1, "Detail the items shown in the picture.": 2,
                "Identify the objects within the image.": 1}  # nouns of originals-only's answers


def _released(name: str) -> list[dict]:
    return [item for per_image in json.loads((DATA / name).read_text()).values() for item in per_image]


def test_merlim_paper_reproduces_and_its_cells_are_counted_by_hand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    output = reproduce_fresh(tmp_path, "merlim", monkeypatch, capsys, runs=14, files=29)

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

    # Table 3: "LLM only: yes-or-unsure" says "Yes." where MERLIM's answer is yes and "I do not know"
    # where it is no: Acc_org is always-yes's (18 of 88; negated 70 of 88), and over its yes/no
    # answers only (the paper's *) it is always right
    table3 = {label: numbers(row) for label, row in table(output / "table3.csv").items()}
    assert list(table3) == ["LLM only: always-yes", "LLM only: yes-or-unsure", "always-yes", "originals-only"]
    for part in RELATIONS:
        for model in ("LLM only: always-yes", "always-yes"):
            assert table3[model][f"{part}/Acc_org"] == table3[model][f"{part}/Acc_org_yn"] == round(100 * 18 / 88, 2)
            assert table3[model][f"{part}, negated/Acc_org"] == table3[model][f"{part}, negated/Acc_org_yn"] == round(
                100 * 70 / 88, 2)
        unsure = table3["LLM only: yes-or-unsure"]
        assert [unsure[f"{part}/Acc_org"], unsure[f"{part}, negated/Acc_org"]] == [round(100 * 18 / 88, 2),
                                                                                   round(100 * 70 / 88, 2)]
        assert unsure[f"{part}/Acc_org_yn"] == unsure[f"{part}, negated/Acc_org_yn"] == 100.0
        assert [table3["originals-only"][f"{part}{q}/Acc_org"] for q in ("", ", negated")] == [100.0, 100.0]

    # Table 1: answers per task of the bundled subsets: 10 images x 5 instructions (recognition),
    # the 88 relation questions of each set (on each image), the 20 counting items (on each image)
    assert {label: numbers(row) for label, row in table(output / "table1.csv").items()} == {"bundled subsets": {
        "Recognition, original/responses": 50.0, "Recognition, edited/responses": 50.0,
        "Relations, random/n_org": 88.0, "Relations, random/n_ed": 88.0, "Relations, curated/n_org": 88.0,
        "Relations, curated/n_ed": 88.0, "Counting, original/answers": 20.0, "Counting, edited/answers": 20.0}}

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

    _check_recognition(output)


def _check_recognition(output: Path) -> None:
    """Figures 1, 3, 4, 5: originals-only names the removed class ("A bed.", and "A zebra and a
    bed." for instructions 2 and 4) on both images; always-yes names nothing. Offline the truth
    of an original is its removed class; of an edited image, the class if an instance is left."""
    per_image = json.loads((DATA / "in_data_v3_sample50imgs.json").read_text())
    records = [next(r for r in per_image[name.split("_")[0]] if r["in_img"] == name) for name in RECOGNITION_IMAGES]
    kept = sum(r["removed_obj"]["num_rem_obj"] > 0 for r in records)
    assert (len(records), kept) == (10, 3)  # 632_0, 724_1 and 885_0 keep an instance
    header, rows = read_csv((output / "recognition.csv").read_text())
    cells = {(r[0], r[1], r[2]): dict(zip(header, r, strict=True)) for r in rows}
    for instruction, nouns in INSTRUCTIONS.items():
        precision = 100 / nouns  # one right noun of `nouns`
        f1 = 2 * precision * 100 / (precision + 100)
        original = cells[("originals-only", "original", instruction)]
        assert [float(original[c]) for c in ("P", "R", "F1", "nouns")] == [
            round(precision, 2), 100.0, round(f1, 2), float(nouns)], instruction
        # edited: right on the 3 images that keep the class; on the other 7 the class is a false
        # positive (P 0) and there is nothing to recall (left out of R and F1)
        edited = cells[("originals-only", "edited", instruction)]
        assert [float(edited[c]) for c in ("P", "R", "F1")] == [round(precision * kept / 10, 2), 100.0, round(f1, 2)]
        yes = cells[("always-yes", "original", instruction)]
        assert [float(yes[c]) for c in ("P", "R", "F1", "nouns", "unsuitable")] == [0.0, 0.0, 0.0, 0.0, 10.0]
    # "all": P over every answer, F1 the mean of the five instructions' F1, and their spread
    f1s = [2 * (100 / n) * 100 / (100 / n + 100) for n in INSTRUCTIONS.values()]
    every = cells[("originals-only", "original", "all")]
    assert float(every["P"]) == round(float(np.mean([100 / n for n in INSTRUCTIONS.values()])), 2)  # 80
    assert float(every["F1"]) == round(float(np.mean(f1s)), 2)  # 86.67
    assert float(every["F1_std"]) == round(float(np.std(f1s)), 2)  # 16.33
    # Figure 3 (F1) and Figure 4 (nouns) are those cells, per instruction, on the originals
    for name, column in (("fig3", "F1"), ("fig4", "nouns")):
        fig_header, fig_rows = read_csv((output / f"{name}.csv").read_text())
        assert fig_header == ["image/prompt", "always-yes", "originals-only"]
        for row in fig_rows:
            image, prompt = row[0].split("/", 1)
            assert image == "original"
            assert row[1:] == [cells[(model, image, prompt)][column] for model in ("always-yes", "originals-only")]
    # Figure 5: the 7 pairs whose class is gone; the class is right on the original, a
    # hallucination on the edited image (P 0)
    fig_header, fig_rows = read_csv((output / "fig5.csv").read_text())
    fig5 = {row[0]: row[1:] for row in fig_rows}
    for instruction, nouns in INSTRUCTIONS.items():
        assert [float(v) for v in fig5[f"original/{instruction}"]] == [0.0, round(100 / nouns, 2)]
        assert [float(v) for v in fig5[f"edited/{instruction}"]] == [0.0, 0.0]
    # Figure 1: recognition over the originals ("all") beside Table 2's accuracy on the originals
    fig1 = {label: numbers(row) for label, row in table(output / "fig1.csv").items()}
    table2 = {label: numbers(row) for label, row in table(output / "table2.csv").items()}
    for model in ("always-yes", "originals-only"):
        row = cells[(model, "original", "all")]
        assert [fig1[model][f"Recognition/{c}"] for c in ("P", "R", "F1")] == [float(row[c]) for c in ("P", "R", "F1")]
        for part in ("Random", "Curated"):
            assert fig1[model][f"{part}/Acc_org"] == table2[model][f"{part} Set/Acc_org"]
            assert fig1[model][f"{part}, negated/Acc_org"] == table2[model][f"{part} Set, negated/Acc_org"]
    assert (output / "fig1.png").read_bytes()[:4] == b"\x89PNG"

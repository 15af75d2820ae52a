"""MERLIM's metrics on hand-made items with hand-computed numbers (real spaCy and WordNet, loaded
once for the module), and once through compile -> run folder -> score_run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from benchc.compiler.metrics import MerlimCountingParams, MerlimRecognitionParams, MerlimRelationsParams
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem
from benchc.runtime.score.metrics.merlim import Nouns, Synonyms
from conftest import SPECS


@pytest.fixture(scope="module")
def nouns() -> Nouns:
    synonyms = Synonyms(MerlimRecognitionParams())
    return Nouns(synonyms, ["person", "bicycle", "car", "hot dog", "potted plant", "traffic light"], [])


def item(item_id: str, responses: tuple[str, ...], targets: dict, node: str = "", attrs: dict | None = None,
         group: str | None = None) -> ScoredItem:
    return ScoredItem(item_id, group or item_id.split("#")[0], attrs or {}, targets, responses, node=node)


def as_compiled(value: object) -> list[str]:
    """A target as the compiler writes it: ``[str(value)]`` (a mapping as its Python repr)."""
    return [str(value)]


def rows(name: str, params: object, items: list[ScoredItem], stages: dict | None = None) -> list[dict]:
    return METRICS.get(name).score(params, MetricInput(items, None, "m", stages=stages or {})).rows


# --- recognition ----------------------------------------------------------------------------


def test_nouns_keep_compounds_and_drop_places(nouns: Nouns) -> None:
    found = nouns.of([
        "A man riding a bicycle next to a traffic light and some ice cream on the back of the car in the street.",
        "Dog, Cat, Car, Traffic Light",
        "a hot dog and two wine glasses on a dining table, skis",
        "There are many objects.",
        "It is a beautiful scene in the living room.",
        "a group of people in the middle of the road",
    ])
    heads = [[forms[0] for forms in answer] for answer in found]
    assert heads == [["man", "bicycle", "traffic light", "ice cream", "car"],
                     ["dog", "cat", "car", "traffic light"],
                     ["hot dog", "wine glass", "dining table", "ski"],
                     [], [], ["people"]]
    assert ("wine glass", "wine glasses") in found[2]  # lemma and surface forms both match


def test_precision_recall_f1_and_instruction_bias() -> None:
    """Prompt p1: man (person, builtin synonym), bicycle, car are TPs; traffic light and ice
    cream FPs: P = 3/5, R = 3/4, F1 = 2/3. Prompt p2: an unsuitable answer (0, 0, 0) and
    'Dog, Cat, Car' against [car, dog, person]: P = R = F1 = 2/3."""
    labels = ["person", "bicycle", "car", "truck"]
    items = [
        item("a#0", ("A man riding a bicycle next to a traffic light and some ice cream on the back of the car.",),
             {"objects": labels}, attrs={"prompt": "p1"}),
        item("b#0", ("There are many objects.",), {"objects": labels}, attrs={"prompt": "p2"}),
        item("c#0", ("Dog, Cat, Car",), {"objects": ["car", "dog", "person"]}, attrs={"prompt": "p2"}),
    ]
    p1, p2, total = rows("merlim.recognition", MerlimRecognitionParams(prompt_attr="prompt"), items)
    assert (p1["prompt"], p1["P"], p1["R"], p1["nouns"], p1["unsuitable"]) == ("p1", 60.0, 75.0, 5.0, 0)
    assert p1["image"] == "all"  # a plain label list: nothing tells original and edited apart
    assert p1["F1"] == pytest.approx(200 / 3)
    assert p2["P"] == pytest.approx(100 / 3) and p2["R"] == pytest.approx(100 / 3)
    assert p2["F1"] == pytest.approx(100 / 3) and (p2["nouns"], p2["unsuitable"]) == (1.5, 1)
    assert total["prompt"] == "all" and total["responses"] == 3
    assert total["F1"] == pytest.approx(50.0) and total["F1_std"] == pytest.approx(50 / 3)  # std of 66.7, 33.3
    assert total["P"] == pytest.approx((60 + 0 + 200 / 3) / 3)
    [micro] = rows("merlim.recognition", MerlimRecognitionParams(average="micro"), items)
    assert micro["P"] == pytest.approx(100 * 5 / 8) and micro["R"] == pytest.approx(100 * 5 / 11)


def test_original_and_edited_images_read_their_own_labels() -> None:
    objects = as_compiled({"original": ["dog", "cat"], "edited": ["dog"]})
    items = [item("r#orig", ("a dog and a cat",), {"objects": objects}, node="orig", group="r"),
             item("r#ed", ("a dog and a cat",), {"objects": objects}, node="ed", group="r")]
    edited, original = rows("merlim.recognition", MerlimRecognitionParams(original=["orig"]), items)
    assert (edited["image"], edited["P"], edited["R"]) == ("edited", 50.0, 100.0)
    assert (original["image"], original["P"], original["R"]) == ("original", 100.0, 100.0)


def test_synonyms_from_wordnet_and_from_a_user_table(tmp_path: Path) -> None:
    def score(text: str, labels: list[str], **params: object) -> float:
        answer = item("x#0", (text,), {"objects": labels})
        [row] = rows("merlim.recognition", MerlimRecognitionParams(**params), [answer])
        return row["F1"]

    assert score("a bike and an automobile", ["bicycle", "car"]) == 100.0  # WordNet synsets
    assert score("a bike and an automobile", ["bicycle", "car"], wordnet="off") == 0.0
    assert score("a puppy", ["dog"]) == 0.0  # a puppy is a kind of dog, not a synonym
    assert score("a puppy", ["dog"], wordnet="hyponyms") == 100.0
    table = tmp_path / "synonyms.csv"
    table.write_text("noun,label\npuppy,dog\n")
    assert score("a puppy", ["dog"], synonyms=str(table)) == 100.0
    assert score("two people", ["person"]) == 100.0
    assert score("two people", ["person"], builtin_synonyms=False) == 0.0


# --- relations ------------------------------------------------------------------------------

ANSWERS = as_compiled({"edited": "no", "edited_neg": "yes", "original": "yes", "original_neg": "no"})


def test_relation_accuracy_affirmative_negated_original_edited() -> None:
    said = {"r1": {"asked": "No, it is not.", "negated": "Yes.", "asked_orig": "Yes", "negated_orig": "yes"},
            "r2": {"asked": "Yes", "negated": "I think so", "asked_orig": "yes", "negated_orig": "No."}}
    items = [item(f"{g}#{node}", (text,), {"answers": ANSWERS}, node=node, group=g)
             for g, answers in said.items() for node, text in answers.items()]
    params = MerlimRelationsParams(original=["asked_orig", "negated_orig"], negated=["negated", "negated_orig"])
    affirmative, negated = rows("merlim.relations", params, items)
    assert affirmative == {"question": "affirmative", "n_org": 2, "n_ed": 2, "Acc_org": 100.0, "Acc_ed": 50.0,
                           "dAcc": 50.0, "unparsed": 0, "Acc_org_yn": 100.0, "Acc_ed_yn": 50.0}
    # "I think so" is unparsed: wrong in Acc_ed, left out of Acc_ed_yn (MERLIM Table 3's *)
    assert negated == {"question": "negated", "n_org": 2, "n_ed": 2, "Acc_org": 50.0, "Acc_ed": 50.0,
                       "dAcc": 0.0, "unparsed": 1, "Acc_org_yn": 50.0, "Acc_ed_yn": 100.0}


def test_relation_roles_from_attributes_and_yes_no_anywhere() -> None:
    items = [item("r#0", ("I would say yes.",), {"answers": ANSWERS}, attrs={"img": "orig", "pol": "pos"}),
             item("r#1", ("It is no.",), {"answers": ANSWERS}, attrs={"img": "orig", "pol": "neg"})]
    params = {"image_attr": "img", "original": ["orig"], "polarity_attr": "pol", "negated": ["neg"]}
    first = rows("merlim.relations", MerlimRelationsParams(**params), items)
    anywhere = rows("merlim.relations", MerlimRelationsParams(**params, answer_parse="anywhere"), items)
    assert [r["Acc_org"] for r in first] == [0.0, 0.0] and [r["unparsed"] for r in first] == [1, 1]
    assert [r["Acc_org"] for r in anywhere] == [100.0, 100.0] and anywhere[0]["Acc_ed"] is None


# --- counting -------------------------------------------------------------------------------

COUNTS = {"c1": (3, 2), "c2": (5, 4), "c3": (2, 1), "c4": (2, 1)}
SAID = {"c1": ("3", "2"), "c2": ("5", "five books"), "c3": ("I can't tell", "1"), "c4": ("4", "4")}
FOLLOW = {"c1": ("Yes", "No"), "c2": ("yes, there are", "Yes"), "c3": ("Yes", "Yes"), "c4": ("No", "no")}


def counting_items(answers: dict[str, tuple[str, str]]) -> list[ScoredItem]:
    out = []
    for group, (orig, ed) in answers.items():
        count = as_compiled({"original": COUNTS[group][0], "edited": COUNTS[group][1]})
        out += [item(f"{group}#orig", (orig,), {"count": count}, node="orig", group=group),
                item(f"{group}#ed", (ed,), {"count": count}, node="ed", group=group)]
    return out


def test_counting_mae_std_and_follow_up_with_number_words() -> None:
    """Kept (c3 dropped: its original answer has no number): original errors 0, 0, 2; edited
    0, 1 ('five books' -> 5 vs 4), 3. Follow-ups confirm c1, c2 (original); c2 (edited)."""
    params = MerlimCountingParams(original=["orig"], follow_up_stage="follow_up")
    edited, original = rows("merlim.counting", params, counting_items(SAID),
                            {"follow_up": counting_items(FOLLOW)})
    assert (original["image"], original["answers"], original["dropped"]) == ("original", 3, 2)
    assert original["MAE"] == pytest.approx(2 / 3) and original["MAE_std"] == pytest.approx(np.std([0, 0, 2]))
    assert edited["MAE"] == pytest.approx(4 / 3) and edited["MAE_std"] == pytest.approx(np.std([0, 1, 3]))
    assert original["follow_up"] == pytest.approx(200 / 3) and edited["follow_up"] == pytest.approx(100 / 3)
    assert original["dMAE"] == edited["dMAE"] == pytest.approx(2 / 3)  # |2/3 - 4/3|


def test_counting_pairs_records_of_one_item_by_their_pair_attribute() -> None:
    """The merlim source's image_records = "both": the original and the edited image of an item
    are two records (groups) with one `pair`; a pair is dropped when either answer does not parse."""
    out = []
    for group, (orig, ed) in SAID.items():
        count = as_compiled({"original": COUNTS[group][0], "edited": COUNTS[group][1]})
        out += [item(f"{group}/original#q", (orig,), {"count": count}, attrs={"image": "original", "pair": group}),
                item(f"{group}/edited#q", (ed,), {"count": count}, attrs={"image": "edited", "pair": group})]
    params = MerlimCountingParams(image_attr="image", original=["original"])
    edited, original = rows("merlim.counting", params, out)
    assert (original["answers"], original["dropped"], edited["answers"]) == (3, 2, 3)  # c3's pair dropped
    assert original["MAE"] == pytest.approx(2 / 3) and edited["MAE"] == pytest.approx(4 / 3)


def test_counting_with_merlims_int_only_parsing_drops_both_sides() -> None:
    """int(answer) reads neither 'five books' nor "I can't tell": c2 and c3 are dropped."""
    edited, original = rows("merlim.counting", MerlimCountingParams(original=["orig"], parse="int_only"),
                            counting_items(SAID))
    assert (original["answers"], original["dropped"], original["MAE"], original["MAE_std"]) == (2, 4, 1.0, 1.0)
    assert (edited["answers"], edited["MAE"], edited["MAE_std"]) == (2, 1.5, 1.5)
    assert original["follow_up"] is None


# --- through compile and score_run ------------------------------------------------------------


def test_relations_and_counting_through_compile_and_score(tmp_path: Path) -> None:
    """The bundled curated relations (88 items, each a record per image: 176), compiled with two
    metrics and two stages; a run folder of made-up answers; score_run reads both stages and
    MERLIM's mapping targets."""
    from benchc import api
    from benchc.runtime.run.runfolder import write_run_folder
    from benchc.runtime.score.core import score_run

    overrides = ['stage=[{id="count"}, {id="follow_up", input="count"}]',
                 'metric=[{name="merlim.relations", stage="count", image_attr="image", original=["original"]}, '
                 '{name="merlim.counting", stage="count", follow_up_stage="follow_up", image_attr="image", '
                 'original=["original"]}]']
    compiled = api.compile(SPECS / "merlim" / "relationships_curated.toml", tmp_path / "m", cache_dir=tmp_path / "c",
                           store_dir=tmp_path / "s", overrides=overrides, progress=False)
    items = pl.read_parquet(compiled.manifest_dir / "items.parquet")
    responses = []
    for row in items.iter_rows(named=True):
        responses.append({"item_id": row["item_id"], "stage": "count", "sample": 0, "key": "k", "kind": "text",
                          "text": "No, 1." if row["node"] == "asked" else "1 or 2", "blob": None})
        responses.append({"item_id": row["item_id"], "stage": "follow_up", "sample": 0, "key": "k", "kind": "text",
                          "text": "Yes", "blob": None})
    lock = json.loads((compiled.manifest_dir / "lock.json").read_text())
    record = {"manifest": str(compiled.manifest_dir.resolve()), "manifest_digest": lock["manifest_digest"],
              "model": "made-up",
              "stages": [{"stage": stage, "backend": "x", "requests": items.height, "cached": 0, "ran": items.height}
                         for stage in ("count", "follow_up")]}
    write_run_folder(tmp_path / "run", pl.DataFrame(responses), record)
    relations, counting = score_run(tmp_path / "run")["metrics"]
    asked = items.filter(pl.col("node") == "asked")
    targets = [json.loads(t) for t in asked["targets"]]
    images = [json.loads(a)["image"] for a in asked["attrs"]]
    affirmative = relations["rows"][0]
    assert affirmative["question"] == "affirmative" and affirmative["n_ed"] == affirmative["n_org"] == 88
    for image, column in (("edited", "Acc_ed"), ("original", "Acc_org")):
        said_no = [eval(t["answers"][0])[image] == "no" for t, i in zip(targets, images) if i == image]
        assert affirmative[column] == pytest.approx(100 * np.mean(said_no), abs=1e-4)
    assert affirmative["dAcc"] == pytest.approx(abs(affirmative["Acc_org"] - affirmative["Acc_ed"]), abs=1e-3)
    negated = relations["rows"][1]
    assert negated["Acc_ed"] == negated["Acc_org"] == 0.0 and negated["unparsed"] == len(items) - len(targets)
    edited, original = counting["rows"]  # '1 or 2' reads as 1
    for row, image in ((edited, "edited"), (original, "original")):
        counts = [eval(json.loads(t)["count"][0])[image] for t in items["targets"]]
        assert row["image"] == image and row["answers"] == len(items) // 2
        assert row["MAE"] == pytest.approx(np.mean(np.abs(1 - np.array(counts))), abs=1e-4)
        assert row["follow_up"] == 100.0

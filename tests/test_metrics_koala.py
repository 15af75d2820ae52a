"""Koala's accuracies on hand-made items (record ids as the koala source writes them), with
hand-computed numbers; spaCy (for the bag-of-words lemmas) is loaded once for the module."""

from __future__ import annotations

import pytest

from benchc.compiler.metrics import KoalaParams
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem
from benchc.runtime.score.metrics.koala import BagOfWords, acknowledged, bow_score


@pytest.fixture(scope="module")
def bags() -> BagOfWords:
    return BagOfWords()


def item(dataset: str, kind: str, koala_id: str, answer: str, *responses: str) -> ScoredItem:
    record = f"{dataset}/{kind}/{koala_id}/{'0' * 10}"
    return ScoredItem(record, record, {}, {"answer": [answer]}, tuple(responses))


def rows(items: list[ScoredItem], **params: object) -> dict[tuple[str, str], dict]:
    result = METRICS.get("koala.accuracy").score(KoalaParams(**params), MetricInput(items, None, "m"))
    return {(r["dataset"], r["type"]): r for r in result.rows}


@pytest.mark.parametrize(("answer", "paper", "code"), [
    ("I'm sorry, I can't tell.", True, True),
    ("The Information is missing.", True, False),      # code: " information", case-sensitive
    ("The dog is on a white background.", False, True),  # code-only term
    ("Sorry.", True, True),
    ("It is red.", False, False),
    ("<RET>", True, True),
])
def test_acknowledgment_phrases_paper_and_code(answer: str, paper: bool, code: bool) -> None:
    assert acknowledged(answer, KoalaParams()) is paper
    assert acknowledged(answer, KoalaParams(phrases="code")) is code


def test_count_no_for_vqa_only() -> None:
    counting = KoalaParams(count_no=True)
    assert acknowledged("no", counting, "vqa") and acknowledged("0", counting, "okvqa")
    assert not acknowledged("no", counting, "webqa") and not acknowledged("no", KoalaParams(), "vqa")


def test_bag_of_words_paper_and_code(bags: BagOfWords) -> None:
    expected = "The center part of a Frangipani flower is orange."
    # paper: every expected colour word is in the answer; code: |E n G| / |G| over the answer's colours
    assert bow_score(expected, "It is orange and yellow.", "color", bags, "paper") == 1.0
    assert bow_score(expected, "It is orange and yellow.", "color", bags, "code") == 0.5
    assert bow_score(expected, "It is yellow.", "color", bags, "paper") == 0.0
    # number words read as digits; lemmas ('circles' -> 'circle')
    assert bow_score("There are two.", "2", "number", bags, "paper") == 1.0
    assert bow_score("a circle", "Three circles.", "shape", bags, "paper") == 1.0
    # vocabularies: Figure 10 has 'yes' among the colours, the code's domain_dict does not
    assert bow_score("yes", "yes", "color", bags, "paper") == 1.0
    assert bow_score("yes", "yes", "color", bags, "code") == 0.0


def test_accuracy_per_question_domain_in_the_details() -> None:
    items = [item("webqa", "perturbed", "q1", '"The Frangipani flower is orange."', "An orange flower.")]
    result = METRICS.get("koala.accuracy").score(KoalaParams(), MetricInput(items, None, "m"))
    per_domain = result.details["bag_of_words_accuracy_per_domain"]
    assert per_domain == {"webqa/perturbed": {"color": 100.0, "shape": 100.0}}
    # 'flower' is in Figure 10's shape vocabulary, so the shape domain matches as well
    assert result.rows[0]["accuracy"] == 100.0


def test_rows_per_dataset_and_type_with_the_parametric_rate() -> None:
    items = [
        item("webqa", "original", "q1", '"The Frangipani flower is white."', "White."),
        item("webqa", "perturbed", "q1", '"The Frangipani flower is orange."', "It is white.", "Orange!"),
        item("vqa", "original", "q2", "umbrella", "An Umbrella.", "a hat"),
        item("vqa", "counterfactual", "q2", "<RET> Sorry, I cannot determine ...", "Sorry, I cannot tell.", "a hat"),
        item("okvqa", "original", "q3", "umbrella", "an umbrella"),
    ]
    got = rows(items)
    assert got[("webqa", "original")]["accuracy"] == 100.0
    perturbed = got[("webqa", "perturbed")]
    assert (perturbed["answers"], perturbed["accuracy"], perturbed["parametric"]) == (2, 50.0, 50.0)
    assert got[("vqa", "original")]["accuracy"] == 50.0  # label as a substring, case-insensitive
    counter = got[("vqa", "counterfactual")]
    assert counter["accuracy"] == counter["acknowledged"] == 50.0 and counter["parametric"] is None
    assert got[("okvqa", "original")]["accuracy"] == 100.0
    # the code scores OK-VQA by bag-of-words on yes/no: 'umbrella' has no yes/no word
    assert rows(items, definition="code")[("okvqa", "original")]["accuracy"] == 0.0


def test_code_definition_reads_the_last_line_and_domain_attribute() -> None:
    record = "webqa/perturbed/q9/0000000000"
    answer = ScoredItem(record, record, {"domain": "shape"}, {"answer": ["It is a circle."]},
                        ("Caption: x\nQ: what shape?\ncircle",))
    [row] = METRICS.get("koala.accuracy").score(KoalaParams(definition="code", domain_attr="domain"),
                                                MetricInput([answer], None, "m")).rows
    assert row["accuracy"] == 100.0


def test_parametric_rate_is_empty_without_original_items() -> None:
    result = METRICS.get("koala.accuracy").score(
        KoalaParams(), MetricInput([item("webqa", "perturbed", "q1", "It is orange.", "orange")], None, "m"))
    row = result.rows[0]
    assert row["parametric"] is None and row["paired"] == 0 and "without an answered original item" in result.notes[-1]
    assert row["img_new_label_new"] == row["accuracy"] == 100.0 and row["img_old_label_new"] is None


def test_six_cells_as_koalas_eval_with_the_original_named_by_attribute() -> None:
    """eval.py's img_{old,new} x label_{old,new,ret}: the edited item against its original (the
    one its `original` attribute names, as the koala source's `originals` writes it)."""
    refusal = "<RET> Sorry, I cannot determine the answer as there is not enough information. <RET>"
    named = "webqa/original/q1/1111111111@perturbed"
    items = [
        ScoredItem(named, named, {}, {"answer": ['"The flower is white."']}, ("White.", "orange, sorry")),
        ScoredItem("webqa/perturbed/q1/0000000000", "webqa/perturbed/q1/0000000000", {"original": named},
                   {"answer": ['"The flower is orange."']}, ("It is white.", "Orange!")),
        item("webqa", "original", "q1", '"The flower is red."', "Red."),  # same Koala id, not the one named
        item("vqa", "original", "q2", "", "yes", "Sorry"),  # derived: label unknown
        item("vqa", "counterfactual", "q2", refusal, refusal, "a hat"),
    ]
    got = rows(items)
    p = got[("webqa", "perturbed")]
    # new answers: "It is white." (old label), "Orange!" (new); old answers: "White." (old), "orange, sorry"
    assert {c: p[c] for c in ("img_old_label_old", "img_new_label_old", "img_old_label_new", "img_new_label_new",
                              "img_old_label_ret", "img_new_label_ret")} == {
        "img_old_label_old": 50.0, "img_new_label_old": 50.0, "img_old_label_new": 50.0,
        "img_new_label_new": 50.0, "img_old_label_ret": 50.0, "img_new_label_ret": 0.0}
    assert (p["answers"], p["paired"], p["parametric"], p["accuracy"]) == (2, 2, 50.0, 50.0)
    c = got[("vqa", "counterfactual")]
    # the original has no label: label_old cells empty; label_new is the refusal as a substring (VQA)
    assert c["img_old_label_old"] is None and c["img_new_label_old"] is None and c["paired"] == 2
    assert (c["img_new_label_new"], c["img_new_label_ret"], c["img_old_label_ret"], c["img_old_label_new"]) == (
        50.0, 50.0, 50.0, 0.0)
    assert c["accuracy"] == c["img_new_label_ret"] and c["parametric"] is None
    assert got[("vqa", "original")]["accuracy"] is None  # no label to score against


def test_negative_samples_score_acknowledgments_with_count_no_opt_in() -> None:
    refusal = "<RET> Sorry, I cannot determine the answer as there is not enough information. <RET>"
    items = [item("vqa", "negative", "q1", refusal, "no"), item("vqa", "negative", "q2", refusal, "Sorry."),
             item("webqa", "negative", "q3", refusal, "no")]
    assert rows(items)[("vqa", "negative")]["accuracy"] == 50.0
    counting = rows(items, count_no=True)
    assert counting[("vqa", "negative")]["accuracy"] == 100.0 and counting[("webqa", "negative")]["accuracy"] == 0.0

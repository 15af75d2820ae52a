"""Word and character error rates (general.wer, general.cer) on hand-made items and
hand-computed counts: corpus rates, normalisation, empty answers and references, splits and
the seeded interval."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchc.compiler.metrics import METRIC_SCHEMAS, CerParams, WerParams
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem
from benchc.runtime.score.metrics.errors import lower_strip


def item(group: str, k: int, responses: str | tuple[str, ...], target: str | None, **attrs: str) -> ScoredItem:
    answers = (responses,) if isinstance(responses, str) else responses
    return ScoredItem(f"{group}#{k}", group, attrs, {} if target is None else {"text": [target]}, answers)


def score(name: str, params: WerParams | CerParams, items: list[ScoredItem]) -> tuple[list[dict], list[str]]:
    result = METRICS.get(name).score(params, MetricInput(items, None, "m"))
    return result.rows, result.notes


def wer(items: list[ScoredItem], **params: object) -> dict:
    [row], _ = score("general.wer", WerParams(target="text", **{"bootstrap": 0, **params}), items)
    return row


def test_three_deletions_of_six_reference_words() -> None:
    row = wer([item("a", 0, "the cat sat", "the cat sat on the mat")], normalize="none")
    assert row["wer"] == 50.0
    assert (row["substitutions"], row["deletions"], row["insertions"], row["hits"], row["ref_words"]) == (0, 3, 0, 3, 6)


def test_corpus_rate_is_summed_errors_over_summed_reference_words() -> None:
    """3 of 6 and 2 of 2 wrong: (3 + 2) / (6 + 2) = 62.5, not the mean of 50 and 100."""
    items = [item("a", 0, "the cat sat", "the cat sat on the mat"), item("b", 0, "bad evening", "good morning")]
    row = wer(items, normalize="none")
    assert row["wer"] == 62.5 and row["substitutions"] == 2 and row["ref_words"] == 8
    assert (row["items"], row["answers"], row["groups"]) == (2, 2, 2)


def test_insertions_can_take_the_rate_above_100() -> None:
    row = wer([item("a", 0, "yes yes yes", "yes")], normalize="none")
    assert (row["wer"], row["insertions"]) == (200.0, 2)


def test_every_sample_is_an_answer_against_the_reference() -> None:
    row = wer([item("a", 0, ("hello world", "hello"), "hello world")], normalize="none")
    assert (row["answers"], row["ref_words"], row["deletions"], row["wer"]) == (2, 4, 1, 25.0)


@pytest.mark.parametrize(("normalize", "expected"), [("whisper", 0.0), ("lower_strip", 50.0), ("none", 100.0)])
def test_normalisation_of_mr_smith(normalize: str, expected: float) -> None:
    """Whisper's normaliser spells "Mr." as "mister"; lower_strip only drops case and the dot;
    none compares "Mr." with "mister" and "Smith" with "smith"."""
    assert wer([item("a", 0, "Mr. Smith", "mister smith")], normalize=normalize)["wer"] == expected


def test_whisper_is_the_default_and_the_note_names_the_normaliser() -> None:
    assert WerParams(target="text").normalize == "whisper"
    _, notes = score("general.wer", WerParams(target="text", bootstrap=0), [item("a", 0, "hi", "hi")])
    assert any("Whisper's English text normaliser (normalize = 'whisper'" in n for n in notes)
    _, notes = score("general.wer", WerParams(target="text", normalize="none", bootstrap=0), [item("a", 0, "hi", "hi")])
    assert any("normalize = 'none'" in n for n in notes)


def test_lower_strip_is_exactly_what_the_docs_say() -> None:
    assert lower_strip("  Don't\tSTOP -- well-known, $5!  ") == "dont stop wellknown $5"


def test_an_empty_answer_is_every_reference_word_deleted_and_counted() -> None:
    row = wer([item("a", 0, "", "hello world"), item("b", 0, "hello world", "hello world")], normalize="none")
    assert (row["deletions"], row["ref_words"], row["wer"], row["empty_answers"]) == (2, 4, 50.0, 1)


def test_an_empty_reference_is_left_out_and_counted() -> None:
    """An empty target, one that Whisper's normaliser empties ("[noise]": bracketed text is
    removed), and a missing one: no denominator, so left out with a warning, never a crash."""
    items = [item("a", 0, "hello", "hello"), item("b", 0, "some words", ""), item("c", 0, "noise", "[noise]"),
             item("d", 0, "anything", None)]
    [row], notes = score("general.wer", WerParams(target="text", bootstrap=0), items)
    assert (row["items"], row["wer"], row["insertions"]) == (1, 0.0, 0)
    assert notes[0].startswith("WARNING: 3 items have an empty reference")
    result = METRICS.get("general.wer").score(WerParams(target="text", bootstrap=0), MetricInput(items, None, "m"))
    assert result.details["empty_reference"] == ["b#0", "c#0", "d#0"]


def test_a_split_with_nothing_to_score_has_no_rate() -> None:
    row = wer([item("a", 0, "x", "")])
    assert (row["wer"], row["ref_words"], row["ci_low"]) == (None, 0, None)


def test_rows_split_by_an_attribute() -> None:
    items = [item("a", 0, "the cat sat on the mat", "the cat sat on the mat", noise="clean"),
             item("a", 1, "the cat sat", "the cat sat on the mat", noise="babble"),
             item("b", 0, "good morning", "good morning", noise="clean"),
             item("b", 1, "good evening", "good morning", noise="babble")]
    rows, _ = score("general.wer", WerParams(target="text", by=["noise"], bootstrap=0), items)
    babble, clean = rows
    assert (babble["noise"], babble["wer"], babble["deletions"], babble["substitutions"]) == ("babble", 50.0, 3, 1)
    assert (clean["noise"], clean["wer"], clean["items"]) == ("clean", 0.0, 2)


def test_interval_is_seeded_and_resamples_groups() -> None:
    """Groups of 3/6 and 2/2 errors: a resample is both a (6/12), both b (2/4 -> 100%) or one
    of each (5/8); both-a is a quarter of the draws, so the 95% interval is [50, 100]."""
    items = [item("a", 0, "the cat sat", "the cat sat on the mat"), item("b", 0, "bad evening", "good morning")]
    params = WerParams(target="text", normalize="none", bootstrap=1000, seed=5)
    [row], _ = score("general.wer", params, items)
    assert score("general.wer", params, items)[0] == [row]
    assert (row["ci_low"], row["ci_high"]) == (50.0, 100.0)


def test_character_error_rate_counts_spaces() -> None:
    [row], _ = score("general.cer", CerParams(target="text", normalize="none", bootstrap=0),
                     [item("a", 0, "ab d", "ab cd")])
    assert (row["cer"], row["deletions"], row["ref_chars"]) == (20.0, 1, 5)
    [row], _ = score("general.cer", CerParams(target="text", normalize="lower_strip", bootstrap=0),
                     [item("a", 0, "Mr. Smith", "mister smith")])
    assert (row["cer"], row["deletions"], row["hits"]) == (pytest.approx(100 * 4 / 12), 4, 8)


@pytest.mark.parametrize(("name", "params", "message"), [
    ("general.wer", {}, "target"),
    ("general.wer", {"target": "text", "normalize": "nfkc"}, "'whisper', 'lower_strip' or 'none'"),
    ("general.cer", {"target": "text", "bootstrap": -1}, "greater than or equal to 0"),
])
def test_bad_params_are_refused(name: str, params: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        METRIC_SCHEMAS.get(name).model_validate(params)

"""general.direction (CheckList's DIR tests) on hand-made items: per record, the quantity at
each value of an ordered attribute against the next one; numeric and explicit orders, items
without the attribute, error rates, and parameter errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchc import api
from benchc.compiler.errors import BenchcError, SpecError
from benchc.compiler.metrics import METRIC_SCHEMAS, DirectionParams
from benchc.runtime.score.metrics import METRICS, MetricInput, MetricResult
from benchc.runtime.score.metrics.base import ScoredItem
from conftest import SPECS


def item(group: str, k: int, responses: str | tuple[str, ...], target: str, **attrs: object) -> ScoredItem:
    answers = (responses,) if isinstance(responses, str) else responses
    return ScoredItem(f"{group}#{k}", group, attrs, {"answer": [target]}, answers)


def direction(items: list[ScoredItem], **params: object) -> MetricResult:
    settings = {"over": "severity", "relation": "not_better", "target": "answer", "bootstrap": 0, **params}
    return METRICS.get("general.direction").score(DirectionParams(**settings), MetricInput(items, None, "m"))


# a: right, right, wrong as severity grows (never better: both steps hold)
# b: wrong, right, right (1 -> 2 gets better: broken; 2 -> 3 equal: holds)
SEVERITY = [item("a", 1, "dog", "dog", severity=1), item("a", 2, "dog", "dog", severity=2),
            item("a", 3, "cat", "dog", severity=3),
            item("b", 1, "cat", "dog", severity=1), item("b", 2, "dog", "dog", severity=2),
            item("b", 3, "dog", "dog", severity=3)]


def test_one_group_holds_and_one_breaks() -> None:
    result = direction(SEVERITY)
    [row] = result.rows
    assert (row["groups"], row["steps"], row["groups_hold"], row["steps_hold"]) == (2, 4, 50.0, 75.0)
    assert result.details["broken"]["all"] == [{"group": "b", "from": "1", "to": "2", "before": 0.0, "after": 1.0}]
    assert result.details["per_value"]["all"] == {"1": 50.0, "2": 100.0, "3": 50.0}
    assert "order: 1 < 2 < 3" in result.notes[-1]


def test_not_worse_reverses_which_steps_hold() -> None:
    """a: 2 -> 3 gets worse (broken); b: 1 -> 2 gets better, 2 -> 3 equal (both hold)."""
    [row] = direction(SEVERITY, relation="not_worse").rows
    assert (row["groups_hold"], row["steps_hold"]) == (50.0, 75.0)
    assert direction(SEVERITY, relation="not_worse").details["broken"]["all"][0]["group"] == "a"


def test_samples_are_pooled_and_compared_as_exact_fractions() -> None:
    """1 of 3 answers right at severity 1, 2 of 6 at severity 2: equal, so it holds both ways."""
    items = [item("g", 1, ("dog", "cat", "cat"), "dog", severity=1),
             item("g", 2, ("dog", "dog", "cat", "cat", "cat", "cat"), "dog", severity=2)]
    for relation in ("not_better", "not_worse"):
        [row] = direction(items, relation=relation).rows
        assert (row["steps"], row["groups_hold"]) == (1, 100.0)


def test_numbers_are_ordered_as_numbers_not_as_text() -> None:
    """Severity 10 after 2 (as text "10" < "2"): right at 2, wrong at 10 holds not_better."""
    items = [item("g", 2, "dog", "dog", severity="2"), item("g", 10, "cat", "dog", severity="10")]
    result = direction(items)
    assert result.rows[0]["groups_hold"] == 100.0 and "order: 2 < 10" in result.notes[-1]


def test_an_explicit_order() -> None:
    items = [item("g", 0, "dog", "dog", level="low"), item("g", 1, "dog", "dog", level="mid"),
             item("g", 2, "cat", "dog", level="high")]
    [row] = direction(items, over="level", order=["low", "mid", "high"]).rows
    assert (row["steps"], row["groups_hold"]) == (2, 100.0)
    [row] = direction(items, over="level", order=["high", "mid", "low"]).rows  # wrong -> right: better
    assert (row["groups_hold"], row["steps_hold"]) == (0.0, 50.0)


def test_values_outside_the_order_are_named() -> None:
    items = [item("g", 0, "dog", "dog", level="low"), item("g", 1, "dog", "dog", level="extreme")]
    with pytest.raises(BenchcError, match="`order` does not list: 'extreme'"):
        direction(items, over="level", order=["low", "mid", "high"])
    with pytest.raises(BenchcError, match="not numbers: 'extreme', 'low'"):
        direction(items, over="level")


def test_items_without_the_attribute_and_single_value_groups_are_counted() -> None:
    items = [*SEVERITY, item("c", 0, "dog", "dog"), item("d", 1, "dog", "dog", severity=1)]
    result = direction(items)
    [row] = result.rows
    assert (row["items"], row["groups"], row["groups_hold"]) == (7, 2, 50.0)
    assert result.notes[0] == "WARNING: 1 items have no 'severity' and are left out."
    assert result.notes[1].startswith("1 groups have fewer than two values of 'severity'")


def test_word_error_rate_must_not_get_worse_as_snr_grows() -> None:
    """a: WER 50 at 10 dB, 0 at 30 dB (better: holds); b: 0 at 10 dB, 50 at 30 dB (worse: broken)."""
    ref = "the cat sat on the mat"
    items = [item("a", 0, "the cat sat", ref, snr_db=10), item("a", 1, ref, ref, snr_db=30),
             item("b", 0, ref, ref, snr_db=10), item("b", 1, "the cat sat", ref, snr_db=30)]
    result = direction(items, over="snr_db", relation="not_worse", quantity="wer", normalize="none")
    assert result.rows[0]["groups_hold"] == 50.0
    assert result.details["broken"]["all"] == [{"group": "b", "from": "10", "to": "30", "before": 0.0, "after": 0.5}]
    assert result.details["per_value"]["all"] == {"10": 25.0, "30": 25.0}
    assert "normalize = 'none'" in result.notes[-1]


def test_rows_by_an_attribute_and_a_seeded_interval() -> None:
    items = [item(g, s, "dog" if ok else "cat", "dog", severity=s, kind=g[0])
             for g, oks in {"x1": (1, 0), "x2": (0, 1), "x3": (1, 1), "y1": (1, 1)}.items()
             for s, ok in zip((1, 2), oks)]
    params = {"by": ["kind"], "bootstrap": 1000, "seed": 3}
    x, y = direction(items, **params).rows
    assert (x["kind"], x["groups"], x["groups_hold"]) == ("x", 3, pytest.approx(200 / 3))
    assert (y["kind"], y["groups_hold"], y["ci_low"], y["ci_high"]) == ("y", 100.0, 100.0, 100.0)
    assert direction(items, **params).rows == [x, y]  # same seed, same interval
    assert x["ci_low"] <= x["groups_hold"] <= x["ci_high"]


@pytest.mark.parametrize(("params", "message"), [
    ({"over": "s", "relation": "monotone", "target": "a"}, "'not_better' or 'not_worse'"),
    ({"over": "s", "target": "a"}, "relation"),
    ({"over": "s", "relation": "not_better", "target": "a", "quantity": "bleu"}, "'correct', 'wer' or 'cer'"),
    ({"over": "s", "relation": "not_better", "target": "a", "order": [1, 2, "1"]}, "names a value twice"),
    ({"over": "s", "relation": "not_better", "target": "a", "order": [1]}, "at least 2 items"),
])
def test_bad_params_are_refused(params: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        METRIC_SCHEMAS.get("general.direction").model_validate(params)


def test_a_misspelt_relation_is_reported_with_its_key_and_a_suggestion() -> None:
    with pytest.raises(SpecError) as caught:
        api.validate(SPECS / "merlim" / "relationships_curated.toml", overrides=[
            'metric=[{name="general.direction", over="severity", relation="not_beter", target="answer"}]'])
    text = str(caught.value)
    assert "metric[0].relation" in text and "did you mean 'not_better'" in text

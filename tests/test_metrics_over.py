"""`over` and `reference` as users write them (issue 25 item 7): items without the attribute are
left out and counted, not taken for perturbations; `reference` takes the attribute's own type."""

from __future__ import annotations

from typing import Any

import pytest

from benchc.compiler.metrics import ConsistencyParams, FlipRateParams
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem


def item(group: str, k: int, response: str, **attrs: Any) -> ScoredItem:
    return ScoredItem(f"{group}#{k}", group, attrs, {"answer": ["Paris"]}, (response,))


def score(name: str, params: object, items: list[ScoredItem]) -> tuple[list[dict], list[str]]:
    result = METRICS.get(name).score(params, MetricInput(items, None, "m"))
    return result.rows, result.notes


# g: the reference (severity 0), a variant that agrees, one that does not, and an item of the
# record that has no severity at all (e.g. a question asked in another stage of the spec)
ITEMS = [item("g", 0, "Paris", severity=0), item("g", 1, "Paris", severity=1), item("g", 2, "Rome", severity=2),
         item("g", 3, "Berlin"),
         item("h", 0, "Paris", severity=0), item("h", 1, "Paris", severity=2)]


def test_items_without_the_attribute_are_left_out_and_counted() -> None:
    [row], notes = score("general.flip_rate", FlipRateParams(over="severity", reference=0, bootstrap=0), ITEMS)
    assert (row["comparisons"], row["flip_rate"]) == (3, pytest.approx(100 / 3))  # g#3 is not a perturbation
    assert any("1 item(s) have no attribute 'severity' and are left out (e.g. g#3)" in n for n in notes)
    [row], notes = score("general.consistency", ConsistencyParams(over="severity", reference=0, bootstrap=0), ITEMS)
    assert (row["pairs"], row["holds"]) == (3, pytest.approx(200 / 3))
    assert any("left out" in n for n in notes)


def test_reference_takes_the_attributes_own_type() -> None:
    """An integer attribute's reference is written as an integer (it was refused as not a
    string); 0.0 is the number 0, and "0" written as text still finds it."""
    for reference in (0, 0.0, "0"):
        [row], _ = score("general.flip_rate", FlipRateParams(over="severity", reference=reference, bootstrap=0), ITEMS)
        assert row["comparisons"] == 3, reference
    found, notes = score("general.flip_rate", FlipRateParams(over="severity", reference=True, bootstrap=0), ITEMS)
    assert all(r["comparisons"] == 0 for r in found)  # true is not 0: a boolean is not a number here
    assert any("0 groups have exactly one" in n for n in notes)
    with pytest.raises(ValueError):
        FlipRateParams(over="severity", reference=[0])


def test_without_items_lacking_the_attribute_there_is_no_note() -> None:
    _, notes = score("general.flip_rate", FlipRateParams(over="severity", reference=0, bootstrap=0), ITEMS[:3])
    assert not any("left out" in n for n in notes)

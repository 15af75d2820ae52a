"""Variant paths name grid values, never positions (manifest schema 2): distinct grid points get
distinct segments, a segment never holds the path's own separators, and inserting a value into a
grid leaves every other variant's path as it was."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from benchc.compiler.canonical import canonical_json
from benchc.compiler.expand import variant_segment
from benchc.compiler.resolve import Sweep

SCALARS = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=32),
                    st.booleans(), st.text(max_size=12))
SEPARATORS = set("/[],=@# ")


def _points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return Sweep({}, grid, {}).grid_points()


@given(st.lists(SCALARS, min_size=1, max_size=8, unique_by=canonical_json))
def test_distinct_values_give_distinct_segments(values: list[Any]) -> None:
    segments = {variant_segment("node", {"p": v}, None) for v in values}
    assert len(segments) == len(values)


@given(SCALARS)
def test_a_segment_holds_no_separator_inside_its_values(value: Any) -> None:
    segment = variant_segment("node", {"p": value}, None)
    inner = segment[len("node[p="):-1]
    assert not (set(inner) & SEPARATORS)


def test_segments_read_as_the_values() -> None:
    assert variant_segment("gray", {}, None) == "gray"
    assert variant_segment("rotated", {"angle": 90}, None) == "rotated[angle=90]"
    assert variant_segment("noisy", {"sigma": 2.5, "kind": "gauss"}, 1) == "noisy[kind=gauss,sigma=2.5]@1"
    assert variant_segment("q", {"index": "90"}, None) != variant_segment("q", {"index": 90}, None)
    assert variant_segment("t", {"template": "a b/c"}, None) == "t[template=a%20b%2Fc]"


@given(st.lists(st.integers(0, 1000), min_size=1, max_size=6, unique=True), st.integers(0, 1000), st.data())
def test_inserting_a_grid_value_keeps_every_other_path(values: list[int], extra: int, data: st.DataObject) -> None:
    if extra in values:
        return
    at = data.draw(st.integers(0, len(values)))
    before = {variant_segment("n", p, None) for p in _points({"v": values, "w": ["a", "b"]})}
    after = {variant_segment("n", p, None)
             for p in _points({"v": [*values[:at], extra, *values[at:]], "w": ["a", "b"]})}
    assert before <= after and len(after - before) == 2

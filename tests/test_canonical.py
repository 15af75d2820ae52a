"""The one serializer and the one digest: golden values pin the hash recipe."""

from __future__ import annotations

import json
import math
from types import MappingProxyType

import pytest
from hypothesis import given, strategies as st

from benchc.compiler.canonical import (HASH_RECIPE_VERSION, NotCanonicalError, _normalise, canonical_json,
                                      digest)

# Changing any of these means every benchmark hash changes: bump HASH_RECIPE_VERSION and add
# the new values as a new version entry instead of editing these.
GOLDEN = {
    1: [
        ({}, "381ee4ef3d6e6a97d6ca2f5ebb1e78946d04d45d2e4e2695e6b376e4087c8348"),
        ({"kind": "node", "op": "x", "version": "1.0.0", "params": {"a": 1}, "inputs": ["k"], "seed": 7},
         "534add29d665c79c4865829b9846d64aab3fa58f143f9714df0d6b5bc5b4f4fe"),
    ],
    2: [
        ({}, "84b725e2aa5dc23db0cd5922ca5954b4cfb44e96499d5481280ff95c1b31ce8f"),
        ({"kind": "node", "op": "x", "version": "1.0.0", "params": {"a": 1}, "inputs": ["k"], "seed": 7},
         "cfc1da9379731373e3ee381be95809e06f9f20c1dea56f582341a4437d1a2c8f"),
    ],
}


def test_recipe_version_is_pinned_by_golden_digests() -> None:
    assert HASH_RECIPE_VERSION in GOLDEN, "new recipe version: add its golden digests"
    for value, expected in GOLDEN[HASH_RECIPE_VERSION]:
        assert digest(value) == expected


def test_canonical_form_is_sorted_and_compact() -> None:
    assert canonical_json({"b": 1, "a": [1.5, "x", None, True]}) == '{"a":[1.5,"x",null,true],"b":1}'
    assert canonical_json({"é": "ü"}) == '{"é":"ü"}'


def test_int_and_float_are_distinct() -> None:
    assert digest({"x": 1}) != digest({"x": 1.0})


@pytest.mark.parametrize("bad", [math.nan, math.inf, {1: "a"}, {"s": {1, 2}}, b"bytes", object()])
def test_values_without_canonical_form_are_refused(bad: object) -> None:
    with pytest.raises(NotCanonicalError):
        canonical_json(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_canonical_json_round_trips(value: object) -> None:
    assert json.loads(canonical_json(value)) == value


class _Key(str):
    pass


class _Count(int):
    pass


# what canonical_json meets besides plain JSON: tuples, str/int subclasses, other Mappings, bad values
odd_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3) | st.builds(_Key, st.text(max_size=3))
    | st.builds(_Count, st.integers()) | st.just(b"x") | st.just({1, 2}),
    lambda children: (st.lists(children, max_size=3) | st.lists(children, max_size=3).map(tuple)
                      | st.dictionaries(st.text(max_size=3), children, max_size=3)
                      | st.dictionaries(st.text(max_size=3), children, max_size=3).map(MappingProxyType)
                      | st.dictionaries(st.integers(0, 3), children, min_size=1, max_size=2)),
    max_leaves=12,
)


def _general_walk(value: object) -> str:
    """canonical_json as it was written before the fast walk: the path-naming walk alone."""
    return json.dumps(_normalise(value, "$"), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


@given(odd_values)
def test_the_fast_walk_gives_the_general_walks_text_and_errors(value: object) -> None:
    try:
        expected: object = _general_walk(value)
    except NotCanonicalError as exc:
        expected = f"error: {exc}"
    try:
        got: object = canonical_json(value)
    except NotCanonicalError as exc:
        got = f"error: {exc}"
    assert got == expected


def test_an_error_names_the_bad_part_however_deep() -> None:
    with pytest.raises(NotCanonicalError, match=r"^\$\.a\[1\]\.b: non-finite float nan"):
        canonical_json({"a": [1, {"b": math.nan}]})
    with pytest.raises(NotCanonicalError, match=r"^\$\.a\[0\]: set has no canonical JSON form"):
        canonical_json({"a": ({1},)})


@given(st.dictionaries(st.text(max_size=6), st.integers(), max_size=8), st.randoms())
def test_digest_ignores_key_order(mapping: dict[str, int], rnd) -> None:
    items = list(mapping.items())
    rnd.shuffle(items)
    assert digest(dict(items)) == digest(mapping)


def test_palette_images_with_other_palettes_are_other_images() -> None:
    from PIL import Image

    from benchc.compiler.media import image_identity

    first = Image.new("P", (4, 4), 0)
    first.putpalette([255, 0, 0] * 256)
    second = first.copy()
    second.putpalette([0, 0, 255] * 256)
    assert first.tobytes() == second.tobytes()
    assert image_identity(first) != image_identity(second)

"""docs/reference.md is generated from the registries; it must match the code."""

from __future__ import annotations

from benchc.reference import REFERENCE, render


def test_committed_reference_matches_the_registries() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == render(), \
        "docs/reference.md is stale: run `python -m benchc.reference --write`"


def test_every_op_and_source_is_documented() -> None:
    from benchc.compiler.ops import OPS
    from benchc.compiler.sources import SOURCES

    text = render()
    for name in [*OPS, *SOURCES]:
        assert f"### `{name}`" in text

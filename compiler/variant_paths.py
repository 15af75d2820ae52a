"""Variant paths: how the outputs of a node for one record are named (``rotated[angle=90]``,
``styled[style=candy]/masked@1``). A path names an item and seeds its random choices, so it is
made from the node ids and grid values, never from positions.

Its own module because both the expansion of nodes (``expand.py``) and the settings of a
``[generation]`` or template sweep (``settings.py``) add segments to a path.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from .canonical import canonical_json


PATH_SAFE = "+:*'()!$;"
"""Characters a grid value keeps in a variant path besides letters, digits and ``_.-~``; the
path's own separators (``/ [ ] , = @ #``), spaces and the rest are percent-encoded."""


def _segment_value(value: Any) -> str:
    """A grid value as it appears in a variant path: a string as itself (as JSON when it would
    read as a number or boolean, so "90" and 90 stay apart), anything else as canonical JSON."""
    text = canonical_json(value)
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            text = value
    return quote(text, safe=PATH_SAFE)


def variant_segment(node_id: str, point: dict[str, Any], repeat: int | None) -> str:
    """One node's part of a variant path, named by the node and the grid values of the
    variant, never by its position in the grid: ``rotated[angle=90]``, ``noisy[sigma=5]@2``
    (the third repeat), ``gray`` (an unswept node). Inserting a grid value therefore adds
    variants and leaves every other variant's path (hence id and seed) as it was."""
    segment = node_id
    if point:
        segment += "[" + ",".join(f"{name}={_segment_value(point[name])}" for name in sorted(point)) + "]"
    if repeat is not None:
        segment += f"@{repeat}"
    return segment

"""Each item's own run settings. A spec that sweeps ``[generation]`` (``compiler/settings.py``)
gives every item its settings as attributes; a run asks each item with them. A backend holds one
``Generation`` (``self.generation``, read when it answers and in its fingerprint), so a stage's
items are answered in groups of one setting each, by a copy of the stage's backend that holds
that setting and shares everything it loaded (weights, processor, engine). Without sweeps there
is one group: the stage's backend and every item, as before.
"""

from __future__ import annotations

import copy
import json

import polars as pl

from benchc.compiler.canonical import canonical_json
from benchc.compiler.spec.models import Generation, Spec

from ..backends import Backend


def setting_groups(spec: Spec, items: pl.DataFrame) -> list[tuple[Generation, pl.DataFrame]]:
    """The items of each distinct setting, in the order the settings first occur in ``items``."""
    if not spec.generation.sweeps:
        return [(spec.generation, items)]
    found: dict[str, tuple[Generation, list[int]]] = {}
    for index, attrs in enumerate(items.get_column("attrs").to_list()):
        generation = spec.generation.for_item(json.loads(attrs))
        key = canonical_json(generation.model_dump(mode="json"))
        found.setdefault(key, (generation, []))[1].append(index)
    return [(generation, items[rows]) for generation, rows in found.values()]


def backend_for(backend: Backend, generation: Generation) -> Backend:
    """``backend`` answering with ``generation``: itself when it already does, else a shallow copy
    holding ``generation`` (its fingerprint and answers follow it) that shares what ``backend``
    loaded (``prepare`` ran on ``backend`` first)."""
    if generation == backend.generation:
        return backend
    variant = copy.copy(backend)
    variant.generation = generation
    return variant

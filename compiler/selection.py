"""``[select]`` by its kind: baseline models' consistency (``select_hard.py``) or the text's own
difficulty (``select_text.py``). The compile calls these two functions only."""

from __future__ import annotations

from typing import Any

from .cas import ContentStore
from .model_steps import ModelSteps
from .resolve import ResolvedSelect, ResolvedTextSelect
from .select_hard import Selection, select_hard
from .select_hard import pin as pin_models
from .select_text import TextSelection, select_text
from .select_text import pin as pin_text
from .values import Record


def pin(select: ResolvedSelect | ResolvedTextSelect, models: ModelSteps) -> dict[str, Any]:
    """What the selection depends on beyond the spec, before any work (memo key and lock)."""
    if isinstance(select, ResolvedTextSelect):
        return pin_text(select, models)
    return pin_models(select, models)


def run(select: ResolvedSelect | ResolvedTextSelect, records: list[Record], spec_seed: int,
        store: ContentStore, workers: int, models: ModelSteps) -> Selection | TextSelection:
    if isinstance(select, ResolvedTextSelect):
        return select_text(select, records, spec_seed, store, workers, models)
    return select_hard(select, records, spec_seed, store, workers, models)

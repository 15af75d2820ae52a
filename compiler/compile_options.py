"""``CompileOptions``, what a compile is told besides its spec (cache, data roots, workers, the
model client, scale limits, progress), and ``data_roots``, the folders a spec may read files from.

Its own module because the stages that read other specs before a compile (``disjoint_from.py``)
take the same options as the compile (``compile.py``) that runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..defaults import DEFAULT_CACHE
from .expand import Progress
from .model_requests import ModelClient
from .spec.parse import LoadedSpec


@dataclass
class CompileOptions:
    """What a compile is told besides its spec."""

    cache_dir: Path = DEFAULT_CACHE
    data_roots: list[Path] = field(default_factory=list)
    workers: int = 1
    overrides: list[str] = field(default_factory=list)
    use_memo: bool = True
    model_client: ModelClient | None = None
    """Answers model-backed nodes (see ``model_steps``); None refuses specs that have them."""
    max_items: int | None = None
    """Refuse a compile estimated above this many items (None: $BENCHC_MAX_ITEMS, else
    DEFAULT_MAX_ITEMS); see ``estimate_scale``."""
    max_output_bytes: int | None = None
    """Refuse a compile whose op outputs are estimated above this many bytes (None:
    $BENCHC_MAX_OUTPUT_GB gigabytes, else DEFAULT_MAX_OUTPUT_BYTES)."""
    notify: Callable[[str], None] | None = None
    """Where the scale estimate of a large compile is said before work starts (None: stderr)."""
    progress: Progress | None = None
    """Told (node id, op tasks done, tasks of the node) as op tasks finish (a progress bar)."""


def data_roots(loaded: LoadedSpec, options: CompileOptions) -> list[Path]:
    """Where a spec may read files: its own folder, then each --data-root."""
    return [loaded.path.resolve().parent, *(Path(r).resolve() for r in options.data_roots)]

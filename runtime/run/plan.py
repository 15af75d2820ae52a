"""``benchc plan`` (and, once wired, ``benchc run --plan``): how many requests of a run are
already in the response store and how many a run would send, per stage and backend, without
sending any.

The requests are built exactly as ``benchc run`` builds them (``runtime.run.stage_requests``,
``stage_backend``, ``make_backend`` fingerprints) and looked up with ``ResponseStore.missing``,
so the plan's counts are the run's ``cached``/``run`` counts. A later stage's requests are
built from the earlier stage's stored answers; for an item whose earlier answer is not stored
yet the request cannot be known before the earlier stage runs, and is counted as ``unknown``.

Request keys hold no spec version (backend fingerprint, task, generation settings, rendered
prompt, media hashes, sample), so after a version bump the items that did not change are
planned as cached and only the changed ones run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..backends import make_backend
from .overrides import check_backend_overrides
from .core import RunOptions, stage_backend, stage_requests
from .runfolder import manifest_items, open_manifest
from .store import ResponseStore, StoredResponse


@dataclass(frozen=True)
class StagePlan:
    stage: str
    backend: str
    requests: int
    """Distinct requests known now (as ``benchc run`` counts them)."""
    cached: int
    to_run: int
    unknown: int = 0
    """(item, sample) pairs whose request depends on an earlier answer not stored yet."""
    waits_on: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        text = f"{self.stage}: {self.requests} requests to {self.backend} ({self.cached} cached, {self.to_run} to run)"
        if self.unknown:
            text += (f"; {self.unknown} more unknown until stage {self.waits_on!r} has run "
                     "(their prompts are built from its answers)")
        return text


def plan_manifest(manifest_dir: Path, options: RunOptions) -> list[StagePlan]:
    """The plan of ``benchc run manifest_dir`` with ``options``; sends nothing, writes nothing."""
    manifest, spec = open_manifest(Path(manifest_dir))
    check_backend_overrides(options.backends, spec.stage)
    items = manifest_items(manifest)
    backends = {s.id: make_backend(stage_backend(s, options), spec.generation, s.task) for s in spec.stage}
    store = ResponseStore(options.store_dir) if Path(options.store_dir).is_dir() else _EmptyStore()
    try:
        return _plan_stages(spec, items, backends, store, options)
    finally:
        store.close()


class _EmptyStore:
    """A store folder that does not exist yet holds nothing; the plan does not create it."""

    def missing(self, keys: Any) -> list[str]:
        return list(dict.fromkeys(keys))

    def get_many(self, keys: Any) -> dict[str, StoredResponse]:
        return {}

    def close(self) -> None:
        pass


def _plan_stages(spec: Any, items: Any, backends: dict[str, Any], store: ResponseStore | _EmptyStore,
                 options: RunOptions) -> list[StagePlan]:
    plans: list[StagePlan] = []
    answers: dict[str, dict[tuple[str, int], StoredResponse]] = {}
    pairs: dict[str, int] = {}  # stage -> (item, sample) pairs it will have, known or not
    for stage in spec.stage:
        backend = backends[stage.id]
        previous = None if stage.input == "prompt" else answers[stage.input]
        requests = {pair: request for _, part in stage_requests(stage, spec, items, backend, previous,
                                                                 options.text_only)
                    for pair, request in part.items()}
        unique = {r.key: r for r in requests.values()}
        missing = set(store.missing(unique))
        stored = store.get_many(k for k in unique if k not in missing)
        answers[stage.id] = {pair: stored[r.key] for pair, r in requests.items() if r.key in stored}
        pairs[stage.id] = len(requests) if previous is None else pairs[stage.input]
        unknown = pairs[stage.id] - len(requests)
        plans.append(StagePlan(stage.id, str(backend.spec), len(unique), len(unique) - len(missing), len(missing),
                               unknown, _first_unanswered(stage, spec, plans) if unknown else None))
    return plans


def _first_unanswered(stage: Any, spec: Any, plans: list[StagePlan]) -> str:
    """The earliest stage in ``stage``'s input chain that still has requests to run."""
    by_id = {p.stage: p for p in plans}
    inputs = {s.id: s.input for s in spec.stage}
    chain, current = [], stage.input
    while current in by_id:
        chain.append(current)
        current = inputs.get(current, "prompt")
    for stage_id in reversed(chain):
        if by_id[stage_id].to_run or by_id[stage_id].unknown:
            return stage_id
    return stage.input

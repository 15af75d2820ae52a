"""What the ``hf`` backend's collaborators (``hf_prefix``, ``hf_captioners``) use of it once its
model is loaded: one typed interface of public names, which ``hf.HFVision`` satisfies."""

from __future__ import annotations

from typing import Any, Protocol

from .base import Request


class LoadedModel(Protocol):
    """A loaded model with its processor and the backend's prompt, input and generation rules."""

    torch: Any
    """The torch module."""
    device: Any
    """The torch device the model runs on."""
    model: Any
    processor: Any
    """The processor (or, for captioners, ``hf_captioners.CaptionerParts``; for text-only
    models, the tokenizer)."""
    tokenizer: Any
    family: str
    """``config.model_type`` of the folder."""
    tokenizer_lock: Any
    """Held while the tokenizer (or processor) encodes or decodes (see ``hf.HFVision``)."""

    def check_images(self, request: Request, n_images: int) -> None:
        """Refuse, before any generation, a request with images the model cannot take."""
        ...

    def prompt_text(self, request: Request, n_images: int) -> str:
        """The request's prompt as the family takes it (chat template, prompt form, or plain)."""
        ...

    def to_device(self, value: Any) -> Any:
        """A tensor moved to the model's device (floating-point ones also to its dtype)."""
        ...

    def decode_rows(self, token_rows: Any) -> list[str]:
        """Each row of new tokens as the answer's text."""
        ...

    def generate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``generate`` for the spec's generation settings."""
        ...

    def run_generate(self, inputs: dict[str, Any], seed: int | None, kwargs: dict[str, Any] | None = None) -> Any:
        """``generate`` on tensors already on the device; ``seed`` seeds this call alone."""
        ...

"""Processors for the ``hf`` backend where torchvision is missing (as on these CPU machines).

Processors with a video part (Qwen2-VL, Qwen2.5-VL, SmolVLM2) need torchvision for it even for
images, and transformers 5.x's image processors default to their torchvision form. When
``AutoProcessor`` fails for want of torchvision, the family's processor is built here from the
folder's PIL image processor, tokenizer and processor settings, with a stand-in for the video
part; requests carry no videos, so the answers are those of the full processor with the same
image processor.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.hf_pil import pil_image_processor

__all__ = ["image_only_processor", "missing_module", "needs_torchvision", "pil_image_processor"]


def missing_module(exc: BaseException) -> str:
    """The module an import error (or one of its causes) could not find, else 'a package'."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name and "." not in seen.name:
            return seen.name
        seen = seen.__cause__ or seen.__context__
    return "a package"


class _NoVideoProcessor:
    """Stands in for a processor's video part where torchvision (which it needs) is missing:
    requests carry no videos, and chat templates read only these two settings from it."""

    num_frames = None
    fps = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise BackendError(Problem("hf: this processor's video part needs torchvision, which is not installed"))


def image_only_processor(path: Path, config: Any) -> Any:
    """The family's processor, built from the folder's PIL image processor, tokenizer and
    processor settings, with a stand-in for its video processor where it has one (which needs
    torchvision even for images)."""
    from transformers import AutoTokenizer
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING

    base = PROCESSOR_MAPPING[type(config)]
    parameters = inspect.signature(base.__init__).parameters
    has_video = "video_processor" in parameters

    class ImageOnly(base):  # type: ignore[misc, valid-type]
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name == "video_processor" and isinstance(argument, _NoVideoProcessor):
                return _NoVideoProcessor
            return super().check_argument_for_proper_class(argument_name, argument)

        def to_dict(self) -> dict[str, Any]:  # the stand-in has no settings to save or print
            return {k: v for k, v in super().to_dict().items() if k != "video_processor"}

    ImageOnly.__name__ = ImageOnly.__qualname__ = base.__name__
    image_processor = pil_image_processor(path, config.model_type)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    settings, _ = base.get_processor_dict(path, local_files_only=True)
    settings = {k: v for k, v in settings.items()
                if k in parameters and k not in ("self", "image_processor", "tokenizer", "video_processor")}
    if "chat_template" in parameters and not settings.get("chat_template"):
        settings["chat_template"] = tokenizer.chat_template
    if has_video:
        settings["video_processor"] = _NoVideoProcessor()
    return ImageOnly(image_processor=image_processor, tokenizer=tokenizer, **settings)


def needs_torchvision(exc: Exception) -> bool:
    """Whether ``AutoProcessor`` failed for want of torchvision: an ImportError, or transformers
    5.x's ValueError when no backend of an image processor imports (it finds the PIL one
    unavailable too, through the placeholder described in ``pil_image_processor``)."""
    return isinstance(exc, ImportError) or "Missing optional dependencies: torchvision" in str(exc)

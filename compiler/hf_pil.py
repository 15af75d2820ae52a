"""Image processors in their PIL form, which need no torchvision (these CPU machines have none;
transformers 5.x, which the GPU machines run, defaults to the torchvision form and refuses to
build it without). Used by the ops that read a pretrained model (compiler/ops/_pretrained.py)
and by the runtime's transformers backends, so both sides get the same pixels either way."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

PROCESSOR_FAMILY = {"clip_vision_model": "clip"}
"""Model types whose image processor is another family's (a CLIP vision tower's is CLIP's)."""


def pil_image_processor(path: Path, model_type: str) -> Any:
    """The folder's image processor in its PIL form, which needs no torchvision. transformers
    5.x keeps it as ``<Family>ImageProcessorPil`` in the family's own module, and its top-level
    names (``transformers.AutoImageProcessor``, ``transformers.<Family>ImageProcessorPil``) are
    lazy-import placeholders that demand torchvision, so both are imported from their modules
    here. In 4.x the plain class is the PIL one."""
    from transformers.models.auto.image_processing_auto import AutoImageProcessor

    family = PROCESSOR_FAMILY.get(model_type, model_type)
    try:
        module = importlib.import_module(f"transformers.models.{family}.image_processing_pil_{family}")
    except ModuleNotFoundError:  # 4.x, or a family that reuses another's processor (Qwen2.5-VL)
        return AutoImageProcessor.from_pretrained(  # type: ignore[no-untyped-call]  # untyped in transformers
            path, local_files_only=True, use_fast=False)
    pil_class = next(c for name, c in vars(module).items() if name.endswith("ImageProcessorPil"))
    return pil_class.from_pretrained(path, local_files_only=True)

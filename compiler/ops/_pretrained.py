"""Pretrained transformers models that ops read from the user's files, pinned by content.

A model is a folder written by ``save_pretrained`` (config.json, weights, preprocessor config)
inside the data roots, named by an op's ``params.model`` and pinned by ``params.sha256``: the
sha256 of the folder listing of :func:`benchc.compiler.identity.folder_digest`. The digest is part of the
params, so it is part of every node key: other weights under the same path give new keys, never
a cached result of the old ones. A wrong or missing digest is refused with the actual one in the
message, so the first run tells the user what to pin.

Nothing is downloaded: models load with ``local_files_only=True``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from ..hf_pil import pil_image_processor
from ..identity import folder_digest
from ..errors import OpError, Problem
from .base import OpContext

if TYPE_CHECKING:
    import torch


def pinned_model(ctx: OpContext, model: str | None, sha256: str | None, user: str) -> Path:
    """The folder ``model`` names inside the data roots, refused unless it hashes to ``sha256``.
    ``user`` names what reads it (e.g. "detector 'hf'"), for the messages."""
    if model is None:
        raise OpError(Problem(f"{user} needs a model folder", key="params.model",
                              hint="a folder written by save_pretrained, relative to the data roots"))
    path = ctx.resolve(model, key="params.model")
    actual = folder_digest(path)
    if sha256 != actual:
        said = f"the spec pins {sha256}" if sha256 else "the spec pins none"
        raise OpError(Problem(
            f"model {model!r} has digest {actual}; {said}", key="params.sha256",
            hint=f"if this is the intended model, set params.sha256 = \"{actual}\" "
                 "(and bump [benchmark].version when it replaces other weights)"))
    return path


def _load_failed(path: Path, what: str, exc: Exception) -> OpError:
    return OpError(Problem(f"cannot load {path.name!r} as {what}: {type(exc).__name__}: {exc}",
                           key="params.model",
                           hint="a folder written by save_pretrained, with its preprocessor config"))


@dataclass(frozen=True)
class Detection:
    """A detected object: box [x, y, w, h] in pixels, class label and score."""

    box: tuple[float, float, float, float]
    label: str
    score: float


@functools.lru_cache(maxsize=4)
def load_detector(path: str, sha256: str) -> tuple[Any, Any]:
    """(model, image processor) of an object detector; cached per (path, digest), so weights
    rewritten under the same path (and pinned anew) are loaded again."""
    from transformers import AutoModelForObjectDetection

    try:
        model = AutoModelForObjectDetection.from_pretrained(path, local_files_only=True)
        processor = pil_image_processor(Path(path), model.config.model_type)
    except Exception as exc:  # noqa: BLE001 - not a detector folder: name it and say why
        raise _load_failed(Path(path), "an object detector", exc) from None
    return model.float().eval(), processor


def detect(path: Path, sha256: str, image: Image.Image, score_threshold: float) -> list[Detection]:
    """Detections of the model in ``path`` with a score >= ``score_threshold``, on the CPU."""
    import torch

    model, processor = load_detector(str(path), sha256)
    inputs = processor(images=image, return_tensors="pt")
    with torch.inference_mode():
        outputs = model(**inputs)
    found = processor.post_process_object_detection(
        outputs, threshold=score_threshold, target_sizes=[(image.height, image.width)])[0]
    labels = model.config.id2label
    return [Detection(_xywh(box), str(labels.get(int(label), label)), float(score))
            for box, label, score in zip(found["boxes"].tolist(), found["labels"].tolist(),
                                         found["scores"].tolist())]


def _xywh(box: list[float]) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = box
    return x0, y0, x1 - x0, y1 - y0


@functools.lru_cache(maxsize=4)
def load_clip(path: str, sha256: str) -> tuple[Callable[[dict[str, torch.Tensor]], torch.Tensor], Any]:
    """(image-embedding function, image processor) of a CLIP checkpoint: a full ``CLIPModel``
    (its ``get_image_features``) or a ``CLIPVisionModelWithProjection`` (its ``image_embeds``).
    The two are told apart by config.json's model_type, since a CLIPModel's vision config does
    not always carry the projection size of the full model."""
    from transformers import AutoConfig, CLIPModel, CLIPVisionModelWithProjection

    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        processor = pil_image_processor(Path(path), config.model_type)
        if config.model_type == "clip":
            full = CLIPModel.from_pretrained(path, local_files_only=True).float().eval()
            return (lambda inputs: _as_tensor(full.get_image_features(**inputs))), processor
        vision = CLIPVisionModelWithProjection.from_pretrained(path, local_files_only=True)
        vision = vision.float().eval()
        return (lambda inputs: vision(**inputs).image_embeds), processor
    except Exception as exc:  # noqa: BLE001 - transformers raises many kinds; name the folder
        raise _load_failed(Path(path), "a CLIP model", exc) from None


def _as_tensor(features: Any) -> Any:
    """``get_image_features`` returns a tensor in transformers 4.x, a model output whose
    ``pooler_output`` is that tensor in 5.x."""
    return getattr(features, "pooler_output", features)


def clip_embeddings(path: Path, sha256: str, images: list[Image.Image]) -> np.ndarray:
    """One CLIP image embedding per image (rows), float64, on the CPU."""
    import torch

    embed, processor = load_clip(str(path), sha256)
    with torch.inference_mode():
        features = embed(dict(processor(images=images, return_tensors="pt")))
    return features.double().numpy()

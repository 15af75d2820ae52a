"""CLIP image and text embeddings for MMCBench's cross-modal metrics, from a local folder.

``load_clip("/models/clip-vit-base-patch32")`` loads ``CLIPModel``, its tokenizer and its image
processor with ``local_files_only=True`` (the slow, PIL-based image processor: no torchvision)
and returns a ``ClipEmbedder``, one per folder and device in a process. ``embed_texts`` and
``embed_images`` return L2-normalised float32 arrays, one row per input (a zero vector stays
zero); ``similarity`` is the row-wise cosine of images and texts.

Embeddings are memoised by content for the embedder's life (a run): a text by its string, an
image by the identity of its RGB pixels (``compiler.media.image_identity``), so the same string
or image is embedded once however often, and in whatever encoding, it comes. Determinism: the
model runs in float32 and eval mode under ``inference_mode``; texts are padded to the text
tower's full length and images resized and cropped to one size, so an input's tensors do not
depend on the others of its batch; new inputs are embedded in a fixed (sorted) order, in batches
of ``batch_size``. (Which inputs share a batch could still change the last bits on some BLAS
kernels; the memo makes a run's answers consistent whatever the order of its calls.)

``fingerprint`` (for metric caches): the folder's digest (weights, config, tokenizer and image
processor files), the transformers and torch versions, the device (with the GPU model on CUDA)
and the text length. An open_clip path is not offered: open-clip-torch needs torchvision and a
newer torch than the one benchc pins.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.media import image_identity

from ..backends.hf import model_digest
from ..backends.local_model import (
    device_identity,
    first_line,
    model_folder,
    package_version,
    torch_device,
)

ImageInput = Any  # PNG/JPEG bytes or a PIL image
USAGE = "a CLIP model folder saved with save_pretrained (CLIPModel + its processor)"


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _rgb(image: ImageInput) -> Any:
    from PIL import Image, UnidentifiedImageError

    if isinstance(image, Image.Image):
        return image.convert("RGB")
    try:
        with Image.open(io.BytesIO(image)) as opened:
            return opened.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise BackendError(Problem(f"clip: an image cannot be decoded: {exc}")) from None


class ClipEmbedder:
    """Unit-normalised CLIP embeddings of texts and images, memoised by content."""

    def __init__(self, path: str | Path, device: str = "cpu", batch_size: int = 32) -> None:
        self.path = model_folder("clip", str(path), "config.json", USAGE)
        self.batch_size = max(1, batch_size)
        try:
            import torch
        except ImportError as exc:
            raise BackendError(Problem(f"clip embeddings need torch and transformers: {exc}")) from None
        self.torch = torch
        try:
            self.device = torch_device(torch, device)
        except ValueError as exc:
            raise BackendError(Problem(f"clip: device {device!r} is not valid", hint=f"use {exc}")) from None
        self._load()
        self._memo: dict[tuple[str, str], np.ndarray] = {}
        self.encoded: Counter[str] = Counter()
        """How many texts and images went through the model (each at most once)."""

    def _load(self) -> None:
        from transformers import AutoConfig, AutoTokenizer, CLIPModel

        from ..backends.hf_processor import pil_image_processor

        try:
            config = AutoConfig.from_pretrained(self.path, local_files_only=True)
            if config.model_type != "clip":
                raise BackendError(Problem(f"clip: {self.path} is a {config.model_type!r} model, not a CLIP one",
                                           hint=USAGE))
            self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            self.image_processor = pil_image_processor(self.path, "clip")  # the same pixels with or without torchvision
            with self.torch.random.fork_rng(devices=[]):  # building draws initial weights
                self.model = CLIPModel.from_pretrained(self.path, local_files_only=True, dtype=self.torch.float32)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BackendError(Problem(f"clip: cannot load {self.path}: {first_line(exc)}", hint=USAGE)) from None
        self.model.to(self.device).eval()
        self.max_length = int(config.text_config.max_position_embeddings)

    @property
    def dim(self) -> int:
        return int(self.model.config.projection_dim)

    def fingerprint(self) -> dict[str, Any]:
        return {"embedder": "clip", "model": model_digest(str(self.path)),
                "transformers": package_version("transformers"), "torch": package_version("torch"),
                "device": device_identity(self.torch, self.device), "max_length": self.max_length}

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        keys = [("text", t) for t in texts]
        todo = sorted({t for t in texts if ("text", t) not in self._memo})
        for batch in self._chunks(todo):
            self._remember("text", batch, self._text_vectors(batch))
        return self._stack(keys)

    def embed_images(self, images: Sequence[ImageInput]) -> np.ndarray:
        pictures = [_rgb(image) for image in images]
        keys = [("image", image_identity(p)) for p in pictures]
        todo: dict[str, Any] = {}
        for key, picture in zip(keys, pictures):
            if key not in self._memo:
                todo.setdefault(key[1], picture)
        for batch in self._chunks(sorted(todo)):
            self._remember("image", batch, self._image_vectors([todo[i] for i in batch]))
        return self._stack(keys)

    def similarity(self, images: Sequence[ImageInput], texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of each image with the text at the same position."""
        if len(images) != len(texts):
            raise ValueError(f"{len(images)} images but {len(texts)} texts")
        return np.einsum("ij,ij->i", self.embed_images(images), self.embed_texts(texts)).astype(np.float32)

    def _chunks(self, items: list[str]) -> list[list[str]]:
        return [items[i : i + self.batch_size] for i in range(0, len(items), self.batch_size)]

    def _remember(self, kind: str, keys: list[str], vectors: np.ndarray) -> None:
        self.encoded[kind] += len(keys)
        self._memo.update(((kind, k), v) for k, v in zip(keys, l2_normalise(vectors)))

    def _stack(self, keys: list[tuple[str, str]]) -> np.ndarray:
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[k] for k in keys])

    def _text_vectors(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer(texts, padding="max_length", truncation=True, max_length=self.max_length,
                                 return_tensors="pt")
        inputs = {k: v.to(self.device) for k, v in encoded.items() if k in ("input_ids", "attention_mask")}
        with self.torch.inference_mode():
            return _projected(self.model.get_text_features(**inputs))

    def _image_vectors(self, images: list[Any]) -> np.ndarray:
        pixels = self.image_processor(images=images, return_tensors="pt")["pixel_values"]
        with self.torch.inference_mode():
            return _projected(self.model.get_image_features(pixel_values=pixels.to(self.device)))


def _projected(features: Any) -> np.ndarray:
    """The projected embeddings: ``get_*_features`` return them as a tensor in transformers 4.x
    and as the ``pooler_output`` of a model output in 5.x."""
    tensor = getattr(features, "pooler_output", features)
    return tensor.float().cpu().numpy()


@lru_cache(maxsize=4)
def load_clip(path: str, device: str = "cpu") -> ClipEmbedder:
    """One embedder (and memo) per model folder and device in a process."""
    return ClipEmbedder(path, device)

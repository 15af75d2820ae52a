"""CLIP embeddings (runtime/score/clip_embed.py) on a tiny random CLIP built offline: unit-norm float32
rows, determinism, one embedding per distinct text or image, fingerprints, early failures."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from benchc.compiler.errors import BackendError
from benchc.runtime.score.clip_embed import ClipEmbedder, load_clip

from support.model_folders import copy_with
from support.tiny_clip import build_tiny_clip

pytestmark = pytest.mark.slow  # builds and loads a (tiny) model


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_clip(tmp_path_factory.mktemp("clip"), seed=0)


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


TEXTS = ["a cat", "the dog sat on the mat", "a cat", "", "A photo of something rather long, longer than 16 tokens"]
IMAGES = [_png((255, 0, 0)), _png((0, 0, 255), (20, 60)), _png((0, 200, 0))]


def test_rows_are_unit_norm_float32_one_model_call_per_distinct_input(tiny_clip: Path) -> None:
    from PIL import Image

    embedder = ClipEmbedder(tiny_clip, batch_size=2)
    texts = embedder.embed_texts(TEXTS)
    assert texts.shape == (5, embedder.dim) and texts.dtype == np.float32
    assert np.allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(texts[0], texts[2]) and not np.allclose(texts[0], texts[1])
    same_pixels = Image.open(io.BytesIO(IMAGES[0]))  # a decoded image shares the bytes' entry
    images = embedder.embed_images([*IMAGES, same_pixels])
    assert images.shape == (4, embedder.dim) and np.array_equal(images[0], images[3])
    assert embedder.encoded == {"text": 4, "image": 3}
    embedder.embed_texts(["a cat", "the dog sat on the mat"])  # memoised: no model call
    embedder.embed_images(IMAGES[:1])
    assert embedder.encoded == {"text": 4, "image": 3}
    assert embedder.embed_texts([]).shape == (0, embedder.dim)
    cosine = embedder.similarity(IMAGES[:2], TEXTS[:2])
    assert cosine.dtype == np.float32 and np.allclose(cosine, np.sum(images[:2] * texts[:2], axis=1))


def test_embeddings_do_not_depend_on_batching_or_call_order(tiny_clip: Path) -> None:
    together = ClipEmbedder(tiny_clip, batch_size=8)
    texts, images = together.embed_texts(TEXTS), together.embed_images(IMAGES)
    alone = ClipEmbedder(tiny_clip, batch_size=1)
    reversed_texts = alone.embed_texts(TEXTS[::-1])[::-1]
    reversed_images = alone.embed_images(IMAGES[::-1])[::-1]
    assert np.allclose(reversed_texts, texts, atol=1e-6) and np.allclose(reversed_images, images, atol=1e-6)
    again = ClipEmbedder(tiny_clip, batch_size=8)  # a fresh embedder: the same numbers, bit for bit
    assert np.array_equal(again.embed_texts(TEXTS), texts) and np.array_equal(again.embed_images(IMAGES), images)


def test_fingerprint_covers_weights_and_processor_config(tiny_clip: Path, tmp_path: Path) -> None:
    base = ClipEmbedder(tiny_clip).fingerprint()
    assert base["device"] == "cpu" and base["max_length"] == 16 and base["transformers"] and base["torch"]
    processor = copy_with(tiny_clip, tmp_path / "processor-changed", "preprocessor_config.json",
                          image_mean=[0.5, 0.5, 0.5])
    changed = ClipEmbedder(processor)
    assert changed.fingerprint() != base
    assert not np.allclose(changed.embed_images(IMAGES[:1]), ClipEmbedder(tiny_clip).embed_images(IMAGES[:1]))
    assert ClipEmbedder(build_tiny_clip(tmp_path / "seed1", seed=1)).fingerprint() != base
    assert load_clip(str(tiny_clip)) is load_clip(str(tiny_clip))  # one embedder (and memo) per run


def test_no_torchvision_needed_and_misconfigurations_fail_at_load(tiny_clip: Path, tmp_path: Path) -> None:
    from transformers import BertConfig, CLIPImageProcessor

    assert type(ClipEmbedder(tiny_clip).image_processor) is CLIPImageProcessor  # the PIL-based one
    with pytest.raises(BackendError, match="no model folder with config.json"):
        ClipEmbedder(tmp_path / "nowhere")
    BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8).save_pretrained(
        tmp_path / "bert")
    with pytest.raises(BackendError, match="is a 'bert' model, not a CLIP one"):
        ClipEmbedder(tmp_path / "bert")
    with pytest.raises(BackendError, match="device 'tpu' is not valid"):
        ClipEmbedder(tiny_clip, device="tpu")
    with pytest.raises(BackendError, match="cannot be decoded"):
        ClipEmbedder(tiny_clip).embed_images([b"not an image"])

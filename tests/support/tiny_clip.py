"""A tiny random CLIP and a tiny random Stable Diffusion pipeline, built fully offline.

Both use a ``CLIPTokenizer`` over a hand-written byte-level BPE: the 256 GPT-2 byte symbols, the
same with CLIP's end-of-word suffix ``</w>``, a few merges, and ``<|startoftext|>`` /
``<|endoftext|>`` (also the pad token). Any text encodes; ``model_max_length`` is 16.

``build_tiny_clip(out_dir, seed=0)``: a ``CLIPModel`` (text and vision towers of one layer,
hidden 16, projection 8; images 32x32 in 8 px patches) with a ``CLIPProcessor`` whose image
processor is the slow, PIL-based ``CLIPImageProcessor`` (no torchvision).

``build_tiny_sd(out_dir, seed=0)``: a ``StableDiffusionPipeline`` (a ``UNet2DConditionModel``
with blocks of 4 and 8 channels, an ``AutoencoderKL`` with a scale factor of 2, so 32x32 px
images from 16x16 latents, a one-layer ``CLIPTextModel`` and a ``DDIMScheduler``; no safety
checker) saved with ``save_pretrained``. Needs diffusers.

Weights are drawn under ``torch.manual_seed(seed)`` inside ``fork_rng``.
"""

from __future__ import annotations

import json
import pathlib
import tempfile
from typing import Any

from support.tiny_weights import save, seeded

__all__ = ["build_tiny_clip", "build_tiny_sd", "clip_tokenizer"]

_MERGES = [("t", "h"), ("th", "e</w>"), ("a", "t</w>"), ("c", "at</w>"), ("d", "o"), ("do", "g</w>")]
MAX_LENGTH = 16


def clip_tokenizer():
    """A CLIPTokenizer over a tiny vocabulary (read from a temporary folder; save_pretrained
    writes its files again)."""
    with tempfile.TemporaryDirectory() as tmp:
        return _clip_tokenizer(pathlib.Path(tmp))


def _clip_tokenizer(work_dir: pathlib.Path):
    from transformers import CLIPTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode  # in 4.x and 5.x

    symbols = list(bytes_to_unicode().values())
    vocab = {s: i for i, s in enumerate(symbols)}
    for s in symbols:
        vocab[s + "</w>"] = len(vocab)
    for a, b in _MERGES:
        vocab[a + b] = len(vocab)
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    (work_dir / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (work_dir / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in _MERGES),
                                         encoding="utf-8")
    return CLIPTokenizer(str(work_dir / "vocab.json"), str(work_dir / "merges.txt"),
                         pad_token="<|endoftext|>", model_max_length=MAX_LENGTH)


def _text_ids(tokenizer) -> dict[str, int]:
    return {"vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}


def build_tiny_clip(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    out_dir = pathlib.Path(out_dir)
    tokenizer = clip_tokenizer()
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    config = CLIPConfig(
        text_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": MAX_LENGTH, **_text_ids(tokenizer)},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 8},
        projection_dim=8)
    model = seeded(lambda: CLIPModel(config).eval(), seed)
    return save(out_dir, model, CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer))


def build_tiny_sd(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    out_dir = pathlib.Path(out_dir)
    tokenizer = clip_tokenizer()

    def models() -> tuple[Any, Any, Any]:
        unet = UNet2DConditionModel(
            block_out_channels=(4, 8), layers_per_block=1, sample_size=16, in_channels=4, out_channels=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
            norm_num_groups=2, attention_head_dim=2)
        vae = AutoencoderKL(block_out_channels=[4, 8], in_channels=3, out_channels=3, latent_channels=4,
                            down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
                            norm_num_groups=2, sample_size=32)
        text_encoder = CLIPTextModel(CLIPTextConfig(
            hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            max_position_embeddings=MAX_LENGTH, **_text_ids(tokenizer)))
        return unet, vae, text_encoder

    unet, vae, text_encoder = seeded(models, seed)
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                              clip_sample=False, set_alpha_to_one=False, steps_offset=1)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                                   scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    pipe.save_pretrained(out_dir, safe_serialization=True)
    return out_dir

"""Checks for the offline tiny LLaVA fixture in ``tests/support/tiny_vlm.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

import torch
from PIL import Image

from support.tiny_vlm import TINY_LLAVA_IMAGE_TOKENS, build_tiny_llava

PROMPT = [{"role": "user", "content": [
    {"type": "image"},
    {"type": "text", "text": "What kind of object is in the masked region?"},
]}]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava") / "model", seed=0)


def _generate(model_dir: Path, max_new_tokens: int = 8):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    proc = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir)
    text = proc.apply_chat_template(PROMPT, add_generation_prompt=True, tokenize=False)
    proc.tokenizer.padding_side = "left"
    images = [Image.new("RGB", (48, 48), (220, 30, 30)), Image.new("RGB", (48, 48), (30, 30, 220))]
    # Different prompt lengths so left padding is really exercised.
    inputs = proc(text=[text, "Please answer. " + text], images=images, return_tensors="pt",
                  padding=True)
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
    return proc, text, inputs, out[:, inputs["input_ids"].shape[1]:]


def test_reload_offline_and_batched_generate(tiny_dir: Path) -> None:
    size = sum(p.stat().st_size for p in tiny_dir.iterdir())
    assert size < 1_000_000
    proc, text, inputs, new_tokens = _generate(tiny_dir)

    assert text == "USER: <image>\nWhat kind of object is in the masked region?\nASSISTANT:"
    plain = proc.apply_chat_template([{"role": "user", "content": "Hi"}],
                                     add_generation_prompt=True, tokenize=False)
    assert plain == "USER: Hi\nASSISTANT:"

    image_id = proc.tokenizer.convert_tokens_to_ids("<image>")
    assert (inputs["input_ids"] == image_id).sum(dim=1).tolist() == [TINY_LLAVA_IMAGE_TOKENS] * 2
    assert inputs["attention_mask"][0, 0] == 0  # left padded shorter row
    assert "token_type_ids" not in inputs

    assert new_tokens.shape[0] == 2 and 1 <= new_tokens.shape[1] <= 8
    answers = proc.batch_decode(new_tokens, skip_special_tokens=True)
    assert all(isinstance(a, str) for a in answers)
    assert all(ch.isprintable() for a in answers for ch in a)
    assert image_id not in new_tokens.tolist()


def test_same_seed_gives_identical_weights_and_tokens(tiny_dir: Path, tmp_path: Path) -> None:
    rng_before = torch.random.get_rng_state()
    again = build_tiny_llava(tmp_path / "again", seed=0)
    other = build_tiny_llava(tmp_path / "other", seed=1)
    assert torch.equal(rng_before, torch.random.get_rng_state())  # caller's RNG untouched

    weights = (tiny_dir / "model.safetensors").read_bytes()
    assert (again / "model.safetensors").read_bytes() == weights
    assert (other / "model.safetensors").read_bytes() != weights

    assert torch.equal(_generate(tiny_dir)[3], _generate(again)[3])

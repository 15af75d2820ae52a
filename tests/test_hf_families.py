"""The hf backend on a tiny random-weight model of each vision-language family it serves.

Per family: a request with an image gets an answer; a left-padded batch of two requests with
different images (and prompts of different lengths) answers as each request alone (greedy,
float32); a text-only request works (chat families) or is refused before any generation (BLIP-2,
InstructBLIP, PaliGemma: their generate or processor needs pixel values); the fingerprint follows
the weights. The models come from ``support.tiny_families`` (and ``support.tiny_vlm`` for
LLaVA-1.5), built offline in a temporary folder.
"""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from PIL import Image

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Backend, Request, make_backend
from support.tiny_families import FAMILIES
from support.tiny_vlm import build_tiny_llava

# slow: builds and loads a (tiny) model of each family
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

BUILDERS: dict[str, Callable[..., Path]] = {"llava": build_tiny_llava, **FAMILIES}
CHAT_FAMILIES = ["llava", "llava_next", "qwen2_vl", "qwen2_5_vl", "idefics3"]
IMAGE_ONLY_FAMILIES = ["blip2", "instructblip", "paligemma"]  # no chat template, no text-only input
SERVED = CHAT_FAMILIES + IMAGE_ONLY_FAMILIES
GREEDY = Generation(max_new_tokens=4)


def _noise_png(seed: int, width: int, height: int) -> bytes:
    """A random image, so that two images differ everywhere (flat colours can look alike to a
    random model); the two sizes differ in aspect ratio, which LLaVA-NeXT and Qwen-VL tile or
    resize differently."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


MEDIA = {"a": _noise_png(1, 40, 40), "b": _noise_png(2, 64, 30), "c": _noise_png(3, 24, 24)}
ASK_A = Request("ask-a", "generate", "What kind of object is in the masked region?", None, (("image", "a"),))
ASK_B = Request("ask-b", "generate", "Which colour?", "Answer with one word.", (("image", "b"),))
TEXT_ONLY = Request("text", "generate", "Translate into German: the cat is black.", None, ())
TWO_IMAGES = Request("two", "generate", "Which image is brighter?", None, (("image", "a"), ("image", "c")))


def _load(kind: str, sha: str) -> bytes:
    return MEDIA[sha]


def _texts(backend: Backend, requests: list[Request]) -> list[str | None]:
    return [r.text for r in backend.run_batch(requests, _load)]




@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, int], Path]:
    """A family's tiny model folder for a seed, built once per module."""
    built: dict[tuple[str, int], Path] = {}

    def get(family: str, seed: int = 0) -> Path:
        if (family, seed) not in built:
            built[family, seed] = BUILDERS[family](tmp_path_factory.mktemp(f"{family}-{seed}"), seed=seed)
        return built[family, seed]

    return get


@pytest.fixture(scope="module")
def backend(folder: Callable[[str, int], Path]) -> Callable[[str], Backend]:
    """A loaded greedy backend per family (batch_size 4), shared by the module's tests."""
    loaded: dict[str, Backend] = {}

    def get(family: str) -> Backend:
        if family not in loaded:
            loaded[family] = make_backend(f"hf:{folder(family, 0)},batch_size=4", GREEDY, "generate")
            loaded[family].prepare()
        return loaded[family]

    return get


@pytest.mark.parametrize("family", SERVED)
def test_a_request_with_an_image_gets_an_answer(backend: Callable[[str], Backend], family: str) -> None:
    [answer] = backend(family).run_batch([ASK_A], _load)
    assert answer.kind == "text" and answer.text and answer.text.isprintable()


@pytest.mark.parametrize("family", SERVED)
def test_a_padded_batch_answers_as_each_request_alone(backend: Callable[[str], Backend], family: str) -> None:
    """Decoder-only models are padded on the left; an encoder-decoder (InstructBLIP's Flan-T5)
    and a Q-Former's text on the right, where pads shift no real token's position."""
    hf = backend(family)
    alone = [_texts(hf, [ASK_A])[0], _texts(hf, [ASK_B])[0]]
    assert alone[0] != alone[1]  # the random model does read its input, so equality below means something
    assert _texts(hf, [ASK_A, ASK_B]) == alone
    inputs = hf._inputs([ASK_A, ASK_B], _load)  # type: ignore[attr-defined]
    mask = inputs["attention_mask"]
    assert not mask.all()  # the batch was padded
    if hf.encoder_decoder:  # type: ignore[attr-defined]
        assert (mask.diff(dim=1) <= 0).all()  # pads only after the last real token
    else:
        assert mask[:, -1].all()
    if "qformer_attention_mask" in inputs:
        assert (inputs["qformer_attention_mask"].diff(dim=1) <= 0).all()


@pytest.mark.parametrize("family", CHAT_FAMILIES)
def test_a_chat_family_answers_a_text_only_request_alone_or_beside_an_image(
        backend: Callable[[str], Backend], family: str) -> None:
    hf = backend(family)
    [text_only] = _texts(hf, [TEXT_ONLY])
    assert text_only
    assert _texts(hf, [ASK_A, TEXT_ONLY]) == [_texts(hf, [ASK_A])[0], text_only]


@pytest.mark.parametrize("family", IMAGE_ONLY_FAMILIES)
def test_a_family_that_needs_an_image_refuses_text_only_before_generating(
        backend: Callable[[str], Backend], family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hf = backend(family)
    monkeypatch.setattr(hf.model, "generate", lambda **_: pytest.fail("generate ran"))  # type: ignore[attr-defined]
    with pytest.raises(BackendError, match="cannot answer a request without an image") as caught:
        hf.run_batch([ASK_A, TEXT_ONLY], _load)
    assert "request text" in caught.value.render() and "hint:" in caught.value.render()
    with pytest.raises(BackendError, match="at most 1 image per request; request two has 2"):
        hf.run_batch([TWO_IMAGES], _load)


@pytest.mark.parametrize("family", SERVED)
def test_the_fingerprint_follows_the_weights(folder: Callable[[str, int], Path], family: str) -> None:
    first = make_backend(f"hf:{folder(family, 0)}", GREEDY, "generate").fingerprint()
    other = make_backend(f"hf:{folder(family, 1)}", GREEDY, "generate").fingerprint()
    assert first["model"] != other["model"]
    assert {k: v for k, v in first.items() if k != "model"} == {k: v for k, v in other.items() if k != "model"}


@pytest.mark.parametrize("family,expected", [
    ("blip2", "Question: Answer with one word. Which colour? Answer:"),
    ("instructblip", "Answer with one word. Which colour?"),
    ("paligemma", "<image>answer en Answer with one word. Which colour?"),
])
def test_families_without_a_chat_template_get_their_documented_prompt_form(
        backend: Callable[[str], Backend], family: str, expected: str) -> None:
    assert backend(family).prompt_text(ASK_B, 1) == expected  # type: ignore[attr-defined]


def test_an_encoder_decoder_language_model_keeps_its_whole_output(backend: Callable[[str], Backend]) -> None:
    """InstructBLIP on Flan-T5: generate returns only new tokens, none of which may be cut."""
    hf = backend("instructblip")
    assert hf.encoder_decoder and not backend("blip2").encoder_decoder  # type: ignore[attr-defined]
    assert len(_texts(hf, [ASK_A])[0] or "") >= 4  # four new tokens of at least one character


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl"])
def test_a_processor_with_a_video_part_serves_images_without_torchvision(
        backend: Callable[[str], Backend], family: str) -> None:
    """Qwen-VL processors hold a video processor that needs torchvision; without it the backend
    builds the family's processor with only its image part (and the same class name)."""
    processor = backend(family).processor  # type: ignore[attr-defined]
    assert type(processor).__name__ == {"qwen2_vl": "Qwen2VLProcessor", "qwen2_5_vl": "Qwen2_5_VLProcessor"}[family]
    if importlib.util.find_spec("torchvision") is None:
        assert type(processor.video_processor).__name__ == "_NoVideoProcessor"


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None, reason="torchvision is installed")
def test_smolvlm2_answers_or_names_torchvision(folder: Callable[[str, int], Path]) -> None:
    """SmolVLM2's processor module imports torchvision at its top in transformers 4.x, even to
    read images: one clear error. In 5.x it does not, and its video part is stood in for."""
    hf = make_backend(f"hf:{folder('smolvlm', 0)}", GREEDY, "generate")
    if int(transformers.__version__.split(".")[0]) < 5:
        with pytest.raises(BackendError, match=r"\(smolvlm\) needs torchvision, which is not installed"):
            hf.prepare()
    else:
        [answer] = hf.run_batch([ASK_A], _load)
        assert answer.text is not None
        assert type(hf.processor.video_processor).__name__ == "_NoVideoProcessor"  # type: ignore[attr-defined]


@pytest.mark.parametrize("family", ["llava_next", "qwen2_vl", "blip2"])
def test_a_bfloat16_model_answers(folder: Callable[[str, int], Path], family: str) -> None:
    """Half precision end to end: the backend casts the processor's float32 pixels to the model's
    dtype, as the model cards do (these families' towers would also cast them in 4.57)."""
    hf = make_backend(f"hf:{folder(family, 0)},dtype=bfloat16", GREEDY, "generate")
    [answer] = hf.run_batch([ASK_A], _load)
    assert answer.text is not None and hf.model.dtype == torch.bfloat16  # type: ignore[attr-defined]

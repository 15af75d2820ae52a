"""The hf backend's image captioners (MMCBench's baseline families: BLIP, GIT, ViT-GPT2) on tiny
random models built offline: the caption's start as each family's generate() takes it, batches
that answer as each request alone, and what a captioner cannot take refused before generating."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Backend, Request, make_backend
from benchc.runtime.backends.hf_captioners import prefix_ids, returned_prefix
from support.tiny_captioners import CAPTIONERS

# slow: builds and loads (tiny) models
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

FAMILIES = sorted(CAPTIONERS)
GREEDY = Generation(temperature=0.0, max_new_tokens=6)


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


MEDIA = {"red": _png((200, 0, 0)), "green": _png((0, 200, 0)), "noise": _png((30, 60, 90), (50, 50))}


def _load(kind: str, sha: str) -> bytes:
    return MEDIA[sha]


def _ask(key: str, image: str, prompt: str = "") -> Request:
    return Request(key, "generate", prompt, None, (("image", image),))




@pytest.fixture(scope="module")
def captioner(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Backend]:
    loaded: dict[str, Backend] = {}

    def get(family: str) -> Backend:
        if family not in loaded:
            folder = CAPTIONERS[family](tmp_path_factory.mktemp(family.replace("-", "_")), 0)
            loaded[family] = make_backend(f"hf:{folder},batch_size=4", GREEDY, "generate")
            loaded[family].prepare()
        return loaded[family]

    return get


@pytest.mark.parametrize("family", FAMILIES)
def test_a_batch_of_captions_with_and_without_a_start_answers_as_each_alone(
        captioner: Callable[[str], Backend], family: str) -> None:
    hf = captioner(family)
    requests = [_ask("a", "red"), _ask("b", "green", "a picture of"), _ask("c", "noise"), _ask("d", "green")]
    batch = [r.text for r in hf.run_batch(requests, _load)]
    assert batch == [hf.run_batch([r], _load)[0].text for r in requests]
    assert all(batch) and batch[0] != batch[3]  # the random model does look at the image


@pytest.mark.parametrize("family", FAMILIES)
def test_the_caption_start_is_what_the_family_generate_takes(captioner: Callable[[str], Backend],
                                                              family: str) -> None:
    hf = captioner(family)
    tokenizer, model = hf.processor.tokenizer, hf.model  # type: ignore[attr-defined]
    words = tokenizer("a picture of", add_special_tokens=False)["input_ids"]
    prefix = prefix_ids(family, tokenizer, model, "a picture of")
    if family == "blip":  # exactly its processor's ids: generate() swaps [CLS] for bos, drops [SEP]
        assert prefix == tokenizer("a picture of")["input_ids"] == [tokenizer.cls_token_id, *words,
                                                                    tokenizer.sep_token_id]
        assert returned_prefix(family, prefix) == len(prefix) - 1
    elif family == "git":  # no [SEP]: it is GIT's end of sequence
        assert prefix == [tokenizer.cls_token_id, *words] and returned_prefix(family, prefix) == len(prefix)
    else:
        assert prefix == [model.generation_config.decoder_start_token_id, *words]
        assert prefix_ids(family, tokenizer, model, "") == prefix[:1]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_captioner_refuses_text_only_and_two_image_requests(captioner: Callable[[str], Backend],
                                                               family: str) -> None:
    hf = captioner(family)
    with pytest.raises(BackendError, match=r"cannot answer a request without an image"):
        hf.run_batch([Request("t", "generate", "a picture of", None, ())], _load)
    two = Request("2", "generate", "", None, (("image", "red"), ("image", "green")))
    with pytest.raises(BackendError, match=r"takes at most 1 image per request"):
        hf.run_batch([two], _load)


def test_the_captioners_fingerprints_follow_their_weights(tmp_path: Path) -> None:
    prints = {make_backend(f"hf:{CAPTIONERS['git'](tmp_path / str(seed), seed)}", GREEDY, "generate")
              .fingerprint()["model"] for seed in (0, 1)}
    assert len(prints) == 2


def test_a_captioner_fingerprint_names_how_its_requests_become_inputs(tmp_path: Path) -> None:
    """A response stored before the captioner path (GIT through its processor) never answers."""
    from benchc.runtime.backends.hf_captioners import REVISION
    from support.tiny_families import FAMILIES as CHAT

    git = make_backend(f"hf:{CAPTIONERS['git'](tmp_path / 'git', 0)}", GREEDY, "generate").fingerprint()
    blip2 = make_backend(f"hf:{CHAT['blip2'](tmp_path / 'blip2', 0)}", GREEDY, "generate").fingerprint()
    assert git["captioner"] == REVISION and "captioner" not in blip2

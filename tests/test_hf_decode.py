"""The hf backend's decode modes (``decode=static|compiled``): a preallocated key/value cache, and
each decoding step compiled with torch.compile, give the answers of plain dynamic decoding on a
tiny LLaVA (greedy, two batches of unlike lengths so that the kept cache is reused), enter the
fingerprint, and are refused beside share_prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Request, make_backend
from support.images import solid_png
from support.tiny_vlm import build_tiny_llava

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

GREEDY = Generation(max_new_tokens=6)


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"), seed=0)


MEDIA = {"red": solid_png((200, 0, 0)), "green": solid_png((0, 200, 0))}
PROMPTS = ["Describe the image in one long sentence, please, with every detail you see.", "Which colour?",
           "What kind of object is in the masked region of this picture?", "Shape?"]


def _load(kind: str, sha: str) -> bytes:
    return MEDIA[sha]


def _batches() -> list[list[Request]]:
    requests = [Request(f"k{i}", "generate", p, None, (("image", "red" if i % 2 else "green"),))
                for i, p in enumerate(PROMPTS)]
    return [requests[:2], requests[2:]]


def _answers(folder: Path, decode: str) -> tuple[list[str], set[str], bool]:
    """The answers, the classes of cache the model's forward was given, and whether transformers
    compiled the decoding step."""
    backend = make_backend(f"hf:{folder},batch_size=2,decode={decode}", GREEDY, "generate")
    backend.prepare()
    model = backend.model  # type: ignore[attr-defined]
    caches: set[str] = set()
    if decode != "compiled":  # (a hook inside a compiled graph would be traced, not run)
        model.register_forward_pre_hook(lambda _, args, kw: caches.add(type(kw.get("past_key_values")).__name__),
                                        with_kwargs=True)
    answers = [r.text or "" for batch in _batches() for r in backend.run_batch(batch, _load)]
    return answers, caches, hasattr(model, "_compiled_call")


@pytest.mark.parametrize("decode", ["static", "compiled"])
def test_static_and_compiled_decoding_answer_as_dynamic_decoding(tiny_llava: Path, decode: str) -> None:
    expected, caches, compiled = _answers(tiny_llava, "dynamic")
    assert len(set(expected)) > 1 and caches == {"DynamicCache"} and not compiled
    answers, caches, compiled = _answers(tiny_llava, decode)
    assert answers == expected
    assert caches == ({"StaticCache"} if decode == "static" else set())
    assert compiled == (decode == "compiled")  # transformers compiled the step


def test_decode_enters_the_fingerprint_only_when_it_is_not_the_default(tiny_llava: Path) -> None:
    def fingerprint(options: str) -> dict[str, object]:
        return make_backend(f"hf:{tiny_llava},batch_size=2{options}", GREEDY, "generate").fingerprint()

    plain = fingerprint("")
    assert fingerprint(",decode=dynamic") == plain and "decode" not in plain
    assert fingerprint(",decode=compiled") == {**plain, "decode": "compiled"}
    assert fingerprint(",decode=static") == {**plain, "decode": "static"}


def test_decode_is_refused_beside_share_prefix_and_when_misspelt(tiny_llava: Path) -> None:
    with pytest.raises(BackendError, match="decode") as caught:
        make_backend(f"hf:{tiny_llava},share_prefix=true,decode=compiled", GREEDY, "generate")
    assert "share_prefix" in caught.value.render()
    with pytest.raises(BackendError, match="option .* is not valid") as caught:
        make_backend(f"hf:{tiny_llava},decode=compile", GREEDY, "generate")
    assert "'dynamic', 'static', 'compiled'" in caught.value.render()

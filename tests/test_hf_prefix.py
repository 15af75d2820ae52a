"""The hf backend's shared image prefixes (share_prefix=true): a consistency group's prompts
about one image get the answers they get without sharing, while the image is encoded and
prefilled once per group instead of once per prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Request, make_backend
from support.tiny_families import build_llava_next
from support.tiny_llm import build_tiny_llm
from support.images import solid_png
from support.tiny_vlm import build_tiny_llava

pytestmark = pytest.mark.slow

QUESTIONS = ["What is this?", "What colour is the object in the middle of this picture?", "Name it.",
             "Is there a cat?"]


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"), seed=0)


@pytest.fixture(scope="module")
def tiny_llava_next(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llava_next(tmp_path_factory.mktemp("tiny-llava-next"), seed=0)


MEDIA = {"red": solid_png((255, 0, 0)), "blue": solid_png((0, 0, 255)), "green": solid_png((0, 160, 0))}


def _load(kind: str, sha: str) -> bytes:
    return MEDIA[sha]


def _requests() -> list[Request]:
    """Two groups of four questions (one per image), interleaved, a question about a third image
    (a group of one) and a text-only request."""
    grouped = [Request(f"{m}{i}", "generate", q, None, (("image", m),)) for i, q in enumerate(QUESTIONS)
               for m in ("red", "blue")]
    return [*grouped, Request("green", "generate", QUESTIONS[1], None, (("image", "green"),)),
            Request("text", "generate", "Only text here.", None, ())]


def _images_encoded(backend) -> list[int]:
    """The batch sizes the vision tower is called with (a forward pre-hook)."""
    calls: list[int] = []
    backend.prepare()
    tower = getattr(backend.model, "vision_tower", None) or backend.model.model.vision_tower  # 4.x / 5.x
    tower.register_forward_pre_hook(lambda _, args, kw: calls.append(
        (args[0] if args else kw["pixel_values"]).shape[0]), with_kwargs=True)
    return calls


@pytest.mark.parametrize("family", ["tiny_llava", "tiny_llava_next"])
def test_shared_prefix_answers_equal_the_unshared_batch(family: str, request: pytest.FixtureRequest) -> None:
    model = request.getfixturevalue(family)
    generation = Generation(max_new_tokens=6)
    plain = make_backend(f"hf:{model},batch_size=10", generation)
    shared = make_backend(f"hf:{model},batch_size=10,share_prefix=true", generation)
    plain_calls, shared_calls = _images_encoded(plain), _images_encoded(shared)
    expected = [r.text for r in plain.run_batch(_requests(), _load)]
    assert [r.text for r in shared.run_batch(_requests(), _load)] == expected
    assert len(set(expected)) > 3  # the answers depend on the prompt, so equality means something
    assert shared.shared_groups == 2
    # each image encoded once, not once per prompt (LLaVA-NeXT encodes several tiles per image),
    # the group of one with the others: one forward pass over the three prefixes
    assert 3 * sum(plain_calls) == 9 * sum(shared_calls) and shared_calls in ([3], [3 * 5])


def test_share_prefix_is_in_the_fingerprint(tiny_llava: Path) -> None:
    generation = Generation(max_new_tokens=4)
    plain = make_backend(f"hf:{tiny_llava}", generation).fingerprint()
    shared = make_backend(f"hf:{tiny_llava},share_prefix=true", generation).fingerprint()
    assert shared == {**plain, "share_prefix": 2}


def test_share_prefix_on_an_unsupported_family_fails_before_any_request(tmp_path: Path) -> None:
    backend = make_backend(f"hf:{build_tiny_llm(tmp_path / 'llm', seed=0)},share_prefix=true", Generation())
    with pytest.raises(BackendError, match="share_prefix is not supported"):
        backend.prepare()
    with pytest.raises(BackendError, match="share_prefix"):
        make_backend(f"hf:{tmp_path / 'llm'},share_prefix=yes", Generation())

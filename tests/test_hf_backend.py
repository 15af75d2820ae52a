"""The hf backend on a real tiny LLaVA: per-request sampling seeds, a fingerprint that covers what
can change an answer, and bad options refused before any request."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Backend, Request, make_backend
from support.images import solid_png
from support.tiny_vlm import build_tiny_llava

# slow: loads a (tiny) model several times
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]




@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"), seed=0)


MEDIA = {"red": solid_png((200, 0, 0)), "green": solid_png((0, 200, 0))}
PROMPTS = [("What kind of object is in the masked region?", "red"), ("Which colour?", "green"),
           ("Describe the image in one sentence please.", "red"), ("What shape is it?", "green")]


def _load(kind: str, sha: str) -> bytes:
    return MEDIA[sha]


def _requests(sample: int = 0) -> list[Request]:
    return [Request(f"k{i}-{sample}", "generate", prompt, None, (("image", image),), sample)
            for i, (prompt, image) in enumerate(PROMPTS)]


SAMPLING = Generation(temperature=1.0, max_new_tokens=8)


def test_a_sampled_answer_depends_on_neither_its_batch_nor_the_batch_size(tiny_llava: Path) -> None:
    small = make_backend(f"hf:{tiny_llava},batch_size=1", SAMPLING, "generate")
    large = make_backend(f"hf:{tiny_llava},batch_size=4", SAMPLING, "generate")
    first, *others = _requests()
    alone = small.run_batch([first], _load)[0].text
    assert large.run_batch([first, *others], _load)[0].text == alone
    assert large.run_batch([*reversed(others), first], _load)[-1].text == alone
    # so the two batch sizes may share cached answers
    assert small.fingerprint() == large.fingerprint()


def test_sampling_seeds_come_from_the_request_and_leave_the_global_rng_alone(tiny_llava: Path) -> None:
    backend = make_backend(f"hf:{tiny_llava},batch_size=4", SAMPLING, "generate")
    before = torch.random.get_rng_state()
    zero = [r.text for r in backend.run_batch(_requests(0), _load)]
    assert torch.equal(before, torch.random.get_rng_state())
    assert [r.text for r in backend.run_batch(_requests(0), _load)] == zero
    assert [r.text for r in backend.run_batch(_requests(1), _load)] != zero  # the sample index seeds too
    reseeded = make_backend(f"hf:{tiny_llava}", SAMPLING.model_copy(update={"seed": 7}), "generate")
    assert [r.text for r in reseeded.run_batch(_requests(0), _load)] != zero


def test_greedy_fingerprint_covers_everything_that_can_change_an_answer(tiny_llava: Path) -> None:
    greedy = Generation(max_new_tokens=8)
    base = make_backend(f"hf:{tiny_llava},batch_size=4", greedy, "generate").fingerprint()
    assert {"backend", "model", "transformers", "torchvision", "dtype", "generation"} <= set(base)
    assert base["device"] == "cpu" and base["torch"].startswith(torch.__version__.split("+")[0])
    assert base["batch_size"] == 4  # padding to a batch's longest prompt can flip a greedy argmax
    other_batch = make_backend(f"hf:{tiny_llava},batch_size=2", greedy, "generate").fingerprint()
    other_dtype = make_backend(f"hf:{tiny_llava},batch_size=4,dtype=bfloat16", greedy, "generate").fingerprint()
    assert other_batch != base and other_dtype != base


@pytest.mark.parametrize("options,fragment", [
    ("batch_size=eight", "batch_size must be an integer"),
    ("batch_size=0", "batch_size must be an integer >= 1"),
    ("dtype=float33", "dtype must be one of: 'float32', 'float16', 'bfloat16'"),
    ("device=gpu0", "device must be a torch device"),
])
def test_bad_hf_options_are_refused_when_the_backend_is_built(tiny_llava: Path, options: str, fragment: str) -> None:
    with pytest.raises(BackendError, match="option .* is not valid") as caught:
        make_backend(f"hf:{tiny_llava},{options}", Generation(), "generate")
    assert fragment in caught.value.render()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_a_cuda_device_on_a_machine_without_one_is_refused(tiny_llava: Path) -> None:
    with pytest.raises(BackendError, match="a CUDA device present on this machine"):
        make_backend(f"hf:{tiny_llava},device=cuda", Generation(), "generate")


# --- text-only requests (compile-time model steps) -----------------------------------------------

TEXT_ONLY = [Request("t0", "generate", "Translate into German: the cat is black.", None, (), 0),
             Request("t1", "generate", "Paraphrase: a dog ran.", "You are a careful editor.", (), 0)]


def test_a_vlm_answers_text_only_requests_alone_or_beside_images(tiny_llava: Path) -> None:
    backend = make_backend(f"hf:{tiny_llava},batch_size=4", Generation(max_new_tokens=6), "generate")
    alone = [r.text for r in backend.run_batch(TEXT_ONLY, _load)]
    assert all(alone)
    mixed = backend.run_batch([_requests()[0], TEXT_ONLY[0]], _load)
    assert mixed[1].text == backend.run_batch([TEXT_ONLY[0]], _load)[0].text


def test_a_text_only_causal_lm_loads_answers_and_refuses_images(tmp_path: Path) -> None:
    from support.tiny_llm import build_tiny_llm

    folder = build_tiny_llm(tmp_path / "llm", seed=0)
    backend = make_backend(f"hf:{folder},batch_size=2", Generation(max_new_tokens=6), "generate")
    fingerprint = backend.fingerprint()  # needs no weights load
    assert not backend._loaded and fingerprint["model"]
    answers = [r.text for r in backend.run_batch(TEXT_ONLY, _load)]
    assert all(answers) and type(backend.model).__name__ == "LlamaForCausalLM"
    assert answers == [r.text for r in backend.run_batch(TEXT_ONLY, _load)]
    with pytest.raises(BackendError, match="text-only model and a request has an image"):
        backend.run_batch(_requests()[:1], _load)


def test_a_request_seed_replaces_the_base_seed_when_sampling(tiny_llava: Path) -> None:
    backend = make_backend(f"hf:{tiny_llava}", SAMPLING, "generate")
    [request] = TEXT_ONLY[:1]
    seeded = [Request(request.key, "generate", request.prompt, None, (), 0, seed) for seed in (1, 1, 2)]
    one, again, two = (r.text for r in backend.run_batch(seeded, _load))
    assert one == again and one != two


# --- out-of-memory backoff -----------------------------------------------------------------------

def _out_of_memory_above_one_row(backend: Backend, monkeypatch: pytest.MonkeyPatch, limit: int = 1) -> list[int]:
    """Make the backend's generate fail as CUDA does when a batch has more than ``limit`` rows
    (0: always); return the list of batch sizes it was called with."""
    real, calls = backend.model.generate, []  # type: ignore[attr-defined]

    def generate(**kwargs: object) -> torch.Tensor:
        rows = kwargs["input_ids"].shape[0]  # type: ignore[attr-defined]
        calls.append(rows)
        if rows > limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)")
        return real(**kwargs)

    monkeypatch.setattr(backend.model, "generate", generate)  # type: ignore[attr-defined]
    return calls


def test_a_batch_that_runs_out_of_memory_is_split_in_halves_down_to_single_requests(
        tiny_llava: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    greedy = Generation(max_new_tokens=6)
    one_by_one = make_backend(f"hf:{tiny_llava},batch_size=1", greedy, "generate")
    expected = [one_by_one.run_batch([r], _load)[0].text for r in _requests()]
    backend = make_backend(f"hf:{tiny_llava},batch_size=4", greedy, "generate")
    backend.prepare()
    calls = _out_of_memory_above_one_row(backend, monkeypatch)
    assert [r.text for r in backend.run_batch(_requests(), _load)] == expected
    assert calls == [4, 2, 1, 1, 2, 1, 1] and backend.oom_splits == 3  # type: ignore[attr-defined]
    assert backend.fingerprint()["batch_size"] == 4  # the configured size, not the one that fitted


def test_a_single_request_that_runs_out_of_memory_fails_with_one_clear_error(
        tiny_llava: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = make_backend(f"hf:{tiny_llava},batch_size=2", Generation(max_new_tokens=6), "generate")
    backend.prepare()
    calls = _out_of_memory_above_one_row(backend, monkeypatch, limit=0)
    with pytest.raises(BackendError, match="out of memory generating even a single request") as caught:
        backend.run_batch(_requests()[:2], _load)
    assert calls == [2, 1]  # split once, then the first half already fails alone
    text = caught.value.render()
    assert "batch_size=2" in text and "max_new_tokens=6" in text and "lower batch_size or max_new_tokens" in text


def test_stop_sequences_cut_the_answers_of_the_hf_backend(tiny_llava: Path) -> None:
    """An answer ends before the first stop sequence; stop enters the fingerprint only when set."""
    plain = make_backend(f"hf:{tiny_llava},batch_size=4", Generation(max_new_tokens=6), "generate")
    answers = [r.text for r in plain.run_batch(TEXT_ONLY, _load)]
    cut_here = next(a for a in answers if len(a.strip()) > 2)
    stop = cut_here.strip()[1:3]  # two characters inside one of the answers
    stopped = make_backend(f"hf:{tiny_llava},batch_size=4", Generation(max_new_tokens=6, stop=[stop]), "generate")
    cut = [r.text for r in stopped.run_batch(TEXT_ONLY, _load)]
    assert cut == [a[:a.find(stop)].strip() if stop in a else a for a in answers]
    assert stopped.fingerprint()["generation"]["stop"] == [stop] and "stop" not in plain.fingerprint()["generation"]

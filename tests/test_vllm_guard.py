"""The vllm backend without vllm: the import guard, the pure parts (sampling parameters, messages,
prompts, engine inputs), options and fingerprint, and one batch through a stand-in engine."""

from __future__ import annotations

import importlib.machinery
import io
import json
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Request, make_backend, vllm_engine
from benchc.runtime.backends.hf import request_seed
from benchc.runtime.backends.local_model import module_available, package_version
from benchc.runtime.backends.vllm_engine import (
    chat_messages,
    engine_input,
    render_prompt,
    sampling_kwargs,
)
from PIL import Image
from support.refusals import assert_refused

GREEDY = Generation(max_new_tokens=12)
SAMPLED = Generation(max_new_tokens=12, temperature=0.7, top_p=0.9, seed=4)


@pytest.mark.skipif(module_available("vllm"), reason="vllm is installed here")
def test_without_vllm_the_backend_fails_when_built_saying_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    for target in (tmp_path, tmp_path / "nowhere"):  # the package is checked before the folder
        with pytest.raises(BackendError, match="needs the Python package 'vllm'") as caught:
            make_backend(f"vllm:{target}", GREEDY, "generate")
        assert "pip install vllm" in caught.value.render()


def test_sampling_parameters_follow_the_generation_settings() -> None:
    request = Request("k", "generate", "What is it?", media=(("image", "abc"),))
    assert sampling_kwargs(GREEDY, request) == {"n": 1, "max_tokens": 12, "temperature": 0.0, "top_p": 1.0}
    sampled = sampling_kwargs(SAMPLED, request)
    assert sampled == {"n": 1, "max_tokens": 12, "temperature": 0.7, "top_p": 0.9,
                       "seed": request_seed(request, 4)}
    # one seed per request, from its content: the sample index and a request's own seed change it
    second = Request("k", "generate", "What is it?", media=(("image", "abc"),), sample=1)
    own = Request("k", "generate", "What is it?", media=(("image", "abc"),), seed=9)
    seeds = {sampling_kwargs(SAMPLED, r)["seed"] for r in (request, second, own)}
    assert len(seeds) == 3 and all(0 <= s < 2**63 for s in seeds)


def test_messages_prompts_and_engine_inputs() -> None:
    request = Request("k", "generate", "What colour?", system="Be brief.")
    messages = chat_messages(request, 2)
    assert messages == [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                        {"role": "user", "content": [{"type": "image"}, {"type": "image"},
                                                     {"type": "text", "text": "What colour?"}]}]
    assert render_prompt(None, request, 2) == "<image>\n<image>\nBe brief.\n\nWhat colour?"
    assert render_prompt(None, Request("k", "generate", "Hi"), 0) == "Hi"

    class Renderer:
        chat_template = "{{ whatever }}"

        def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
            assert kwargs == {"add_generation_prompt": True, "tokenize": False}
            return json.dumps(messages)

    assert json.loads(render_prompt(Renderer(), request, 2)) == messages
    red, blue = Image.new("RGB", (4, 4), "red"), Image.new("RGB", (4, 4), "blue")
    assert engine_input("p", []) == {"prompt": "p"}
    assert engine_input("p", [red]) == {"prompt": "p", "multi_modal_data": {"image": red}}
    assert engine_input("p", [red, blue]) == {"prompt": "p", "multi_modal_data": {"image": [red, blue]}}


class FakeLLM:
    """Stands in for vllm.LLM: records its arguments and answers with the prompt's length."""

    made: ClassVar[list[dict[str, Any]]] = []
    calls: ClassVar[list[tuple[list[dict[str, Any]], list[Any]]]] = []

    def __init__(self, **kwargs: Any) -> None:
        FakeLLM.made.append(kwargs)

    def generate(self, inputs: list[dict[str, Any]], params: list[Any], use_tqdm: bool) -> list[Any]:
        FakeLLM.calls.append((inputs, params))
        return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text=f" {len(i['prompt'])} ")]) for i in inputs]


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.LLM = FakeLLM
    module.SamplingParams = lambda **kwargs: kwargs
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.made, FakeLLM.calls = [], []
    return module


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from support.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("llava"), seed=0)


def _png(colour: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 16), colour).save(out, "PNG")
    return out.getvalue()


@pytest.mark.slow
def test_a_batch_goes_to_the_engine_with_rendered_prompts_images_and_seeds(
        fake_vllm: types.ModuleType, tiny_llava: Path) -> None:
    backend = make_backend(f"vllm:{tiny_llava},max_images=2,tensor_parallel_size=2", SAMPLED, "generate")
    media = {"r": _png("red"), "b": _png("blue")}
    requests = [Request("k1", "generate", "What colour?", media=(("image", "r"), ("image", "b"))),
                Request("k2", "generate", "Say hi", system="Be brief.")]
    answers = backend.run_batch(requests, lambda kind, sha: media[sha])
    assert FakeLLM.made == [{"model": str(tiny_llava), "dtype": "auto", "tensor_parallel_size": 2,
                             "max_model_len": None, "gpu_memory_utilization": 0.9, "seed": 0,
                             "limit_mm_per_prompt": {"image": 2}}]
    (inputs, params), = FakeLLM.calls
    assert inputs[0]["prompt"] == "USER: <image>\n<image>\nWhat colour?\nASSISTANT:"  # the chat template
    assert [im.getpixel((0, 0)) for im in inputs[0]["multi_modal_data"]["image"]] == [(255, 0, 0), (0, 0, 255)]
    assert inputs[1] == {"prompt": "SYSTEM: Be brief.\nUSER: Say hi\nASSISTANT:"}
    assert params == [sampling_kwargs(SAMPLED, r) for r in requests]
    assert [a.text for a in answers] == [str(len(i["prompt"])) for i in inputs]  # stripped
    too_many = Request("k3", "generate", "?", media=(("image", "r"),) * 3)
    with pytest.raises(BackendError, match="more than max_images=2"):
        backend.run_batch([too_many], lambda kind, sha: media[sha])


@pytest.mark.slow
def test_options_and_fingerprint(fake_vllm: types.ModuleType, tiny_llava: Path, tmp_path: Path) -> None:
    base = make_backend(f"vllm:{tiny_llava}", GREEDY, "generate").fingerprint()
    assert base["vllm"] == package_version("vllm")  # "missing" here: the stand-in has no metadata
    assert base["batch_size"] == 32  # greedy rows batched together (see the module docstring)
    assert "batch_size" not in make_backend(f"vllm:{tiny_llava}", SAMPLED, "generate").fingerprint()
    others = [make_backend(f"vllm:{tiny_llava},{option}", GREEDY, "generate").fingerprint()
              for option in ("dtype=bfloat16", "tensor_parallel_size=2", "max_model_len=512", "batch_size=4")]
    others.append(make_backend(f"vllm:{tiny_llava}", Generation(max_new_tokens=13), "generate").fingerprint())
    assert all(p != base for p in others) and len({json.dumps(p, sort_keys=True) for p in others}) == len(others)
    refused = {f"vllm:{tmp_path / 'nowhere'}": "no model folder with config.json",
               f"vllm:{tiny_llava},gpu_memory_utilization=1.5": "gpu_memory_utilization='1.5' is not valid",
               f"vllm:{tiny_llava},dtype=int4": "dtype='int4' is not valid",
               f"vllm:{tiny_llava},quantization=awq": "unknown option"}
    assert_refused(refused, GREEDY, "generate")
    assert vllm_engine.VLLMEngine.tasks == frozenset({"generate"})

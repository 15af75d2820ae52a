"""Vision-language and text models through vLLM's offline engine: ``vllm:/models/llava-1.5-7b``.

``vllm.LLM(model=path)`` loads the local folder (vLLM needs a CUDA GPU; it is not a dependency of
benchc). Without vllm installed the backend fails when it is built, before any request, with one
BackendError saying what to install. Prompts are rendered as the hf backend renders them: the
chat template of the folder's processor (or tokenizer) over the request's system and user turns,
one image placeholder per image; the images go to the engine as ``multi_modal_data``. Sampling
parameters come from the spec's ``generation``: greedy (temperature 0) or sampled, then with a
seed per request derived from its content and ``generation.seed`` (as the hf backend does), so a
sampled answer does not depend on its batch.

Options: ``batch_size`` (32: requests handed to ``LLM.generate`` at once; the engine schedules
them itself), ``dtype`` (auto), ``tensor_parallel_size`` (1), ``max_model_len`` (the model's),
``gpu_memory_utilization`` (0.9), ``max_images`` (images per prompt, 4).

What enters the fingerprint: the folder's digest (weights, configs, processor and tokenizer
files), the vllm, transformers and torch versions, dtype, tensor-parallel size, maximal length,
the GPU model, the generation settings, and for greedy decoding the batch size (the engine batches
the rows of a ``generate`` call together; other batch shapes round differently, which can flip an
argmax). The pure parts (sampling parameters, messages, engine inputs) are module functions, so
they are tested without vllm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.spec.models import Generation

from .base import BACKENDS, Backend, BackendOptions, BackendSpec, MediaLoader, Request, Response, cut_at_stop
from .devices import device_identity
from .local_model import first_line, model_digest, model_folder, package_version, request_seed, require_module
from .media import decode_image

INSTALL_HINT = "pip install vllm (needs a CUDA GPU; pick the release built for your torch)"


def sampling_kwargs(generation: Generation, request: Request) -> dict[str, Any]:
    """``vllm.SamplingParams`` keyword arguments for one request: greedy, or sampled under the
    request's own seed (one answer per request: samples are distinct requests)."""
    kwargs: dict[str, Any] = {"n": 1, "max_tokens": generation.max_new_tokens}
    if generation.stop:
        kwargs["stop"] = list(generation.stop)
    if generation.temperature > 0:
        kwargs.update(temperature=generation.temperature, top_p=generation.top_p,
                      seed=request_seed(request, generation.seed))
    else:
        kwargs.update(temperature=0.0, top_p=1.0)
    return kwargs


def chat_messages(request: Request, n_images: int) -> list[dict[str, Any]]:
    """The request as chat messages: images first, then the prompt (as the hf backend sends it)."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in range(n_images)]
    content.append({"type": "text", "text": request.prompt})
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    if request.system:
        messages.insert(0, {"role": "system", "content": [{"type": "text", "text": request.system}]})
    return messages


def render_prompt(renderer: Any, request: Request, n_images: int) -> str:
    """The prompt text: ``renderer``'s chat template (a processor or tokenizer), or without one
    one ``<image>`` line per image, then the system and user text."""
    if renderer is not None and getattr(renderer, "chat_template", None):
        return renderer.apply_chat_template(chat_messages(request, n_images), add_generation_prompt=True,
                                            tokenize=False)
    text = f"{request.system}\n\n{request.prompt}" if request.system else request.prompt
    return "<image>\n" * n_images + text


def engine_input(prompt: str, images: list[Any]) -> dict[str, Any]:
    """One ``LLM.generate`` input: the prompt, and its images as ``multi_modal_data``."""
    if not images:
        return {"prompt": prompt}
    return {"prompt": prompt, "multi_modal_data": {"image": images[0] if len(images) == 1 else list(images)}}


class VLLMOptions(BackendOptions):
    batch_size: int = Field(32, ge=1, description="requests per LLM.generate call (the engine schedules them itself)")
    dtype: Literal["auto", "float16", "bfloat16", "float32"] = Field(
        "auto", description="the precision vLLM loads the weights in (auto: the model's)")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per model")
    max_model_len: int | None = Field(None, ge=1, description="longest prompt and answer in tokens "
                                                              "(default: the model's)")
    gpu_memory_utilization: float = Field(0.9, gt=0.0, le=1.0, description="fraction of GPU memory")
    max_images: int = Field(4, ge=0, description="images per prompt")


@BACKENDS.add("vllm")
class VLLMEngine(Backend):
    """Image-text-to-text and text models through vLLM's offline engine."""

    tasks = frozenset({"generate"})
    takes_stop = True
    target_help = "/path/to/model (a folder saved with save_pretrained; needs vllm and a CUDA GPU)"
    target_is_path = True
    Options = VLLMOptions
    opts: VLLMOptions

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        super().__init__(spec, generation)
        require_module(self.name, "vllm", INSTALL_HINT)
        self.path: Path = model_folder(self.name, spec.target, "config.json",
                                       "vllm:/path/to/model (a folder saved with save_pretrained)")
        self.batch_size = self.opts.batch_size
        self.dtype_name = self.opts.dtype
        self.tensor_parallel = self.opts.tensor_parallel_size
        self.max_model_len = self.opts.max_model_len
        self.max_images = self.opts.max_images
        self.memory = self.opts.gpu_memory_utilization
        self.llm: Any = None

    def fingerprint(self) -> dict[str, Any]:
        g = self.generation
        out: dict[str, Any] = {
            "backend": self.name, "model": model_digest(str(self.path)), "vllm": package_version("vllm"),
            "transformers": package_version("transformers"), "torch": package_version("torch"),
            "dtype": self.dtype_name, "tensor_parallel_size": self.tensor_parallel,
            "max_model_len": self.max_model_len, "device": self._device_identity(),
            "generation": {"max_new_tokens": g.max_new_tokens, "temperature": g.temperature, "top_p": g.top_p,
                           **({"stop": g.stop} if g.stop else {})}}
        if g.temperature == 0:
            out["batch_size"] = self.batch_size
        return out

    @staticmethod
    def _device_identity() -> str:
        """The GPU model of the first CUDA device (where the engine runs), or "no-cuda"."""
        import torch

        return device_identity(torch, torch.device("cuda", 0)) if torch.cuda.is_available() else "no-cuda"

    def prepare(self) -> None:
        if self.llm is not None:
            return
        try:
            from vllm import LLM
        except ImportError as exc:
            raise BackendError(Problem(f"vllm cannot be imported: {exc}", hint=INSTALL_HINT)) from None
        self.renderer = self._renderer()
        try:
            self.llm = LLM(model=str(self.path), dtype=self.dtype_name, tensor_parallel_size=self.tensor_parallel,
                           max_model_len=self.max_model_len, gpu_memory_utilization=self.memory, seed=0,
                           limit_mm_per_prompt={"image": self.max_images})
        except (OSError, ValueError, RuntimeError) as exc:
            raise BackendError(Problem(f"vllm: cannot load {self.path}: {first_line(exc)}",
                                       hint="is it a model vLLM supports, saved with save_pretrained, and is "
                                            "a CUDA GPU free?")) from None

    def _renderer(self) -> Any:
        """The folder's processor (for its chat template), else its tokenizer, else None."""
        from transformers import AutoProcessor, AutoTokenizer

        for loader in (AutoProcessor, AutoTokenizer):
            try:
                renderer = loader.from_pretrained(self.path, local_files_only=True)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if getattr(renderer, "chat_template", None):
                return renderer
        return None

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        from vllm import SamplingParams

        self.prepare()
        inputs = [self._input(r, load_media) for r in requests]
        params = [SamplingParams(**sampling_kwargs(self.generation, r)) for r in requests]
        outputs = self.llm.generate(inputs, params, use_tqdm=False)
        return [Response("text", text=cut_at_stop(o.outputs[0].text, self.generation.stop).strip()) for o in outputs]

    def _input(self, request: Request, load_media: MediaLoader) -> dict[str, Any]:
        shas = [sha for kind, sha in request.media if kind == "image"]
        if len(shas) > self.max_images:
            raise BackendError(Problem(f"vllm: a request has {len(shas)} images, more than max_images="
                                       f"{self.max_images}", hint="raise the backend option max_images"))
        images = [decode_image(load_media("image", s), s, backend=self.name) for s in shas]
        return engine_input(render_prompt(self.renderer, request, len(images)), images)


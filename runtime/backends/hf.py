"""Vision-language models through transformers' Auto classes, loaded from a local folder.

``hf:/path/to/model`` loads ``AutoProcessor`` and ``AutoModelForImageTextToText`` with
``local_files_only=True`` (nothing is fetched from a hub), renders each prompt through the
processor's chat template when it has one, and generates in left-padded batches.

What can change an answer, and so enters the fingerprint (the backend's part of every request
key): the model folder's digest, transformers and torch versions, dtype, the device (type, and
the GPU model on CUDA), the generation settings, and for greedy decoding the batch size: requests
of a batch are left-padded to a common length, and padding changes the shapes of the matrix
products, hence their rounding, which can flip an argmax on some models. (Which requests share a
batch can matter in the same way; batch size is the part a user controls.)

Sampled requests (temperature > 0) run one at a time, each under its own seed derived from the
request's content (prompt, system, media, sample index) and ``generation.seed``. A sampled answer
therefore depends neither on the other requests of its batch nor on the batch size, which is why
batch size is left out of a sampling backend's fingerprint. (Batched sampling would need a
generator per row, which ``generate`` does not offer.)
"""

from __future__ import annotations

import io
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from benchc.compiler.canonical import digest, digest_file
from benchc.compiler.errors import BackendError, Problem

from .base import BACKENDS, Backend, BackendSpec, MediaLoader, Request, Response

CONFIG_SUFFIXES = (".json", ".jinja", ".txt", ".model", ".safetensors", ".bin")


@lru_cache(maxsize=8)
def model_digest(path: str) -> str:
    """Digest of every weight, config, processor and tokenizer file of a model folder."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in CONFIG_SUFFIXES)
    return digest({p.relative_to(root).as_posix(): digest_file(p) for p in files})


def request_seed(request: Request, base: int | None) -> int:
    """A sampling seed from the request's content and sample index, never from its batch."""
    content = {"kind": "hf-sample-seed", "seed": base or 0, "prompt": request.prompt,
               "system": request.system, "media": [list(m) for m in request.media], "sample": request.sample}
    return int(digest(content)[:15], 16)


def _image(data: bytes, sha256: str) -> Any:
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(io.BytesIO(data)).convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise BackendError(Problem(f"hf: image {sha256[:12]} cannot be decoded: {exc}",
                                   hint="the compile cache may be damaged; recompile with a fresh --cache")) from None


class HFVision(Backend):
    name = "hf"
    tasks = frozenset({"generate"})
    OPTIONS = {"batch_size", "dtype", "device"}
    DTYPES = ("float32", "float16", "bfloat16")

    def __init__(self, spec: BackendSpec, generation: Any) -> None:
        super().__init__(spec, generation)
        self.check_options(self.OPTIONS)
        self.path = Path(spec.target)
        if not spec.target or not (self.path / "config.json").is_file():
            raise BackendError(Problem(f"hf: no model folder with config.json at {spec.target!r}",
                                       hint="hf:/path/to/model (a folder saved with save_pretrained)"))
        self.batch_size = self.int_option("batch_size", 8, minimum=1)
        self.dtype_name = self.choice_option("dtype", "float32", self.DTYPES)
        self._load()

    def _load(self) -> None:
        try:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:
            raise BackendError(Problem(f"hf backend needs torch and transformers: {exc}")) from None
        self.torch = torch
        self.device = self._device(self.option("device", "cpu"))
        try:
            self.processor = AutoProcessor.from_pretrained(self.path, local_files_only=True)
            self.model = AutoModelForImageTextToText.from_pretrained(
                self.path, local_files_only=True, dtype=getattr(torch, self.dtype_name))
        except (OSError, ValueError, KeyError) as exc:
            raise BackendError(Problem(f"hf: cannot load {self.path}: {str(exc).splitlines()[0]}",
                                       hint="is it an image-text-to-text model saved with save_pretrained?")) from None
        self.model.to(self.device).eval()
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"

    def _device(self, name: str) -> Any:
        """A torch device that exists on this machine, or a BackendError before any request."""
        try:
            device = self.torch.device(name)
        except RuntimeError:
            raise self.bad_option("device", name, "a torch device such as cpu, cuda or cuda:1") from None
        if device.type == "cuda" and not (self.torch.cuda.is_available()
                                          and (device.index or 0) < self.torch.cuda.device_count()):
            raise self.bad_option("device", name, "a CUDA device present on this machine (or cpu)")
        if device.type not in ("cpu", "cuda"):
            raise self.bad_option("device", name, "cpu or cuda[:N]")
        return device

    @property
    def sampling(self) -> bool:
        return self.generation.temperature > 0

    def fingerprint(self) -> dict[str, Any]:
        g = self.generation
        out: dict[str, Any] = {
            "backend": self.name, "model": model_digest(str(self.path)),
            "transformers": metadata.version("transformers"), "torch": metadata.version("torch"),
            "dtype": self.dtype_name, "device": self._device_identity(),
            "generation": {"max_new_tokens": g.max_new_tokens, "temperature": g.temperature, "top_p": g.top_p}}
        if not self.sampling:  # greedy batches are padded together (see the module docstring)
            out["batch_size"] = self.batch_size
        return out

    def _device_identity(self) -> str:
        """The device type, plus the GPU model on CUDA (another GPU runs other kernels)."""
        if self.device.type == "cuda":
            return f"cuda:{self.torch.cuda.get_device_name(self.device)}"
        return self.device.type

    def _text(self, request: Request, n_images: int) -> str:
        content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": request.prompt}]
        messages = [{"role": "user", "content": content}]
        if request.system:
            messages.insert(0, {"role": "system", "content": [{"type": "text", "text": request.system}]})
        if getattr(self.processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None):
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return "<image>\n" * n_images + request.prompt

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        if self.sampling:
            return [self._generate([r], load_media, seed=request_seed(r, self.generation.seed))[0]
                    for r in requests]
        return self._generate(requests, load_media, seed=None)

    def _generate(self, requests: list[Request], load_media: MediaLoader, seed: int | None) -> list[Response]:
        """One padded ``generate`` call; ``seed`` seeds the RNG for it alone (fork_rng restores
        the caller's RNG state afterwards)."""
        images, texts = [], []
        for request in requests:
            shas = [sha for kind, sha in request.media if kind == "image"]
            images += [_image(load_media("image", s), s) for s in shas]
            texts.append(self._text(request, len(shas)))
        inputs = self.processor(text=texts, images=images or None, return_tensors="pt", padding=True)
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        forked = [self.device.index or 0] if self.device.type == "cuda" else []
        with self.torch.inference_mode(), self.torch.random.fork_rng(devices=forked):
            if seed is not None:
                self.torch.manual_seed(seed)
            out = self.model.generate(**inputs, **self._generate_kwargs())
        new_tokens = out[:, inputs["input_ids"].shape[1]:]
        decoded = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        return [Response("text", text=t.strip()) for t in decoded]

    def _generate_kwargs(self) -> dict[str, Any]:
        g = self.generation
        kwargs: dict[str, Any] = {"max_new_tokens": g.max_new_tokens,
                                  "pad_token_id": self.tokenizer.pad_token_id}
        if g.temperature > 0:
            kwargs.update(do_sample=True, temperature=g.temperature, top_p=g.top_p)
        else:
            kwargs.update(do_sample=False)
        return kwargs


BACKENDS.register(HFVision.name, HFVision)

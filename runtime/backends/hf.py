"""Vision-language models through transformers' Auto classes, loaded from a local folder.

``hf:/path/to/model`` loads ``AutoProcessor`` and ``AutoModelForImageTextToText`` with
``local_files_only=True`` (nothing is fetched from a hub), renders each prompt through the
processor's chat template when it has one, and generates in left-padded batches.
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


class HFVision(Backend):
    name = "hf"
    tasks = frozenset({"generate"})
    OPTIONS = {"batch_size", "dtype", "device"}

    def __init__(self, spec: BackendSpec, generation: Any) -> None:
        super().__init__(spec, generation)
        self.check_options(self.OPTIONS)
        self.path = Path(spec.target)
        if not spec.target or not (self.path / "config.json").is_file():
            raise BackendError(Problem(f"hf: no model folder with config.json at {spec.target!r}",
                                       hint="hf:/path/to/model (a folder saved with save_pretrained)"))
        self.batch_size = int(self.option("batch_size", "8"))
        self.dtype_name = self.option("dtype", "float32")
        self.device = self.option("device", "cpu")
        self._load()

    def _load(self) -> None:
        try:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:
            raise BackendError(Problem(f"hf backend needs torch and transformers: {exc}")) from None
        self.torch = torch
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

    def fingerprint(self) -> dict[str, Any]:
        g = self.generation
        return {"backend": self.name, "model": model_digest(str(self.path)),
                "transformers": metadata.version("transformers"), "dtype": self.dtype_name,
                "generation": {"max_new_tokens": g.max_new_tokens, "temperature": g.temperature,
                               "top_p": g.top_p}}

    def _text(self, request: Request, n_images: int) -> str:
        content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": request.prompt}]
        messages = [{"role": "user", "content": content}]
        if request.system:
            messages.insert(0, {"role": "system", "content": [{"type": "text", "text": request.system}]})
        if getattr(self.processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None):
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return "<image>\n" * n_images + request.prompt

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        from PIL import Image

        images, texts = [], []
        for request in requests:
            shas = [sha for kind, sha in request.media if kind == "image"]
            images += [Image.open(io.BytesIO(load_media("image", s))).convert("RGB") for s in shas]
            texts.append(self._text(request, len(shas)))
        inputs = self.processor(text=texts, images=images or None, return_tensors="pt", padding=True)
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with self.torch.inference_mode(), self.torch.random.fork_rng(devices=[]):
            self.torch.manual_seed(self._batch_seed(requests))
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

    def _batch_seed(self, requests: list[Request]) -> int:
        """Sampling seeds come from the requests' keys, never from the global RNG."""
        base = self.generation.seed or 0
        return int(digest([base, [r.key for r in requests]])[:8], 16)


BACKENDS.register(HFVision.name, HFVision)

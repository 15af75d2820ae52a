"""Vision-language and text models through transformers' Auto classes, from a local folder.

``hf:/path/to/model`` loads ``AutoProcessor`` and ``AutoModelForImageTextToText`` with
``local_files_only=True`` (nothing is fetched from a hub), renders each prompt through the
processor's chat template when it has one, and generates in left-padded batches. A request may
carry no image (compile-time model steps such as a translation send text only): LLaVA-style
processors then get ``images=None`` and a prompt without image placeholders. A folder whose
config is a text-only causal LM (no image-text-to-text class for it) loads with
``AutoTokenizer`` and ``AutoModelForCausalLM`` instead and refuses requests with images.

Weights load on the first batch (or ``prepare()``, which ``benchc run`` calls before its first
request), so that a fingerprint, which needs only the folder's digest, costs no load.

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
    """A sampling seed from the request's content and sample index, never from its batch; a
    request's own seed (a compile-time model step's variant) replaces the base."""
    seed = request.seed if request.seed is not None else (base or 0)
    content = {"kind": "hf-sample-seed", "seed": seed, "prompt": request.prompt,
               "system": request.system, "media": [list(m) for m in request.media], "sample": request.sample}
    return int(digest(content)[:15], 16)


def _is_image_text_to_text(config: Any) -> bool:
    """Whether transformers has an image-text-to-text class for this config (else: text only)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

    return type(config) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING


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
    target_is_path = True
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
        try:
            import torch
        except ImportError as exc:
            raise BackendError(Problem(f"hf backend needs torch and transformers: {exc}")) from None
        self.torch = torch
        self.device = self._device(self.option("device", "cpu"))
        self._loaded = False

    def prepare(self) -> None:
        if not self._loaded:
            self._load()
            self._loaded = True

    def _load(self) -> None:
        try:
            from transformers import AutoConfig
        except ImportError as exc:
            raise BackendError(Problem(f"hf backend needs torch and transformers: {exc}")) from None
        try:
            config = AutoConfig.from_pretrained(self.path, local_files_only=True)
            self.takes_images = _is_image_text_to_text(config)
            # Building a model draws its initial weights from the global RNG before loading the
            # real ones: fork it, so that loading (which may now happen mid-run) leaves it alone.
            with self.torch.random.fork_rng(devices=[]):
                self.processor, self.model = (self._load_vision() if self.takes_images else self._load_text())
        except (OSError, ValueError, KeyError) as exc:
            raise BackendError(Problem(f"hf: cannot load {self.path}: {str(exc).splitlines()[0]}",
                                       hint="is it an image-text-to-text model (or a causal LM) saved "
                                            "with save_pretrained?")) from None
        self.model.to(self.device).eval()
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:  # many causal LMs ship without a pad token
            self.tokenizer.pad_token = self.tokenizer.eos_token

    def _load_vision(self) -> tuple[Any, Any]:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        processor = AutoProcessor.from_pretrained(self.path, local_files_only=True)
        model = AutoModelForImageTextToText.from_pretrained(
            self.path, local_files_only=True, dtype=getattr(self.torch, self.dtype_name))
        return processor, model

    def _load_text(self) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            self.path, local_files_only=True, dtype=getattr(self.torch, self.dtype_name))
        return tokenizer, model

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

    @property
    def _has_chat_template(self) -> bool:
        return bool(getattr(self.processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None))

    def _text(self, request: Request, n_images: int) -> str:
        if not self.takes_images:
            return self._plain_text(request)
        content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": request.prompt}]
        messages = [{"role": "user", "content": content}]
        if request.system:
            messages.insert(0, {"role": "system", "content": [{"type": "text", "text": request.system}]})
        if self._has_chat_template:
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return "<image>\n" * n_images + request.prompt

    def _plain_text(self, request: Request) -> str:
        """A text-only model's input: its chat template over string contents (the form text
        models' templates expect), or the system and user text one after the other."""
        messages = [{"role": "user", "content": request.prompt}]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        if self._has_chat_template:
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return f"{request.system}\n\n{request.prompt}" if request.system else request.prompt

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        self.prepare()
        if self.sampling:
            return [self._generate([r], load_media, seed=request_seed(r, self.generation.seed))[0]
                    for r in requests]
        return self._generate(requests, load_media, seed=None)

    def _inputs(self, requests: list[Request], load_media: MediaLoader) -> dict[str, Any]:
        """The batch's tensors: prompts with their images (none for text-only requests)."""
        images, texts = [], []
        for request in requests:
            shas = [sha for kind, sha in request.media if kind == "image"]
            if shas and not self.takes_images:
                raise BackendError(Problem(f"hf: {self.path.name} is a text-only model and a request has an image",
                                           hint="use an image-text-to-text model for requests with images"))
            images += [_image(load_media("image", s), s) for s in shas]
            texts.append(self._text(request, len(shas)))
        if self.takes_images:
            return self.processor(text=texts, images=images or None, return_tensors="pt", padding=True)
        # A chat template writes the special tokens itself; the tokenizer must not add a second BOS.
        encoded = self.tokenizer(texts, return_tensors="pt", padding=True,
                                 add_special_tokens=not self._has_chat_template)
        return {k: v for k, v in encoded.items() if k != "token_type_ids"}  # causal LMs take none

    def _generate(self, requests: list[Request], load_media: MediaLoader, seed: int | None) -> list[Response]:
        """One padded ``generate`` call; ``seed`` seeds the RNG for it alone (fork_rng restores
        the caller's RNG state afterwards)."""
        inputs = {k: v.to(self.device) for k, v in self._inputs(requests, load_media).items()}
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

"""Vision-language and text models through transformers' Auto classes, from a local folder.

``hf:/path/to/model`` loads ``AutoProcessor`` and ``AutoModelForImageTextToText`` with
``local_files_only=True`` (nothing is fetched from a hub) and generates in left-padded batches. A
folder whose config is a text-only causal LM (no image-text-to-text class for it) loads with
``AutoTokenizer`` and ``AutoModelForCausalLM`` instead and refuses requests with images.

Families
--------
Tested on tiny random-weight models of each (``tests/test_hf_families.py``): LLaVA-1.5,
LLaVA-NeXT (``image_sizes``), Qwen2-VL and Qwen2.5-VL (``image_grid_thw``, M-RoPE), Idefics3
(also SmolVLM v1, whose checkpoints are Idefics3; image splitting, ``pixel_attention_mask``),
BLIP-2 (OPT) and InstructBLIP (Flan-T5) (Q-Former query tokens, which the processor inserts from
``num_query_tokens``), and PaliGemma. SmolVLM2 is the Idefics3 design too; under transformers 4.x
its processor module imports torchvision, so without torchvision it fails to load with one
BackendError naming it (5.x serves it). Image captioners (BLIP, GIT, ViT-GPT2 vision-encoder-decoder:
MMCBench's baselines) take one image and the prompt as the start of the caption
(``hf_captioners``). Whatever extra tensors a family's processor returns go to ``generate`` unchanged
(``token_type_ids`` only where the model's forward takes them).

How a request becomes the model's input:

* Families with a chat template (LLaVA, LLaVA-NeXT, Qwen-VL, Idefics3/SmolVLM) get the
  processor's template over a user turn of image parts then the prompt (and a system turn when the
  request has one); the processor expands each image placeholder to the family's image tokens.
* Families without one get the prompt form of their model card, from ``PROMPT_FORMS`` (one
  table, below): BLIP-2 ``Question: {q} Answer:``, InstructBLIP the instruction as it is,
  PaliGemma ``<image>answer en {q}`` (its processor adds ``<bos>`` after the image tokens and the
  closing newline of the prefix). These forms apply even if such a folder carries a chat template.
* Any other folder without a chat template gets ``<image>\\n`` per image, then the prompt.

A request may carry no image (compile-time model steps such as a translation, or MERLIM's LLM-only
ablation, send text only): chat families then get a text-only turn and ``images=None``. BLIP-2,
InstructBLIP and PaliGemma cannot answer without an image (their ``generate`` or processor needs
pixel values; the LLM alone would be another model), so such a request fails before any generation
with one BackendError. They also take one image per request.

Answers: ``generate`` returns the prompt then the new tokens for decoder-only language models and
only the new tokens for encoder-decoder ones (InstructBLIP/BLIP-2 on Flan-T5), so the prompt is cut
off only in the first case. The model's own generation config is passed to ``generate``
explicitly: BLIP-2 and InstructBLIP hand generation to their inner language model, which would
otherwise use defaults derived from its config and ignore the checkpoint's (eos, suppressed
tokens). Floating-point inputs (pixel values) are cast to the model's dtype.

transformers 4.57 and 5.x
-------------------------
Written for both (here 4.57; GPU machines run 5.x). Differences that matter here:
``AutoModelForVision2Seq`` is gone in 5.x (``AutoModelForImageTextToText`` exists in both);
weights load with ``dtype=`` (``torch_dtype=`` is removed); ``batch_decode`` was folded into
``decode`` (answers are decoded row by row with ``decode``); ``apply_chat_template`` returns a
``BatchEncoding`` when it tokenizes (it is only ever asked for text here); processors derive
their parts from their ``__init__`` signature instead of an ``attributes`` list; fast (torchvision)
image processors are the default in 5.x, and the slow (PIL) ones give slightly different pixels,
which is why torchvision's version (or its absence) enters the fingerprint.

torchvision: processors with a video part (Qwen2-VL, Qwen2.5-VL, SmolVLM2) need it for that part
even for images, and under 5.x ``AutoProcessor`` needs it for any image processor (5.17's
top-level image processor names are placeholders that demand it). Where ``AutoProcessor`` fails
for want of torchvision, ``hf_processor`` builds the family's processor from the folder's PIL
image processor, tokenizer and settings, with a stand-in for the video part; requests have no
videos, so the answers are those of the full processor with the PIL image processor.

Padding: decoder-only prompts are padded on the left, an encoder-decoder's (Flan-T5) and a
Q-Former's text on the right, so that no pad moves a real token (``_set_padding_sides``).

Weights load on the first batch (or ``prepare()``, which ``benchc run`` calls before its first
request), so that a fingerprint, which needs only the folder's digest, costs no load.

What can change an answer, and so enters the fingerprint (the backend's part of every request
key): the model folder's digest, transformers, torch and torchvision versions, dtype, the device
(type, and the GPU model on CUDA), the generation settings, and for greedy decoding the batch
size: requests of a batch are left-padded to a common length, and padding changes the shapes of the
matrix products, hence their rounding, which can flip an argmax on some models. (Which requests
share a batch can matter in the same way; batch size is the part a user controls.)

Out of memory: when ``generate`` runs out of GPU memory on a greedy batch, the backend empties the
CUDA cache, splits the batch in halves and runs each half, down to single requests; a single
request that still does not fit fails with one BackendError. Each split is counted in
``oom_splits`` for the caller to log. Backoff changes which requests share a padded batch, so
the answers of a split batch are those of smaller batches; the fingerprint keeps the configured
``batch_size`` (the user's setting, and what the run would use given the memory).

Decoding (``decode=``): ``dynamic`` (the default) grows the key/value cache token by token, as
plain ``generate()`` does. ``static`` preallocates it (transformers' ``cache_implementation=
"static"``; the cache is kept between batches of one size and grown only for a longer one, the
longest batch coming first), and ``compiled`` also compiles each decoding step with
``torch.compile`` (on a GPU with CUDA graphs, transformers' default; elsewhere inductor's default
mode): the first batch pays a compile of about a minute, and a batch of a new size another. Both
attend over the preallocated length with the unused part masked, which changes the order of
floating-point sums, so ``decode`` enters the fingerprint; on the tiny models of the tests the
answers equal the dynamic ones (``tests/test_hf_decode.py``). They cannot be combined with
``share_prefix``, whose shared prefix is a dynamic cache.

Continuous batching (transformers' ``generate_batch`` with paged attention, 4.57 and 5.17) is not
offered: it takes token ids only (``inputs: list[list[int]]``), so it cannot serve an
image-text-to-text model's pixel values; and for text-only models its scheduler packs into each
forward pass whatever requests are in flight at that moment, so the shapes, hence the rounding of
a greedy answer, would depend on timing, and a rerun could answer otherwise.

Sampled requests (temperature > 0) run one at a time, each under its own seed derived from the
request's content (prompt, system, media, sample index) and ``generation.seed``. A sampled answer
therefore depends neither on the other requests of its batch nor on the batch size, which is why
batch size is left out of a sampling backend's fingerprint. (Batched sampling would need a
generator per row, which ``generate`` does not offer.)
"""

from __future__ import annotations

import os

import inspect
import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.spec.models import Generation

from . import hf_batching, hf_captioners, hf_loglik, hf_prefix, hf_processor
from .base import BACKENDS, BackendSpec, Flag, MediaLoader, Request, Response, cut_at_stop
from .devices import private_rng, release_memory, to_device
from .local_model import BatchedTorchOptions, LocalTorchBackend, package_version, request_seed
from .local_model import model_digest as model_digest  # re-exported: read from here (runtime/score/clip_embed.py)
from .media import decode_image


@dataclass(frozen=True)
class PromptForm:
    """How a family without a chat template is prompted: the form of its model card.

    ``template`` has ``{images}`` (the processor's image token once per image, for processors that
    expect it in the text) and ``{prompt}`` (the request's prompt; a system text, which these
    families have no turn for, comes before it, separated by a space)."""

    template: str
    needs_image: bool = True
    """The family cannot answer a request without an image."""
    max_images: int = 1


PROMPT_FORMS: dict[str, PromptForm] = {
    # BLIP-2 (OPT / Flan-T5): the VQA form of its model card; the processor prepends the Q-Former's
    # query tokens itself (``num_query_tokens``), and generate() needs pixel values.
    "blip-2": PromptForm("Question: {prompt} Answer:"),
    # InstructBLIP: the instruction as it is (model card); it also goes to the Q-Former.
    "instructblip": PromptForm("{prompt}"),
    # PaliGemma: image tokens, then a task prefix ("answer en" for questions); the processor adds
    # <bos> after the image tokens and the newline that ends the prefix, and needs images.
    "paligemma": PromptForm("{images}answer en {prompt}"),
    # Captioners (hf_captioners): the prompt, if any, is the start of the caption.
    **{family: PromptForm("{prompt}") for family in hf_captioners.CAPTIONER_FAMILIES},
}
"""Prompt rules of the families without a chat template, by ``config.model_type``."""


@lru_cache(maxsize=32)
def _model_type(path: str) -> str:
    """The folder's ``config.json`` model type, read without transformers (a fingerprint loads
    nothing)."""
    try:
        return str(json.loads((Path(path) / "config.json").read_text()).get("model_type", ""))
    except (OSError, ValueError):
        return ""


def _is_image_text_to_text(config: Any) -> bool:
    """Whether transformers has an image-text-to-text class for this config (else: text only)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

    return type(config) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING


BATCHING_REVISION = 2
"""How greedy requests are padded into a batch; a new revision gives new request keys, because
the answers of a batch can change with it. 2: encoder-decoder and Q-Former text padded on the
right, and requests of like length batched together (``hf_batching``); 1: everything padded on
the left, batches cut in manifest order."""


class HFOptions(BatchedTorchOptions):
    share_prefix: Flag = Field(False, description="compute the shared image prefix of a group's prompts once "
                                                  "(LLaVA-1.5, LLaVA-NeXT)")
    decode: Literal["dynamic", "static", "compiled"] = Field(
        "dynamic", description="the key/value cache of decoding: dynamic (grows), static (preallocated), or "
                               "compiled (static, each decoding step compiled with torch.compile: faster on a "
                               "GPU after a compile of about a minute); not with share_prefix")


DECODE_MODES = {"static": {"cache_implementation": "static", "disable_compile": True},
                "compiled": {"cache_implementation": "static"}}
"""``generate`` arguments of each ``decode`` mode other than dynamic (see "Decoding" in the module
docstring); ``compiled`` also gets a ``CompileConfig`` (``_compile_config``)."""


@BACKENDS.add("hf")
class HFVision(LocalTorchBackend):
    """Image-text-to-text and text models through transformers, from a local folder.

    See the module docstring. Once loaded it is the ``LoadedModel`` that ``hf_prefix`` and
    ``hf_captioners`` work with, through its public names."""

    tasks = frozenset({"generate", "choice-loglik"})
    takes_stop = True
    encodes_ahead = True
    target_help = "/path/to/model (a folder saved with save_pretrained)"
    Options = HFOptions
    opts: HFOptions
    USAGE = "hf:/path/to/model (a folder saved with save_pretrained)"
    NEEDS_TORCH = "hf backend needs torch and transformers"
    LOAD_HINT = "is it an image-text-to-text model (or a causal LM) saved with save_pretrained?"

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        super().__init__(spec, generation)
        self.batch_size = self.opts.batch_size
        self.share_prefix = self.opts.share_prefix
        self.decode = self.opts.decode
        if self.share_prefix and self.decode != "dynamic":
            raise self.bad_option("decode", self.decode, "dynamic with share_prefix=true (a shared prefix's cache "
                                                         "is a dynamic one; leave decode out, or share_prefix)")
        self.shared_groups = 0
        """How many groups of requests shared an image prefix (``share_prefix``)."""
        self.oom_splits = 0
        """How many times a batch was split in halves after running out of memory (to log)."""
        self.tokenizer_lock = threading.RLock()
        """Held while the tokenizer encodes or decodes: the executor encodes the next batch on a
        helper thread while this one generates and is decoded, and a fast (Rust) tokenizer
        refuses to be used from two threads at once ("Already borrowed": encoding with padding
        changes its settings in place)."""

    def prepare(self) -> None:
        if self._loaded:
            return
        super().prepare()
        if self.share_prefix:  # refused before the first request
            hf_prefix.check_family(self.model.config.model_type)

    def _load(self) -> None:
        """The processor (or tokenizer) and model, on the device, ready for left-padded batches
        (``prepare`` runs it under a private RNG: building a model draws initial weights)."""
        try:
            from transformers import AutoConfig
        except ImportError as exc:
            raise BackendError(Problem(f"{self.NEEDS_TORCH.format(name=self.name)}: {exc}")) from None
        try:
            config = AutoConfig.from_pretrained(self.path, local_files_only=True)
            self.takes_images = _is_image_text_to_text(config)
            self.family = getattr(config, "model_type", "")
            self.prompt_form = PROMPT_FORMS.get(self.family) if self.takes_images else None
            self.processor, self.model = (self._load_vision(config) if self.takes_images else self._load_text())
        except (OSError, ValueError, KeyError, TypeError, ImportError) as exc:
            raise self.load_failed(exc, self.LOAD_HINT) from None
        self.model.to(self.device).eval()
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        if self.tokenizer.pad_token_id is None:  # many causal LMs ship without a pad token
            self.tokenizer.pad_token = self.tokenizer.eos_token
        text_config = self.model.config.get_text_config()
        self.encoder_decoder = bool(getattr(text_config, "is_encoder_decoder", False)
                                    or getattr(self.model.config, "is_encoder_decoder", False))
        self._set_padding_sides()

    def _set_padding_sides(self) -> None:
        """Where each tokenizer pads a batch, so that every request's real tokens keep the
        positions they have alone. A decoder-only model generates after the last prompt token, so
        its prompts are padded on the left (positions come from the attention mask's running
        sum). An encoder-decoder's encoder is padded on the right: T5's relative position bias
        would otherwise see pads between the image's query tokens (which the processor puts before
        the padded text) and the text, and answer otherwise than alone. A Q-Former's tokenizer
        (InstructBLIP) is padded on the right too: BERT's absolute positions count from the left."""
        self.tokenizer.padding_side = "right" if self.encoder_decoder else "left"
        qformer_tokenizer = getattr(self.processor, "qformer_tokenizer", None)
        if qformer_tokenizer is not None:
            qformer_tokenizer.padding_side = "right"

    def _load_vision(self, config: Any) -> tuple[Any, Any]:
        from transformers import AutoModelForImageTextToText

        if config.model_type in hf_captioners.CAPTIONER_FAMILIES:
            processor = hf_captioners.load_parts(self.path, config.model_type)
        else:
            processor = self._load_processor(config)
        model = AutoModelForImageTextToText.from_pretrained(self.path, local_files_only=True, dtype=self.dtype)
        return processor, model

    def _load_processor(self, config: Any) -> Any:
        from transformers import AutoProcessor

        try:
            return AutoProcessor.from_pretrained(self.path, local_files_only=True)
        except (ImportError, ValueError) as error:  # see "torchvision" in the module docstring
            if not hf_processor.needs_torchvision(error):
                raise
            try:
                return hf_processor.image_only_processor(self.path, config)
            except ImportError as exc:
                missing = hf_processor.missing_module(exc)
                raise BackendError(Problem(
                    f"hf: the processor of {self.path.name} ({config.model_type}) needs {missing}, "
                    "which is not installed",
                    hint=f"install {missing} (some families' processors, such as SmolVLM2's, import "
                         "torchvision for their video part even to read images)")) from None

    def _load_text(self) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True, dtype=self.dtype)
        return tokenizer, model

    @property
    def sampling(self) -> bool:
        return self.generation.temperature > 0

    def fingerprint(self) -> dict[str, Any]:
        g = self.generation
        out: dict[str, Any] = {
            **self.base_fingerprint(), "transformers": package_version("transformers"),
            # with torchvision, transformers 5 picks the fast image processors (other pixels)
            "torchvision": package_version("torchvision"),
            "generation": {"max_new_tokens": g.max_new_tokens, "temperature": g.temperature, "top_p": g.top_p,
                           **({"stop": g.stop} if g.stop else {})}}
        if not self.sampling:  # greedy batches are padded together (see the module docstring)
            out["batch_size"] = self.batch_size
            out["batching"] = BATCHING_REVISION
        if self.share_prefix:  # other tensor shapes, other rounding (see hf_prefix)
            out["share_prefix"] = hf_prefix.REVISION
        if self.decode != "dynamic":  # attention over the preallocated length, compiled kernels: other rounding
            out["decode"] = self.decode
        if _model_type(str(self.path)) in hf_captioners.CAPTIONER_FAMILIES:
            out["captioner"] = hf_captioners.REVISION
        return out

    @property
    def _has_chat_template(self) -> bool:
        return bool(getattr(self.processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None))

    # --- prompts ------------------------------------------------------------------------------

    def prompt_text(self, request: Request, n_images: int) -> str:
        """The request's prompt as the family takes it (see "How a request becomes the model's
        input" in the module docstring)."""
        if not self.takes_images:
            return self._plain_text(request)
        if self.prompt_form is not None:
            return self._form_text(request, n_images)
        content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": request.prompt}]
        messages = [{"role": "user", "content": content}]
        if request.system:
            messages.insert(0, {"role": "system", "content": [{"type": "text", "text": request.system}]})
        if self._has_chat_template:
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return "<image>\n" * n_images + request.prompt

    def _form_text(self, request: Request, n_images: int) -> str:
        """The family's documented prompt form (``PROMPT_FORMS``)."""
        assert self.prompt_form is not None
        prompt = f"{request.system} {request.prompt}" if request.system else request.prompt
        image_token = getattr(self.processor, "image_token", "<image>")
        image_token = getattr(image_token, "content", image_token)  # an AddedToken in BLIP processors
        return self.prompt_form.template.format(images=image_token * n_images, prompt=prompt)

    def _plain_text(self, request: Request) -> str:
        """A text-only model's input: its chat template over string contents (the form text
        models' templates expect), or the system and user text one after the other."""
        messages = [{"role": "user", "content": request.prompt}]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        if self._has_chat_template:
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return f"{request.system}\n\n{request.prompt}" if request.system else request.prompt

    def check_images(self, request: Request, n_images: int) -> None:
        """Refuse, before any generation, what the model cannot take."""
        if n_images and not self.takes_images:
            raise BackendError(Problem(f"hf: {self.path.name} is a text-only model and a request has an image",
                                       hint="use an image-text-to-text model for requests with images"))
        form = self.prompt_form
        if form is not None and form.needs_image and not n_images:
            raise BackendError(Problem(
                f"hf: {self.path.name} ({self.family}) cannot answer a request without an image "
                f"(request {request.key})",
                hint="send text-only requests (such as an LLM-only ablation) to a chat VLM or a text model"))
        if form is not None and n_images > form.max_images:
            raise BackendError(Problem(
                f"hf: {self.path.name} ({self.family}) takes at most {form.max_images} image per request; "
                f"request {request.key} has {n_images}",
                hint="combine the images into one, or use a multi-image model"))

    # --- generation ---------------------------------------------------------------------------

    def batch_order(self, requests: list[Request], load_media: MediaLoader) -> list[Request]:
        """Greedy requests of like length together (``hf_batching``); sampled ones as they come
        (each is generated alone)."""
        if self.sampling or self.batch_size == 1 or len(requests) <= 1:
            return requests
        self.prepare()
        sized = self.family in hf_batching.SIZED_IMAGE_FAMILIES
        return hf_batching.batch_order(requests, hf_batching.text_tokens(self.tokenizer, requests),
                                       hf_batching.image_areas(requests, load_media) if sized else None,
                                       self.share_prefix)

    def plan_batches(self, requests: list[Request], load_media: MediaLoader) -> list[list[Request]]:
        """With ``share_prefix``, greedy batches of whole groups of requests about one image
        (``hf_batching.pack_groups``); otherwise ``batch_order`` cut every ``batch_size``."""
        if not self.share_prefix or self.sampling or self.batch_size == 1:
            return super().plan_batches(requests, load_media)
        return hf_batching.pack_groups(self.batch_order(requests, load_media), self.batch_size)

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        self.prepare()
        if any(r.choices is not None for r in requests):  # choice-loglik: scored, not generated
            return [hf_loglik.answer(self, r) for r in requests]
        if self.sampling:
            return [self._generate_or_split([r], load_media, seed=request_seed(r, self.generation.seed))[0]
                    for r in requests]
        return self.run_encoded(requests, self.encode_batch(requests, load_media), load_media)

    def encode_batch(self, requests: list[Request], load_media: MediaLoader) -> Any:
        """Greedy batches: the batch's tensors (each request alone with ``share_prefix``), made
        ahead of generation (see ``Backend.encode_batch``); sampled requests and captioners are
        encoded as they run."""
        if self.sampling or self.family in hf_captioners.CAPTIONER_FAMILIES or any(r.choices for r in requests):
            return None
        if self.share_prefix:
            return hf_prefix.encode_alone(self, requests, load_media)
        return self._inputs(requests, load_media)

    def run_encoded(self, requests: list[Request], encoded: Any, load_media: MediaLoader) -> list[Response]:
        self.prepare()
        if encoded is None:
            return self.run_batch(requests, load_media) if self.sampling or any(r.choices for r in requests) else \
                self._generate_or_split(requests, load_media, seed=None)
        if self.share_prefix:
            return self._generate_shared(requests, load_media, encoded)
        return self._generate_or_split(requests, load_media, seed=None, inputs=encoded)

    def _inputs(self, requests: list[Request], load_media: MediaLoader) -> dict[str, Any]:
        """The batch's tensors: prompts with their images (none for text-only requests)."""
        images, texts = [], []
        for request in requests:
            shas = [sha for kind, sha in request.media if kind == "image"]
            self.check_images(request, len(shas))
            images += [decode_image(load_media("image", s), s) for s in shas]
            texts.append(self.prompt_text(request, len(shas)))
        with self.tokenizer_lock:
            if self.takes_images:
                encoded = self.processor(text=texts, images=images or None, return_tensors="pt", padding=True)
            else:
                # A chat template writes the special tokens itself; the tokenizer must not add a second BOS.
                encoded = self.tokenizer(texts, return_tensors="pt", padding=True,
                                         add_special_tokens=not self._has_chat_template)
        return {k: v for k, v in encoded.items() if k != "token_type_ids" or self._takes("token_type_ids")}

    def _takes(self, name: str) -> bool:
        """Whether the model's forward takes this input (causal LMs take no token_type_ids)."""
        return name in inspect.signature(self.model.forward).parameters

    def to_device(self, value: Any) -> Any:
        """Move a tensor to the model's device; floating-point ones (pixel values) also to its dtype."""
        return to_device(self.torch, value, self.device, self.model.dtype)

    def _generate_or_split(self, requests: list[Request], load_media: MediaLoader,
                           seed: int | None, inputs: dict[str, Any] | None = None) -> list[Response]:
        """``_generate`` (on ``inputs`` when the batch was encoded ahead), halving the batch after
        an out-of-memory error down to single requests, each half encoded anew (see the module
        docstring)."""
        out_of_memory = getattr(self.torch, "OutOfMemoryError", self.torch.cuda.OutOfMemoryError)
        try:
            return self._generate(requests, load_media, seed, inputs)
        except out_of_memory:
            pass  # free the failed batch's tensors (held by the traceback) before retrying
        release_memory(self.torch, self.device)
        if len(requests) == 1:
            raise BackendError(Problem(
                f"hf: out of memory generating even a single request with {self.path.name} "
                f"(batch_size={self.batch_size}, max_new_tokens={self.generation.max_new_tokens}, "
                f"dtype={self.dtype_name}, device={self.device})",
                hint="lower batch_size or max_new_tokens, use dtype=bfloat16, or a device with more memory"))
        self.oom_splits += 1
        half = len(requests) // 2
        return (self._generate_or_split(requests[:half], load_media, seed)
                + self._generate_or_split(requests[half:], load_media, seed))

    def _generate_shared(self, requests: list[Request], load_media: MediaLoader,
                         encoded: list[hf_prefix.Encoded]) -> list[Response]:
        """Greedy answers with each image's prefix computed once for the requests that share it
        (``hf_prefix``; ``encoded``: each request encoded alone); the others as one padded batch."""
        groups, alone = hf_prefix.groups_of(requests, encoded)
        answers: dict[int, Response] = {}
        if alone:
            answers.update(zip(alone, self._generate_or_split([requests[i] for i in alone], load_media, None)))
        for bucket in hf_prefix.buckets_of(groups):
            answers.update((i, Response("text", text=t)) for i, t in hf_prefix.generate_bucket(self, bucket))
        self.shared_groups += sum(len(group) > 1 for group in groups)
        return [answers[i] for i in range(len(requests))]

    def _generate(self, requests: list[Request], load_media: MediaLoader, seed: int | None,
                  encoded: dict[str, Any] | None = None) -> list[Response]:
        """One padded ``generate`` call (captioners: ``hf_captioners``)."""
        if self.family in hf_captioners.CAPTIONER_FAMILIES:
            return hf_captioners.generate(self, requests, load_media, seed)
        if encoded is None:
            encoded = self._inputs(requests, load_media)
        inputs = {k: self.to_device(v) for k, v in encoded.items()}
        out = self.run_generate(inputs, seed)
        # Decoder-only models return the prompt then the answer; encoder-decoder ones the answer.
        new_tokens = out if self.encoder_decoder else out[:, inputs["input_ids"].shape[1]:]
        return [Response("text", text=text) for text in self.decode_rows(new_tokens)]

    def decode_rows(self, token_rows: Any) -> list[str]:
        """Each row of new tokens as text, special tokens skipped, cut at the first of
        ``[generation].stop`` (after generating: ``max_new_tokens`` bounds the work, and the text
        is the same whether or not ``generate`` stopped early), stripped."""
        with self.tokenizer_lock:
            texts = [self.tokenizer.decode(row, skip_special_tokens=True) for row in token_rows]
        return [cut_at_stop(text, self.generation.stop).strip() for text in texts]

    def run_generate(self, inputs: dict[str, Any], seed: int | None, kwargs: dict[str, Any] | None = None) -> Any:
        """``generate`` on tensors already on the device, with ``kwargs`` (default
        ``generate_kwargs()``); ``seed`` seeds the RNG for this call alone (the caller's RNG
        state is restored afterwards)."""
        with self.torch.inference_mode(), private_rng(self.torch, self.device, seed):
            return self.model.generate(**inputs, **(self.generate_kwargs() if kwargs is None else kwargs))

    def generate_kwargs(self) -> dict[str, Any]:
        g = self.generation
        kwargs: dict[str, Any] = {"generation_config": self.model.generation_config,
                                  "max_new_tokens": g.max_new_tokens,
                                  "pad_token_id": self.tokenizer.pad_token_id}
        if g.temperature > 0:
            kwargs.update(do_sample=True, temperature=g.temperature, top_p=g.top_p)
        else:
            kwargs.update(do_sample=False)
        if self.decode != "dynamic":
            kwargs.update(DECODE_MODES[self.decode])
        if self.decode == "compiled":
            kwargs["compile_config"] = self._compile_config()
        return kwargs

    def _compile_config(self) -> Any:
        """How the decoding step is compiled: transformers' defaults (CUDA graphs) on a GPU; on
        any other device the default inductor mode, which transformers compiles for only when asked
        (``_compile_all_devices``, its own switch for this), so that the path is checked on a CPU."""
        from transformers.generation.configuration_utils import CompileConfig

        if self.device.type == "cuda":
            return CompileConfig()
        _vectorise_inductor_under_default_kernels()
        config = CompileConfig(fullgraph=False, mode="default")
        config._compile_all_devices = True
        return config


def _vectorise_inductor_under_default_kernels() -> None:
    """Inductor picks its C++ vector width from ``ATEN_CPU_CAPABILITY``; under ``default``, the
    value benchc pins for portable eager kernels (benchc/mathpaths.py), torch 2.13's inductor
    writes reductions that use ``at::vec`` without declaring it and the C++ compile fails
    ("'tmp_acc0_vec' was not declared"). Compiled decoding is a speed mode, not a portable one
    (its rounding is the compiler's), so it gets the widest vector width this CPU supports."""
    import torch._inductor.config as inductor
    from torch._inductor.cpu_vec_isa import valid_vec_isa_list

    if inductor.cpp.simdlen is None and os.environ.get("ATEN_CPU_CAPABILITY") == "default":
        widths = [isa.bit_width() for isa in valid_vec_isa_list()]
        if widths:
            inductor.cpp.simdlen = max(widths)

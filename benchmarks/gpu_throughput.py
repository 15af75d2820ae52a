"""benchc's runtime against plain transformers ``generate()``, side by side in one run, with the bound.

On one H200, from the repository root, with the wheels named at the end of this docstring in .whl/:

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl &&
      PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 480 python3 benchmarks/gpu_throughput.py \\
      --shape llava-1.5-7b --device cuda --samples 256 --batch-sizes 128 --repeats 2 \\
      --json $OUT/gpu_throughput.json

Sized for a 15-minute lease (not yet run on a GPU; estimates from design.md's figures): about 6
minutes, killed at 8. Building the 7B model on the GPU, saving it (14 GB), hashing it (benchc's
fingerprint) and loading it back through the backend: 1 to 2.5 minutes. ``--samples 256`` makes
each batched pass 2 batches of 128 (~8 to 10 s at the design's 24 to 32 samples/s); with one
warm-up and ``--repeats 2`` each of the nine ways runs three times (the compiled decoding's
warm-up also compiles, about a minute). Each extra batch size in ``--batch-sizes`` loads the
checkpoint once more and repeats all of it. Each workload's rows are printed as soon as its
rounds end, so a run cut short still shows those measured.

The workload is the design's (``../shared/reference/design.md``, "Performance anchors"): a
LLaVA-1.5-7B-shaped model with random weights (bf16 on a GPU), 617 input tokens per request
(576 image tokens), 32 new tokens, greedy decoding; ``--shape tiny`` keeps the token counts and
shrinks the widths and depths (as ``../shared/tools/gpu_anchor.py --tiny``), so that the script
runs on a CPU in under a minute with a few samples.

How
---
1. The model is built from a config with random weights (no download), with a word-level
   tokenizer made in-process (32,064 ids, every one decodable), a CLIP image processor (336 px)
   and a chat template, and saved with ``save_pretrained`` to a temporary folder. Its generation
   config has no end-of-sequence token, so every answer is exactly ``--new-tokens`` tokens (as
   the anchor's ``min_new_tokens``): every method does the same work.
2. Synthetic images (smooth random colour fields, PNG) go into a compile cache (benchc's
   ``ContentStore``), as ``benchc compile`` leaves them; prompts are random words, padded so that
   each request is exactly ``--input-tokens`` tokens (checked).
3. For each ``--batch-sizes`` value, benchc's ``hf`` backend loads the folder by path
   (``hf:FOLDER,batch_size=N,dtype=...,device=...``, ``prepare()`` outside the timing), and on the
   model it loaded, in this order:
   - ``generate()`` one sample at a time (first batch size only; ``--per-sample`` samples), the way
     the reference scripts run;
   - ``generate()`` batched: the processor's tensors are made before the clock starts; timed are
     the copy to the device, ``generate`` and the decoding of the new tokens;
   - benchc's runtime: what ``benchc run`` does for one stage once the backend is loaded: request
     keys from the backend's fingerprint, a fresh ``ResponseStore`` (SQLite), ``store.missing``,
     ``executor.execute`` (batches of N; the backend reads each PNG from the compile cache,
     decodes it and runs the processor, for the next batch on a helper thread while this one
     generates; each batch committed to the store), ``store.get_many``;
   - on the independent workload, benchc's runtime with each batch encoded only when it is sent
     (no helper thread: what encoding ahead buys), and again with each ``--decode`` mode other than
     dynamic: ``decode=static`` (a preallocated cache) and ``decode=compiled`` (static, each
     decoding step compiled with torch.compile), the same requests under other request keys.
   Both batched ways run on two workloads of ``--samples`` requests each: *independent* (one
   image per request) and *consistency* (groups of 3 to 5 prompts on one image, as MERLIM's 5
   prompts per image or MM-R3's rephrasings). On the consistency workload benchc's runtime runs
   a second time with ``share_prefix=true`` (runtime/backends/hf_prefix.py: each image's prefix
   encoded and prefilled once per batch, its cache repeated for the group), and a third way is
   timed for reference: plain transformers with each image's prefix (up to its last image token)
   computed once and its KV cache repeated for the group (``batch_repeat_interleave``), then
   ``generate()`` (../shared/tools/gpu_anchor2.py's method; its answers are compared with the
   unshared ones and the count printed, not asserted: bf16 rounding differs with the shapes).
   The ways of a workload are timed by ``harness.interleaved``: each once untimed (a warm-up:
   first-call costs, the compile), then ``--repeats`` rounds of every way once, in turn, so that a
   slow spell of a shared machine falls on all of them alike; each row gives the median and the
   spread (slowest to fastest repeat). benchc's runtime uses a fresh response store each time.
4. The compute bound, as gpu_anchor.py computes it: FLOPs per sample = 2 x vision parameters x
   577 + 2 x language parameters (embeddings and head included) x (input + new tokens), against
   the measured rate of an 8192^3 bf16 matrix product on this GPU ('n/a' on a CPU).

Printed: a table (workload, method, batch, samples, median seconds, samples/s at the median, the
spread, x per-sample, % of the bound); CHECK lines for the ratios that hold on any device, judged
across the spreads (MET, NOT met, or undecided when the spreads straddle the target): benchc's
runtime >= 0.95x batched ``generate()`` on the same batches, ``share_prefix`` >= 1.5x benchc
unshared and >= 0.8x the shared-prefix reference; RANK lines (share_prefix against unshared,
encoding ahead against encoding each batch when it is sent; a ranking only when the spreads are
apart); whether benchc's answers equal batched ``generate()``'s for the same requests (they
must: greedy, same batch size, and every request of the same length and image size, so benchc's
length ordering (runtime/backends/hf_batching.py, timed with the rest) pads nothing either way;
it only changes which equal-shaped rows share a batch), and a verdict against the targets, which apply to an H200 only:
benchc's runtime at least 45 samples/s, 60% of the bound and 2x batched ``generate()``; and, on
the consistency workload, more samples/s than the per-sample compute bound (possible only by
encoding each image once and sharing its prefix, which benchc's share_prefix row does). The
verdict reads the measured numbers: the best benchc consistency row against the bound.

Usage: .venv/bin/python benchmarks/gpu_throughput.py [--shape {llava-1.5-7b,tiny}]
           [--device cuda|cpu] [--samples 256] [--batch-sizes 64 128] [--dtype bfloat16]
           [--per-sample 8] [--input-tokens 617] [--new-tokens 32] [--seed 0] [--repeats 5]
           [--decode dynamic static compiled] [--json PATH]
CPU check: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/gpu_throughput.py --shape tiny --device cpu
           --samples 64 --batch-sizes 8 --per-sample 4 --new-tokens 8 (kept in
           results/gpu_throughput_cpu_tiny.txt; with 32 new tokens, where decoding outweighs the
           prefill a shared prefix saves: results/gpu_throughput_cpu_tiny_32_new_tokens.txt;
           one torch thread leaves the second core to the helper thread that encodes ahead, and
           on a busy machine avoids OpenMP threads waiting on each other)

On a machine without benchc installed (the H200's python3), the script finds benchc's source
beside it. The H200 image has torch, transformers (5.17) and most of what benchc imports, but
not pydantic, pydantic-core, annotated-types, typing-inspection, polars, polars-runtime-32, soxr,
pycocotools and text2num: about 56 MB of wheels for its Python 3.12, fetched where pip works with
``pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl pydantic==2.14.4
pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 polars==2.1.0
polars-runtime-32==2.1.0 soxr==0.5.0.post1 pycocotools==2.0.11 text2num==3.1.0`` (the versions
of requirements.lock), in a folder git ignores and the device call carries. The list follows
benchc's imports: if one is missing there, the script names it and stops before building the model.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import Measured, Method, check_ratio, faster, interleaved, load_average

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
IMAGE_SIZE, PATCH_SIZE = 336, 14
IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2  # 576
VOCAB, IMAGE_ID, PAD_ID = 32064, 32000, 32001
SPECIALS = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "USER:", 4: "ASSISTANT:", IMAGE_ID: "<image>", PAD_ID: "<pad>"}
FIRST_WORD = 5  # prompt words are w5 .. w31999
TARGET_RATE, TARGET_BOUND_SHARE, TARGET_VS_BATCHED = 45.0, 0.60, 2.0
REFERENCE = "reference: generate(), image prefix shared"
BENCHC = "benchc runtime (hf backend + executor + store)"
BENCHC_SHARED = "benchc runtime, share_prefix=true"
INLINE = "benchc runtime, each batch encoded when it is sent"
TARGET_OVERHEAD, TARGET_SHARED_VS_UNSHARED, TARGET_SHARED_VS_REFERENCE = 0.95, 1.5, 0.8  # any device
SHAPES: dict[str, tuple[dict[str, int], dict[str, int]]] = {  # (vision, language), as gpu_anchor.py
    "llava-1.5-7b": (
        {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
         "projection_dim": 768},
        {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 32}),
    "tiny": (
        {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
         "projection_dim": 64},
        {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 4}),
}
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ message['role'] | upper }}:"
    "{%- if message['content'] is string -%}{{ ' ' + message['content'] }}{%- else -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{ ' <image>\\n' }}{%- else -%}{{ part['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}{{ '\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ 'ASSISTANT:' }}{%- endif -%}"
)


def import_benchc() -> None:
    """Make ``benchc.runtime`` importable where benchc is not installed: the package's source
    folders (compiler/, runtime/) sit beside benchc/ in this repository."""
    try:
        import benchc.runtime
    except ModuleNotFoundError:
        sys.path.insert(0, str(ROOT))
        import benchc

        benchc.__path__.append(str(ROOT))
    try:  # what the measured path imports, each with what it imports in turn
        import benchc.runtime.backends.hf
        import benchc.runtime.run.executor
        import benchc.runtime.run.core
    except ModuleNotFoundError as exc:
        raise SystemExit(f"benchc's runtime imports {exc.name!r}, which is not installed here: install it "
                         "(on the H200, from a wheel: see the end of this script's docstring)") from None


# --- the checkpoint -------------------------------------------------------------------------

def build_tokenizer() -> Any:
    """A word-level tokenizer over all 32,064 ids (``w5`` .. ``w32063`` plus the specials), so any
    generated id decodes; one word, one token, which makes prompt lengths exact."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {SPECIALS.get(i, f"w{i}"): i for i in range(VOCAB)}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
        additional_special_tokens=["<image>"], padding_side="left", model_max_length=4096,
        model_input_names=["input_ids", "attention_mask"], chat_template=CHAT_TEMPLATE)


def build_processor() -> Any:
    from transformers import CLIPImageProcessor, LlavaProcessor

    images = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE},
                                crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    return LlavaProcessor(image_processor=images, tokenizer=build_tokenizer(), patch_size=PATCH_SIZE,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          chat_template=CHAT_TEMPLATE, image_token="<image>")


def build_checkpoint(folder: Path, shape: str, dtype: Any, device: Any, seed: int) -> float:
    """Random-weight LLaVA of ``shape`` built on ``device`` and saved to ``folder``; returns seconds."""
    import torch
    from transformers import (
        CLIPVisionConfig,
        GenerationConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
    )

    start = time.perf_counter()
    vision, language = SHAPES[shape]
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(**vision, image_size=IMAGE_SIZE, patch_size=PATCH_SIZE),
        text_config=LlamaConfig(**language, vocab_size=VOCAB, max_position_embeddings=4096,
                                bos_token_id=1, eos_token_id=None, pad_token_id=PAD_ID),
        image_token_index=IMAGE_ID, image_token_id=IMAGE_ID, image_seq_length=IMAGE_TOKENS,
        vision_feature_layer=-2, vision_feature_select_strategy="default", pad_token_id=PAD_ID)
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.random.fork_rng(devices=[]), torch.device(device):
            torch.manual_seed(seed)
            model = LlavaForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(before)
    # No end-of-sequence token: every answer is --new-tokens long, whatever the random weights say.
    model.generation_config = GenerationConfig(bos_token_id=1, pad_token_id=PAD_ID, do_sample=False)
    model.save_pretrained(folder)
    build_processor().save_pretrained(folder)
    del model
    free_memory(device)
    return time.perf_counter() - start


def free_memory(device: Any) -> None:
    import torch

    gc.collect()
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


# --- the workloads --------------------------------------------------------------------------

@dataclass
class Workload:
    name: str
    images: list[bytes]                  # PNG bytes
    requests: list[tuple[int, str]]      # (image index, prompt)

    def groups(self) -> list[list[int]]:
        """Request indices by image, in image order."""
        out: list[list[int]] = [[] for _ in self.images]
        for index, (image, _) in enumerate(self.requests):
            out[image].append(index)
        return out


def synthetic_png(rng: random.Random, size: int = IMAGE_SIZE) -> bytes:
    """A smooth random colour field (an 8 x 8 grid of colours, upscaled bicubically)."""
    from PIL import Image

    cells = bytes(rng.randrange(256) for _ in range(8 * 8 * 3))
    image = Image.frombytes("RGB", (8, 8), cells).resize((size, size), Image.BICUBIC)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def prompt(rng: random.Random, words: int) -> str:
    return " ".join(f"w{rng.randrange(FIRST_WORD, IMAGE_ID)}" for _ in range(words))


def group_sizes(total: int, rng: random.Random) -> list[int]:
    """Sizes of 3 to 5 that add up to ``total`` (at least 3)."""
    sizes, left = [], total
    while left > 5:
        size = rng.choice([g for g in (3, 4, 5) if left - g not in (1, 2)])
        sizes.append(size)
        left -= size
    return sizes + ([left] if left else [])


def make_workloads(samples: int, words: int, seed: int) -> tuple[Workload, Workload]:
    rng = random.Random(seed)
    independent = Workload("independent", [synthetic_png(rng) for _ in range(samples)],
                           [(i, prompt(rng, words)) for i in range(samples)])
    sizes = group_sizes(samples, rng)
    requests = [(image, prompt(rng, words)) for image, size in enumerate(sizes) for _ in range(size)]
    consistency = Workload("consistency", [synthetic_png(rng) for _ in sizes], requests)
    return independent, consistency


def prompt_words(processor: Any, input_tokens: int) -> int:
    """How many prompt words make a request of ``input_tokens`` tokens (image tokens included)."""
    from PIL import Image

    one = processor(text=[render(processor, "w5")], images=[Image.new("RGB", (IMAGE_SIZE,) * 2)],
                    return_tensors="pt")["input_ids"].shape[1]
    words = input_tokens - one + 1
    if words < 1:
        raise SystemExit(f"--input-tokens {input_tokens} leaves no room for a prompt ({one - 1} are fixed)")
    return words


def render(processor: Any, text: str) -> str:
    """The prompt as benchc's hf backend renders it (its chat template, one image, no system)."""
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def encode(processor: Any, workload: Workload, input_tokens: int) -> list[dict[str, Any]]:
    """Each request's tensors, as the processor makes them (before any timing)."""
    from PIL import Image

    images = [Image.open(io.BytesIO(png)).convert("RGB") for png in workload.images]
    out = []
    for image, text in workload.requests:
        tensors = dict(processor(text=[render(processor, text)], images=[images[image]], return_tensors="pt"))
        assert tensors["input_ids"].shape[1] == input_tokens, tensors["input_ids"].shape
        out.append(tensors)
    return out


def stack(rows: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    return {k: torch.cat([r[k] for r in rows]) for k in rows[0]}


# --- the ways of running --------------------------------------------------------------------

@dataclass
class Row:
    """One method's repeats (``harness.interleaved``): ``seconds`` is their median."""

    workload: str
    method: str
    batch: int
    samples: int
    seconds: float
    runs: list[float]

    @property
    def rate(self) -> float:
        return self.samples / self.seconds

    @property
    def spread(self) -> tuple[float, float]:
        """(lowest, highest) samples/s over the repeats."""
        return self.samples / max(self.runs), self.samples / min(self.runs)

    def measured(self) -> Measured:
        return Measured(self.method, self.samples, list(self.runs))


def timed(device: Any, fn: Callable[[], Any]) -> tuple[float, Any]:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start, result


def generate(model: Any, tokenizer: Any, batch: dict[str, Any], new_tokens: int, **extra: Any) -> list[str]:
    """One ``generate`` call as benchc's hf backend makes it; the new tokens decoded."""
    import torch

    inputs = {k: v.to(model.device) for k, v in batch.items()}
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=new_tokens, do_sample=False,
                             pad_token_id=tokenizer.pad_token_id, **extra)
    new = out[:, inputs["input_ids"].shape[1]:]
    assert new.shape[1] == new_tokens, new.shape
    return [t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True)]


def run_generate(model: Any, tokenizer: Any, encoded: list[dict[str, Any]], batch_size: int,
                 new_tokens: int) -> tuple[float, list[str]]:
    """Batched ``generate()`` over ``encoded`` in order."""
    batches = [stack(encoded[i:i + batch_size]) for i in range(0, len(encoded), batch_size)]
    return timed(model.device, lambda: [a for b in batches for a in generate(model, tokenizer, b, new_tokens)])


def run_one_at_a_time(model: Any, tokenizer: Any, encoded: list[dict[str, Any]],
                      new_tokens: int) -> tuple[float, list[str]]:
    """``generate()`` on one request after another, as the reference scripts run."""
    return timed(model.device, lambda: [a for e in encoded for a in generate(model, tokenizer, e, new_tokens)])


def run_shared_prefix(model: Any, tokenizer: Any, workload: Workload, encoded: list[dict[str, Any]],
                      batch_size: int, new_tokens: int) -> tuple[float, list[str]]:
    """Reference: each image's prefix computed once, its KV cache repeated for its group's prompts
    (groups of one size batched together, at most ``batch_size`` prompts), then ``generate()``."""
    ids = encoded[0]["input_ids"][0]
    prefix = int((ids == IMAGE_ID).nonzero().max()) + 1
    by_size: dict[int, list[list[int]]] = {}
    for group in workload.groups():
        by_size.setdefault(len(group), []).append(group)
    chunks = []  # (group size, groups): at most batch_size prompts each
    for size, groups in sorted(by_size.items()):
        step = max(1, batch_size // size)
        chunks += [(size, groups[i:i + step]) for i in range(0, len(groups), step)]

    def one(size: int, groups: list[list[int]], tokens: int) -> list[tuple[int, str]]:
        import torch

        firsts = stack([encoded[g[0]] for g in groups])
        members = [i for g in groups for i in g]
        full = stack([encoded[i] for i in members])["input_ids"].to(model.device)
        with torch.inference_mode():
            out = model(input_ids=firsts["input_ids"][:, :prefix].to(model.device),
                        pixel_values=firsts["pixel_values"].to(model.device), use_cache=True, logits_to_keep=1)
            cache = out.past_key_values
            cache.batch_repeat_interleave(size)
            answers = generate(model, tokenizer, {"input_ids": full, "attention_mask": torch.ones_like(full)},
                               tokens, past_key_values=cache)
        return list(zip(members, answers))

    seconds, pairs = timed(model.device, lambda: [p for c in chunks for p in one(*c, new_tokens)])
    return seconds, [a for _, a in sorted(pairs)]


def put_media(cache_dir: Path, workload: Workload) -> list[str]:
    """The workload's images in a compile cache, as ``benchc compile`` leaves them; their sha256."""
    from benchc.compiler.cas import ContentStore

    store = ContentStore(cache_dir)
    return [store.put(png, "image").sha256 for png in workload.images]


def run_benchc(backend: Any, workload: Workload, shas: list[str], cache_dir: Path, store_dir: Path,
               device: Any) -> tuple[float, list[str]]:
    """What ``benchc run`` does for one stage once its backend is loaded (see ``run._run_stage``)."""
    from benchc.runtime.backends import Request
    from benchc.runtime.run.executor import MediaSource, execute
    from benchc.runtime.run.core import request_digest
    from benchc.runtime.run.store import ResponseStore

    def stage() -> list[str]:
        fingerprint = backend.fingerprint()
        requests = []
        for image, text in workload.requests:
            media = [("image", shas[image])]
            key = request_digest(fingerprint, "generate", backend.generation, text, None, media, 0)
            requests.append(Request(key, "generate", text, None, tuple(media), 0))
        unique = {r.key: r for r in requests}
        assert len(unique) == len(requests)
        store = ResponseStore(store_dir)
        try:
            missing = store.missing(unique)
            execute(backend, [unique[k] for k in missing], store, MediaSource(cache_dir, store_dir),
                    workers=1, label=f"gpu-throughput {workload.name}", show_progress=False)
            stored = store.get_many(unique)
        finally:
            store.close()
        return [stored[r.key].text or "" for r in requests]

    return timed(device, stage)


def load_backend(folder: Path, batch_size: int, dtype: str, device: Any, new_tokens: int) -> tuple[Any, float]:
    from benchc.compiler.spec.models import Generation
    from benchc.runtime.backends import make_backend

    spec = f"hf:{folder},batch_size={batch_size},dtype={dtype},device={device}"
    backend = make_backend(spec, Generation(max_new_tokens=new_tokens), "generate")
    start = time.perf_counter()
    backend.prepare()
    backend.fingerprint()  # hashes the checkpoint once (cached), outside the timings
    return backend, time.perf_counter() - start


# --- the compute bound ----------------------------------------------------------------------

@dataclass
class Bound:
    tflop_per_sample: float
    matmul_tflops: float | None  # measured bf16 rate; None on a CPU

    @property
    def rate(self) -> float | None:
        return self.matmul_tflops / self.tflop_per_sample if self.matmul_tflops else None


def compute_bound(model: Any, input_tokens: int, new_tokens: int, device: Any) -> Bound:
    """gpu_anchor.py's bound: 2 x parameters x tokens per sample, at the measured matmul rate."""
    import torch

    language = sum(p.numel() for n, p in model.named_parameters() if "language_model" in n or "lm_head" in n)
    vision = sum(p.numel() for p in model.parameters()) - language
    flops = 2 * vision * (IMAGE_TOKENS + 1) + 2 * language * (input_tokens + new_tokens)
    if device.type != "cuda":
        return Bound(flops / 1e12, None)
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    seconds, _ = timed(device, lambda: [a @ b for _ in range(10)])
    return Bound(flops / 1e12, 10 * 2 * 8192**3 / seconds / 1e12)


# --- one batch size, all ways ---------------------------------------------------------------

@dataclass
class Agreement:
    workload: str
    batch: int
    benchc_equal: int
    total: int
    distinct: int
    shared_equal: int | None = None
    benchc_shared_equal: int | None = None  # benchc with share_prefix=true (consistency workload)
    decode_equal: dict[str, int] = field(default_factory=dict)  # benchc with decode=MODE, by mode
    benchc: list[str] | None = None     # the answers, in request order (written to --json)
    generate: list[str] | None = None


def measure_batch_size(args: argparse.Namespace, folder: Path, work: Path, batch: int, first: bool,
                       workloads: tuple[Workload, Workload], shas: dict[str, list[str]],
                       rows: list[Row], agreements: list[Agreement]) -> Bound | None:
    """Every way of running at one ``batch`` size, on the model benchc's backend loaded; the
    compute bound (and the one-at-a-time row) with the first batch size only."""
    backend, load_s = load_backend(folder, batch, args.dtype, args.device, args.new_tokens)
    log(f"batch {batch}: benchc's hf backend loaded and hashed the checkpoint in {load_s:.1f} s")
    bound = compute_bound(backend.model, args.input_tokens, args.new_tokens, args.device) if first else None
    for workload in workloads:
        agreements.append(measure_workload(args, backend, work, batch, first, workload, shas[workload.name], rows))
    del backend
    free_memory(args.device)
    return bound


def measure_workload(args: argparse.Namespace, backend: Any, work: Path, batch: int, first: bool,
                     workload: Workload, shas: list[str], rows: list[Row]) -> Agreement:
    """Every way of running ``workload`` at ``batch``, interleaved ``--repeats`` times after a
    warm-up (``harness.interleaved``); one row each, printed as it is measured."""
    model, tokenizer, name = backend.model, backend.processor.tokenizer, workload.name
    encoded = encode(backend.processor, workload, args.input_tokens)
    stores = work / f"stores-{name}-{batch}"

    def benchc(label: str, **options: Any) -> Callable[[int], tuple[float, list[str]]]:
        def run(index: int) -> tuple[float, list[str]]:
            saved = {k: getattr(backend, k) for k in options}
            for k, v in options.items():  # the same loaded model with other options (other request keys)
                setattr(backend, k, v)
            try:  # a fresh response store per repeat: every repeat answers every request
                return run_benchc(backend, workload, shas, work / "cache", stores / f"{label}-{index}", args.device)
            finally:
                for k, v in saved.items():
                    setattr(backend, k, v)
        return run

    methods: list[Method] = []
    if first and name == "independent":
        one = encoded[:args.per_sample]
        methods.append(Method("generate(), one sample at a time",
                              lambda _: run_one_at_a_time(model, tokenizer, one, args.new_tokens), len(one)))
    batched = "generate(), batched" + (", no sharing" if name == "consistency" else "")
    methods.append(Method(batched,
                          lambda _: run_generate(model, tokenizer, encoded, batch, args.new_tokens), len(encoded)))
    methods.append(Method(BENCHC, benchc("plain"), len(encoded)))
    if name == "independent":
        # what encoding the next batch ahead (a helper thread) buys: the same runtime without it
        methods.append(Method(INLINE, benchc("inline", encodes_ahead=False), len(encoded)))
        methods += [Method(f"benchc runtime, decode={mode}", benchc(mode, decode=mode), len(encoded))
                    for mode in args.decode if mode != "dynamic"]
    if name == "consistency":
        methods.append(Method(BENCHC_SHARED, benchc("shared", share_prefix=True), len(encoded)))
        methods.append(Method(REFERENCE, lambda _: run_shared_prefix(model, tokenizer, workload, encoded, batch,
                                                                     args.new_tokens), len(encoded)))
    log(f"  {name}: {len(methods)} ways, warm-up then {args.repeats} interleaved rounds ...")
    measured = interleaved(methods, args.repeats, warmup=1)
    for m in measured:
        add(rows, Row(name, m.name, 1 if m.name.endswith("at a time") else batch, m.work, m.median, m.seconds))
    results = {m.name: m.result for m in measured}
    reference = results[batched]
    answers = results[BENCHC]
    agreement = Agreement(name, batch, sum(a == b for a, b in zip(answers, reference)), len(reference),
                          len(set(reference)), benchc=answers, generate=reference)
    agreement.decode_equal = {m.name.split("decode=")[1]: sum(a == b for a, b in zip(m.result, reference))
                              for m in measured if "decode=" in m.name}
    if name == "consistency":
        agreement.benchc_shared_equal = sum(a == b for a, b in zip(results[BENCHC_SHARED], reference))
        agreement.shared_equal = sum(a == b for a, b in zip(results[REFERENCE], reference))
    return agreement


def add(rows: list[Row], row: Row) -> None:
    rows.append(row)
    low, high = row.spread
    log(f"  {row.workload:12s} {row.method:48s} batch {row.batch:4d}: {row.rate:8.2f} samples/s "
        f"(spread {low:.2f}-{high:.2f})")


def log(text: str) -> None:
    print(text, flush=True)


# --- report ---------------------------------------------------------------------------------

def report(rows: list[Row], agreements: list[Agreement], bound: Bound) -> None:
    per_sample = next(r.rate for r in rows if r.batch == 1)
    print(f"\n{'workload':12s} {'method':48s} {'batch':>5s} {'samples':>7s} {'median s':>8s} "
          f"{'samples/s':>9s} {'spread':>15s} {'x per-sample':>12s} {'% of bound':>10s}")
    for r in rows:
        share = f"{r.rate / bound.rate:.1%}" if bound.rate else "n/a"
        low, high = r.spread
        print(f"{r.workload:12s} {r.method:48s} {r.batch:5d} {r.samples:7d} {r.seconds:8.2f} "
              f"{r.rate:9.2f} {f'{low:.2f}-{high:.2f}':>15s} {r.rate / per_sample:11.2f}x {share:>10s}")
    bound_text = (f"{bound.rate:.1f} samples/s ({bound.tflop_per_sample:.2f} TFLOP per sample at the measured "
                  f"{bound.matmul_tflops:.0f} TFLOP/s bf16 matmul rate)" if bound.rate else
                  f"n/a on a CPU ({bound.tflop_per_sample * 1000:.2f} GFLOP per sample)")
    print(f"compute bound: {bound_text}")
    for a in agreements:
        shared = f"; shared-prefix reference equal to unshared generate(): {a.shared_equal}/{a.total}" \
            if a.shared_equal is not None else ""
        if a.benchc_shared_equal is not None:
            shared += f"; benchc share_prefix=true equal to batched generate(): {a.benchc_shared_equal}/{a.total}"
        for mode, equal in a.decode_equal.items():
            shared += f"; benchc decode={mode} equal to batched generate(): {equal}/{a.total}"
        print(f"answers, {a.workload}, batch {a.batch}: benchc runtime equal to batched generate(): "
              f"{a.benchc_equal}/{a.total} ({a.distinct} distinct answers){shared}")


def ratio_checks(rows: list[Row]) -> list[str]:
    """The issue's ratios at each batch size, judged across the repeats' spreads (``harness``):
    benchc's runtime against batched ``generate()`` on the same batches (>= 0.95x), and
    ``share_prefix`` against benchc unshared (>= 1.5x) and the shared-prefix reference (>= 0.8x)."""
    lines = []
    for batch in sorted({r.batch for r in rows if r.batch > 1}):
        def row(workload: str, method: str, batch: int = batch) -> Row | None:
            return next((r for r in rows if (r.workload, r.method, r.batch) == (workload, method, batch)), None)
        pairs = [("independent", BENCHC, "independent", "generate(), batched", TARGET_OVERHEAD),
                 ("consistency", BENCHC, "consistency", "generate(), batched, no sharing", TARGET_OVERHEAD),
                 ("consistency", BENCHC_SHARED, "consistency", BENCHC, TARGET_SHARED_VS_UNSHARED),
                 ("consistency", BENCHC_SHARED, "consistency", REFERENCE, TARGET_SHARED_VS_REFERENCE)]
        for wa, ma, wb, mb, target in pairs:  # (the inline row: a RANK below, no target)
            a, b = row(wa, ma), row(wb, mb)
            if a is not None and b is not None:
                check = check_ratio(f"batch {batch}, {wa}: {ma} / {mb}", a.measured(), b.measured(), target)
                lines.append(f"CHECK {check.line()}")
        for (wa, ma), (wb, mb) in ((("consistency", BENCHC_SHARED), ("consistency", BENCHC)),
                                   (("independent", BENCHC), ("independent", INLINE))):
            a, b = row(wa, ma), row(wb, mb)
            if a is not None and b is not None:
                lines.append(f"RANK batch {batch}, {wa}: {faster(a.measured(), b.measured())}")
    return lines


def verdict(rows: list[Row], agreements: list[Agreement], bound: Bound, on_gpu: bool) -> str:
    def best(workload: str, prefix: str) -> Row:
        return max((r for r in rows if r.workload == workload and r.method.startswith(prefix)), key=lambda r: r.rate)

    ours, gen = best("independent", "benchc"), best("independent", "generate(), batched")
    mine = best("consistency", "benchc")
    same_batch = next(r for r in rows if r.workload == "independent" and r.method.startswith("benchc")
                      and r.batch == mine.batch)
    equal = all(a.benchc_equal == a.total and a.benchc_shared_equal in (None, a.total)
                and all(n == a.total for n in a.decode_equal.values()) for a in agreements)
    sharing = f"{mine.rate / same_batch.rate:.2f}x its independent rate (about 1x when nothing is shared)"
    answers = "benchc's answers equal generate()'s" if equal else "benchc's answers DIFFER from generate()'s"
    if not (on_gpu and bound.rate):
        return (f"VERDICT: the targets apply to an H200 only (this run is on a CPU: not comparable); "
                f"here benchc runtime {ours.rate:.2f} samples/s = {ours.rate / gen.rate:.2f}x batched generate() "
                f"(target 2x); consistency workload: {mine.rate:.2f} samples/s, {sharing}; {answers}.")
    first = (ours.rate >= TARGET_RATE and ours.rate >= TARGET_BOUND_SHARE * bound.rate
             and ours.rate >= TARGET_VS_BATCHED * gen.rate)
    second = mine.rate > bound.rate
    shared = [r.rate for r in rows if r.method == REFERENCE]
    reachable = f" (plain transformers with the prefix shared: {max(shared):.1f}/s)" if shared else ""
    return (f"VERDICT: benchc runtime {ours.rate:.1f} samples/s (batch {ours.batch}) = "
            f"{ours.rate / bound.rate:.0%} of the bound, {ours.rate / gen.rate:.2f}x batched generate(): "
            f"target (>= {TARGET_RATE:.0f}/s, {TARGET_BOUND_SHARE:.0%} of the bound, {TARGET_VS_BATCHED:.0f}x) "
            f"{'MET' if first else 'NOT met'}; consistency {mine.rate:.1f} samples/s = "
            f"{mine.rate / bound.rate:.2f}x the per-sample bound ({bound.rate:.0f}/s), {sharing}: "
            f"target (> bound) {'MET' if second else 'NOT met'}{reachable}; {answers}.")


# --- main -----------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llava-1.5-7b")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--samples", type=int, default=256, help="requests per workload (at least 3)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[128], help="benchc's batch_size values")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default=None,
                        help="default: bfloat16 on a GPU, float32 on a CPU")
    parser.add_argument("--per-sample", type=int, default=8, help="samples of the one-at-a-time row")
    parser.add_argument("--input-tokens", type=int, default=617, help="per request, image tokens included")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--decode", nargs="+", choices=["dynamic", "static", "compiled"],
                        default=["dynamic", "static", "compiled"],
                        help="the hf backend's decode modes timed on the independent workload (each compiled "
                             "batch size compiles once, in the warm-up)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="interleaved timed rounds per batch size and workload, after one warm-up")
    parser.add_argument("--json", type=Path, default=None, help="also write rows and answers' agreement here")
    args = parser.parse_args()
    args.device = torch.device(args.device)
    args.dtype = args.dtype or ("bfloat16" if args.device.type == "cuda" else "float32")
    args.per_sample = max(1, min(args.per_sample, args.samples))
    if args.samples < 3:
        parser.error("--samples must be at least 3 (a consistency group has 3 to 5 prompts)")
    return args


def header(args: argparse.Namespace) -> None:
    import torch
    import transformers

    name = torch.cuda.get_device_name(args.device) if args.device.type == "cuda" else f"cpu ({os.cpu_count()} CPUs)"
    log(f"gpu_throughput: shape {args.shape}, {args.dtype} on {name}; torch {torch.__version__}, "
        f"transformers {transformers.__version__}; {args.input_tokens} input tokens ({IMAGE_TOKENS} image), "
        f"{args.new_tokens} new, greedy; {args.samples} requests per workload, batch sizes {args.batch_sizes}")


def main() -> None:
    import torch

    args = parse_args()
    import_benchc()
    header(args)
    started, load = time.perf_counter(), load_average()
    with tempfile.TemporaryDirectory(prefix="benchc-gpu-throughput-") as tmp:
        work, folder = Path(tmp), Path(tmp) / "model"
        log(f"building the {args.shape} model with random weights on {args.device} and saving it ...")
        seconds = build_checkpoint(folder, args.shape, getattr(torch, args.dtype), args.device, args.seed)
        log(f"checkpoint built and saved in {seconds:.1f} s "
            f"({sum(f.stat().st_size for f in folder.iterdir()) / 2**30:.2f} GiB)")
        from transformers import AutoProcessor

        words = prompt_words(AutoProcessor.from_pretrained(folder, local_files_only=True), args.input_tokens)
        workloads = make_workloads(args.samples, words, args.seed)
        shas = {w.name: put_media(work / "cache", w) for w in workloads}
        log(f"workloads: {args.samples} independent requests; {len(workloads[1].images)} images x 3 to 5 prompts; "
            f"{words} prompt words each")
        rows: list[Row] = []
        agreements: list[Agreement] = []
        bound = None
        for i, batch in enumerate(args.batch_sizes):
            bound = measure_batch_size(args, folder, work, batch, i == 0, workloads, shas, rows, agreements) or bound
    assert bound is not None
    report(rows, agreements, bound)
    if args.device.type == "cuda":
        print(f"peak GPU memory {torch.cuda.max_memory_allocated(args.device) / 2**30:.1f} GiB")
    print(f"(whole script: {time.perf_counter() - started:.0f} s; 1-minute load average {load:.1f} at the start, "
          f"{load_average():.1f} at the end, on {os.cpu_count()} CPUs: other processes slow a CPU run)")
    for line in ratio_checks(rows):
        print(line)
    print(verdict(rows, agreements, bound, args.device.type == "cuda"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": [{**asdict(r), "samples_per_s": r.rate} for r in rows],
                                         "agreements": [asdict(a) for a in agreements],
                                         "bound": {**asdict(bound), "samples_per_s": bound.rate}}, indent=1))


if __name__ == "__main__":
    main()

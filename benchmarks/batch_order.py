"""Measured, not asserted: what batching requests of like length together saves on real prompts.

The ``hf`` backend pads a greedy batch to its longest prompt; ``batch_order``
(runtime/backends/hf_batching.py) sorts the pending requests by length, longest first, before
the executor cuts them into batches. This script runs the same requests both ways, side by side
in one process, on the same loaded model:

1. It compiles the bundled Koala specs (counterfactual, parametric, source conflict: 348
   distinct text-only prompts of 16 to 322 characters, contexts of very different lengths) with
   ``benchc compile`` and builds each item's request as ``benchc run`` does.
2. It builds a random-weight Llama (``--width``, ``--layers``; the tokenizer and chat template of
   the tests' tiny models, trained offline) and loads it through the ``hf`` backend by path.
3. For each order, *manifest* (the executor's order before) and *length* (``batch_order``), it
   runs ``executor.execute`` into a fresh response store (``--repeats`` times, alternating, best
   time kept), and counts the pad tokens of every batch from the processor's attention masks.

Printed, per order: batches, prompt tokens (real and pads), the pads' share of the prefill,
seconds, requests/s and the speed-up; and how many answers agree between the two orders (greedy
fp32: padding can change rounding, so a few may differ on a random model).

The savings on a GPU follow the pad share (prefill is most of the work for long prompts and short
answers); on a CPU the decode steps and per-call overhead weigh more. The machine's load matters.

Usage: .venv/bin/python benchmarks/batch_order.py [--batch-size 16] [--width 256] [--layers 4]
           [--new-tokens 8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPECS = [ROOT / "specs" / "koala" / f"{name}.toml" for name in ("counterfactual", "parametric", "source_conflict")]


@dataclass
class Measured:
    order: str
    batches: int
    tokens: int
    pads: int
    seconds: float
    answers: dict[str, str]

    @property
    def pad_share(self) -> float:
        return self.pads / self.tokens


def compile_requests(work: Path, backend: Any) -> list[Any]:
    """Each item's request, as ``benchc run`` builds it for the first stage."""
    from benchc import api
    from benchc.runtime.run.core import build_requests
    from benchc.runtime.run.runfolder import manifest_items, open_manifest

    requests: dict[str, Any] = {}  # by key: a prompt that two specs share is one request
    for spec_path in SPECS:
        out = work / spec_path.stem
        api.compile(spec_path, out, cache_dir=work / "cache", store_dir=work / "store", progress=False)
        _, spec = open_manifest(out)
        stage = spec.stage[0]
        built = build_requests(stage, spec, manifest_items(open_manifest(out)[0]), backend.fingerprint(), None)
        requests.update((r.key, r) for r in built.values())
    return list(requests.values())


def build_model(folder: Path, width: int, layers: int) -> Path:
    """The tests' tiny Llama folder (its tokenizer and chat template), with a wider, deeper model."""
    import torch
    from transformers import AutoConfig, LlamaForCausalLM

    sys.path.insert(0, str(ROOT / "tests"))
    from support.tiny_llm import build_tiny_llm

    build_tiny_llm(folder, seed=0)
    config = AutoConfig.from_pretrained(folder)
    config.update({"hidden_size": width, "intermediate_size": 4 * width, "num_hidden_layers": layers,
                   "num_attention_heads": max(1, width // 64), "num_key_value_heads": max(1, width // 64),
                   "max_position_embeddings": 2048})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        LlamaForCausalLM(config).eval().save_pretrained(folder, safe_serialization=True)
    return folder


def measure(backend: Any, requests: list[Any], order: str, work: Path, run: int) -> Measured:
    from benchc.runtime.run.executor import execute
    from benchc.runtime.run.store import ResponseStore

    batches: list[list[Any]] = []
    answer = backend.run_encoded  # what the executor calls for each batch (encoded ahead)

    def recording(batch: list[Any], encoded: Any, load_media: Any) -> list[Any]:
        batches.append(batch)
        return answer(batch, encoded, load_media)

    backend.run_encoded = recording
    ordering = backend.batch_order
    if order == "manifest":
        backend.batch_order = lambda pending, load_media: pending
    store = ResponseStore(work / f"store-{order}-{run}")
    try:
        started = time.perf_counter()
        execute(backend, requests, store, _no_media, workers=1, label=order, show_progress=False)
        seconds = time.perf_counter() - started
        stored = store.get_many({r.key: r for r in requests})
    finally:
        store.close()
        backend.run_encoded, backend.batch_order = answer, ordering
    masks = [backend._inputs(batch, _no_media)["attention_mask"] for batch in batches]
    return Measured(order, len(batches), sum(m.numel() for m in masks), sum(int((m == 0).sum()) for m in masks),
                    seconds, {k: v.text or "" for k, v in stored.items()})


def _no_media(kind: str, sha: str) -> bytes:
    raise AssertionError("the Koala prompts are text-only")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from benchc.compiler.spec.models import Generation
    from benchc.runtime.backends import make_backend

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = build_model(work / "model", args.width, args.layers)
        generation = Generation(temperature=0.0, max_new_tokens=args.new_tokens)
        backend = make_backend(f"hf:{folder},batch_size={args.batch_size}", generation, "generate")
        backend.prepare()
        requests = compile_requests(work, backend)
        print(f"{len(requests)} Koala requests, batch size {args.batch_size}, Llama width {args.width} x "
              f"{args.layers} layers, {args.new_tokens} new tokens, fp32 CPU")
        best: dict[str, Measured] = {}
        for run in range(args.repeats):
            for order in ("manifest", "length") if run % 2 == 0 else ("length", "manifest"):
                result = measure(backend, requests, order, work, run)
                if order not in best or result.seconds < best[order].seconds:
                    best[order] = result
        report(best["manifest"], best["length"])


def report(manifest: Measured, length: Measured) -> None:
    print(f"{'order':<10}{'batches':>8}{'tokens':>9}{'pads':>8}{'pad share':>11}{'seconds':>9}"
          f"{'req/s':>8}{'speed-up':>10}")
    for m in (manifest, length):
        rate = len(m.answers) / m.seconds
        print(f"{m.order:<10}{m.batches:>8}{m.tokens:>9}{m.pads:>8}{m.pad_share:>10.1%}{m.seconds:>9.2f}"
              f"{rate:>8.1f}{manifest.seconds / m.seconds:>9.2f}x")
    same = sum(manifest.answers[k] == length.answers[k] for k in manifest.answers)
    print(f"answers equal under both orders: {same} of {len(manifest.answers)}")


if __name__ == "__main__":
    main()

"""Which requests share a batch: the ``hf`` backend batches requests of like length together
(``runtime/backends/hf_batching.py``), as a function of the set of pending requests, and the
executor cuts batches in that order."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Backend, Request, Response, make_backend
from benchc.runtime.backends.base import MediaLoader
from benchc.runtime.backends.hf_batching import batch_order, image_areas, pack_groups
from benchc.runtime.run.executor import execute
from benchc.runtime.run.store import ResponseStore
from support.tiny_families import FAMILIES
from support.tiny_vlm import build_tiny_llava


def _request(i: int, image: str | None = None, prompt: str = "") -> Request:
    media = (("image", image),) if image else ()
    return Request(f"key-{i:04d}", "generate", prompt or f"prompt {i}", None, media)


def _padded_tokens(lengths: list[int], size: int) -> int:
    """Pad tokens when ``lengths`` are cut, in order, into batches of ``size``."""
    chunks = [lengths[i:i + size] for i in range(0, len(lengths), size)]
    return sum(max(c) * len(c) - sum(c) for c in chunks)


lengths_strategy = st.lists(st.integers(1, 600), min_size=1, max_size=60)


@given(lengths=lengths_strategy, size=st.integers(1, 16))
def test_length_order_pads_at_most_the_length_range_per_batch_slot(lengths: list[int], size: int) -> None:
    """Sorted, consecutive batches span disjoint length ranges: at most (longest - shortest) x
    (size - 1) pad tokens in all, however many requests (manifest order: up to that per batch)."""
    requests = [_request(i) for i in range(len(lengths))]
    tokens = dict(zip((r.key for r in requests), lengths))
    ordered = batch_order(requests, lengths, None, share_prefix=False)
    assert sorted(r.key for r in ordered) == sorted(tokens)  # the same requests, each once
    in_order = [tokens[r.key] for r in ordered]
    assert in_order == sorted(lengths, reverse=True)  # longest first
    assert _padded_tokens(in_order, size) <= (max(lengths) - min(lengths)) * (size - 1)


def test_on_mixed_lengths_length_order_cuts_most_padding() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(20, 200) for _ in range(512)]
    ordered = batch_order([_request(i) for i in range(512)], lengths, None, share_prefix=False)
    by_key = {f"key-{i:04d}": n for i, n in enumerate(lengths)}
    bucketed, manifest = _padded_tokens([by_key[r.key] for r in ordered], 32), _padded_tokens(lengths, 32)
    assert bucketed * 10 < manifest  # 6% of the manifest order's pads here (2,713 against 43,929)


@settings(max_examples=50)
@given(lengths=lengths_strategy, seed=st.integers(0, 2**32 - 1))
def test_batches_follow_the_set_of_requests_not_their_order(lengths: list[int], seed: int) -> None:
    requests = [_request(i, image=f"img{i % 3}") for i in range(len(lengths))]
    shuffled = list(zip(requests, lengths))
    random.Random(seed).shuffle(shuffled)
    areas = {"img0": 100, "img1": 400, "img2": 100}
    for share in (False, True):
        expected = batch_order(requests, lengths, areas, share)
        assert batch_order([r for r, _ in shuffled], [n for _, n in shuffled], areas, share) == expected


def test_images_count_then_pixel_area_then_text_length() -> None:
    requests = [_request(0, "big"), _request(1, None), _request(2, "small"), _request(3, "small"),
                _request(4, None)]
    tokens = [5, 9, 30, 3, 2]
    ordered = batch_order(requests, tokens, {"big": 10_000, "small": 100}, share_prefix=False)
    assert [r.key for r in ordered] == ["key-0000", "key-0002", "key-0003", "key-0001", "key-0004"]
    # a family whose image tokens do not follow the size: text length alone among one-image requests
    ordered = batch_order(requests, tokens, None, share_prefix=False)
    assert [r.key for r in ordered] == ["key-0002", "key-0000", "key-0003", "key-0001", "key-0004"]


def test_shared_prefixes_keep_the_requests_about_one_image_together() -> None:
    requests = [_request(i, image=f"img{i % 3}") for i in range(9)]
    tokens = [9, 1, 5, 2, 8, 3, 7, 4, 6]
    ordered = batch_order(requests, tokens, None, share_prefix=True)
    images = [r.media[0][1] for r in ordered]
    assert images == sorted(images)  # each image's requests are adjacent
    for image in ("img0", "img1", "img2"):  # and by length among themselves
        own = [tokens[requests.index(r)] for r in ordered if r.media[0][1] == image]
        assert own == sorted(own, reverse=True)


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 20, 30)).save(out, "PNG")
    return out.getvalue()


def test_image_areas_come_from_headers_and_an_unreadable_image_counts_zero() -> None:
    media = {"wide": _png(64, 16), "square": _png(20, 20), "broken": b"not an image"}
    requests = [_request(0, "wide"), _request(1, "square"), _request(2, "broken"), _request(3, "wide")]
    assert image_areas(requests, lambda kind, sha: media[sha]) == {"wide": 1024, "square": 400, "broken": 0}


# -- on tiny models ----------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GREEDY = Generation(temperature=0.0, max_new_tokens=4)
MEDIA = {"small": _png(24, 24), "large": _png(96, 72)}
WORDS = "what colour is the object in the picture and where does it stand today".split()


def _load(kind: str, sha: str) -> bytes:
    return MEDIA[sha]


def _varied_requests(n: int) -> list[Request]:
    rng = random.Random(3)
    return [_request(i, rng.choice(sorted(MEDIA)), " ".join(rng.choices(WORDS, k=rng.randint(2, 14))) + "?")
            for i in range(n)]




class _Spy:
    """Wraps a backend's ``run_encoded`` (what the executor calls for a batch it encoded ahead)
    to record each batch's request keys; ``run`` answers a batch as ``run_batch`` does."""

    def __init__(self, backend: Backend) -> None:
        self.batches: list[list[str]] = []
        self.run = backend.run_batch
        self.run_encoded = backend.run_encoded
        backend.run_encoded = self  # type: ignore[method-assign]

    def __call__(self, requests: list[Request], encoded: Any, load_media: MediaLoader) -> list[Response]:
        self.batches.append([r.key for r in requests])
        return self.run_encoded(requests, encoded, load_media)


class _Media:
    def __call__(self, kind: str, sha: str) -> bytes:
        return MEDIA[sha]


@pytest.mark.slow
def test_the_executor_batches_by_length_and_the_answers_are_those_of_each_request_alone(
        tmp_path: Path) -> None:
    folder = build_tiny_llava(tmp_path / "llava", seed=0)
    backend = make_backend(f"hf:{folder},batch_size=3", GREEDY, "generate")
    requests = _varied_requests(9)
    spy = _Spy(backend)
    store = ResponseStore(tmp_path / "store")
    try:
        execute(backend, requests, store, _Media(), workers=1, label="test", show_progress=False)  # type: ignore[arg-type]
        stored = store.get_many({r.key: r for r in requests})
    finally:
        store.close()
    lengths = {r.key: n for r, n in zip(requests, _tokens(backend, requests))}
    flat = [k for batch in spy.batches for k in batch]
    assert [len(b) for b in spy.batches] == [3, 3, 3] and sorted(flat) == sorted(lengths)
    assert [lengths[k] for k in flat] == sorted(lengths.values(), reverse=True)  # longest first
    alone = {r.key: spy.run([r], _load)[0].text for r in requests}
    assert {k: v.text for k, v in stored.items()} == alone


def _tokens(backend: Backend, requests: list[Request]) -> list[int]:
    tokenizer = backend.tokenizer  # type: ignore[attr-defined]
    return [len(tokenizer(r.prompt, add_special_tokens=False)["input_ids"]) for r in requests]


@pytest.mark.slow
def test_a_family_with_sized_images_batches_by_pixel_area_first(tmp_path: Path) -> None:
    folder = FAMILIES["llava_next"](tmp_path / "next", seed=0)
    backend = make_backend(f"hf:{folder},batch_size=2", GREEDY, "generate")
    requests = _varied_requests(8)
    ordered = backend.batch_order(requests, _load)
    images = [r.media[0][1] for r in ordered]
    assert images == sorted(images, key=lambda s: s == "small")  # the large images first, then the small


@pytest.mark.slow
def test_sampled_requests_keep_their_order(tmp_path: Path) -> None:
    folder = build_tiny_llava(tmp_path / "llava", seed=0)
    backend = make_backend(f"hf:{folder},batch_size=4", Generation(temperature=1.0), "generate")
    requests = _varied_requests(6)
    assert backend.batch_order(requests, _load) == requests


@pytest.mark.slow
def test_the_batch_order_benchmark_runs_and_both_orders_answer_alike() -> None:
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "batch_order.py"
    done = subprocess.run([sys.executable, str(script), "--width", "64", "--layers", "1", "--repeats", "1",
                           "--new-tokens", "2"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    manifest, length = (line.split() for line in lines[2:4])
    assert manifest[0] == "manifest" and length[0] == "length"
    assert int(length[3]) < int(manifest[3])  # fewer pad tokens
    assert lines[-1] == "answers equal under both orders: 348 of 348"


def test_share_prefix_batches_never_split_a_group_that_fits() -> None:
    sizes = {"a": 3, "b": 4, "c": 5, "d": 1, "e": 9, "f": 2}
    ordered = [_request(10 * n + i, image=image) for n, (image, size) in enumerate(sizes.items()) for i in range(size)]
    batches = pack_groups(ordered, 8)
    assert sorted(r.key for b in batches for r in b) == sorted(r.key for r in ordered)  # each once
    assert all(0 < len(b) <= 8 for b in batches)
    for image, size in sizes.items():
        holding = [i for i, b in enumerate(batches) for r in b if r.media[0][1] == image]
        if size <= 8:
            assert len(set(holding)) == 1, (image, batches)  # the whole group in one batch
    e_batches = sorted(sum(r.media[0][1] == "e" for r in b) for b in batches if any(r.media[0][1] == "e" for r in b))
    assert e_batches == [1, 8]  # a group larger than the batch fills one whole batch, the rest goes on
    assert [[r.media[0][1] for r in b] for b in pack_groups(ordered[:7], 8)] == [["a"] * 3 + ["b"] * 4]
    assert pack_groups([], 8) == []

"""The local executor: runs pending requests in batches and commits each batch to the store.

CPU engines that are safe to load several times (espeak, pocketsphinx) run in worker processes,
one backend per worker; GPU models run in-process, batched. Every finished batch is committed at
once, so Ctrl-C or a kill loses only batches in flight and a rerun resumes from the store.

``--executor ray`` sends the same batches to Ray actors instead (``ray_executor``); the driver
still commits each batch as it finishes, so both executors store the same answers under the same
keys and resume the same way.
"""

from __future__ import annotations

import importlib
import json
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import Problem, RunError
from benchc.compiler.pools import process_pool
from benchc.compiler.spec.models import Generation

from .backends import Backend, BackendSpec, Request, Response, make_backend
from .store import ResponseStore


CACHE_HINT = "pass the --cache the manifest was compiled with (default .benchc/cache)"
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class ExecutorChoice:
    """Where batches are answered: ``local`` (this process, or its worker pool for CPU engines)
    or ``ray`` (actors on the Ray cluster at ``address``; None starts a local one). Checked when
    it is made, so a typo or a missing Ray fails before anything is compiled or run."""

    kind: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise RunError(Problem(f"unknown executor {self.kind!r}", key="--executor",
                                   hint="one of: " + ", ".join(EXECUTORS)))
        if self.address is not None and self.kind != "ray":
            raise RunError(Problem("--ray-address is only for the Ray executor", key="--ray-address",
                                   hint="add --executor ray, or leave --ray-address out"))
        if self.kind == "ray":
            from .ray_executor import import_ray

            import_ray()


LOCAL = ExecutorChoice()


class MediaSource:
    """Reads item media from the compile cache and earlier responses' audio from the store."""

    def __init__(self, cache_dir: Path, store_dir: Path) -> None:
        try:
            self.cache = ContentStore(cache_dir)
        except OSError as exc:
            raise RunError(Problem(f"cannot open the compile cache: {exc.strerror or exc}", file=str(cache_dir),
                                   key="--cache", hint=CACHE_HINT)) from None
        self.blobs = ContentStore(Path(store_dir) / "blobs")

    def __call__(self, kind: str, sha256: str) -> bytes:
        for place in (self.cache, self.blobs):
            if place.has(sha256):
                return place.get(sha256)
        raise RunError(Problem(f"{kind} {sha256[:12]} is in neither the compile cache nor the response store",
                               file=str(self.cache.root), key="--cache", hint=CACHE_HINT))

    def check_items(self, items: pl.DataFrame) -> None:
        """Every medium the items send is in the compile cache: checked before the first request."""
        shas = sorted({m["sha256"] for media in items["media"] for m in json.loads(media)})
        missing = [s for s in shas if not self.cache.has(s)]
        if missing:
            raise RunError(Problem(f"{len(missing)} of the manifest's {len(shas)} media files are not in the "
                                   "compile cache", file=str(self.cache.root), key="--cache", hint=CACHE_HINT))


_WORKER: tuple[Backend, MediaSource] | None = None


def _init_worker(module: str, spec: BackendSpec, generation: Generation, task: str, cache_dir: str,
                 store_dir: str) -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group; only the parent handles it (it cancels what is
    # queued, lets running batches finish and commits them).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    importlib.import_module(module)  # registers the backend in the worker (see compiler/pools.py)
    _WORKER = (make_backend(spec, generation, task), MediaSource(Path(cache_dir), Path(store_dir)))


def _run_in_worker(batch: list[Request]) -> list[Response]:
    assert _WORKER is not None
    backend, media = _WORKER
    return backend.run_batch(batch, media)


def _batches(requests: list[Request], size: int) -> Iterator[list[Request]]:
    for start in range(0, len(requests), size):
        yield requests[start : start + size]


def _progress(enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    disable=not enabled)


Advance = Callable[[int], None]
"""Moves the progress bar by a number of answered requests."""


def _commit(store: ResponseStore, backend_name: str, batch: list[Request], answers: list[Response]) -> None:
    """One batch, one transaction: a kill leaves a batch wholly stored or wholly missing."""
    if len(answers) != len(batch):
        raise RuntimeError(f"backend {backend_name} returned {len(answers)} answers for {len(batch)} requests")
    store.put_many(backend_name, [(r.key, a.kind, a.text, a.data) for r, a in zip(batch, answers)])


def execute(backend: Backend, requests: list[Request], store: ResponseStore, media: MediaSource,
            workers: int, label: str, show_progress: bool, executor: ExecutorChoice = LOCAL) -> None:
    """Answer ``requests`` (all missing from the store) and commit them batch by batch, here or
    (``executor.kind == "ray"``) on ``workers`` Ray actors."""
    if not requests:
        return
    batches = list(_batches(backend.batch_order(requests, media), max(1, backend.batch_size)))
    with _progress(show_progress and sys.stderr.isatty()) as progress:
        task = progress.add_task(label, total=len(requests), rate="")
        done = 0

        def advance(n: int) -> None:
            nonlocal done
            done += n
            elapsed = progress.tasks[0].elapsed or 0.0
            progress.update(task, advance=n, rate=f"{done / elapsed:6.1f} req/s" if elapsed else "")

        if executor.kind == "ray":
            from .ray_executor import execute_ray

            execute_ray(backend, batches, store, media, workers, advance, executor.address)
        elif workers > 1 and backend.process_parallel and len(batches) > 1:
            _execute_pool(backend, batches, store, media, workers, advance)
        else:
            for batch in batches:
                _commit(store, backend.name, batch, backend.run_batch(batch, media))
                advance(len(batch))


def _execute_pool(backend: Backend, batches: list[list[Request]], store: ResponseStore,
                  media: MediaSource, workers: int, advance: Advance) -> None:
    init = (type(backend).__module__, backend.spec, backend.generation, next(iter(backend.tasks)),
            str(media.cache.root), str(media.blobs.root.parent))
    with process_pool(workers, ["benchc.runtime.executor"], _init_worker, init) as pool:
        pending: dict[Future, list[Request]] = {}
        queue = iter(batches)
        try:
            for batch in queue:
                pending[pool.submit(_run_in_worker, batch)] = batch
                if len(pending) >= workers * 2:
                    _drain(pending, store, backend.name, advance, FIRST_COMPLETED)
            while pending:
                _drain(pending, store, backend.name, advance, FIRST_COMPLETED)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            for future, batch in pending.items():
                if future.done() and not future.cancelled() and future.exception() is None:
                    _commit(store, backend.name, batch, future.result())
            raise


def _drain(pending: dict[Future, list[Request]], store: ResponseStore, name: str, advance: Advance,
           mode: str) -> None:
    finished, _ = wait(list(pending), return_when=mode)
    for future in finished:
        batch = pending.pop(future)
        _commit(store, name, batch, future.result())
        advance(len(batch))

"""The local executor: runs pending requests in batches and commits each batch to the store.

CPU engines that are safe to load several times (espeak, pocketsphinx) run in worker processes,
one backend per worker; GPU models run in-process, batched. Every finished batch is committed at
once, so Ctrl-C or a kill loses only batches in flight and a rerun resumes from the store.

``--executor ray`` sends the same batches to Ray actors instead (``ray_executor``); the driver
still commits each batch as it finishes, so both executors store the same answers under the same
keys and resume the same way.

Every answer a backend returned is kept: a batch in which some requests failed (``run_batch``
raises ``BatchFailures``) commits its answers, its failures are counted, and the run goes on with
the next batches (unless the backend stopped: a refused key, a server that answers nothing). At
the end, one ``BackendError`` says how many requests failed, by class, and that a rerun resumes.

Before a batch is sent its keys are claimed in the store (``store.Claims``): a request another
run on the same store is answering is set aside and waited for, never sent twice at once.
"""

from __future__ import annotations

import importlib
import json
import logging
import signal
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import BackendError, Problem, RunError
from benchc.compiler.pools import process_pool
from benchc.compiler.spec.models import Generation

from ..defaults import DEFAULT_CACHE
from .backends import Backend, BackendSpec, Request, Response, make_backend
from .backends.base import BatchFailures, RequestFailure, count_kinds, first_of_each_kind
from .store import Claims, ResponseStore

log = logging.getLogger(__name__)

CACHE_HINT = f"pass the --cache the manifest was compiled with (default {DEFAULT_CACHE})"
RESUME_HINT = "rerun the same command to resume: the answers already stored are not asked again"
EXECUTORS = ("local", "ray")
WAIT_POLL = 0.5
"""Seconds between looks at the store while another run answers requests this one needs."""
CLAIM_AHEAD = 64
"""Keys claimed per store transaction at least: small batches are claimed several at a time, so
that claiming costs a single-process run next to nothing."""


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


def _run_in_worker(batch: list[Request]) -> list[Response]:  # may raise BatchFailures
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


class Ledger:
    """One ``execute``'s book: claims each batch before it is sent, commits what came back (every
    answer, also those of a batch in which some requests failed), counts failures, and keeps the
    requests another run was answering to wait for them."""

    def __init__(self, store: ResponseStore, backend_name: str, advance: Advance,
                 claims: Claims | None = None) -> None:
        self.store = store
        self.name = backend_name
        self.advance = advance
        self.claims = claims
        self.failures: list[RequestFailure] = []
        self.stored = 0
        """Answers this run committed."""
        self.elsewhere_answered = 0
        """Requests another run on the store answered while this one needed them."""
        self.elsewhere: list[Request] = []
        """Requests another run was answering when this one came to them."""
        self.stopped = False
        """A backend gave up on its batch: send no further batches."""
        self._batches: list[list[Request]] = []
        self._position: dict[int, int] = {}
        self._status: dict[str, str] = {}  # key -> "mine" | "answered" | "elsewhere", once claimed
        self._stored: list[str] = []  # keys stored since the last claim (their claims go with the next)

    def schedule(self, batches: list[list[Request]]) -> None:
        """The batches about to be sent, in order: ``claim`` claims a few ahead at once."""
        self._batches = batches
        self._position = {id(b): i for i, b in enumerate(batches)}
        self._status = {}

    def claim(self, batch: list[Request]) -> list[Request]:
        """The part of ``batch`` this run should send: not answered yet, not claimed elsewhere."""
        if self.claims is None:
            return batch
        if any(r.key not in self._status for r in batch):
            at = self._position.get(id(batch))
            keys: dict[str, None] = {}
            for upcoming in [batch] if at is None else self._batches[at:]:
                keys.update((r.key, None) for r in upcoming if r.key not in self._status)
                if len(keys) >= CLAIM_AHEAD:
                    break
            mine, answered, elsewhere = self.claims.take(list(keys), self._stored)
            self._stored = []
            for status, group in (("mine", mine), ("answered", answered), ("elsewhere", elsewhere)):
                self._status.update(dict.fromkeys(group, status))
        statuses = [self._status[r.key] for r in batch]
        if all(s == "mine" for s in statuses):
            return batch
        answered_here = statuses.count("answered")
        if answered_here:
            self.elsewhere_answered += answered_here
            self.advance(answered_here)
        self.elsewhere += [r for r, s in zip(batch, statuses) if s == "elsewhere"]
        return [r for r, s in zip(batch, statuses) if s == "mine"]

    def commit(self, batch: list[Request], result: list[Response] | BatchFailures) -> None:
        """One batch, one transaction: its answers are stored together or not at all. A batch
        that failed in part (``BatchFailures``) stores the answers it has."""
        if isinstance(result, BatchFailures):
            answers: list[Response | None] = result.answers
            failures = [result.failures[i] for i in sorted(result.failures)]
            self.stopped = self.stopped or result.stopped
        else:
            answers, failures = list(result), []
        if len(answers) != len(batch):
            raise RuntimeError(f"backend {self.name} returned {len(answers)} answers for {len(batch)} requests")
        entries = [(r.key, a.kind, a.text, a.data) for r, a in zip(batch, answers) if a is not None]
        self.store.put_many(self.name, entries)
        self.stored += len(entries)
        if self.claims is not None:
            self._stored += [key for key, *_ in entries]
        for failure in failures:
            log.info("%s", failure.message)
        self.failures += failures
        if self.claims is not None and len(entries) < len(batch):
            self.claims.release(r.key for r, a in zip(batch, answers) if a is None)
        self.advance(len(batch))

    def wait_for_others(self) -> list[Request]:
        """Waits while other runs answer the requests set aside; returns those that came free
        unanswered (their run died, failed them or stopped), which this run then asks itself;
        [] once every one is answered."""
        waiting = {r.key: r for r in self.elsewhere}
        self.elsewhere = []
        if waiting and self.claims is not None:
            log.info("%d request(s) are being answered by another run on this store; waiting for them",
                     len(waiting))
        while waiting and self.claims is not None:
            answered, free = self.claims.settle(list(waiting))
            for key in answered:
                del waiting[key]
            if answered:
                self.elsewhere_answered += len(answered)
                self.advance(len(answered))
            if free:
                runnable = [waiting.pop(key) for key in free]
                self.elsewhere = list(waiting.values())
                return runnable
            if waiting:
                time.sleep(WAIT_POLL)
        return []

    def error(self, backend: Backend, label: str, asked: int) -> BackendError | None:
        """The run's one message when requests failed: how many, by class, an example of each,
        and that a rerun resumes."""
        if not self.failures:
            return None
        unsent = asked - self.stored - self.elsewhere_answered - len(self.failures)
        summary = (f"{label}: {len(self.failures)} of {asked} requests failed: {count_kinds(self.failures)}; "
                   f"the {self.stored} answers that came back are stored"
                   + (f", {unsent} request(s) were not sent" if unsent > 0 else ""))
        examples = first_of_each_kind(self.failures)
        lines = [summary, *(f"  {f.kind}, e.g. {f.message}" for f in examples[:6])]
        hints = [backend.failure_hint(self.failures, self.stored + self.elsewhere_answered),
                 *(f.hint for f in examples[:6]), RESUME_HINT]
        # one hint line each (Problem renders the first "hint:" prefix)
        hint = "\n  hint: ".join(dict.fromkeys(h for h in hints if h))
        return BackendError(Problem("\n".join(lines), hint=hint))


def _outcome(future: Future) -> list[Response] | BatchFailures:
    """A finished batch's answers, or its BatchFailures (other exceptions are raised)."""
    error = future.exception()
    if isinstance(error, BatchFailures):
        return error
    if error is not None:
        raise error
    return future.result()


def execute(backend: Backend, requests: list[Request], store: ResponseStore, media: MediaSource,
            workers: int, label: str, show_progress: bool, executor: ExecutorChoice = LOCAL) -> int:
    """Answer ``requests`` (all missing from the store) and commit them batch by batch, here or
    (``executor.kind == "ray"``) on ``workers`` Ray actors; returns how many this run answered
    (the rest another run on the store answered meanwhile). Raises one ``BackendError`` when
    some failed, after storing every answer that came back."""
    if not requests:
        return 0
    with _progress(show_progress and sys.stderr.isatty()) as progress:
        task = progress.add_task(label, total=len(requests), rate="")
        done = 0

        def advance(n: int) -> None:
            nonlocal done
            done += n
            elapsed = progress.tasks[0].elapsed or 0.0
            progress.update(task, advance=n, rate=f"{done / elapsed:6.1f} req/s" if elapsed else "")

        claims = store.claims()
        ledger = Ledger(store, backend.name, advance, claims)
        try:
            todo = requests
            while todo and not ledger.stopped:
                batches = list(_batches(backend.batch_order(todo, media), max(1, backend.batch_size)))
                _run_batches(backend, batches, ledger, media, workers, executor)
                todo = [] if ledger.stopped else ledger.wait_for_others()
        finally:
            claims.close()
    error = ledger.error(backend, label, len(requests))
    if error is not None:
        raise error
    return ledger.stored


def _run_batches(backend: Backend, batches: list[list[Request]], ledger: Ledger, media: MediaSource,
                 workers: int, executor: ExecutorChoice) -> None:
    ledger.schedule(batches)
    if executor.kind == "ray":
        from .ray_executor import execute_ray

        execute_ray(backend, batches, ledger, media, workers, executor.address)
    elif workers > 1 and backend.process_parallel and len(batches) > 1:
        _execute_pool(backend, batches, ledger, media, workers)
    else:
        for batch in batches:
            if ledger.stopped:
                break
            mine = ledger.claim(batch)
            if not mine:
                continue
            try:
                result: list[Response] | BatchFailures = backend.run_batch(mine, media)
            except BatchFailures as failed:
                result = failed
            ledger.commit(mine, result)


def _execute_pool(backend: Backend, batches: list[list[Request]], ledger: Ledger, media: MediaSource,
                  workers: int) -> None:
    init = (type(backend).__module__, backend.spec, backend.generation, next(iter(backend.tasks)),
            str(media.cache.root), str(media.blobs.root.parent))
    with process_pool(workers, ["benchc.runtime.executor"], _init_worker, init) as pool:
        pending: dict[Future, list[Request]] = {}
        queue = iter(batches)
        try:
            for batch in queue:
                if ledger.stopped:
                    break
                mine = ledger.claim(batch)
                if not mine:
                    continue
                pending[pool.submit(_run_in_worker, mine)] = mine
                if len(pending) >= workers * 2:
                    _drain(pending, ledger, FIRST_COMPLETED)
            while pending:
                _drain(pending, ledger, FIRST_COMPLETED)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            for future, batch in pending.items():
                if future.done() and not future.cancelled():
                    error = future.exception()
                    if error is None or isinstance(error, BatchFailures):
                        ledger.commit(batch, _outcome(future))
            raise


def _drain(pending: dict[Future, list[Request]], ledger: Ledger, mode: str) -> None:
    finished, _ = wait(list(pending), return_when=mode)
    for future in finished:
        batch = pending.pop(future)
        ledger.commit(batch, _outcome(future))

"""The executor: runs pending requests in batches and commits each batch to the store.

How batches are answered is a strategy (``ledger.Strategy``), looked up by ``--executor`` name in
``STRATEGIES``: ``local`` runs CPU engines that are safe to load several times (espeak,
pocketsphinx) in worker processes, one backend per worker (``Pool``), and GPU models in-process,
batched (``InProcess``); ``ray`` sends the same batches to Ray actors (``ray_executor``). Whatever
the strategy, every finished batch is committed at once through the one commit step
(``ledger.Ledger.commit``), so Ctrl-C or a kill loses only batches in flight, a rerun resumes from
the store, and all strategies store the same answers under the same keys.

Every answer a backend returned is kept: a batch in which some requests failed (``run_batch``
raises ``BatchFailures``) commits its answers, its failures are counted, and the run goes on with
the next batches (unless the backend stopped: a refused key, a server that answers nothing). At
the end, one ``BackendError`` says how many requests failed, by class, and that a rerun resumes.

Before a batch is sent its keys are claimed in the store (``store.Claims``): a request another
run on the same store is answering is set aside and waited for, never sent twice at once.
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from benchc.compiler.errors import Problem, RunError
from benchc.compiler.pools import process_pool
from benchc.compiler.progress import PlainProgress
from benchc.compiler.spec.models import Generation

from ..backends import Backend, BackendSpec, Request, Response, make_backend
from ..backends.base import BatchFailures, kept_answers
from .ledger import Ledger, Outcome, Strategy
from .media import MediaSource
from .store import ResponseStore

__all__ = ["EXECUTORS", "LOCAL", "STRATEGIES", "ExecutorChoice", "InProcess", "Local", "MediaSource", "Pool",
           "execute"]


@dataclass(frozen=True)
class ExecutorChoice:
    """Where batches are answered: ``local`` (this process, or its worker pool for CPU engines)
    or ``ray`` (actors on the Ray cluster at ``address``; None starts a local one). Checked when
    it is made, so a typo or a missing Ray fails before anything is compiled or run."""

    kind: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in STRATEGIES:
            raise RunError(Problem(f"unknown executor {self.kind!r}", key="--executor",
                                   hint="one of: " + ", ".join(EXECUTORS)))
        strategy = STRATEGIES[self.kind]()
        if self.address is not None and not strategy.takes_address:
            raise RunError(Problem("--ray-address is only for the Ray executor", key="--ray-address",
                                   hint="add --executor ray, or leave --ray-address out"))
        strategy.check()

    def strategy(self, workers: int) -> Strategy:
        """The strategy that answers this choice's batches on ``workers`` workers."""
        return STRATEGIES[self.kind]()(workers, self.address)


# --- strategies -------------------------------------------------------------------------------

class InProcess(Strategy):
    """Batches answered one after another in this process (GPU models: one model, batched).

    For a backend that ``encodes_ahead`` (``hf``), the next batch is encoded (media decoded,
    prompts tokenized, images processed: ``encode_batch``) on a helper thread while the current
    one generates, so the model never waits for that CPU work; answers are those of
    ``run_batch``. Batches are still sent, answered and committed one at a time, in order."""

    def run(self, backend: Backend, batches: list[list[Request]], ledger: Ledger, media: MediaSource) -> None:
        if not backend.encodes_ahead:
            for mine in ledger.claimed(batches):
                ledger.commit(mine, _answer(lambda b=mine: backend.run_batch(b, media), ledger, mine))
            return
        backend.prepare()  # load in this thread: the helper thread only encodes
        with ThreadPoolExecutor(1, thread_name_prefix="benchc-encode") as helper:
            _run_encoding_ahead(backend, iter(ledger.claimed(batches)), ledger, media, helper)


def _answer(run: Callable[[], list[Response]], ledger: Ledger | None = None,
            batch: list[Request] | None = None) -> Outcome:
    """A batch's answers, or the ``BatchFailures`` of a batch that failed in part. Interrupted
    (Ctrl-C), the answers the backend got before it (``kept_answers``) are committed to ``ledger``
    first: an interrupt loses only the requests still unanswered."""
    try:
        return run()
    except BatchFailures as failed:
        return failed
    except KeyboardInterrupt as interrupted:
        got = kept_answers(interrupted)
        if ledger is not None and batch is not None and got and any(a is not None for a in got):
            ledger.commit(batch, BatchFailures(got, {}, stopped=True))
        raise


def _run_encoding_ahead(backend: Backend, claimed: Iterator[list[Request]], ledger: Ledger, media: MediaSource,
                        helper: ThreadPoolExecutor) -> None:
    """Each claimed batch answered from its encoding, the next batch's encoding under way on
    ``helper`` meanwhile. A batch encoded ahead but not sent (a backend stopped, an error) stays
    unanswered; its claim goes with the run's others when ``execute`` closes them."""
    mine = next(claimed, None)
    encoding = helper.submit(backend.encode_batch, mine, media) if mine else None
    while mine is not None and encoding is not None:
        encoded = encoding.result()  # an error encoding (an unreadable image) ends the run here
        upcoming = next(claimed, None)
        ahead = helper.submit(backend.encode_batch, upcoming, media) if upcoming else None
        try:
            ledger.commit(mine, _answer(lambda b=mine, e=encoded: backend.run_encoded(b, e, media)))
        except BaseException:
            if ahead is not None:
                ahead.cancel()
            raise
        if ledger.stopped:
            return
        mine, encoding = upcoming, ahead


class Pool(Strategy):
    """Batches answered by ``workers`` worker processes of one backend each (CPU engines that are
    safe to load several times), at most two batches per worker queued at once."""

    def run(self, backend: Backend, batches: list[list[Request]], ledger: Ledger, media: MediaSource) -> None:
        init = (type(backend).__module__, backend.spec, backend.generation, next(iter(backend.tasks)),
                str(media.cache.root), str(media.blobs.root.parent))
        with process_pool(self.workers, ["benchc.runtime.run.executor"], _init_worker, init) as pool:
            pending: dict[Future[list[Response]], list[Request]] = {}
            try:
                for mine in ledger.claimed(batches):
                    pending[pool.submit(_run_in_worker, mine)] = mine
                    if len(pending) >= self.workers * 2:
                        _drain(pending, ledger)
                while pending:
                    _drain(pending, ledger)
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                _salvage(pending, ledger)
                raise


class Local(Strategy):
    """``--executor local``: a process pool when the backend allows one and there is work for
    several workers, else this process."""

    def run(self, backend: Backend, batches: list[list[Request]], ledger: Ledger, media: MediaSource) -> None:
        parallel = self.workers > 1 and backend.process_parallel and len(batches) > 1
        (Pool if parallel else InProcess)(self.workers).run(backend, batches, ledger, media)


def _ray() -> type[Strategy]:
    """Ray is an optional extra: ``ray_executor`` is loaded only when it is chosen (and imports
    ``ray`` itself only in ``RayStrategy.check`` and ``run``)."""
    from .ray_executor import RayStrategy

    return RayStrategy


STRATEGIES: dict[str, Callable[[], type[Strategy]]] = {"local": lambda: Local, "ray": _ray}
"""``--executor`` name -> its strategy class, loaded on demand."""
EXECUTORS = tuple(STRATEGIES)
LOCAL = ExecutorChoice()


# --- the pool's workers -----------------------------------------------------------------------

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


def _outcome(future: Future[list[Response]]) -> Outcome:
    """A finished batch's answers, or its BatchFailures (other exceptions are raised)."""
    error = future.exception()
    if isinstance(error, BatchFailures):
        return error
    if error is not None:
        raise error
    return future.result()


def _drain(pending: dict[Future[list[Response]], list[Request]], ledger: Ledger) -> None:
    """Waits for at least one pending batch and commits every one that finished."""
    finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
    for future in finished:
        batch = pending.pop(future)
        ledger.commit(batch, _outcome(future))


def _salvage(pending: dict[Future[list[Response]], list[Request]], ledger: Ledger) -> None:
    """After Ctrl-C or a failure, once the pool is shut down: commits the batches that finished
    with answers (wholly or in part); the cancelled and failed ones stay missing."""
    for future, batch in pending.items():
        if future.done() and not future.cancelled():
            error = future.exception()
            if error is None or isinstance(error, BatchFailures):
                ledger.commit(batch, _outcome(future))


# --- the run ----------------------------------------------------------------------------------

def _progress(enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    disable=not enabled)


def execute(backend: Backend, requests: list[Request], store: ResponseStore, media: MediaSource,
            workers: int, label: str, show_progress: bool, executor: ExecutorChoice = LOCAL) -> int:
    """Answer ``requests`` (all missing from the store) and commit them batch by batch with the
    ``executor``'s strategy on ``workers`` workers; returns how many this run answered (the rest
    another run on the store answered meanwhile). Raises one ``BackendError`` when some failed,
    after storing every answer that came back."""
    if not requests:
        return 0
    strategy = executor.strategy(workers)
    backend.before_requests()  # here, in this process: what it learns goes into run.json
    # no terminal (a CI log, nohup): a plain line at most every 10 s instead of the bar
    tty = sys.stderr.isatty()
    plain = PlainProgress(sys.stderr, prefix="run", unit="requests") if show_progress and not tty else None
    with _progress(show_progress and sys.stderr.isatty()) as progress:
        task = progress.add_task(label, total=len(requests), rate="")
        done = 0
        if plain is not None:
            plain(label, 0, len(requests))

        def advance(n: int) -> None:
            nonlocal done
            done += n
            elapsed = progress.tasks[0].elapsed or 0.0
            progress.update(task, advance=n, rate=f"{done / elapsed:6.1f} req/s" if elapsed else "")
            if plain is not None:
                plain(label, done, len(requests))

        claims = store.claims()
        ledger = Ledger(store, backend.name, advance, claims)
        try:
            todo = requests
            while todo and not ledger.stopped:
                batches = backend.plan_batches(todo, media)
                ledger.schedule(batches)
                strategy.run(backend, batches, ledger, media)
                todo = [] if ledger.stopped else ledger.wait_for_others()
        finally:
            claims.close()
    error = ledger.error(backend, label, len(requests))
    if error is not None:
        raise error
    return ledger.stored

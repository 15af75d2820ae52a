"""The Ray executor (``--executor ray``): the local executor's batches, answered by Ray actors.

Why: one machine's worker pool cannot use a cluster's GPUs. Here each of ``--workers`` actors
holds one backend (it asks Ray for one GPU when the backend runs on CUDA, else one CPU), batches
go to whichever actor is free, and the answers come back to the driver, the only writer of the
response store. The driver commits each batch the moment it finishes, as the local executor
does, so the semantics are the same: a kill loses only the batches in flight, a rerun asks only
for what is missing, and Ctrl-C cancels the queued batches, lets the running ones finish and
commits them. Both executors store the same answers under the same keys, the answers of a batch
in which some requests failed (``BatchFailures`` travels back from the actor as itself), and
claim each batch in the store before it is handed out: ``RayStrategy`` is one of the executor's
strategies (``ledger.Strategy``), and commits through the same ``ledger.Ledger`` as the others.

Media travel by path, not by value: actors read item media from the compile cache and earlier
stages' audio from the store's blob folder, at the driver's absolute paths, and start in the
driver's working folder when it exists on their node (so a relative model path resolves as it
does for the driver). A cluster of several machines therefore needs ``--cache`` and ``--store``
(and model folders) on a filesystem every node mounts at the same path; each actor checks that it
sees the first batch's media, and that its backend's fingerprint is the driver's, before any batch
runs (another engine version or GPU model would store answers under the wrong key).

Cluster: ``--ray-address`` connects to a running cluster and only disconnects from it afterwards;
without it, a local cluster (``num_cpus=--workers``, no dashboard, no usage stats) is started for
each stage that has requests (a few seconds each) and shut down after it. A process already
connected to Ray (``ray.init`` in a notebook or a test) keeps its connection and its cluster. A
local cluster's processes share the driver's process group, so a terminal's Ctrl-C reaches them
too; Ray's processes survive it, and the running batches finish and are committed.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from benchc.compiler.errors import BenchcError, Problem, RunError
from benchc.compiler.spec.models import Generation

from ..backends import Backend, BackendSpec, Request, Response, make_backend
from ..backends.base import BatchFailures
from .ledger import Ledger, Outcome, Strategy
from .media import MediaSource

RESUME_HINT = "batches that finished are saved in the store; rerun the same command to resume"
SHARED_FS_HINT = ("a cluster of several machines needs --cache, --store and model folders on a filesystem "
                  "every node mounts at the same path")
QUEUED_PER_ACTOR = 2
"""Batches handed to an actor at once: one running, one waiting, so an actor never idles
between batches, and Ctrl-C has little queued work to cancel."""


def import_ray() -> ModuleType:
    """Ray, or one clear error when it is not installed (it is an optional dependency)."""
    try:
        import ray
    except ImportError:
        raise RunError(Problem("the Ray executor needs Ray, which is not installed", key="--executor",
                               hint="pip install 'ray[data]' (see requirements.lock), "
                                    "or run with --executor local")) from None
    return ray


def uses_cuda(backend: Backend) -> bool:
    """Whether the backend runs on a GPU: its fingerprint's device identity (``cuda:<GPU model>``
    for the torch backends), so no backend needs to declare it separately."""
    return str(backend.fingerprint().get("device", "")).startswith("cuda")


def actor_spec(spec: BackendSpec, gpu: bool) -> BackendSpec:
    """The spec an actor builds: Ray shows a GPU actor only its own GPU (as ``cuda:0``), so a
    ``device=cuda:N`` option becomes ``device=cuda`` there. The device index is not part of a
    fingerprint (the GPU model is), and the fingerprint check catches any other difference."""
    options = dict(spec.options)
    if gpu and options.get("device", "").startswith("cuda"):
        options["device"] = "cuda"
    return BackendSpec(spec.name, spec.target, tuple(sorted(options.items())))


class BackendActor:
    """One backend in one Ray worker process, loaded once and kept for every batch it answers.

    A user error while building the backend is kept and raised by ``ready`` (a failing actor
    constructor would reach the driver as an opaque dead actor instead)."""

    def __init__(self, spec: BackendSpec, generation: Generation, task: str, cache_dir: str,
                 store_dir: str, cwd: str) -> None:
        if Path(cwd).is_dir():
            os.chdir(cwd)
        self.error: BenchcError | None = None
        try:
            self.backend = make_backend(spec, generation, task)
            self.backend.prepare()
            self.media = MediaSource(Path(cache_dir), Path(store_dir))
        except BenchcError as exc:
            self.error = exc

    def ready(self, probe: list[tuple[str, str]]) -> dict[str, Any]:
        """This actor's fingerprint and host, and which of the ``probe`` media it cannot see."""
        if self.error is not None:
            raise self.error
        unseen = [sha for _, sha in probe if not (self.media.cache.has(sha) or self.media.blobs.has(sha))]
        return {"fingerprint": self.backend.fingerprint(), "host": socket.gethostname(), "unseen": unseen}

    def run_batch(self, batch: list[Request]) -> list[Response]:
        return self.backend.run_batch(batch, self.media)


class RayStrategy(Strategy):
    """``--executor ray``: ``workers`` actors of one backend each on the cluster at ``address``
    (None: a local cluster started for the stage)."""

    takes_address: ClassVar[bool] = True

    @classmethod
    def check(cls) -> None:
        import_ray()

    def run(self, backend: Backend, batches: list[list[Request]], ledger: Ledger, media: MediaSource) -> None:
        """Answer ``batches`` on the actors; commit each as it finishes."""
        ray = import_ray()
        gpu = uses_cuda(backend)
        with ray_session(ray, self.address, self.workers):
            check_resources(ray, self.workers, gpu)
            actors = _start_actors(ray, backend, media, min(self.workers, len(batches)), gpu)
            try:
                _check_actors(ray, actors, backend, batches[0])
                _dispatch(ray, actors, batches, ledger)
            finally:
                for actor in actors:
                    ray.kill(actor)


@contextmanager
def ray_session(ray: Any, address: str | None, workers: int) -> Iterator[None]:
    """Connect to ``address``, or start a local cluster when it is None, or reuse the process's
    connection; afterwards undo only what this call did (disconnect, or stop its own cluster)."""
    if ray.is_initialized():
        yield
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if address:
            ray.init(address=address, **quiet)
        else:  # "local": never join some other cluster found through RAY_ADDRESS or /tmp/ray
            ray.init(address="local", num_cpus=workers, include_dashboard=False,
                     _node_ip_address="127.0.0.1", **quiet)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
        raise RunError(Problem(f"cannot {'connect to' if address else 'start'} {where}: {exc}",
                               key="--ray-address" if address else "--executor",
                               hint="check the address (ray status on the head node prints it)" if address
                               else "run with --executor local, or start a cluster and pass --ray-address")) from exc
    try:
        yield
    finally:
        ray.shutdown()


def check_resources(ray: Any, workers: int, gpu: bool) -> None:
    """Refuse more actors than the cluster could ever place: Ray would wait for them forever."""
    kind = "GPU" if gpu else "CPU"
    have = float(ray.cluster_resources().get(kind, 0))
    if have < workers:
        raise RunError(Problem(f"--workers {workers} asks for {workers} Ray actors with one {kind} each, and the "
                               f"cluster has {have:g} {kind}(s)", key="--workers",
                               hint=f"use --workers {int(have)} or fewer, or add nodes" if have >= 1
                               else f"add a node with a {kind} to the cluster, or run with --executor local"))


def _start_actors(ray: Any, backend: Backend, media: MediaSource, count: int, gpu: bool) -> list[Any]:
    remote = ray.remote(BackendActor).options(**({"num_gpus": 1} if gpu else {"num_cpus": 1}))
    args = (actor_spec(backend.spec, gpu), backend.generation, next(iter(backend.tasks)),
            str(media.cache.root.resolve()), str(media.blobs.root.parent.resolve()), os.getcwd())
    return [remote.remote(*args) for _ in range(count)]


def _check_actors(ray: Any, actors: list[Any], backend: Backend, first: list[Request]) -> None:
    """Before any batch: every actor built its backend, sees the media, and keys like the driver."""
    probe = sorted({m for request in first for m in request.media})[:8]
    expected = backend.fingerprint()
    for report in (_result(ray, ref) for ref in [a.ready.remote(probe) for a in actors]):
        if report["unseen"]:
            raise RunError(Problem(f"a Ray worker on {report['host']} cannot read {len(report['unseen'])} of the "
                                   "first batch's media files (compile cache or response store)",
                                   key="--cache", hint=SHARED_FS_HINT))
        if report["fingerprint"] != expected:
            differ = sorted(k for k in {*expected, *report["fingerprint"]}
                            if expected.get(k) != report["fingerprint"].get(k))
            raise RunError(Problem(f"backend {backend.spec} on the Ray worker on {report['host']} differs from "
                                   f"this machine's in: {', '.join(differ)}",
                                   hint="answers are stored under this machine's fingerprint: every node needs "
                                        "the same engine versions, model files and GPU model"))


def _dispatch(ray: Any, actors: list[Any], batches: list[list[Request]], ledger: Ledger) -> None:
    """Keep every actor busy; commit each batch as it finishes, and on any exit salvage the rest.
    A batch is claimed (``ledger.claim``) when it is handed out; none is after a backend stopped."""
    queue = deque(batches)
    pending: dict[Any, tuple[Any, list[Request]]] = {}

    def submit(actor: Any) -> None:
        while queue and not ledger.stopped:
            batch = ledger.claim(queue.popleft())
            if batch:
                pending[actor.run_batch.remote(batch)] = (actor, batch)
                return

    for _ in range(QUEUED_PER_ACTOR):
        for actor in actors:
            submit(actor)
    try:
        while pending:
            [ref], _ = ray.wait(list(pending), num_returns=1)
            actor, batch = pending.pop(ref)
            try:
                result: Outcome = _result(ray, ref)
            except BatchFailures as failed:
                result = failed
            ledger.commit(batch, result)
            submit(actor)
    except BaseException:
        _salvage(ray, pending, ledger)
        raise


def _salvage(ray: Any, pending: dict[Any, tuple[Any, list[Request]]], ledger: Ledger) -> None:
    """After Ctrl-C or a failure: cancel the queued batches (Ray lets a running actor task
    finish), wait for the running ones and commit those that succeeded, wholly or in part, as the
    local pool's ``shutdown(cancel_futures=True)`` does."""
    for ref in pending:
        ray.cancel(ref)
    for ref, (_, batch) in pending.items():
        try:
            answers: Outcome = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            if not isinstance(getattr(exc, "cause", None), BatchFailures):
                continue  # failed: it stays missing and a rerun asks for it
            answers = exc.cause
        except ray.exceptions.RayError:  # cancelled, or the actor died
            continue
        ledger.commit(batch, answers)


def _result(ray: Any, ref: Any) -> Any:
    """A task's value; a backend's user error is raised as itself, a dead actor as a RunError.
    Other failures (bugs) keep Ray's error, which carries the remote traceback."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, BenchcError):
            raise exc.cause from None
        raise
    except ray.exceptions.RayActorError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise RunError(Problem(f"a Ray worker died: {lines[-1].strip() if lines else type(exc).__name__}",
                               hint=RESUME_HINT)) from None

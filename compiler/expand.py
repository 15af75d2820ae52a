"""Stages 3-4: expand the perturbation graph per record and run the ops, cached by node key.

A node key is digest(op name, op version, op environment (library and engine versions), params
with defaults made explicit, input keys, seed); the input keys are the input value's content key
and, for ops that read the record, the record's digest; the seed derives from (spec seed, record
id, variant path). Outputs are looked up by key in the
content store before any op runs, so an unchanged recompile does no op work; misses run in
worker processes when ``workers > 1`` and the result does not depend on the worker count.

Model-backed ops (``compiler/model_steps.py``) run in this process instead: the prompts of every
missing task of a node go to the model client in one call per backend, then each task finishes
with its answers. Their node keys also hold the backend's fingerprint (weights, settings).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from .canonical import digest
from .cas import ContentStore
from .errors import BenchcError, OpError, Problem
from .model_steps import ModelBackendRef, ModelPrompt, ModelSteps
from .pools import process_pool
from .ops import OPS, ModelOp, OpContext, OpOutput
from .resolve import ResolvedNode
from .seeds import derive_seed, rng_for
from .values import Record, Value
from .variant_paths import variant_segment as variant_segment  # re-exported: how a path is named

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
"""Told (node id, tasks done, tasks of the node) as a node's op tasks finish: a progress bar's
feed. It only watches: what is computed and in which order does not depend on it."""


@dataclass(frozen=True)
class Variant:
    """One output of one node for one record."""

    record: Record
    path: str  # e.g. "masked[shape=ellipse]" or "styled[style=candy]/masked@1"
    node_id: str
    value: Value
    attrs: dict[str, Any]
    lineage: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class NodeTask:
    key: str
    node: ResolvedNode
    record: Record
    params: dict[str, Any]
    seed: int
    upstream: Variant | None
    input_value: Value | None
    path: str
    swept: dict[str, Any]


def node_key(op_name: str, op_version: str, params: dict[str, Any], input_keys: list[str], seed: int,
             environment: dict[str, Any] | None = None) -> str:
    return digest({"kind": "node", "op": op_name, "version": op_version, "env": environment or {},
                   "params": params, "inputs": input_keys, "seed": seed})


def input_keys(node: ResolvedNode, record: Record, value: Value | None) -> list[str]:
    """What the op reads: its input value, and the record unless the op declares it does not."""
    keys = [value.key] if value is not None else []
    if value is None or node.op.reads_record:
        keys.append(record.digest)
    return keys


def _sample_choices(node: ResolvedNode, spec_seed: int, record: Record, path: str) -> dict[str, Any]:
    if not node.sweep.choice:
        return {}
    return node.sweep.draw(derive_seed(spec_seed, record.id, f"{path}#choice"))


def _input_of(node: ResolvedNode, record: Record, upstream: Variant | None) -> Value | None:
    if upstream is not None:
        return upstream.value
    if node.op.input_kind is None:
        return None
    ref = record.media.get(node.input)
    if ref is None or ref.kind != node.op.input_kind:
        raise OpError(Problem(
            f"record {record.id!r} has no {node.op.input_kind} named {node.input!r}",
            key=f"{node.where}.input", hint=f"record media: {', '.join(record.media) or 'none'}"))
    return Value(ref.kind, media=ref)


def environment_of(node: ResolvedNode, params: Any, models: ModelSteps | None) -> dict[str, Any]:
    """The op's environment under ``params``; for a model-backed op, plus the fingerprint of the
    backend the params name, so other weights or settings never share a cached output."""
    environment: dict[str, Any] = dict(node.op.environment(params))
    if node.op.model_backed:
        if models is None:
            raise OpError(Problem(f"node {node.id!r} asks a model and this compile has no model steps",
                                  key=f"{node.where}.params.backend"))
        environment["model"] = models.fingerprint(node, models.ref(params))
    return environment


def plan_node(node: ResolvedNode, spec_seed: int, record: Record,
              upstream: Variant | None, models: ModelSteps | None = None) -> list[NodeTask]:
    """The tasks of ``node`` for one record (and one upstream variant)."""
    tasks = []
    value = _input_of(node, record, upstream)
    keys = input_keys(node, record, value)
    prefix = f"{upstream.path}/" if upstream else ""
    for point in node.sweep.grid_points():
        for repeat in range(node.repeat):
            path = prefix + variant_segment(node.id, point, repeat if node.repeat > 1 else None)
            swept = {**point, **_sample_choices(node, spec_seed, record, path)}
            try:
                model = node.op.Params.model_validate({**node.sweep.fixed, **swept})
            except Exception as exc:  # validated in resolve; a chosen combination can still clash
                raise OpError(Problem(f"invalid params {swept}: {exc}", key=f"{node.where}.params")) from None
            params = model.model_dump(mode="json")
            seed = derive_seed(spec_seed, record.id, path)
            key = node_key(node.op.name, node.op.version, params, keys, seed,
                           environment_of(node, model, models))
            tasks.append(NodeTask(key, node, record, params, seed, upstream, value, path, swept))
    return tasks


def _run_task(store_root: str, op_module: str, op_name: str, params: dict[str, Any], seed: int,
              record: Record, value: Value | None, where: str, roots: tuple[Path, ...]) -> dict[str, Any]:
    importlib.import_module(op_module)  # registers the op in a worker (see compiler/pools.py)
    op = OPS.get(op_name)
    store = _task_store(store_root)
    ctx = OpContext(record=record, rng=rng_for(seed), store=store, data_roots=roots)
    out = _guarded(lambda: op.apply(value, op.Params.model_validate(params), ctx), record, op_name, params, where)
    return _output_json(out)


@lru_cache(maxsize=4)
def _task_store(store_root: str) -> ContentStore:
    """The op tasks' store, one per process and cache (one per task cost 7% of a large compile:
    a ``mkdir`` each). ``durable=False``: run_tasks syncs each batch."""
    return ContentStore(Path(store_root), durable=False)


def _output_json(out: OpOutput) -> dict[str, Any]:
    return {"value": out.value.as_json(), "attrs": out.attrs, "drop": out.drop}


def _guarded(call: Callable[[], Any], record: Record, op_name: str, params: dict[str, Any], where: str) -> Any:
    """Run an op's code; its errors name the item, the op and the node's key path."""
    try:
        return call()
    except BenchcError as exc:
        raise OpError([Problem(f"item {record.id!r}, op {op_name!r}: {p.message}", p.file, p.line,
                               f"{where}.{p.key}" if p.key else where, p.hint) for p in exc.problems]) from None
    except Exception as exc:  # a library failed on this item: say which item, node and params
        raise OpError(Problem(f"item {record.id!r}, op {op_name!r} failed: {type(exc).__name__}: {exc}",
                              key=where, hint=f"params: {params}")) from None


@dataclass
class Expansion:
    """The variants of every node, the op runs a compile did, and the variants validators dropped."""

    by_node: dict[str, list[Variant]] = field(default_factory=dict)
    ops_run: int = 0
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    """node id -> drop reason -> count"""


def run_tasks(tasks: list[NodeTask], store: ContentStore, workers: int,
              roots: tuple[Path, ...] = (), models: ModelSteps | None = None,
              progress: Progress | None = None,
              pool: WorkerPool | None = None) -> tuple[list[Variant], int, dict[str, int]]:
    """Answer tasks from the node cache, run the misses; returns the kept variants, the op runs
    and the count of dropped variants per reason. ``pool``: the compile's worker pool, kept
    across nodes (``expand``); without one, a pool of ``workers`` for this call alone."""
    cached = store.lookup_nodes(t.key for t in tasks)
    missing = [t for t in {t.key: t for t in tasks}.values() if t.key not in cached]
    if missing and missing[0].node.op.model_backed:
        assert models is not None  # plan_node needed it for the keys
        fresh = _run_model_tasks(missing, store, roots, models)
    elif pool is not None:
        fresh = _execute(missing, store, pool, roots, progress)
    else:
        with WorkerPool(workers) as own:
            fresh = _execute(missing, store, own, roots, progress)
    if fresh:
        store.sync()  # the media the ops wrote, before the rows that point at them
        store.store_nodes(fresh)
    outputs = {**cached, **fresh}
    dropped = Counter(outputs[t.key]["drop"] for t in tasks if outputs[t.key].get("drop"))
    kept = [_variant(t, outputs[t.key]) for t in tasks if not outputs[t.key].get("drop")]
    return kept, len(missing), dict(sorted(dropped.items()))


TaskArgs = tuple[str, str, str, dict[str, Any], int, Record, Value | None, str, tuple[Path, ...]]
"""What ``_run_task`` takes: plain values that pickle to a worker (no ResolvedNode)."""


class WorkerPool:
    """A compile's worker processes, started by the first node that has op tasks to share out
    and kept for the nodes after it: each worker imports its libraries (torch, OpenCV, the
    corruption libraries: seconds) once per compile, not once per node. One worker (or none
    asked for) means tasks run in this process."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = process_pool(self.workers, ["benchc.compiler.expand"], _limit_threads,
                                      (max(1, (os.cpu_count() or 1) // self.workers),))
        return self._pool

    def close(self) -> None:
        """Stop the workers; tasks not yet handed out are dropped (Ctrl-C), those running finish."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _execute(tasks: list[NodeTask], store: ContentStore, pool: WorkerPool, roots: tuple[Path, ...],
             progress: Progress | None = None) -> dict[str, dict[str, Any]]:
    """Run ``tasks``; their outputs by key. Which worker runs a task, and when, changes nothing:
    each output depends only on its task, and outputs are matched to tasks by position."""
    args: list[TaskArgs] = [(str(store.root), type(t.node.op).__module__, t.node.op.name, t.params, t.seed,
                             t.record, t.input_value, t.node.where, roots) for t in tasks]
    tell = _teller(tasks, progress)
    if pool.workers <= 1 or len(tasks) < 2:
        results = []
        for a in args:
            results.append(_run_task(*a))
            tell(len(results))
    else:
        results = _run_pooled(pool.executor(), args, pool.workers, tell)
    return {t.key: r for t, r in zip(tasks, results)}


def _teller(tasks: list[NodeTask], progress: Progress | None) -> Callable[[int], None]:
    """``progress`` told (node, done, total) for about every 0.5% of the node's tasks (and at
    0 and at the end), as done counts come in; a no-op without ``progress``."""
    if progress is None or not tasks:
        return lambda done: None
    node, total = tasks[0].node.id, len(tasks)
    step = max(1, total // 200)
    progress(node, 0, total)  # the node's start: its items/s and ETA count from here
    last = [0]

    def tell(done: int) -> None:
        if done == total or done - last[0] >= step:
            last[0] = done
            progress(node, done, total)
    return tell


def _run_pooled(pool: ProcessPoolExecutor, args: list[TaskArgs], workers: int,
                tell: Callable[[int], None]) -> list[dict[str, Any]]:
    """Every task's output, in task order, from chunks of tasks run by the pool's workers.

    Chunks shrink towards the end of the node (``chunk_spans``), so when the last tasks are
    slow ones (glass_blur: 0.4 s each) no worker waits long for another's last chunk. Progress
    counts chunks as they finish, in any order. On a failure the chunks not yet handed out are
    cancelled and the error of the first failing task in task order is raised: chunks are handed
    out in order, so every chunk before a failing one has run, whichever failed first in time."""
    spans = chunk_spans(len(args), workers)
    futures = [pool.submit(_run_chunk, args[span.start:span.stop]) for span in spans]
    sizes = {future: len(span) for future, span in zip(futures, spans)}
    try:
        done = 0
        for future in as_completed(futures):
            if future.exception() is not None:
                break
            done += sizes[future]
            tell(done)
    except BaseException:  # Ctrl-C: drop the chunks not started; what ran is lost, not half-written
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    for future in futures:
        future.cancel()  # only those not started: none when all finished
    wait(futures)
    return [result for future in futures for result in future.result()]


def _run_chunk(chunk: list[TaskArgs]) -> list[dict[str, Any]]:
    return [_run_task(*task) for task in chunk]


MAX_CHUNK = 32
"""Tasks a worker takes at a time: enough that pickling stays a small share of an op's time, few
enough that Ctrl-C (which lets the chunks already handed out finish) returns within seconds."""

CHUNKS_PER_WORKER = 4
"""A chunk holds at most 1/(workers x this) of the tasks still to hand out: the chunks shrink
towards the end of a node, so the workers finish within about one task of each other."""


def chunk_spans(tasks: int, workers: int) -> list[range]:
    """Consecutive spans covering ``range(tasks)``, each at most MAX_CHUNK long and at most
    1/(workers x CHUNKS_PER_WORKER) of what is left after the spans before it (at least 1): the
    guided schedule of OpenMP. It depends only on the counts, never on timing."""
    spans, start = [], 0
    while start < tasks:
        size = max(1, min(MAX_CHUNK, (tasks - start) // (workers * CHUNKS_PER_WORKER)))
        spans.append(range(start, start + size))
        start += size
    return spans


def _limit_threads(threads: int) -> None:
    """A worker's library thread pools (BLAS, OpenMP, OpenCV's) get its share of the cores: N
    workers each spinning up a pool per core would oversubscribe the machine (pixels and
    samples do not depend on the thread count)."""
    import cv2
    from threadpoolctl import threadpool_limits

    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)  # for libraries the worker loads later (torch)
    threadpool_limits(threads)  # for those already loaded
    cv2.setNumThreads(threads)


def _run_model_tasks(tasks: list[NodeTask], store: ContentStore, roots: tuple[Path, ...],
                     models: ModelSteps) -> dict[str, dict[str, Any]]:
    """A model node's missing tasks: every task's prompts, one client call per backend (the
    client batches and caches), then each task's finish with its own answers."""
    node = tasks[0].node
    op = node.op
    assert isinstance(op, ModelOp)
    where = node.where
    prepared = []
    for task in tasks:
        params = op.Params.model_validate(task.params)
        ctx = OpContext(record=task.record, rng=rng_for(task.seed), store=store, data_roots=roots)
        prompts = _guarded(partial(op.prompts, task.input_value, params, ctx), task.record, op.name,
                           task.params, where)
        prepared.append((task, params, ctx, prompts))
    answers = _ask(node, models, [(models.ref(params), prompts) for _, params, _, prompts in prepared])
    return {task.key: _output_json(_guarded(partial(op.finish, task.input_value, params, ctx, got),
                                            task.record, op.name, task.params, where))
            for (task, params, ctx, _), got in zip(prepared, answers)}


def _ask(node: ResolvedNode, models: ModelSteps,
         requests: list[tuple[ModelBackendRef, list[ModelPrompt]]]) -> list[list[str]]:
    """Each task's answers, asking the client once per backend with all of that backend's prompts."""
    by_ref: dict[ModelBackendRef, list[int]] = {}
    for index, (ref, _) in enumerate(requests):
        by_ref.setdefault(ref, []).append(index)
    answers: list[list[str]] = [[] for _ in requests]
    for ref, indices in by_ref.items():
        flat = [prompt for i in indices for prompt in requests[i][1]]
        got = iter(models.generate(node, ref, flat))
        for i in indices:
            answers[i] = [next(got) for _ in requests[i][1]]
    return answers


def _variant(task: NodeTask, output: dict[str, Any]) -> Variant:
    parent = task.upstream
    # Every variant names the node that made it, so breakdowns and `over` work without
    # hand-written attrs (an unswept node's variants would otherwise have no attribute at all).
    attrs = {**(parent.attrs if parent else {}), "perturbation": task.node.id, **task.swept,
             **output.get("attrs", {})}
    step = {"node": task.node.id, "op": task.node.op.name, "version": task.node.op.version, "key": task.key}
    lineage = (*(parent.lineage if parent else ()), step)
    return Variant(task.record, task.path, task.node.id, Value.from_json(output["value"]), attrs, lineage)


def expand(nodes: list[ResolvedNode], records: list[Record], spec_seed: int, store: ContentStore,
           workers: int = 1, roots: tuple[Path, ...] = (), models: ModelSteps | None = None,
           progress: Progress | None = None) -> Expansion:
    """Run every node over every record (and over every kept variant of its input node), on one
    worker pool for all the nodes."""
    result = Expansion()
    with WorkerPool(workers) as pool:
        for index, node in enumerate(nodes, 1):
            started = time.monotonic()
            tasks: list[NodeTask] = []
            if node.input in result.by_node:
                for upstream in result.by_node[node.input]:
                    tasks += plan_node(node, spec_seed, upstream.record, upstream, models)
            else:
                for record in records:
                    tasks += plan_node(node, spec_seed, record, None, models)
            result.by_node[node.id], ran, dropped = run_tasks(tasks, store, workers, roots, models, progress, pool)
            log.info("node %d/%d %s (%s): %d task(s), %d computed, %d dropped, %.1f s", index, len(nodes), node.id,
                     node.op.name, len(tasks), ran, sum(dropped.values()), time.monotonic() - started)
            warning = node.op.output_warning([v.value for v in result.by_node[node.id]], store)
            if warning:
                print(f"warning: node {node.id} ({node.op.name}): {warning}", file=sys.stderr, flush=True)
            result.ops_run += ran
            if dropped:
                result.dropped[node.id] = dropped
    return result

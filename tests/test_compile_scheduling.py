"""How a compile shares op tasks out to workers (compiler/expand.py): chunks that shrink towards
a node's end, outputs in task order whatever order the chunks finish in, the first failing task
in task order named whatever failed first in time, and one worker pool for all the nodes."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from benchc.compiler import expand
from benchc.compiler.compile import CompileOptions, compile_spec
from benchc.compiler.errors import OpError, Problem
from benchc.compiler.expand import CHUNKS_PER_WORKER, MAX_CHUNK, chunk_spans
from specfiles import FROM_TABLE, write_rows_spec


@pytest.mark.parametrize("tasks,workers", [(0, 2), (1, 2), (7, 2), (100, 2), (58_000, 2), (1000, 1), (999, 16)])
def test_chunks_cover_every_task_once_in_order_and_shrink_towards_the_end(tasks: int, workers: int) -> None:
    spans = chunk_spans(tasks, workers)
    assert [i for span in spans for i in span] == list(range(tasks))
    sizes = [len(span) for span in spans]
    assert all(1 <= size <= MAX_CHUNK for size in sizes)
    assert sizes == sorted(sizes, reverse=True)  # never a big chunk after a small one
    for span in spans:  # each at most its share of what was left
        assert len(span) == 1 or len(span) <= (tasks - span.start) // (workers * CHUNKS_PER_WORKER)
    if tasks >= workers * CHUNKS_PER_WORKER:
        assert sizes[-1] == 1  # the last tasks go out one at a time


class ShuffledPool(ThreadPoolExecutor):
    """Runs every submitted call on its own thread but lets them finish only in a shuffled
    order (no sleeps: each call waits for its turn), so chunks finish out of task order."""

    def __init__(self, calls: int, seed: int) -> None:
        super().__init__(max_workers=calls)
        self.order = list(range(calls))
        random.Random(seed).shuffle(self.order)
        self.turn = 0
        self.submitted = 0
        self.lock = threading.Condition()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        index = self.submitted
        self.submitted += 1

        def in_turn() -> Any:
            with self.lock:
                self.lock.wait_for(lambda: self.order[self.turn] == index)
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.turn += 1
                    self.lock.notify_all()
        return super().submit(in_turn)


def _fake_task(store_root: str, module: str, op: str, params: dict[str, Any], seed: int, *rest: Any) -> dict[str, Any]:
    if params.get("fail"):
        raise OpError(Problem(f"task {seed} failed"))
    return {"value": {"kind": "text", "text": f"out-{seed}"}, "attrs": {}, "drop": None}


def _args(count: int, failing: tuple[int, ...] = ()) -> list[Any]:
    return [("root", "mod", "op", {"fail": i in failing}, i, None, None, "node.x", ()) for i in range(count)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_outputs_come_back_in_task_order_whatever_order_chunks_finish_in(monkeypatch: pytest.MonkeyPatch,
                                                                         seed: int) -> None:
    monkeypatch.setattr(expand, "_run_task", _fake_task)
    args = _args(90)
    told: list[int] = []
    with ShuffledPool(len(chunk_spans(90, 2)), seed) as pool:
        outputs = expand._run_pooled(pool, args, 2, told.append)  # type: ignore[arg-type]
    assert outputs == [_fake_task(*a) for a in args]  # what one process running them in order gives
    assert told == sorted(told) and told[-1] == 90  # progress counts chunks as they finish


def test_the_first_failing_task_in_task_order_is_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks 5 and 60 fail; chunks finish in reverse order, so task 60's fails first in time."""
    monkeypatch.setattr(expand, "_run_task", _fake_task)
    spans = chunk_spans(90, 2)

    class Reversed(ShuffledPool):
        def __init__(self) -> None:
            super().__init__(len(spans), 0)
            self.order = list(reversed(range(len(spans))))

    with Reversed() as pool, pytest.raises(OpError, match="task 5 failed"):
        expand._run_pooled(pool, _args(90, failing=(5, 60)), 2, lambda done: None)  # type: ignore[arg-type]


def test_one_worker_pool_serves_every_node_and_the_manifest_is_as_with_one_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"id": f"r{i}", "texts": [f"sentence number {i}", f"another one {i}"]} for i in range(8)]
    spec = write_rows_spec(tmp_path, "two-nodes", rows, FROM_TABLE + """
[[node]]
id = "cased"
op = "text.case"
input = "source"
params.mode = { grid = ["upper", "lower"] }
""")
    started: list[int] = []
    real = expand.process_pool

    def counted(workers: int, *rest: Any) -> Any:
        started.append(workers)
        return real(workers, *rest)

    monkeypatch.setattr(expand, "process_pool", counted)
    two = compile_spec(spec, tmp_path / "two", CompileOptions(cache_dir=tmp_path / "c2", workers=2))
    one = compile_spec(spec, tmp_path / "one", CompileOptions(cache_dir=tmp_path / "c1", workers=1))
    assert started == [2]  # one pool for both nodes; none with one worker
    assert two.ops_run == one.ops_run > 0
    assert two.lock["manifest_digest"] == one.lock["manifest_digest"]
    assert (tmp_path / "two" / "items.parquet").read_bytes() == (tmp_path / "one" / "items.parquet").read_bytes()

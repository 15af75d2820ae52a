"""The in-process executor encodes the next batch on a helper thread while the current one runs
(``Backend.encodes_ahead``): the overlap is shown by the backend itself (a batch's run waits for
the next batch's encoding to have started, which only a helper thread can do), never by timing;
answers, order, commits, stops and errors are those of the plain loop."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Backend, BackendSpec, Request, Response
from benchc.runtime.backends.base import BatchFailures, MediaLoader
from benchc.runtime.run.executor import execute
from benchc.runtime.run.media import MediaSource
from benchc.runtime.run.store import ResponseStore


class Ahead(Backend):
    """Answers ``prompt!``; records which thread encoded each batch and what order things ran in."""

    name = "test-ahead"
    tasks = frozenset({"generate"})
    batch_size = 2
    encodes_ahead = True

    def __init__(self, stop_at: str | None = None, bad: str | None = None) -> None:
        super().__init__(BackendSpec("test-ahead"), Generation())
        self.events: list[str] = []
        self.encoders: set[str] = set()
        self.started: dict[str, threading.Event] = {}
        self.stop_at, self.bad = stop_at, bad

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        return self.run_encoded(requests, self.encode_batch(requests, load_media), load_media)

    def encode_batch(self, requests: list[Request], load_media: MediaLoader) -> Any:
        first = requests[0].prompt
        self.started.setdefault(first, threading.Event()).set()
        self.encoders.add(threading.current_thread().name)
        self.events.append(f"encode {first}")
        if first == self.bad:
            raise BackendError(Problem(f"cannot read the image of {first}"))
        return [r.prompt + "!" for r in requests]

    def run_encoded(self, requests: list[Request], encoded: Any, load_media: MediaLoader) -> list[Response]:
        first = requests[0].prompt
        self.events.append(f"run {first}")
        following = f"p{int(first[1:]) + 2}"
        if int(following[1:]) < 6 and first != self.stop_at:  # the next batch is being encoded meanwhile
            assert self.started.setdefault(following, threading.Event()).wait(10), "no encoding ahead"
        if first == self.stop_at:
            raise BatchFailures([Response("text", text=e) for e in encoded], {}, stopped=True)
        return [Response("text", text=e) for e in encoded]


def _requests() -> list[Request]:
    return [Request(f"k{i}", "generate", f"p{i}") for i in range(6)]


def _execute(tmp_path: Path, backend: Ahead) -> dict[str, str]:
    store = ResponseStore(tmp_path / "store")
    try:
        execute(backend, _requests(), store, MediaSource(tmp_path / "cache", tmp_path / "store"), workers=1,
                label="t", show_progress=False)
    finally:
        stored = store.get_many({r.key: r for r in _requests()})
        store.close()
    return {k: v.text or "" for k, v in stored.items()}


def test_the_next_batch_is_encoded_on_a_helper_thread_while_this_one_runs(tmp_path: Path) -> None:
    backend = Ahead()
    assert _execute(tmp_path, backend) == {f"k{i}": f"p{i}!" for i in range(6)}
    assert backend.encoders and threading.current_thread().name not in backend.encoders
    runs = [e for e in backend.events if e.startswith("run")]
    assert runs == ["run p0", "run p2", "run p4"]  # sent and committed in order
    assert backend.events.index("encode p2") < backend.events.index("run p2")


def test_a_backend_that_stops_gets_no_further_batch(tmp_path: Path) -> None:
    backend = Ahead(stop_at="p2")
    assert sorted(_execute(tmp_path, backend)) == ["k0", "k1", "k2", "k3"]  # p4 was encoded, never sent
    assert [e for e in backend.events if e.startswith("run")] == ["run p0", "run p2"]


def test_an_encoding_error_ends_the_run_after_the_batches_before_it_are_stored(tmp_path: Path) -> None:
    backend = Ahead(bad="p4")
    store = ResponseStore(tmp_path / "store")
    try:
        with pytest.raises(BackendError, match="cannot read the image of p4"):
            execute(backend, _requests(), store, MediaSource(tmp_path / "cache", tmp_path / "store"), workers=1,
                    label="t", show_progress=False)
        assert sorted(store.get_many({r.key: r for r in _requests()})) == ["k0", "k1", "k2", "k3"]
    finally:
        store.close()


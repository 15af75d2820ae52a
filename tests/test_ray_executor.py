"""The Ray executor (``--executor ray``): same answers, keys and scores as the local executor with
one or several Ray workers, through the real CLI on bundled data (espeak + pocketsphinx); Ctrl-C
stops cleanly and the rerun resumes; actors refuse a node that cannot see the media or keys
differently; the session starts, joins and stops only what it should.

One local Ray cluster per module (started by this process, ~3 s); the CLI processes join it with
``--ray-address``. The session's own-cluster path is checked against a stand-in ``ray`` module,
so the module starts no second cluster.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchc import api
from benchc.cli import main
from benchc.compiler.errors import BackendError, RunError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import BackendSpec, Request, Response, make_backend
from benchc.runtime.run.executor import LOCAL, ExecutorChoice, MediaSource
from benchc.runtime.run.ledger import Ledger
from benchc.runtime.run.ray_executor import (BackendActor, _check_actors, _dispatch, _result, _start_actors,
                                         actor_spec, check_resources, ray_session, uses_cuda)
from benchc.runtime.run.core import RunOptions
from benchc.runtime.run.store import ResponseStore
from support.stored import stored_responses
from conftest import ROOT, cli_process as cli  # this process is a Ray driver already: the CLI joins as another
from specfiles import write_mini

# a Ray cluster, real espeak, pocketsphinx and MiniLM; one xdist worker, so one cluster start
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


@dataclass(frozen=True)
class Cluster:
    ray: Any
    address: str


@pytest.fixture(scope="module")
def cluster() -> Any:
    """A two-CPU local cluster, as the executor itself would start one."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, logging_level="warning")
    try:
        yield Cluster(ray, ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two records of the bundled table x three versions: six speech requests (one espeak batch)
    and six transcripts (two pocketsphinx batches, so two workers share a stage)."""
    root = tmp_path_factory.mktemp("ray")
    return api.compile(write_mini(root, n=2), root / "m", cache_dir=root / "c", store_dir=root / "cs",
                       progress=False).manifest_dir


def _run_args(manifest: Path, name: str, *extra: str) -> list[str]:
    root = manifest.parent
    return ["run", str(manifest), "-o", str(root / name), "--model", "espeak", "--cache", str(root / "c"),
            "--store", str(root / f"{name}-store"), *extra]


def _interrupt(args: list[str], store: Path, after: int, then: float) -> tuple[int, str]:
    """Start ``benchc`` and Ctrl-C it (SIGINT to its process group, as a terminal does) ``then``
    seconds after ``after`` responses are stored; its exit status and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "benchc.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while stored_responses(store) < after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(then)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


def _counts(stdout: str) -> tuple[int, int]:
    """(cached, run) summed over the stages a ``benchc run`` printed."""
    pairs = re.findall(r"\((\d+) cached, (\d+) run\)", stdout)
    return sum(int(c) for c, _ in pairs), sum(int(r) for _, r in pairs)


def test_ray_with_one_or_two_workers_answers_and_scores_as_the_local_executor(cluster: Cluster,
                                                                             manifest: Path) -> None:
    root, total = manifest.parent, 12
    cli(*_run_args(manifest, "local"), check=True)
    two = cli(*_run_args(manifest, "ray2", "--executor", "ray", "--ray-address", cluster.address, "-j", "2"),
              check=True)
    assert _counts(two.stdout) == (0, total)

    # -j 1, Ctrl-C once the speech stage is stored (and, most likely, while a transcript batch runs)
    one = _run_args(manifest, "ray1", "--executor", "ray", "--ray-address", cluster.address, "-j", "1")
    code, stderr = _interrupt(one, root / "ray1-store", after=6, then=0.5)
    assert code == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    saved = stored_responses(root / "ray1-store")
    assert saved in (6, 10), "whole batches only: the speech batch, and the running transcript batch if any"
    resumed = cli(*one, check=True)
    assert _counts(resumed.stdout) == (saved, total - saved)

    local = pl.read_parquet(root / "local" / "responses.parquet")
    assert local.height == total
    for name in ("ray1", "ray2"):
        assert pl.read_parquet(root / name / "responses.parquet").equals(local), name
    scores = {name: api.score(root / name)["metrics"] for name in ("local", "ray1", "ray2")}
    assert scores["ray1"] == scores["local"] == scores["ray2"]
    # the CLI only disconnected from the cluster it joined
    assert cluster.ray.is_initialized() and cluster.ray.cluster_resources()["CPU"] == 2


def test_actors_refuse_unseen_media_and_another_fingerprint(cluster: Cluster, manifest: Path,
                                                            tmp_path: Path) -> None:
    ray = cluster.ray
    backend = make_backend("espeak", Generation(), "text-to-speech")
    media = MediaSource(manifest.parent / "c", tmp_path / "store")
    [actor] = _start_actors(ray, backend, media, 1, gpu=False)
    try:
        unseen = [Request("k", "speech-to-text", "", media=(("audio", "0" * 64),))]
        with pytest.raises(RunError, match="cannot read 1 of the first batch's media files") as caught:
            _check_actors(ray, [actor], backend, unseen)
        assert "filesystem every node mounts" in caught.value.render()
        backend.fingerprint = lambda: {**type(backend).fingerprint(backend), "speed": 120}  # another node
        with pytest.raises(RunError, match="differs from this machine's in: speed"):
            _check_actors(ray, [actor], backend, [Request("k", "text-to-speech", "hi")])
    finally:
        ray.kill(actor)


def test_a_backend_error_in_an_actor_reaches_the_driver_as_itself(cluster: Cluster, manifest: Path,
                                                                  tmp_path: Path) -> None:
    ray = cluster.ray
    actor = ray.remote(BackendActor).remote(BackendSpec.parse("espeak:speed=fast"), Generation(),
                                            "text-to-speech", str(manifest.parent / "c"), str(tmp_path), "/")
    try:
        with pytest.raises(BackendError, match="speed=.fast. is not valid"):
            _result(ray, actor.ready.remote([]))
    finally:
        ray.kill(actor)


def test_more_workers_than_the_cluster_holds_are_refused(cluster: Cluster) -> None:
    with pytest.raises(RunError, match="asks for 3 Ray actors with one CPU each, and the cluster has 2") as caught:
        check_resources(cluster.ray, 3, gpu=False)
    assert "--workers 2" in caught.value.render()
    with pytest.raises(RunError, match="one GPU each, and the cluster has 0 GPU"):
        check_resources(cluster.ray, 1, gpu=True)
    check_resources(cluster.ray, 2, gpu=False)


# --- no cluster needed ---------------------------------------------------------------------------

@dataclass
class FakeRay:
    """Records what a session does with ``ray``; ``fail`` makes ``init`` raise it."""

    initialized: bool = False
    fail: Exception | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **kwargs: Any) -> None:
        self.calls.append(("init", kwargs))
        if self.fail is not None:
            raise self.fail
        self.initialized = True

    def shutdown(self) -> None:
        self.calls.append(("shutdown", {}))
        self.initialized = False


def test_a_session_without_address_starts_a_private_local_cluster_and_stops_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)
    ray = FakeRay()
    with ray_session(ray, None, 3):
        [(name, kwargs)] = ray.calls
        assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0"
    assert name == "init" and kwargs["address"] == "local"  # never another cluster found in /tmp/ray
    assert kwargs["num_cpus"] == 3 and kwargs["include_dashboard"] is False
    assert kwargs["_node_ip_address"] == "127.0.0.1" and kwargs["log_to_driver"] is False
    assert ray.calls[-1][0] == "shutdown"


def test_a_session_with_address_joins_and_disconnects_and_an_open_one_is_left_alone() -> None:
    ray = FakeRay()
    with ray_session(ray, "10.0.0.1:6379", 4):
        pass
    assert [c[0] for c in ray.calls] == ["init", "shutdown"]
    assert ray.calls[0][1]["address"] == "10.0.0.1:6379" and "num_cpus" not in ray.calls[0][1]
    connected = FakeRay(initialized=True)
    with ray_session(connected, "10.0.0.1:6379", 4):
        pass
    assert connected.calls == [] and connected.initialized


def test_an_unreachable_cluster_is_one_clear_error() -> None:
    ray = FakeRay(fail=ConnectionError("could not reach the GCS"))
    with (pytest.raises(RunError, match="cannot connect to the Ray cluster at h:1: could not reach") as caught,
          ray_session(ray, "h:1", 1)):
        pass
    assert caught.value.problems[0].key == "--ray-address"


class Ref:
    def __init__(self, batch: list[Request], queue: list[Ref]) -> None:
        self.batch, self.queue, self.cancelled = batch, queue, False

    @property
    def running(self) -> bool:
        return self.queue[0] is self


class PoolRay:
    """A stand-in cluster: each actor runs the first batch of its queue and queues the rest;
    the first ``wait`` finishes actor 0's running batch, the second is interrupted by Ctrl-C."""

    def __init__(self) -> None:
        import ray

        self.exceptions = ray.exceptions
        self.waits = 0

    @staticmethod
    def actor() -> Any:
        queue: list[Ref] = []

        def remote(batch: list[Request]) -> Ref:
            queue.append(Ref(batch, queue))
            return queue[-1]

        return type("Actor", (), {"run_batch": type("Method", (), {"remote": staticmethod(remote)})})()

    def wait(self, refs: list[Ref], num_returns: int) -> tuple[list[Ref], list[Ref]]:
        self.waits += 1
        if self.waits == 2:
            raise KeyboardInterrupt
        done = refs[0]
        done.queue.pop(0)
        return [done], refs[1:]

    def cancel(self, ref: Ref) -> None:
        ref.cancelled = not ref.running  # Ray lets a running actor task finish

    def get(self, ref: Ref) -> list[Response]:
        if ref.cancelled:
            raise self.exceptions.TaskCancelledError()
        return [Response("text", text=r.key) for r in ref.batch]


def test_ctrl_c_cancels_queued_batches_and_commits_running_ones(tmp_path: Path) -> None:
    ray, store = PoolRay(), ResponseStore(tmp_path / "store")
    batches = [[Request(f"b{i}r{j}", "speech-to-text", "") for j in range(2)] for i in range(6)]
    try:
        with pytest.raises(KeyboardInterrupt):
            _dispatch(ray, [ray.actor(), ray.actor()], batches, Ledger(store, "fake", lambda n: None))
        stored = sorted(store.get_many([r.key for b in batches for r in b]))
    finally:
        store.close()
    # actor 0 ran b0 (committed; b4 then queued behind b2), actor 1 ran b1 with b3 queued. At
    # Ctrl-C the running b1 and b2 finish and are committed; b3 and b4 are cancelled; b5 was
    # never handed out
    assert stored == ["b0r0", "b0r1", "b1r0", "b1r1", "b2r0", "b2r1"]


def test_cuda_backends_get_a_gpu_actor_that_sees_its_gpu_as_cuda() -> None:
    def stub(device: str | None) -> Any:
        fingerprint = {"backend": "x"} | ({"device": device} if device else {})
        return type("Stub", (), {"fingerprint": staticmethod(lambda: fingerprint)})()

    assert uses_cuda(stub("cuda:NVIDIA H200")) and not uses_cuda(stub("cpu")) and not uses_cuda(stub(None))
    assert not uses_cuda(stub("no-cuda"))
    spec = BackendSpec.parse("hf:/models/x,device=cuda:3,dtype=bf16")
    assert dict(actor_spec(spec, gpu=True).options) == {"device": "cuda", "dtype": "bf16"}
    assert actor_spec(spec, gpu=False) == spec
    assert actor_spec(BackendSpec.parse("espeak:speed=120"), gpu=True) == BackendSpec.parse("espeak:speed=120")


def test_executor_choice_is_checked_and_reaches_run_options(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert RunOptions().executor == LOCAL
    with pytest.raises(RunError, match="unknown executor 'dask'"):
        ExecutorChoice("dask")
    assert main(["eval", "nowhere.toml", "-o", "x", "--ray-address", "h:1"]) == 2
    assert "--ray-address is only for the Ray executor" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray gives
    assert main(["run", "nowhere", "-o", "x", "--executor", "ray"]) == 2
    err = capsys.readouterr().err
    assert "the Ray executor needs Ray, which is not installed" in err and "Traceback" not in err

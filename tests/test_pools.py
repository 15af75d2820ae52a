"""Worker pools (compiler/pools.py): workers come from a forkserver, not from a fork of a parent
that may hold other threads' locks, and an op registered outside benchc runs in them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import torch

from benchc.compiler.pools import process_pool
from conftest import ROOT, SPECS, cli
from specfiles import FROM_TABLE, write_rows_spec


def _parent_pid(_: int) -> int:
    return os.getppid()


def test_workers_are_forked_from_a_clean_server_not_from_this_process() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.ones(256, 256) @ torch.ones(256, 256)  # this process now has an OpenMP thread pool
        with process_pool(2, ["benchc.compiler.expand"]) as pool:
            parents = set(pool.map(_parent_pid, range(4)))
    finally:
        torch.set_num_threads(before)
    assert os.getpid() not in parents and len(parents) == 1


def test_an_op_registered_by_a_plugin_module_runs_in_workers(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "texts": [f"sentence number {i}"]} for i in range(6)]
    spec = write_rows_spec(tmp_path, "plugin-op", rows, FROM_TABLE + """
[[node]]
id = "loud"
op = "mylab.shout"
input = "source"
""")
    # In a process of its own, as a user's would be: the plugin's op stays out of this one's registry.
    script = ("import sys; import mylab_benchc.ops; "
              "from benchc.compiler.compile import CompileOptions, compile_spec; "
              f"r = compile_spec({str(spec)!r}, {str(tmp_path / 'm')!r}, "
              f"CompileOptions(cache_dir={str(tmp_path / 'c')!r}, workers=2)); print(r.ops_run)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).parent / "fixtures" / "benchc-mylab")
    assert done.returncode == 0, done.stderr[-2000:]
    items = pl.read_parquet(tmp_path / "m" / "items.parquet").sort("item_id")
    assert done.stdout.split() == ["12"] and items["prompt"].to_list() == [f"SENTENCE NUMBER {i}" for i in range(6)]


@pytest.mark.slow
def test_ctrl_c_during_a_compile_on_two_workers_stops_cleanly_and_a_rerun_completes(tmp_path: Path) -> None:
    """SIGINT to the process group (a terminal's Ctrl-C) while the workers corrupt images: the
    chunks not yet handed out are dropped, so the compile exits 130 with one line, no traceback
    (workers take at most MAX_CHUNK tasks at a time); the same command then compiles it all."""
    args = ["compile", SPECS / "mmcbench" / "image2text.toml", "--set", "sample.n=12", "--set", "source.images=12",
            "-j", "2", "-o", tmp_path / "m", "--cache", tmp_path / "c", "--no-version-check"]
    proc = subprocess.Popen([sys.executable, "-m", "benchc.cli", *map(str, args)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    objects = tmp_path / "c" / "objects"
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and (
            not objects.exists() or sum(1 for _ in objects.rglob("*")) < 60):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    done = cli(*args, check=True)
    assert "720 items" in done.stdout

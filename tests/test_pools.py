"""Worker pools (compiler/pools.py): workers come from a forkserver, not from a fork of a parent
that may hold other threads' locks, and an op registered outside benchc runs in them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import torch

from benchc.compiler.pools import process_pool


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
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "spec.toml"
    spec.write_text("""\
[benchmark]
name = "test/plugin-op"
version = "1.0.0"

[source]
loader = "table"
path = "rows.jsonl"
id = "id"

[[node]]
id = "source"
op = "text.rephrase_from_table"
input = "record"
params.field = "texts"

[[node]]
id = "loud"
op = "test.upper"
input = "source"

[prompt]
template = "{{ text }}"
""")
    # In a process of its own, as a user's would be: the plugin's op stays out of this one's registry.
    script = ("import sys; import support.plugin_op; "
              "from benchc.compiler.compile import CompileOptions, compile_spec; "
              f"r = compile_spec({str(spec)!r}, {str(tmp_path / 'm')!r}, "
              f"CompileOptions(cache_dir={str(tmp_path / 'c')!r}, workers=2)); print(r.ops_run)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-2000:]
    items = pl.read_parquet(tmp_path / "m" / "items.parquet").sort("item_id")
    assert done.stdout.split() == ["12"] and items["prompt"].to_list() == [f"SENTENCE NUMBER {i}" for i in range(6)]

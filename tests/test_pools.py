"""Worker pools (compiler/pools.py): workers come from a forkserver, not from a fork of a parent
that may hold other threads' locks, and an op registered outside benchc runs in them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import torch

import support.plugin_op  # noqa: F401  (registers test.upper in this process)
from benchc.compiler.compile import CompileOptions, compile_spec
from benchc.compiler.pools import process_pool


def _parent_pid(_: int) -> int:
    return os.getppid()


def test_workers_are_forked_from_a_clean_server_not_from_this_process() -> None:
    torch.set_num_threads(2)
    torch.ones(256, 256) @ torch.ones(256, 256)  # this process now has an OpenMP thread pool
    with process_pool(2, ["benchc.compiler.expand"]) as pool:
        parents = set(pool.map(_parent_pid, range(4)))
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
    result = compile_spec(spec, tmp_path / "m", CompileOptions(cache_dir=tmp_path / "c", workers=2))
    items = pl.read_parquet(tmp_path / "m" / "items.parquet").sort("item_id")
    assert result.ops_run == 12 and items["prompt"].to_list() == [f"SENTENCE NUMBER {i}" for i in range(6)]

"""A compile tells its progress (node, tasks done, tasks) as op tasks finish, and -v logs each
node; neither changes what is compiled."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from benchc.compiler.compile import CompileOptions, compile_spec
from specfiles import write_mini


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_is_told_per_node_and_the_manifest_is_the_same(tmp_path: Path, workers: int,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    spec = write_mini(tmp_path)
    told: list[tuple[str, int, int]] = []
    with caplog.at_level(logging.INFO, logger="benchc"):
        watched = compile_spec(spec, tmp_path / "a", CompileOptions(cache_dir=tmp_path / "c1", workers=workers,
                                                                    progress=lambda *t: told.append(t)))
    plain = compile_spec(spec, tmp_path / "b", CompileOptions(cache_dir=tmp_path / "c2", workers=workers))
    assert watched.lock["manifest_digest"] == plain.lock["manifest_digest"]
    assert told, "no progress was told"
    by_node: dict[str, list[tuple[int, int]]] = {}
    for node, done, total in told:
        by_node.setdefault(node, []).append((done, total))
    for counts in by_node.values():
        dones = [d for d, _ in counts]
        assert dones == sorted(dones) and counts[-1][0] == counts[-1][1]  # rising, and ends complete
    assert any("computed" in r.getMessage() and r.name == "benchc.compiler.expand" for r in caplog.records)

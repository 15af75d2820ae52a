"""Shared fixtures: paths, an offline environment, and a way to call the real CLI."""

from __future__ import annotations

import os
from collections.abc import Iterator
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Tests never time: hypothesis's per-example deadline (200 ms) would fail a property on a loaded
# 2-core machine for reasons that have nothing to do with the property.
settings.register_profile("benchc", deadline=None)
settings.load_profile("benchc")


def pytest_configure(config: pytest.Config) -> None:
    """`make test-transformers5` sets BENCHC_EXPECT_TRANSFORMERS=5: its tests must not pass on
    the pinned 4.x because a path went wrong."""
    expected = os.environ.get("BENCHC_EXPECT_TRANSFORMERS")
    if expected:
        import transformers

        if transformers.__version__.split(".")[0] != expected:
            raise pytest.UsageError(f"transformers {transformers.__version__} is imported, not {expected}.x")

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
TEXT2SPEECH = SPECS / "mmcbench" / "text2speech.toml"
CONTEXT_REASONING = SPECS / "mm_r3" / "context_reasoning.toml"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
        check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``benchc`` as a user would, in a fresh process."""
    full_env = {**os.environ, **(env or {})}
    done = subprocess.run([sys.executable, "-m", "benchc.cli", *map(str, args)], cwd=cwd or ROOT,
                          env=full_env, capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"benchc {' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for tests that only read bundled specs (saves recomputing media)."""
    return tmp_path_factory.mktemp("shared-cache")


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One intra-op torch thread for a module of tiny-model tests: their matrices gain nothing
    from a second one, which on a busy shared 2-core machine spin-waits for the other processes
    (a batch took 2.4 s with two threads, 0.07 s with one). Use with
    ``pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

"""Shared fixtures: paths, an offline environment, and a way to call the real CLI."""

from __future__ import annotations

import benchc  # noqa: F401  (first: pins the math paths before numpy, OpenCV and torch load)
import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from support.demo import Demo

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

# Fails the run when a test without the slow mark takes over a minute (issue 24).
pytest_plugins = ["support.budget"]

# The real-model tier runs only under `make test-real` (scripts/test_real.sh starts its servers).
collect_ignore = [] if os.environ.get("BENCHC_REAL") else ["real"]

@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Two things for `pytest -n 2 --dist loadgroup` (issue 24), neither changing what a test checks:

    - Tests that use a module-scoped fixture of theirs (a built model, a made run) go to one
      worker, as one xdist group per module, so the fixture is made once rather than once per
      worker (the GPU-throughput benchmark's run was made twice: 34 s). A test with an
      ``xdist_group`` mark of its own keeps it.
    - The ``slow`` tests start first: a long test started last leaves the other worker idle."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and _uses_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: order kept within
    if getattr(config.option, "loadgroup", False):
        _name_xdist_groups(items)


def _name_xdist_groups(items: list[pytest.Item]) -> None:
    """pytest-xdist 3.8 puts a test in its group by appending "@group" to ``item._nodeid``, which
    pytest 9 no longer reads (a node's id lives in ``item._id``): measured on 2026-12-04, two tests
    of the group "demo" ran on two workers and `make demo` was made twice (115 s each), and every
    module fixture once per worker. The same rename, where pytest 9 reads it."""
    from _pytest.nodeid import coerce_node_id

    for item in items:
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                 for m in item.iter_markers("xdist_group")}
        group = "_".join(sorted(names))
        if names and not item.nodeid.endswith("@" + group):
            item._id = coerce_node_id(f"{item.nodeid}@{group}")


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs and defs[-1].scope in ("module", "class")
                                    for defs in info.name2fixturedefs.values())


ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
TEXT2SPEECH = SPECS / "mmcbench" / "text2speech.toml"
CONTEXT_REASONING = SPECS / "mm_r3" / "context_reasoning.toml"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
        check: bool = False) -> subprocess.CompletedProcess[str]:
    """``benchc ARGS`` as the console script runs it (``benchc.cli.main``), in this process, its
    output captured: the same code path, without paying a fresh interpreter and its imports
    (torch, polars, transformers: 2-4 s of CPU) per call. A bug's traceback goes to the captured
    stderr with exit status 1, as a process would show it, so ``"Traceback" not in stderr`` keeps
    its meaning. Calls that set ``env`` run in a fresh process (:func:`cli_process`), as do the
    tests where the process boundary is what is tested (exit status of the real process, signals,
    variables read at start-up)."""
    if env:
        return cli_process(*args, cwd=cwd, env=env, check=check)
    from benchc.cli import main

    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        os.chdir(cwd or ROOT)
        try:
            code: int = main([str(arg) for arg in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # a bug: what the interpreter would print before exiting with 1
            traceback.print_exc()
            code = 1
        finally:
            os.chdir(here)
    done = subprocess.CompletedProcess(["benchc", *map(str, args)], code, out.getvalue(), err.getvalue())
    if check and done.returncode != 0:
        raise AssertionError(f"benchc {' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}")
    return done


def cli_process(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
                check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``benchc`` as a user would, in a fresh process."""
    full_env = {**os.environ, **(env or {})}
    done = subprocess.run([sys.executable, "-m", "benchc.cli", *map(str, args)], cwd=cwd or ROOT,
                          env=full_env, capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"benchc {' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}")
    return done


def other_hash_seed() -> str:
    """A PYTHONHASHSEED under which a child process hashes strings otherwise than this one: 0 (no
    randomisation) unless this process runs under 0. Without the variable this process has a
    random secret, so a test can compare this process with one child instead of two children."""
    return "12345" if os.environ.get("PYTHONHASHSEED") == "0" else "0"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for tests that only read bundled specs (saves recomputing media), one
    per run: under xdist every worker opens the same folder (the parent of the workers' temporary
    folders), as processes may (SQLite in WAL mode, atomic files, a memo published once), so a
    bundled spec that two workers' tests compile is computed once (issue 24)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return tmp_path_factory.mktemp("shared-cache")
    folder = tmp_path_factory.getbasetemp().parent / "shared-cache"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """`make demo`, run once in a scratch folder (tests/support/demo.py); mark a test that uses it
    ``pytest.mark.xdist_group("demo")`` so that its users share one xdist worker, and one run."""
    from support.demo import run_demo

    return run_demo(tmp_path_factory.mktemp("demo"))


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

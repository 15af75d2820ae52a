"""Large and killed compiles (issue 13, part 6): a compile estimates its items and output size before
it expands anything, says the estimate when it is large and refuses one above the limit (raised with
BENCHC_MAX_ITEMS / BENCHC_MAX_OUTPUT_GB); a SIGKILLed compile leaves no worker process, and the
staging folders of killed compiles are removed by the next one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchc import cli as cli_module
from benchc.compiler.atomic import HOST, make_staging_dir, remove_stale_staging
from benchc.compiler.compile import CompileOptions, compile_spec, estimate_scale
from benchc.compiler.errors import BenchcError, SpecError
from benchc.compiler.resolve import resolve
from benchc.compiler.spec.parse import load_spec
from conftest import ROOT, SPECS, cli

PARAPHRASE = SPECS / "examples" / "paraphrase.toml"

CHAIN = """
[[node]]
id = "again"
op = "text.original"
input = "lowercased"
repeat = {first}

[[node]]
id = "more"
op = "text.original"
input = "again"
repeat = {second}
"""


def _spec(folder: Path, first: int = 0, second: int = 1) -> Path:
    """The paraphrase example (6 records, 24 items); with ``first``, its lowercased node feeds a
    chain of two nodes of ``first`` and ``second`` repeats (6 x (3 + first x second) items)."""
    shutil.copytree(SPECS / "examples" / "data", folder / "data")
    text = PARAPHRASE.read_text()
    if first:
        text = text.replace("\n[prompt]", CHAIN.format(first=first, second=second) + "\n[prompt]", 1)
    spec = folder / "paraphrase.toml"
    spec.write_text(text)
    return spec


def test_the_estimate_counts_sinks_grids_and_repeats(tmp_path: Path) -> None:
    resolved = resolve(load_spec(_spec(tmp_path)))
    # sinks: original (1), paraphrased (grid of 2), lowercased (1); `question` feeds them
    assert estimate_scale(resolved, 6).items == 24
    assert estimate_scale(resolved, 6).output_bytes == 6 * (1 + 1 + 2 + 1) * 1_000
    done = cli("compile", tmp_path / "paraphrase.toml", "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    assert "24 items" in done.stdout and "estimate" not in done.stderr
    chained = resolve(load_spec(_spec(tmp_path / "b", first=1000, second=1000)))
    assert estimate_scale(chained, 6).items == 6 * (1 + 2 + 1000 * 1000)


LOCKED = sorted((ROOT / "generated").rglob("*.lock.json"))


@pytest.mark.parametrize("lock", LOCKED, ids=[f"{p.parent.name}/{p.name.split('.')[0]}" for p in LOCKED])
def test_the_estimate_of_every_bundled_spec_is_its_item_count(lock: Path) -> None:
    """Exact, but for the variants validators drop (the estimate is an upper bound)."""
    locked = json.loads(lock.read_text())
    spec = SPECS / lock.parent.name / lock.name.replace(".lock.json", ".toml")
    records = locked["select"]["kept"] if "select" in locked else locked["source"]["selected"]
    estimate = estimate_scale(resolve(load_spec(spec)), records)
    dropped = sum(n for reasons in locked["dropped"].values() for n in reasons.values())
    assert estimate.items == locked["item_count"] + dropped


def test_a_compile_above_the_item_limit_is_refused_before_any_work(tmp_path: Path) -> None:
    spec = _spec(tmp_path, first=1000, second=1000)
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error: {spec}: this compile would make 6,000,018 items from 6 records"), done.stderr
    assert "the limit is 1,000,000 items (set BENCHC_MAX_ITEMS=N to raise it)" in done.stderr
    assert "rerun with BENCHC_MAX_ITEMS=6000018" in done.stderr
    assert not (tmp_path / "m").exists()
    assert not (tmp_path / "c" / "nodes.sqlite").exists()  # no op ran
    assert not list((tmp_path / "c").glob("objects/*"))


def test_the_limits_come_from_the_environment(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    args = ("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    done = cli(*args, env={"BENCHC_MAX_ITEMS": "23"})
    assert done.returncode == 2 and "24 items from 6 records" in done.stderr and "limit is 23 items" in done.stderr
    done = cli(*args, env={"BENCHC_MAX_OUTPUT_GB": "0.00001"})
    assert done.returncode == 2 and "the limit is 10.0 KB of op outputs (set BENCHC_MAX_OUTPUT_GB=G" in done.stderr
    done = cli(*args, env={"BENCHC_MAX_ITEMS": "lots"})
    assert done.returncode == 2 and "BENCHC_MAX_ITEMS='lots' is not a positive whole number" in done.stderr
    assert "Traceback" not in done.stderr
    done = cli(*args, env={"BENCHC_MAX_ITEMS": "24", "BENCHC_MAX_OUTPUT_GB": "1"}, check=True)
    assert "24 items" in done.stdout


def test_the_api_takes_the_limits_as_options(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    with pytest.raises(SpecError, match="limit is 10 items"):
        compile_spec(spec, tmp_path / "m", CompileOptions(cache_dir=tmp_path / "c", max_items=10))
    said: list[str] = []
    compile_spec(spec, tmp_path / "m", CompileOptions(cache_dir=tmp_path / "c", max_items=24, notify=said.append))
    assert said == []  # small: nothing to say


def test_a_large_compile_says_its_estimate_before_work_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    def expand(*_: object, **__: object) -> None:
        print("expanding", file=sys.stderr)
        raise BenchcError("stopped before the ops")

    monkeypatch.setattr("benchc.compiler.compile.expand", expand)
    spec = _spec(tmp_path, first=100, second=20)
    status = cli_module.main(["compile", str(spec), "-o", str(tmp_path / "m"), "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines() == ["estimate: 12,018 items from 6 records (2,003 per record), ~12.6 MB of op outputs",
                                "expanding", "error: stopped before the ops"]


# killed compiles -------------------------------------------------------------------------------

POOL_SCRIPT = """
import time
from benchc.compiler.pools import process_pool
pool = process_pool(2, ["benchc.compiler.pools"])
pool.submit(time.sleep, 0.5).result()  # one worker has run a task and is idle
for _ in range(3):
    pool.submit(time.sleep, 600)  # both workers busy, one task waiting
print("ready", flush=True)
time.sleep(600)
"""


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigkill_of_the_parent_leaves_no_worker_alive() -> None:
    """The workers (busy or idle), then the forkserver and the resource tracker, all exit when
    the process that made the pool is SIGKILLed; before, all of them stayed forever."""
    proc = subprocess.Popen([sys.executable, "-c", POOL_SCRIPT], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 60
        while len(_session(proc.pid)) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_session(proc.pid)) == 5  # the parent, the resource tracker, the forkserver, 2 workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while _session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _session(proc.pid) == []
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_staging_folders_of_dead_processes_are_removed_by_the_next_compile(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    dead = _dead_pid()
    left = [tmp_path / f".m.staging-{HOST}-{dead}-abc_12", tmp_path / f".other.staging-{HOST}-{dead}-x9",
            tmp_path / "c" / "compiled" / f".0123abcd.staging-{HOST}-{dead}-k2"]
    kept = [tmp_path / f".m.staging-{HOST}-{os.getpid()}-live1",  # a live process's
            tmp_path / f".m.staging-otherhost-{dead}-far1",      # another machine's (a shared disk)
            tmp_path / ".m.plain"]                                # not a staging folder
    for folder in left + kept:
        (folder / "half").mkdir(parents=True)
    cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    assert [p for p in left if p.exists()] == []
    assert [p for p in kept if not p.exists()] == []
    assert not [p for p in tmp_path.glob(".m.staging-*") if p not in kept]


def test_a_staging_folder_is_named_by_host_and_process(tmp_path: Path) -> None:
    staging = make_staging_dir(tmp_path / "target")
    assert staging.name.startswith(f".target.staging-{HOST}-{os.getpid()}-") and staging.is_dir()
    assert remove_stale_staging(tmp_path) == [] and staging.is_dir()  # this process is alive

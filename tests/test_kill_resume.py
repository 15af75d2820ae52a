"""Kill and resume: ten ``benchc run`` processes, each SIGKILLed at a seeded random moment and then
rerun to completion, end with exactly the responses and scores of an uninterrupted run, and no
request is answered twice.

Terms. A request is *answered* when the backend returns its answer (the ``recording`` test
backend logs it right then, see ``support/recording_backend.py``) and *committed* when its
batch's transaction lands in the response store. A kill can fall between the two; those answers
are lost and must be asked again, and nothing else may be. Precisely, per trial (a killed run
on an empty store, then a resume):

* the store never holds two rows for one key (``COUNT(*) == COUNT(DISTINCT key)``), after the
  kill and at the end;
* a batch is committed whole or not at all;
* neither run answers a key twice, every key committed at the kill was answered by the killed
  run, and the resume answers exactly the keys missing from the store at the kill;
* hence a key is answered twice across the trial only when its first answer was lost: the
  re-answered keys are exactly those of batches in flight at the kill (answered wholly or partly,
  not committed), and there are at most as many of those as the executor keeps in flight: one
  when it runs serially (``-j 1``), ``2 x workers`` in the process pool (``-j 2``).

Trials alternate ``-j 1`` and ``-j 2``. The kill moment is "after the k-th answer, plus a few
milliseconds", with k and the delay drawn from a seeded RNG, so every kill lands mid-run.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from benchc import api
from conftest import ROOT
from specfiles import write_mini

pytestmark = pytest.mark.slow  # 21 CLI processes

SEED, TRIALS = 20261201, 10
TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Answered:
    """One line of the recording backend's log."""

    batch: str
    size: int
    key: str


@dataclass(frozen=True)
class Setup:
    root: Path
    manifest: Path
    cache: Path

    def command(self, store: Path, out: Path, workers: int) -> list[str]:
        return [sys.executable, "-m", "support.recording_cli", "run", str(self.manifest), "-o", str(out),
                "--model", "recording", "--backend", "transcript=recording", "--cache", str(self.cache),
                "--store", str(store), "-j", str(workers)]


def _env(log: Path) -> dict[str, str]:
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, "BENCHC_RECORD_LOG": str(log)}


def _answered(log: Path) -> list[Answered]:
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    return [Answered(b, int(n), k) for b, n, k in (line.split() for line in lines)]


def _stored_keys(store: Path) -> list[str]:
    """Every key row in the store (a list: a duplicate row would show)."""
    db = store / "responses.sqlite"
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as con:
        return [k for (k,) in con.execute("SELECT key FROM responses")]


def _complete_run(setup: Setup, store: Path, out: Path, log: Path, workers: int) -> None:
    done = subprocess.run(setup.command(store, out, workers), cwd=ROOT, env=_env(log), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def _killed_run(setup: Setup, store: Path, out: Path, log: Path, workers: int, after: int, delay: float) -> None:
    """Start a run, SIGKILL its whole process group once ``after`` answers are logged + ``delay`` s."""
    proc = subprocess.Popen(setup.command(store, out, workers), cwd=ROOT, env=_env(log), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_answered(log)) < after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(delay)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it finished first: a valid trial, with nothing lost
    proc.wait(timeout=30)
    proc.stderr.close()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    root = tmp_path_factory.mktemp("kill")
    manifest = api.compile(write_mini(root, n=4), root / "m", cache_dir=root / "c", store_dir=root / "s",
                           progress=False).manifest_dir
    return Setup(root, manifest, root / "c")


def _check_trial(killed: list[Answered], committed: list[str], resumed: list[Answered], every: set[str],
                 in_flight: int) -> None:
    """The module docstring's rules, for one trial."""
    assert len(committed) == len(set(committed)), "two store rows for one key"
    first = [a.key for a in killed]
    assert len(first) == len(set(first)), "the killed run answered a key twice"
    assert set(committed) <= set(first), "a key was committed without being answered"
    batches: dict[str, list[Answered]] = defaultdict(list)
    for a in killed:
        batches[a.batch].append(a)
    lost = []
    for members in batches.values():
        keys = {a.key for a in members}
        stored = keys & set(committed)
        assert stored in (set(), keys), "a batch was committed in part"
        if stored:
            assert len(keys) == members[0].size, "a batch was committed before it was wholly answered"
        else:
            lost.append(keys)
    assert len(lost) <= in_flight, f"{len(lost)} answered batches uncommitted, at most {in_flight} in flight"
    second = [a.key for a in resumed]
    assert len(second) == len(set(second)), "the resume answered a key twice"
    assert set(second) == every - set(committed), "the resume asked for other keys than the missing ones"
    twice = set(first) & set(second)
    assert twice == set().union(*lost), "a key was answered twice without its batch being lost at the kill"


def test_sigkill_at_random_moments_then_resume(setup: Setup) -> None:
    ref_log, ref_store, ref_out = setup.root / "ref.log", setup.root / "ref-store", setup.root / "ref-run"
    _complete_run(setup, ref_store, ref_out, ref_log, workers=1)
    every = set(_stored_keys(ref_store))
    assert sorted(a.key for a in _answered(ref_log)) == sorted(every)  # each answered exactly once
    reference = pl.read_parquet(ref_out / "responses.parquet")
    reference_scores = api.score(ref_out)["metrics"]

    rng = random.Random(SEED)
    lost_any = 0
    for trial in range(TRIALS):
        workers, after, delay = 1 + trial % 2, rng.randrange(len(every)), rng.uniform(0.0, 0.03)
        base = setup.root / f"trial{trial}"
        base.mkdir()
        store, out = base / "store", base / "run"
        _killed_run(setup, store, out, base / "killed.log", workers, after, delay)
        committed = _stored_keys(store)
        _complete_run(setup, store, out, base / "resumed.log", workers)
        killed, resumed = _answered(base / "killed.log"), _answered(base / "resumed.log")
        _check_trial(killed, committed, resumed, every, in_flight=1 if workers == 1 else 2 * workers)
        lost_any += len({a.key for a in killed} - set(committed)) > 0
        final = _stored_keys(store)
        assert len(final) == len(set(final)) and set(final) == every
        assert pl.read_parquet(out / "responses.parquet").equals(reference), f"trial {trial}: other responses"
        assert api.score(out)["metrics"] == reference_scores, f"trial {trial}: other scores"
    assert lost_any, "no kill fell between answering and committing: the trials tested too little"

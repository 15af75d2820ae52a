"""Measured, not asserted: where `make demo`'s time goes, phase by phase, on this machine.

Runs the demo's compile, run, score and report (the phases of `benchc eval`) in this process with
a fresh compile cache and response store (a cold run: nothing from an earlier run is reused),
and prints each phase's wall time and CPU seconds, the latter summed over this process and every
worker it starts (pool workers are grandchildren, forked by the forkserver, so neither
getrusage nor /usr/bin/time sees them: they are sampled from /proc while they live; Linux only).

The baseline, measured in the same run: the ASR judge's CPU per clip with the demo's judge before
whisper (pocketsphinx at ``beam=1e-30``) against the demo's (``--judge``), on the first ``--clips``
recordings of the run, and how many of those transcripts differ.

Usage: .venv/bin/python benchmarks/demo_profile.py [--judge whisper] [--clips 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "mmcbench" / "text2speech.toml"
OVERRIDES = ["sample.n=1", "sample.stratify=table"]  # the Makefile's demo line
DEMO_JUDGE = "whisper"
BASELINE = "pocketsphinx:beam=1e-30"  # the demo's judge before whisper


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int | str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process from /proc/PID/stat, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name, in parentheses, may hold spaces
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK  # ppid; utime + stime


class TreeCpu:
    """CPU seconds (user + system) of this process and of every descendant seen alive: a thread
    samples the descendants every ``interval`` seconds and keeps each one's last reading."""

    def __init__(self, interval: float = 0.2) -> None:
        self.me = os.getpid()
        self.seen: dict[int, float] = {}
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> TreeCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        stats = {int(p.name): found for p in Path("/proc").iterdir() if p.name.isdigit()
                 if (found := _stat(p.name)) is not None}
        mine = {self.me}
        grew = True
        while grew:  # descendants: children of the tree found so far, until no more join
            more = {pid for pid, (parent, _) in stats.items() if parent in mine} - mine
            mine |= more
            grew = bool(more)
        for pid in mine - {self.me}:
            self.seen[pid] = stats[pid][1]

    def total(self) -> float:
        self.sample()
        own = _stat(self.me)
        return (own[1] if own else 0.0) + sum(self.seen.values())


@contextmanager
def phase(name: str, cpu: TreeCpu, rows: list[tuple[str, float, float]]) -> Iterator[None]:
    wall, used = time.perf_counter(), cpu.total()
    yield
    rows.append((name, time.perf_counter() - wall, cpu.total() - used))


def run_demo(work: Path, judge: str, cpu: TreeCpu) -> tuple[list[tuple[str, float, float]], Path, Path]:
    from benchc import api

    rows: list[tuple[str, float, float]] = []
    cache, store, out = work / "cache", work / "store", work / "out"
    with phase("compile", cpu, rows):
        manifest = api.compile(SPEC, out / "manifest", cache_dir=cache, store_dir=store, workers=2,
                               overrides=OVERRIDES, progress=False)
    with phase("run", cpu, rows):
        api.run(manifest.manifest_dir, out / "run", model="espeak", cache_dir=cache, store_dir=store, workers=2,
                progress=False, backends={"transcript": judge})
    with phase("score", cpu, rows):
        api.score(out / "run", cache_dir=cache, store_dir=store)
    with phase("report", cpu, rows):
        api.report(out / "run", cache_dir=cache, store_dir=store)
    return rows, out / "run", store


def judge_baseline(run_dir: Path, store: Path, judge: str, clips: int) -> None:
    """CPU per clip of the baseline judge and of ``judge`` on the run's first ``clips``
    recordings (one decoder each, built before the clock starts), and the transcripts they
    disagree on."""
    import polars as pl

    from benchc.compiler.spec.models import Generation
    from benchc.runtime.backends import make_backend
    from benchc.runtime.run.media import MediaSource

    responses = pl.read_parquet(run_dir / "responses.parquet").filter(pl.col("stage") == "speech").sort("item_id")
    media = MediaSource(store.parent / "cache", store)
    wavs = [media("audio", sha) for sha in responses["blob"].head(clips)]
    texts: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    for name in (BASELINE, judge):
        backend: Any = make_backend(name, Generation(), "speech-to-text")
        backend.transcribe(wavs[0])  # the decoder's load is not per clip
        started = time.process_time()
        texts[name] = [backend.transcribe(wav) for wav in wavs]
        seconds[name] = (time.process_time() - started) / len(wavs)
    changed = sum(a != b for a, b in zip(texts[BASELINE], texts[judge]))
    print(f"ASR judge, CPU per clip over {len(wavs)} clips of this run (baseline: {BASELINE})")
    print(f"  {BASELINE:24s} {seconds[BASELINE]:6.2f} s   1.00x")
    print(f"  {judge:24s} {seconds[judge]:6.2f} s   {seconds[judge] / seconds[BASELINE]:.2f}x of baseline   "
          f"transcripts changed: {changed}/{len(wavs)}")


def _print(rows: list[tuple[str, float, float]]) -> None:
    wall = sum(r[1] for r in rows)
    cpu = sum(r[2] for r in rows)
    print(f"demo phases ({os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    for name, seconds, used in rows:
        print(f"  {name:8s} {seconds:7.1f} s wall  {used:7.1f} s CPU  {seconds / wall:5.1%} of wall")
    print(f"  {'total':8s} {wall:7.1f} s wall  {cpu:7.1f} s CPU")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--judge", default=DEMO_JUDGE, help="the transcript stage's backend (the demo's)")
    parser.add_argument("--clips", type=int, default=8, help="clips for the judge's baseline (0: none)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="benchc-demo-") as scratch, TreeCpu() as cpu:
        started = time.perf_counter()
        rows, run_dir, store = run_demo(Path(scratch), args.judge, cpu)
        print(f"(in-process; a `make demo` adds the CLI's start, about 1-2 s; {time.perf_counter() - started:.1f} s)")
        _print(rows)
        if args.clips:
            judge_baseline(run_dir, store, args.judge, args.clips)


if __name__ == "__main__":
    main()

"""Progress of a long counted job (a compile's op tasks, a run's requests): rate, time left, and
plain lines for logs.

On a terminal the callers draw a rich bar (``benchc/api.py``, ``runtime/run/executor.py``); in a CI
log or under nohup a bar is drawn nowhere, and a 58,000-item compile used to print nothing for
half an hour. ``PlainProgress`` prints one line at most every ``every`` seconds instead (name,
done/total, items/s, ETA), so a log shows the job is alive and when it should end.

It only watches: nothing computed depends on it. Time comes from an injected clock, so tests
check the throttling without waiting. No rich here: compiler/ stays free of display libraries.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

Clock = Callable[[], float]

PLAIN_EVERY = 10.0
"""Seconds between two plain progress lines: often enough to see a job is alive, rarely
enough that a long job's log stays readable (a 30-minute compile: about 180 lines)."""


def format_rate(per_second: float) -> str:
    """A rate with about three significant digits: 1234, 35.2, 0.84."""
    if per_second >= 100:
        return f"{per_second:.0f}"
    if per_second >= 10:
        return f"{per_second:.1f}"
    return f"{per_second:.2f}"


def format_duration(seconds: float) -> str:
    """Whole seconds as 45s, 21m 40s or 2h 05m (an ETA needs no more precision)."""
    if not math.isfinite(seconds):
        return "?"
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


@dataclass
class Throughput:
    """Items per second since the first count seen, and the time left at that rate. Measured
    from the first count (not from 0), so a job that reports late or resumes part-done does
    not show an inflated rate."""

    clock: Clock = time.monotonic
    _start: tuple[float, int] | None = field(default=None, init=False)

    def rate(self, done: int) -> float | None:
        """Items per second so far; None until some time has passed and some items are done."""
        now = self.clock()
        if self._start is None:
            self._start = (now, done)
            return None
        started, first = self._start
        if now <= started or done <= first:
            return None
        return (done - first) / (now - started)

    def elapsed(self) -> float:
        return 0.0 if self._start is None else self.clock() - self._start[0]

    @staticmethod
    def eta(done: int, total: int, rate: float | None) -> float:
        """Seconds left at ``rate``; infinite while the rate is unknown."""
        if done >= total:
            return 0.0
        return (total - done) / rate if rate else math.inf


def progress_text(name: str, done: int, total: int, rate: float | None, unit: str = "items",
                  elapsed: float | None = None) -> str:
    """One plain progress line: ``corrupted: 12345/58000 items (21%), 35.2 items/s, ETA 24m 40s``
    (and the elapsed time once done)."""
    share = done / total if total else 1.0
    speed = f"{format_rate(rate)} {unit}/s" if rate is not None else f"? {unit}/s"
    text = f"{name}: {done}/{total} {unit} ({share:.0%}), {speed}"
    if done >= total:
        return text + (f", done in {format_duration(elapsed)}" if elapsed is not None else ", done")
    return text + f", ETA {format_duration(Throughput.eta(done, total, rate))}"


@dataclass
class PlainProgress:
    """A progress callback ``(name, done, total)`` that prints plain lines to ``stream``: the
    first once a job has run ``every`` seconds, then at most one line every ``every`` seconds
    (over all jobs), and a last line when a job that printed one finishes. A job shorter than
    ``every`` prints nothing: short compiles stay quiet."""

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    prefix: str = "compile"
    unit: str = "items"
    every: float = PLAIN_EVERY
    clock: Clock = time.monotonic
    _jobs: dict[str, Throughput] = field(default_factory=dict, init=False)
    _shown: set[str] = field(default_factory=set, init=False)
    _last_line: float = field(default=-math.inf, init=False)

    def __call__(self, name: str, done: int, total: int) -> None:
        job = self._jobs.get(name)
        if job is None:
            job = self._jobs[name] = Throughput(self.clock)
        rate = job.rate(done)
        now = self.clock()
        if done >= total:
            if name in self._shown:
                self._print(progress_text(name, done, total, rate, self.unit, job.elapsed()), now)
                self._shown.discard(name)
            return
        if job.elapsed() >= self.every and now - self._last_line >= self.every:
            self._shown.add(name)
            self._print(progress_text(name, done, total, rate, self.unit), now)

    def _print(self, text: str, now: float) -> None:
        self._last_line = now
        print(f"{self.prefix} {text}" if self.prefix else text, file=self.stream, flush=True)

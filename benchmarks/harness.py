"""Ranking ways of doing the same work on a noisy machine: interleaved repeats, medians, spreads.

One pass per method on a shared CPU cannot rank methods: another process that wakes up during
one method's pass and not the next one's moves the figures by more than the methods differ. So:

* every method runs ``warmup`` times first (untimed: first-call costs, caches, allocator);
* then ``repeats`` rounds, each running every method once, in turn (A B C A B C ...), so that a
  slow spell of the machine falls on all methods alike rather than on one;
* each method is summarised by the median of its times and their spread (the fastest and slowest
  repeat), and two methods by the ratio of their medians;
* a verdict is given only when it holds across the spread: "A is faster" only if A's slowest
  repeat beat B's fastest; a target ratio is "met" only if even the least favourable pairing of
  repeats reaches it, "not met" only if even the most favourable one misses it, and otherwise
  "undecided" (run again on a quieter machine, or with more repeats);
* the 1-minute load average is printed before and after, so that a reader sees how busy the
  machine was.

Used by the scripts beside it (gpu_throughput.py); tests check the arithmetic on given times
(tests/test_bench_harness.py), never by timing anything.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Timed = Callable[[int], "tuple[float, Any]"]
"""A method's run: given the repeat's number (-1 for a warm-up), it does the work once and returns
(seconds it measured, its result). The method times itself, so that it can leave set-up out."""


@dataclass(frozen=True)
class Method:
    name: str
    run: Timed
    work: int = 1
    """Units of work one run does (samples): rates are work / seconds."""


@dataclass
class Measured:
    """A method's repeats: seconds of each, in the order they ran, and the result of the last."""

    name: str
    work: int
    seconds: list[float] = field(default_factory=list)
    result: Any = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def fastest(self) -> float:
        return min(self.seconds)

    @property
    def slowest(self) -> float:
        return max(self.seconds)

    @property
    def rate(self) -> float:
        """Work per second at the median time."""
        return self.work / self.median

    @property
    def rate_range(self) -> tuple[float, float]:
        """(lowest, highest) rate over the repeats."""
        return self.work / self.slowest, self.work / self.fastest


def clock() -> float:
    return time.perf_counter()


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def interleaved(methods: Sequence[Method], repeats: int, warmup: int = 1,
                on_round: Callable[[int, list[Measured]], None] | None = None) -> list[Measured]:
    """Every method ``warmup`` times untimed, then ``repeats`` rounds of each method once, in
    turn; ``on_round`` is told after each round (to print as the figures come)."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    measured = [Measured(m.name, m.work) for m in methods]
    for _ in range(warmup):
        for method in methods:
            method.run(-1)
    for index in range(repeats):
        for method, out in zip(methods, measured):
            seconds, out.result = method.run(index)
            out.seconds.append(seconds)
        if on_round is not None:
            on_round(index, measured)
    return measured


def faster(a: Measured, b: Measured) -> str:
    """Which of two methods is faster, per unit of work, only if their spreads do not overlap."""
    a_slow, a_fast = a.rate_range
    b_slow, b_fast = b.rate_range
    if a_slow > b_fast:
        return f"{a.name} is faster ({a.rate / b.rate:.2f}x at the medians; spreads apart)"
    if b_slow > a_fast:
        return f"{b.name} is faster ({b.rate / a.rate:.2f}x at the medians; spreads apart)"
    return f"no ranking of {a.name} and {b.name}: their spreads overlap ({a.rate / b.rate:.2f}x at the medians)"


@dataclass(frozen=True)
class TargetCheck:
    """``ratio`` = a's rate / b's rate at the medians, with the least and most favourable pairing
    of repeats, against ``target``."""

    label: str
    ratio: float
    worst: float
    best: float
    target: float

    @property
    def outcome(self) -> str:
        if self.worst >= self.target:
            return "MET"
        if self.best < self.target:
            return "NOT met"
        return "undecided (spreads straddle the target)"

    def line(self) -> str:
        return (f"{self.label}: {self.ratio:.2f}x at the medians (spread {self.worst:.2f}x to {self.best:.2f}x), "
                f"target >= {self.target:.2f}x: {self.outcome}")


def check_ratio(label: str, a: Measured, b: Measured, target: float) -> TargetCheck:
    """Whether a's rate is at least ``target`` times b's, judged across both spreads."""
    a_slow, a_fast = a.rate_range
    b_slow, b_fast = b.rate_range
    return TargetCheck(label, a.rate / b.rate, a_slow / b_fast, a_fast / b_slow, target)


def table(measured: Sequence[Measured], baseline: Measured | None = None, unit: str = "samples/s") -> str:
    """One line per method: repeats, median seconds, median rate, the rate's spread and the
    ratio of medians to ``baseline``."""
    lines = [f"{'method':52s} {'runs':>4s} {'median s':>9s} {unit:>10s} {'spread':>17s} "
             + (f"{'x ' + baseline.name[:20]:>24s}" if baseline else "")]
    for m in measured:
        low, high = m.rate_range
        ratio = f"{m.rate / baseline.rate:23.2f}x" if baseline else ""
        lines.append(f"{m.name:52s} {len(m.seconds):4d} {m.median:9.3f} {m.rate:10.2f} "
                     f"{f'{low:.2f}-{high:.2f}':>17s} {ratio}")
    return "\n".join(lines)

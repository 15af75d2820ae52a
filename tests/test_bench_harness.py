"""benchmarks/harness.py: the order in which methods run, and the arithmetic of medians, spreads
and verdicts, on given times (nothing here is timed)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from conftest import ROOT


def _harness():
    spec = importlib.util.spec_from_file_location("bench_harness", ROOT / "benchmarks" / "harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_harness"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


H = _harness()


def _measured(name: str, seconds: list[float], work: int = 10):
    return H.Measured(name, work, list(seconds))


def test_methods_are_warmed_up_then_interleaved_round_by_round() -> None:
    calls: list[tuple[str, int]] = []

    def method(name: str, seconds: float):
        def run(index: int) -> tuple[float, str]:
            calls.append((name, index))
            return seconds + index, f"{name}{index}"
        return H.Method(name, run, work=4)

    rounds: list[int] = []
    out = H.interleaved([method("a", 1.0), method("b", 2.0)], repeats=3, warmup=1,
                        on_round=lambda i, _: rounds.append(i))
    assert calls == [("a", -1), ("b", -1), ("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert rounds == [0, 1, 2]
    assert out[0].seconds == [1.0, 2.0, 3.0] and out[1].seconds == [2.0, 3.0, 4.0]
    assert out[0].result == "a2" and out[0].median == 2.0 and out[0].rate == 2.0
    assert out[1].rate_range == (1.0, 2.0)


def test_repeats_must_be_positive() -> None:
    with pytest.raises(ValueError):
        H.interleaved([], repeats=0)


def test_a_ranking_is_given_only_when_the_spreads_are_apart() -> None:
    quick = _measured("quick", [1.0, 1.1, 1.2])
    slow = _measured("slow", [2.0, 2.5, 3.0])
    assert H.faster(quick, slow).startswith("quick is faster (2.27x")
    assert H.faster(slow, quick).startswith("quick is faster")
    overlapping = _measured("overlapping", [1.15, 1.6, 2.1])
    assert H.faster(quick, overlapping).startswith("no ranking of quick and overlapping: their spreads overlap")


def test_a_target_ratio_is_met_missed_or_undecided_across_the_spreads() -> None:
    base = _measured("base", [2.0, 2.0, 2.2])             # rates 4.55 .. 5.0
    met = H.check_ratio("x", _measured("a", [1.0, 1.05, 1.1]), base, 1.5)   # worst 9.09 / 5.0 = 1.82
    assert met.outcome == "MET" and met.ratio == pytest.approx(2.0 / 1.05)
    missed = H.check_ratio("x", _measured("a", [1.9, 2.0, 2.1]), base, 1.5)  # best 5.26 / 4.55 = 1.16
    assert missed.outcome == "NOT met"
    straddling = H.check_ratio("x", _measured("a", [1.2, 1.3, 1.6]), base, 1.5)  # 1.14 .. 1.83
    assert straddling.outcome.startswith("undecided")
    assert "target >= 1.50x: undecided" in straddling.line()


def test_the_table_gives_median_rate_spread_and_ratio_to_the_baseline() -> None:
    base = _measured("base", [2.0, 2.5, 3.0])
    other = _measured("other", [1.0, 1.25, 1.5])
    lines = H.table([base, other], baseline=base).splitlines()
    assert len(lines) == 3
    assert lines[2].split()[1:5] == ["3", "1.250", "8.00", "6.67-10.00"] and lines[2].endswith("2.00x")

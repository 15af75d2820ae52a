"""The suite's own budget (tests/support/budget.py): a test without the slow mark that takes
longer than the budget fails the run, by name; a slow-marked one does not."""

from __future__ import annotations

import pytest

from conftest import ROOT

pytest_plugins = ["pytester"]

INNER = """
import time

import pytest


def test_quick():
    pass


def test_unmarked_and_long():
    time.sleep(1.0)


@pytest.mark.slow
def test_marked_and_long():
    time.sleep(1.0)
"""


def _inner_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, budget_s: str,
               *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=INNER)
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\n")
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "tests"))
    monkeypatch.setenv("BENCHC_TEST_BUDGET_S", budget_s)
    return pytester.runpytest_subprocess("-p", "support.budget", "-p", "no:cacheprovider", *args)


def test_an_unmarked_test_over_the_budget_fails_the_run_by_name(pytester: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    result = _inner_run(pytester, monkeypatch, "0.5")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = result.stdout.str()
    assert "over 0.5 s without the slow mark" in summary
    assert "test_inner.py::test_unmarked_and_long: make it cheaper, or mark it slow" in summary
    assert "test_marked_and_long:" not in summary and "test_quick:" not in summary


def test_within_the_budget_the_run_passes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _inner_run(pytester, monkeypatch, "30")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK and "without the slow mark" not in result.stdout.str()


def test_the_budget_holds_under_xdist(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _inner_run(pytester, monkeypatch, "0.5", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "test_inner.py::test_unmarked_and_long: make it cheaper" in result.stdout.str()

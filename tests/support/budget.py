"""A pytest plugin: the run fails when one test without the ``slow`` mark takes longer than
``BENCHC_TEST_BUDGET_S`` seconds (60 unless set) for its setup, call and teardown together,
naming each such test. Why (issue 24): the whole suite must stay within CI's time, and
`make test-fast` (``-m "not slow"``) fast; a test that grows slow must say so by its mark, or be
made cheaper, rather than hide among the fast ones. This is a budget on the suite, not a timing
test of benchc: no test asserts how fast benchc is.

Under xdist the controller receives every worker's reports and decides; a worker's verdict is
not used."""

from __future__ import annotations

import os

import pytest

DEFAULT_BUDGET_S = 60.0


class Budget:
    def __init__(self, limit_s: float, is_worker: bool) -> None:
        self.limit_s, self.is_worker = limit_s, is_worker
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "slow" not in report.keywords:
            self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def over(self) -> dict[str, float]:
        return {test: spent for test, spent in self.seconds.items() if spent > self.limit_s}

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.over() and exitstatus == pytest.ExitCode.OK and not self.is_worker:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        over = self.over()
        if over and not self.is_worker:
            terminalreporter.section(f"over {self.limit_s:g} s without the slow mark", red=True)
            for test, spent in sorted(over.items(), key=lambda pair: -pair[1]):
                terminalreporter.write_line(f"{spent:7.2f} s  {test}: make it cheaper, or mark it slow")


def pytest_configure(config: pytest.Config) -> None:
    limit_s = float(os.environ.get("BENCHC_TEST_BUDGET_S", DEFAULT_BUDGET_S))
    config.pluginmanager.register(Budget(limit_s, hasattr(config, "workerinput")), "benchc-test-budget")

"""Plain progress lines for logs (compiler/progress.py): format, rate and ETA, and throttling,
driven by an injected clock (no test waits or times real work)."""

from __future__ import annotations

import functools
import io
import math
from pathlib import Path
from typing import Any

import pytest

from benchc.compiler.progress import PlainProgress, Throughput, format_duration, format_rate, progress_text


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("seconds,text", [(0, "0s"), (44.6, "45s"), (60, "1m 00s"), (1300, "21m 40s"),
                                          (7500, "2h 05m"), (math.inf, "?")])
def test_durations_read_as_an_eta(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("rate,text", [(1234.4, "1234"), (35.25, "35.2"), (0.844, "0.84")])
def test_rates_keep_about_three_digits(rate: float, text: str) -> None:
    assert format_rate(rate) == text


def test_a_line_names_the_job_the_counts_the_rate_and_the_eta() -> None:
    assert progress_text("corrupted", 12_345, 58_000, 35.2) == \
        "corrupted: 12345/58000 items (21%), 35.2 items/s, ETA 21m 37s"
    assert progress_text("corrupted", 0, 10, None) == "corrupted: 0/10 items (0%), ? items/s, ETA ?"
    assert progress_text("gpt", 10, 10, 2.0, unit="requests", elapsed=5) == \
        "gpt: 10/10 requests (100%), 2.00 requests/s, done in 5s"


def test_the_rate_counts_from_the_first_report_not_from_zero() -> None:
    clock = Clock()
    job = Throughput(clock)
    assert job.rate(500) is None  # a resumed job: 500 were done before it was watched
    clock.now += 10
    assert job.rate(600) == pytest.approx(10.0)
    assert Throughput.eta(600, 1000, 10.0) == pytest.approx(40.0)


def test_lines_come_at_most_every_interval_and_a_short_job_prints_nothing() -> None:
    clock, out = Clock(), io.StringIO()
    tell = PlainProgress(out, prefix="compile", every=10.0, clock=clock)
    tell("quick", 0, 50)
    clock.now += 9
    tell("quick", 50, 50)  # done within 10 s: silent
    assert out.getvalue() == ""

    tell("slow", 0, 1000)
    for second in range(1, 61):  # a report every second for a minute, 10 items a second
        clock.now += 1
        tell("slow", 10 * second, 1000)
    lines = out.getvalue().splitlines()
    assert len(lines) == 6  # at 10, 20, ... 60 s
    assert lines[0] == "compile slow: 100/1000 items (10%), 10.0 items/s, ETA 1m 30s"
    clock.now += 0.5
    tell("slow", 1000, 1000)  # finishing a job that printed: one last line, whatever the interval
    assert out.getvalue().splitlines()[-1] == "compile slow: 1000/1000 items (100%), 16.5 items/s, done in 1m 00s"


def test_the_interval_holds_across_jobs() -> None:
    clock, out = Clock(), io.StringIO()
    tell = PlainProgress(out, prefix="", every=10.0, clock=clock)
    tell("a", 0, 100)
    tell("b", 0, 100)
    clock.now += 10
    tell("a", 10, 100)
    tell("b", 10, 100)  # due too, but a line was just printed
    assert out.getvalue().splitlines() == ["a: 10/100 items (10%), 1.00 items/s, ETA 1m 30s"]
    clock.now += 10
    tell("b", 20, 100)
    assert out.getvalue().splitlines()[-1] == "b: 20/100 items (20%), 1.00 items/s, ETA 1m 20s"


def test_a_compile_logs_plain_lines_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from benchc.api import _compile_bar

    with _compile_bar(True) as tell:  # stderr is captured here: not a terminal
        assert isinstance(tell, PlainProgress) and tell.prefix == "compile"
    with _compile_bar(False) as tell:
        assert tell is None


def test_a_run_logs_plain_lines_when_stderr_is_not_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from benchc.compiler.spec.models import Generation
    from benchc.runtime.run import executor
    from benchc.runtime.backends import Backend, BackendSpec, Request, Response
    from benchc.runtime.run.media import MediaSource
    from benchc.runtime.run.store import ResponseStore

    class Echo(Backend):
        name = "test-echo"
        tasks = frozenset({"generate"})
        batch_size = 2

        def __init__(self) -> None:
            super().__init__(BackendSpec("test-echo"), Generation())

        def fingerprint(self) -> dict[str, Any]:
            return {"backend": self.name}

        def run_batch(self, requests: list[Request], load_media: Any) -> list[Response]:
            return [Response("text", text=r.prompt) for r in requests]

    monkeypatch.setattr(executor, "PlainProgress", functools.partial(PlainProgress, every=0.0))
    store = ResponseStore(tmp_path / "store")
    try:
        requests = [Request(f"k{i}", "generate", f"p{i}") for i in range(6)]
        executor.execute(Echo(), requests, store, MediaSource(tmp_path / "cache", tmp_path / "store"), workers=1,
                         label="echo", show_progress=True)
    finally:
        store.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "run echo: 0/6 requests (0%), ? requests/s, ETA ?"  # every=0: even the start
    assert lines[1].startswith("run echo: 2/6 requests (33%), ")
    assert lines[-1].startswith("run echo: 6/6 requests (100%), ") and "done in" in lines[-1]

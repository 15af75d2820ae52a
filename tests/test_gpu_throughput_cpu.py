"""benchmarks/gpu_throughput.py on the tiny shape on a CPU, as a user runs it: every row of its
table, the verdict, and benchc's runtime answering exactly what batched ``generate()`` answers
for the same requests (greedy, same batches)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_throughput.py"
SAMPLES, BATCH = 6, 3
ROWS = [
    ("independent", "generate(), one sample at a time", 1),
    ("independent", "generate(), batched", BATCH),
    ("independent", "benchc runtime (hf backend + executor + store)", BATCH),
    ("independent", "benchc runtime, each batch encoded when it is sent", BATCH),
    ("independent", "benchc runtime, decode=compiled", BATCH),
    ("consistency", "generate(), batched, no sharing", BATCH),
    ("consistency", "benchc runtime (hf backend + executor + store)", BATCH),
    ("consistency", "benchc runtime, share_prefix=true", BATCH),
    ("consistency", "reference: generate(), image prefix shared", BATCH),
]

pytestmark = pytest.mark.slow  # a tiny LLaVA built, saved and loaded in a subprocess: ~20 s on 2 busy cores


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp("gpu-throughput") / "run.json"
    command = [sys.executable, str(SCRIPT), "--shape", "tiny", "--device", "cpu", "--samples", str(SAMPLES),
               "--batch-sizes", str(BATCH), "--per-sample", "2", "--new-tokens", "8", "--repeats", "2",
               "--decode", "dynamic", "compiled", "--json", str(out)]
    # one thread: on a shared 2-core machine, two OpenMP threads wait on each other (10x slower)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text())


def test_the_table_has_every_row_with_na_for_the_bound_on_a_cpu(run: tuple[str, dict]) -> None:
    stdout, record = run
    table = stdout.split("% of bound", 1)[1].splitlines()
    for workload, method, batch in ROWS:
        line = next((line for line in table if line.startswith(f"{workload:12s} {method}")), None)
        assert line is not None, f"no row {workload} / {method} in:\n{stdout}"
        fields = line[len(f"{workload:12s} {method}"):].split()
        assert int(fields[0]) == batch and fields[-1] == "n/a", line
        assert float(fields[3]) > 0 and fields[5].endswith("x"), line  # samples/s, x per-sample
        low, high = (float(f) for f in fields[4].split("-"))  # the spread over the repeats
        assert low <= float(fields[3]) <= high, line
    assert [(r["workload"], r["method"], r["batch"]) for r in record["rows"]] == ROWS
    assert all(r["samples"] == (2 if r["batch"] == 1 else SAMPLES) for r in record["rows"])
    assert all(len(r["runs"]) == 2 for r in record["rows"])  # --repeats 2, interleaved after a warm-up
    assert "compute bound: n/a on a CPU" in stdout and record["bound"]["samples_per_s"] is None


def test_the_verdict_says_the_targets_apply_to_an_h200_only(run: tuple[str, dict]) -> None:
    stdout, _ = run
    verdicts = [line for line in stdout.splitlines() if line.startswith("VERDICT: ")]
    assert len(verdicts) == 1, stdout
    assert "the targets apply to an H200 only" in verdicts[0]
    assert "benchc's answers equal generate()'s" in verdicts[0]
    checks = [line for line in stdout.splitlines() if line.startswith("CHECK ")]
    assert len(checks) == 4 and all(line.endswith(("MET", "NOT met", "(spreads straddle the target)"))
                                    for line in checks), checks
    assert sum(line.startswith("RANK ") for line in stdout.splitlines()) == 2


def test_benchc_answers_equal_batched_generate_for_the_same_requests(run: tuple[str, dict]) -> None:
    stdout, record = run
    by_workload = {a["workload"]: a for a in record["agreements"]}
    assert sorted(by_workload) == ["consistency", "independent"]
    for name, agreement in by_workload.items():
        assert len(agreement["benchc"]) == SAMPLES and all(agreement["benchc"]), agreement
        assert agreement["benchc"] == agreement["generate"], name
        assert f"answers, {name}, batch {BATCH}: benchc runtime equal to batched generate(): " \
               f"{SAMPLES}/{SAMPLES}" in stdout
    assert by_workload["independent"]["decode_equal"] == {"compiled": SAMPLES}
    assert f"benchc decode=compiled equal to batched generate(): {SAMPLES}/{SAMPLES}" in stdout
    shared = by_workload["consistency"]["benchc_shared_equal"]
    assert shared == SAMPLES and f"benchc share_prefix=true equal to batched generate(): {SAMPLES}/{SAMPLES}" in stdout
    # not vacuous: different requests get different answers (random weights, greedy)
    assert len(set(by_workload["independent"]["generate"])) > 1

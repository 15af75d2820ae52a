"""inspect-ai's own reader on benchc's inspect export (`benchc score RUN --format inspect`):
``inspect_ai.log.read_eval_log`` loads the log, whole and header only, and what it reads (each
sample's scores, the results' metrics, the sample counts) is benchc's.

inspect-ai is not a dependency of benchc: the test runs the python of a virtual environment
that has it, named by BENCHC_INSPECT_PYTHON (tests/fixtures/peers/README.md makes one,
``inspvenv``, with inspect-ai 0.3.285), and is skipped without it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchc.runtime.score.answers import extract, is_correct
from benchc.compiler.spec.models import Answer
from benchc.runtime.interop.export_inspect import export_inspect
from support.hashed_answers import World, run_cli

pytestmark = pytest.mark.slow  # another python reads the logs

PYTHON = os.environ.get("BENCHC_INSPECT_PYTHON", "")
READER = Answer(extract=["first_line", "normalize"])  # the example spec's [answer]

READ = """
import json, sys
from inspect_ai.log import read_eval_log

log = read_eval_log(sys.argv[1])
header = read_eval_log(sys.argv[1], header_only=True)
print(json.dumps({
    "status": log.status, "header_status": header.status, "header_samples": header.samples,
    "task": header.eval.task, "model": header.eval.model, "epochs": log.eval.config.epochs,
    "total": log.results.total_samples, "completed": log.results.completed_samples,
    "header_results": [[s.name, {k: m.value for k, m in s.metrics.items()}] for s in header.results.scores],
    "results": [[s.name, s.scorer, {k: m.value for k, m in s.metrics.items()}] for s in log.results.scores],
    "samples": [[s.id, s.epoch, {k: [v.value, v.answer] for k, v in (s.scores or {}).items()},
                 s.output.completion, s.error.message if s.error else None] for s in log.samples],
}))
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    if not PYTHON:
        pytest.skip("BENCHC_INSPECT_PYTHON is not set: name the python of a virtual environment with "
                    "inspect-ai 0.3.285 (e.g. /work/side/inspvenv/bin/python)")
    return World(tmp_path_factory.mktemp("inspect-real"))


def _read(path: Path) -> dict[str, Any]:
    done = subprocess.run([PYTHON, "-c", READ, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _expected_results(scores: dict[str, Any]) -> list[list[Any]]:
    """scores.json's rows as the log's scores: rates as fractions (every rate of this spec is in percent)."""
    out = []
    for metric in scores["metrics"]:
        for row in metric["rows"]:
            labels = [f"{c}={row[c]}" for c in metric["columns"] if isinstance(row[c], str)]
            out.append([":".join([metric["name"], *labels]), metric["name"],
                        {c: v / 100 for c, v in row.items() if isinstance(v, float)}])
    return out


def _check(read: dict[str, Any], world: World, scores: dict[str, Any], texts: dict[str, str | None]) -> None:
    assert read["status"] == read["header_status"] == "success" and read["header_samples"] is None
    assert (read["task"], read["epochs"], read["total"]) == ("examples/image-invariance", 1, 192)
    assert read["completed"] == sum(t is not None for t in texts.values())
    expected = _expected_results(scores)
    assert [[n, s] for n, s, _ in read["results"]] == [[n, s] for n, s, _ in expected]
    for (_, _, got), (_, _, want) in zip(read["results"], expected):
        assert got == pytest.approx(want, abs=1e-9)
    assert [[n, m] for n, _, m in read["results"]] == read["header_results"]
    for (item_id, epoch, got, completion, error), row in zip(read["samples"], world.items.iter_rows(named=True)):
        text = texts[row["item_id"]]
        answer = extract(text or "", READER, row["prompt"])
        right = is_correct(answer, json.loads(row["targets"])["answer"], "normalized", row["prompt"])
        assert (item_id, epoch) == (row["item_id"], 1)
        assert got == {"general.accuracy": ["C" if right else "I", answer]}
        assert completion == (text or "") and (error is None) == (text is not None)


def test_inspect_reads_a_run_and_gets_benchcs_scores(world: World) -> None:
    done = export_inspect(world.run, world.scores)
    texts = dict(world.responses.select("item_id", "text").iter_rows())
    _check(_read(done.path), world, world.scores, texts)


def test_inspect_reads_an_import_with_a_missing_answer(world: World, tmp_path: Path) -> None:
    answers = world.answers()
    source = tmp_path / "a.jsonl"
    source.write_text("".join(json.dumps({"item_id": a["item_id"], "response": a["response"]}) + "\n"
                              for a in answers[1:]))
    run = tmp_path / "run"
    assert run_cli("import", world.manifest, source, "-o", run, "--allow-missing") == 0
    scores = world.score(run)
    read = _read(export_inspect(run, scores).path)
    texts = {a["item_id"]: a["response"] for a in answers} | {answers[0]["item_id"]: None}
    assert read["model"] == "imported/jsonl"
    _check(read, world, scores, texts)

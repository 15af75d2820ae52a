"""[generation] stop (issue 25 item 5): stop sequences end every answer (lm-eval's `until`), are
sent to the backends that take them, enter request keys only when set (specs without them keep
their bytes), and a bad value is refused with the spec's file and line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from benchc.compiler.spec.models import Generation
from conftest import cli
from specfiles import write_rows_spec

ROWS = [{"id": "q1", "question": "What is the capital of France?", "answer": "Paris"},
        {"id": "q2", "question": "Who wrote Hamlet?", "answer": "Shakespeare"}]
NODE = """
[[node]]
id = "question"
op = "text.field"
input = "record"
params.field = "question"
"""
REST = """
[generation]
max_new_tokens = 16
{stop}

[answer]
extract = ["answer_text"]

[[metric]]
name = "general.accuracy"
target = "answer"
correct = "exact"
"""


def _spec(folder: Path, stop: str) -> Path:
    spec = write_rows_spec(folder, "stop", ROWS, NODE)
    spec.write_text(spec.read_text() + REST.format(stop=stop))
    return spec


def test_stop_ends_every_answer_and_changes_the_request_keys(tmp_path: Path) -> None:
    # the model writes on after its answer, as a pretrained model does: "Paris\n\nQuestion: ..."
    model = "echo:answer=Paris\n\nQuestion: Who wrote Hamlet?"
    scores = {}
    for name, stop in (("with", 'stop = ["\\n\\n", "Question:"]'), ("without", "")):
        spec = _spec(tmp_path / name, stop)
        out = tmp_path / name / "out"
        done = cli("eval", spec, "-o", out, "--model", model, "--store", tmp_path / "store",
                   "--cache", tmp_path / "cache")
        assert done.returncode == 0, done.stderr
        answers = pl.read_parquet(out / "run" / "responses.parquet")
        scores[name] = json.loads((out / "run" / "scores.json").read_text())
        generation = json.loads((out / "manifest" / "spec.json").read_text())["generation"]
        if name == "with":
            assert set(answers["text"]) == {"Paris"}
            assert generation["stop"] == ["\n\n", "Question:"]
        else:
            assert set(answers["text"]) == {"Paris\n\nQuestion: Who wrote Hamlet?"}
            assert "stop" not in generation
    accuracy = {k: v["metrics"][0]["rows"][0]["accuracy"] for k, v in scores.items()}
    assert accuracy == {"with": 50.0, "without": 0.0}  # q1 right once the answer ends at the stop


def test_specs_without_stop_keep_their_generation_bytes() -> None:
    assert "stop" not in Generation().model_dump(mode="json")
    assert Generation(stop=["\n", "\n"]).stop == ["\n"]


def test_an_empty_stop_sequence_is_refused_with_file_and_line(tmp_path: Path) -> None:
    spec = _spec(tmp_path, 'stop = ["\\n", ""]')
    done = cli("validate", spec)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "spec.toml:" in done.stderr and "generation.stop" in done.stderr and "non-empty" in done.stderr

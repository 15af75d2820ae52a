"""[answer] kind (issue 25 item 3): a spec says what its answers are, and gets the reading and
the correctness rule measured for that kind on real answers (benchmarks/answer_rules.py), written
out in spec.json; [answer] strip is a recorded setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchc.compiler.spec.models import Answer
from conftest import cli
from specfiles import write_rows_spec

ROWS = [{"id": "q1", "question": "What is the capital of France?\nA. Rome\nB. Paris", "answer": "Paris",
         "letter": "B"},
        {"id": "q2", "question": "Who wrote Hamlet?\nA. Shakespeare\nB. Dickens", "answer": "Shakespeare",
         "letter": "A"}]
NODE = """
[[node]]
id = "question"
op = "text.field"
input = "record"
params.field = "question"
"""


def _score(tmp_path: Path, answer: str, target: str, model: str) -> tuple[dict, dict]:
    spec = write_rows_spec(tmp_path, "kind", ROWS, NODE)
    spec.write_text(spec.read_text() + f"\n[answer]\n{answer}\n\n[[metric]]\nname = \"general.accuracy\"\n"
                                       f"target = \"{target}\"\n")
    out = tmp_path / "out"
    done = cli("eval", spec, "-o", out, "--model", model, "--store", tmp_path / "store", "--cache", tmp_path / "c")
    assert done.returncode == 0, done.stderr
    written = json.loads((out / "manifest" / "spec.json").read_text())
    return written, json.loads((out / "run" / "scores.json").read_text())["metrics"][0]


def test_letter_kind_reads_letters_and_compares_them_exactly(tmp_path: Path) -> None:
    written, metric = _score(tmp_path, 'kind = "letter"', "letter", "echo:answer=The answer is **B**.")
    assert written["answer"]["kind"] == "letter" and written["answer"]["extract"] == ["option_letter"]
    assert written["metric"][0]["correct"] == "exact"
    assert metric["rows"][0]["accuracy"] == 50.0  # B is q1's letter, not q2's
    assert any("answer kind letter" in n for n in metric["notes"])


def test_short_kind_scores_a_sentence_that_states_the_target(tmp_path: Path) -> None:
    written, metric = _score(tmp_path, 'kind = "short"', "answer", "echo:answer=The capital of France is Paris.")
    assert written["metric"][0]["correct"] == "short_answer" and written["answer"]["extract"] == []
    assert metric["rows"][0]["accuracy"] == 50.0


def test_a_metrics_own_rule_wins_and_steps_given_win() -> None:
    assert Answer(kind="number", extract=["first_line", "number"]).extract == ["first_line", "number"]
    assert Answer(kind="yes_no").extract == ["yes_no"] and Answer().extract == []


def test_strip_false_is_recorded_and_named(tmp_path: Path) -> None:
    written, metric = _score(tmp_path, "strip = false", "answer", "echo:answer=Paris")
    assert written["answer"]["strip"] is False
    assert any("white space kept" in n for n in metric["notes"])


@pytest.mark.parametrize("answer", ['kind = "letters"', "strip = 1"])
def test_bad_answer_settings_name_their_line(tmp_path: Path, answer: str) -> None:
    spec = write_rows_spec(tmp_path, "kind", ROWS, NODE)
    spec.write_text(spec.read_text() + f"\n[answer]\n{answer}\n")
    done = cli("validate", spec)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "spec.toml:" in done.stderr
    assert "answer." in done.stderr

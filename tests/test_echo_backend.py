"""The shipped `echo` backend: a spec end to end with nothing installed, numbers counted by hand."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SPECS, cli

PARAPHRASE = SPECS / "examples" / "paraphrase.toml"


def _accuracy(out: Path) -> dict[str, float]:
    scores = json.loads((out / "run" / "scores.json").read_text())
    metric = next(m for m in scores["metrics"] if m["name"] == "general.accuracy")
    return {row["perturbation"]: row["accuracy"] for row in metric["rows"]}


def test_echo_answers_the_prompt_or_a_fixed_answer(tmp_path: Path) -> None:
    common = ["--cache", tmp_path / "c", "--store", tmp_path / "s"]
    cli("eval", PARAPHRASE, "-o", tmp_path / "a", "--model", "echo", *common, check=True)
    assert set(_accuracy(tmp_path / "a").values()) == {0.0}  # a question is never its own answer
    cli("eval", PARAPHRASE, "-o", tmp_path / "b", "--model", "echo:answer=Paris", *common, check=True)
    # "Paris" answers one of the six questions (q1), under every perturbation: 1/6
    assert {k: round(v, 2) for k, v in _accuracy(tmp_path / "b").items()} == {
        "lowercased": 16.67, "original": 16.67, "paraphrased": 16.67}


def test_a_misspelt_echo_option_gets_did_you_mean(tmp_path: Path) -> None:
    done = cli("eval", PARAPHRASE, "-o", tmp_path / "d", "--model", "echo:anser=Paris",
               "--cache", tmp_path / "c", "--store", tmp_path / "s")
    assert done.returncode == 2 and "did you mean 'answer'?" in done.stderr and "Traceback" not in done.stderr

"""The bundled text examples end to end against the real model (Gemma 3 270M behind
llama-cpp-python): every request answered, the report written, a rerun answered from the store,
and the spec of the corpus's trial file giving its hand-counted numbers."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from benchc.runtime.answers import is_correct
from realtier import ALPACA, OUT, ROOT, cli

pytestmark = pytest.mark.slow  # a real model answers

SPECS = ROOT / "specs" / "examples"
TRIAL = ROOT / "tests" / "fixtures" / "answers" / "trial"


def _model(url: str, extra: str = "") -> str:
    return f"openai:gemma,base_url={url},api_key_env=none,concurrency=1{extra}"


def test_the_paraphrase_example_runs_end_to_end_and_reruns_from_the_store() -> None:
    out = OUT / "paraphrase"
    shutil.rmtree(out, ignore_errors=True)
    args = ("eval", SPECS / "paraphrase.toml", "-o", out, "--model", _model(ALPACA), "--store", OUT / "store")
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    answers = pl.read_parquet(out / "run" / "responses.parquet")
    items = pl.read_parquet(out / "manifest" / "items.parquet")
    assert answers.height == items.height and answers["text"].str.len_chars().sum() > 0
    assert "general.accuracy" in (out / "run" / "report.md").read_text()
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    [stage] = json.loads((out / "run" / "run.json").read_text())["stages"]
    assert (stage["cached"], stage["ran"]) == (items.height, 0)  # all from the store


def test_the_trial_spec_reads_the_hand_count() -> None:
    """tests/fixtures/answers/trial/spec.toml asked again: every answer equal to a committed one
    is read as its hand label says (right is counted right, wrong and none are not); with all 40
    equal, the report gives the hand count, 25.0 and 25.0."""
    out = OUT / "trial"
    shutil.rmtree(out, ignore_errors=True)
    done = cli("eval", TRIAL / "spec.toml", "-o", out, "--model", _model(ALPACA), "--store", OUT / "store")
    assert done.returncode == 0, done.stderr
    labelled = {r["id"]: r for r in map(json.loads, (TRIAL.parent / "benchc-trial.labelled.jsonl").read_text()
                                        .splitlines())}
    answers = pl.read_parquet(out / "run" / "responses.parquet")
    same = [row for row in answers.iter_rows(named=True) if row["text"] == labelled[row["item_id"]]["answer"]]
    print(f"trial: {len(same)} of {answers.height} answers as committed")
    assert len(same) >= answers.height // 4
    for row in same:
        label = labelled[row["item_id"]]
        assert is_correct(row["text"], label["targets"], "short_answer", label["prompt"]) == (
            label["verdict"] == "right"), row["item_id"]
    if len(same) == answers.height:
        rows = json.loads((out / "run" / "scores.json").read_text())["metrics"][0]["rows"]
        assert {r["perturbation"]: r["accuracy"] for r in rows} == {"original": 25.0, "polite": 25.0}

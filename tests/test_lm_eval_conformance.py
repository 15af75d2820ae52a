"""benchc with lm-eval's rules gives lm-eval's verdicts (issue 25 item 5), item by item, on
sample logs that lm-eval 0.4.13 itself wrote against a real model (tests/fixtures/peers: Gemma 3
270M behind llama-cpp-python's server, `local-completions` and `local-chat-completions`, and the
`dummy` model; its README has the commands). The task YAML is read as lm-eval reads it: each
filter pipeline becomes a benchc `[answer]` section, its `exact_match` flags a benchc `correct`
table, written as a spec would write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchc.compiler.lm_eval_rules import answer_rule, correct_table
from benchc.compiler.metrics import AccuracyParams
from benchc.compiler.spec.models import Answer
from benchc.runtime.score.answers import extract, is_correct
from conftest import ROOT

PEERS = ROOT / "tests" / "fixtures" / "peers"
RUNS = sorted(p.parent for p in (PEERS / "lm_eval").glob("*/*/results_*.json"))
EXACT_MATCH_FLAGS = ("ignore_case", "ignore_punctuation", "ignore_numbers", "regexes_to_ignore")


def task(name: str) -> dict[str, Any]:
    return yaml.safe_load((PEERS / "tasks" / "lm_eval" / f"{name}.yaml").read_text())


def answer_of(pipeline: list[dict[str, Any]]) -> Answer:
    """An lm-eval filter pipeline as benchc's answer rule, as `benchc new TASK.yaml` writes it
    (compiler/lm_eval_rules.py: regex with group_select 0 or -1, take_first; as written)."""
    rule = answer_rule(pipeline)
    assert not isinstance(rule, str), rule
    return Answer.model_validate(rule)


def correct_of(config: dict[str, Any]) -> Any:
    """The task's exact_match entry as the `correct` table `benchc new TASK.yaml` writes."""
    [entry] = [m for m in config["metric_list"] if m["metric"] == "exact_match"]
    table = correct_table(entry)
    assert not isinstance(table, str), table
    return AccuracyParams.model_validate({"target": "answer", "correct": table}).correct


def samples(run: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(path.name.split("_20")[0].removeprefix("samples_"), json.loads(line))
            for path in sorted(run.glob("samples_*.jsonl")) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(PEERS)))
def test_benchc_gives_lm_evals_verdict_on_every_item(run: Path) -> None:
    rows = samples(run)
    assert rows
    for name, row in rows:
        config = task(name)
        [pipeline] = [f["filter"] for f in config["filter_list"] if f["name"] == row["filter"]]
        read = extract(row["resps"][0][0], answer_of(pipeline))
        if row["filtered_resps"][0] != "[invalid]":  # lm-eval's fallback; benchc reads no answer
            assert read == row["filtered_resps"][0], (name, row["doc_id"], row["filter"])
        verdict = is_correct(read, [row["target"]], correct_of(config))
        assert verdict == bool(row["exact_match"]), (name, row["doc_id"], row["filter"], read, row["target"])


@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(PEERS)))
def test_benchc_gives_lm_evals_scores(run: Path) -> None:
    [results] = [json.loads(p.read_text()) for p in run.glob("results_*.json")]
    by_metric: dict[tuple[str, str], list[bool]] = {}
    for name, row in samples(run):
        [pipeline] = [f["filter"] for f in task(name)["filter_list"] if f["name"] == row["filter"]]
        read = extract(row["resps"][0][0], answer_of(pipeline))
        by_metric.setdefault((name, row["filter"]), []).append(is_correct(read, [row["target"]],
                                                                           correct_of(task(name))))
    for (name, filter_name), verdicts in by_metric.items():
        assert sum(verdicts) / len(verdicts) == pytest.approx(results["results"][name][f"exact_match,{filter_name}"])


def test_the_logs_hold_what_the_issue_measured() -> None:
    """The figures these logs carry (lm-eval's own): capitals_qa 0.40 with raw completions and
    0.0 through the chat template (the pretrained model answers "### Instruction:"); GSM8K 0.1 by
    both filters with completions."""
    completions = next(r for r in RUNS if r.parts[-2] == "completions")
    [results] = [json.loads(p.read_text())["results"] for p in completions.glob("results_*.json")]
    assert results["capitals_qa"]["exact_match,first-line"] == pytest.approx(0.4)
    assert results["gsm8k_local"]["exact_match,strict-match"] == pytest.approx(0.1)
    assert results["gsm8k_local"]["exact_match,flexible-extract"] == pytest.approx(0.1)


def test_lm_evals_own_rules_differ_from_benchcs_defaults() -> None:
    """Why the rules are named: "The Paris." is lm-eval-right under capitals_qa's flags (its
    regexes drop a leading "the"), benchc's default `exact` keeps the "."; an answer with a
    leading space is lm-eval-wrong without a regex that strips it, which `strip = false` keeps."""
    flags = correct_of(task("capitals_qa"))
    assert is_correct("The Paris.", ["Paris"], flags) and not is_correct("The Paris.", ["Paris"], "exact")
    bare = correct_of(task("gsm8k_local"))
    assert is_correct("1,234.", ["Sold 1234.\n#### 1234"], bare)
    assert not is_correct("12 apples", ["#### 12"], bare)

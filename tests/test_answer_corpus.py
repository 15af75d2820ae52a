"""The answer rules on answers real software wrote (tests/fixtures/answers: Gemma 3 270M behind
llama-cpp-python's OpenAI server, three ways of asking; each verdict checked by hand). Every
default reader counts no wrong or missing answer right; how many right answers each misses is
pinned, so a change to a rule shows here in both directions (benchmarks/answer_rules.py prints
the full table)."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import answer_rules  # noqa: E402

ROWS = answer_rules.load(answer_rules.CORPUS)
# kind -> (answers, right by hand, missed by the default rule), measured 2026-12-06 (rules 5; rules 4 missed
# 4, 5, 0 and 4: "The Nile River.", implied yes/no such as "Gold is a metal.", option texts such as "Tokyo")
MEASURED = {"short": (226, 47, 1), "yes_no": (120, 23, 1), "number": (90, 7, 0), "letter": (90, 5, 0)}
MISS_TARGET = 0.05
"""The most a default may miss of the right answers of a kind (issue 25)."""


def test_the_corpus_is_what_its_readme_says() -> None:
    assert len(ROWS) == 526 and {r["verdict"] for r in ROWS} == {"right", "wrong", "none"}
    assert {r["source"] for r in ROWS} == {f"gemma3-270m-q4_k_m/{how}" for how in (
        "llama-cpp-python-0.3.36/alpaca", "llama-cpp-python-0.3.36/gemma", "llama-cpp-python-0.3.36/completions",
        "benchc-openai/alpaca")}


@pytest.mark.parametrize("kind", list(MEASURED))
def test_no_default_rule_counts_a_wrong_answer_right(kind: str) -> None:
    [rule] = [r for r in answer_rules.RULES[kind] if r.default]
    found = answer_rules.measure([r for r in ROWS if r["kind"] == kind], rule)
    assert found["false_right"] == 0, found["false_right_ids"]
    assert (found["answers"], found["right"], found["missed"]) == MEASURED[kind], found["missed_ids"]
    assert found["missed"] <= MISS_TARGET * found["right"]


def test_the_lenient_rule_is_lenient_on_real_answers() -> None:
    # why `word` is never a default: 21 wrong answers of 226 count right ("Italy is the capital of Italy.")
    [word] = [r for r in answer_rules.RULES["short"] if r.correct == "word"]
    assert answer_rules.measure([r for r in ROWS if r["kind"] == "short"], word)["false_right"] == 21


# Held out: answers the rules of rules 5 were not written against (tests/fixtures/peers: Gemma 3 270M
# through lm-eval 0.4.13, lmms-eval 0.7.3 and inspect-ai, labelled by hand; to_corpus.py makes the file).
PEERS = answer_rules.load(ROOT / "tests" / "fixtures" / "peers")
HELD_OUT = {"short": (75, 25, 1), "number": (20, 1, 0)}
"""kind -> (answers, right by hand, missed), measured 2026-12-06. Held out for the first rules-5 readers,
which missed 4 short answers here (a later sentence: "Egypt is a country in the Middle East. It has a
capital city, known as Cairo."; "0°C") and counted 2 wrong ones right ("..., which is located in the
Pacific Ocean."; a GSM8K answer whose "#### 15" follows a wrong working line): the readers were then
changed for these, so these figures are no longer a held-out measure, only a pin."""


@pytest.mark.parametrize("kind", list(HELD_OUT))
def test_no_default_rule_counts_a_wrong_answer_right_on_held_out_answers(kind: str) -> None:
    found = answer_rules.measure([r for r in PEERS if r["kind"] == kind], answer_rules.kind_rule(kind))
    assert found["false_right"] == 0, found["false_right_ids"]
    assert (found["answers"], found["right"], found["missed"]) == HELD_OUT[kind], found["missed_ids"]

"""Measured, not asserted: how benchc's answer rules read answers that real software wrote.

The corpus (tests/fixtures/answers/*.labelled.jsonl, README.md beside it says how each file was
made) holds answers of a real model, each with its question, targets, answer kind and a verdict
checked by hand: ``right`` (the answer gives the target), ``wrong`` (it gives something else) or
``none`` (it gives no answer: an echo of the question, a refusal, an empty reply). For every
answer kind and rule this prints how many right answers the rule misses and how many wrong or
missing ones it counts right (false right: the number that must be 0).

A rule is an ``[answer]`` section and a ``correct`` rule, as a spec writes them; ``default`` marks
what benchc uses for the kind when a spec says only what kind of answer it wants (``[answer]
kind = "short" | "yes_no" | "number" | "letter"``), the others are for comparison.

Usage: .venv/bin/python benchmarks/answer_rules.py [--corpus DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchc.compiler.spec.models import KIND_CORRECT, Answer
from benchc.runtime.score.answers import extract, is_correct

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "answers"


@dataclass(frozen=True)
class Rule:
    name: str
    answer: Answer
    correct: str
    default: bool = False


def kind_rule(kind: str) -> Rule:
    """What a spec gets from ``[answer] kind = KIND`` alone: its steps and its ``correct`` rule."""
    return Rule(f"kind = {kind}", Answer(kind=kind), KIND_CORRECT[kind], default=True)  # type: ignore[arg-type]


RULES: dict[str, list[Rule]] = {
    "short": [Rule("raw, normalized", Answer(), "normalized"),
              Rule("first_line, normalized", Answer(extract=["first_line"]), "normalized"),
              kind_rule("short"),
              Rule("raw, word (lenient)", Answer(), "word")],
    "yes_no": [kind_rule("yes_no"), Rule("raw, normalized", Answer(), "normalized")],
    "number": [kind_rule("number"), Rule("raw, normalized", Answer(), "normalized")],
    "letter": [kind_rule("letter"), Rule("option_letter, normalized", Answer(extract=["option_letter"]), "normalized"),
               Rule("raw, exact", Answer(), "exact")],
}


def load(corpus: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(corpus.glob("*.labelled.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def measure(rows: list[dict[str, Any]], rule: Rule) -> dict[str, Any]:
    counted = [is_correct(extract(r["answer"], rule.answer, r["prompt"]), r["targets"], rule.correct, r["prompt"])
               for r in rows]
    right = [r["verdict"] == "right" for r in rows]
    missed = [r["id"] + "/" + r["source"].rsplit("/", 1)[-1] for r, c, ok in zip(rows, counted, right) if ok and not c]
    false_right = [r["id"] + "/" + r["source"].rsplit("/", 1)[-1] for r, c, ok in zip(rows, counted, right)
                   if c and not ok]
    return {"rule": rule.name, "default": rule.default, "answers": len(rows), "right": sum(right),
            "missed": len(missed), "false_right": len(false_right), "missed_ids": missed,
            "false_right_ids": false_right}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    rows = load(args.corpus)
    results = []
    print(f"{len(rows)} labelled answers from {args.corpus}")
    print(f"{'kind':8s} {'rule':28s} {'answers':>7s} {'right':>6s} {'missed':>7s} {'miss %':>7s} {'false right':>11s}")
    for kind, rules in RULES.items():
        mine = [r for r in rows if r["kind"] == kind]
        for rule in rules:
            found = {"kind": kind, **measure(mine, rule)}
            results.append(found)
            share = 100 * found["missed"] / found["right"] if found["right"] else 0.0
            print(f"{kind:8s} {rule.name + (' *' if rule.default else ''):28s} {found['answers']:7d} "
                  f"{found['right']:6d} {found['missed']:7d} {share:6.1f}% {found['false_right']:11d}")
    print("* the default for the kind")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

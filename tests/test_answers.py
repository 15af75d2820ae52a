"""Answers are read by declared extraction steps and judged by one correctness function, shared
by every general metric and `benchc diff-runs`; no default lets a wrong answer count as right
(issue 12: "I do not know." scored 35% on yes/no items through a substring match)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchc import api
from benchc.compiler.spec.models import Answer
from benchc.runtime.score.answers import extract, is_correct
from conftest import SPECS
from support import rule_backends  # noqa: F401  (registers the test-constant backend)



# --- extraction -----------------------------------------------------------------------------

@pytest.mark.parametrize("steps,text,expected", [
    (["yes_no"], "I do not know.", ""),
    (["yes_no"], "No, it is not.", "no"),
    (["yes_no"], "Well... YES.", "yes"),
    (["first_line"], "\n  Paris\nbecause...", "Paris"),
    (["first_sentence"], "It is 3.5 cm. Really.", "It is 3.5 cm."),
    (["number"], "There are five dogs.", "5"),
    (["number"], "no idea", ""),
    (["option_letter"], "B", "B"),
    (["option_letter"], "(c).", "C"),
    (["option_letter"], "B. a rectangle", "B"),
    (["option_letter"], "The answer is D because", "D"),
    (["option_letter"], "A rectangle, I think", ""),
    (["first_line", "normalize"], "The Eiffel Tower!\nmore", "eiffel tower"),
], ids=lambda v: str(v))
def test_extraction_steps(steps: list[str], text: str, expected: str) -> None:
    assert extract(text, Answer(extract=steps)) == expected


def test_regex_step_reads_its_first_group() -> None:
    answer = Answer(extract=["regex"], pattern=r"answer:\s*(\w+)")
    assert extract("Final answer: blue.", answer) == "blue"
    assert extract("nothing", answer) == ""


def test_regex_step_and_pattern_go_together() -> None:
    with pytest.raises(ValueError):
        Answer(extract=["regex"])
    with pytest.raises(ValueError):
        Answer(extract=["yes_no"], pattern="x")


# --- correctness ----------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["normalized", "exact", "word"])
def test_i_do_not_know_is_never_right_by_any_safe_rule(how: str) -> None:
    assert not is_correct("I do not know.", ["no"], how)
    assert not is_correct("I do not know.", ["yes"], how)


def test_substring_is_the_lenient_paper_rule() -> None:
    assert is_correct("I do not know.", ["no"], "substring")  # why it is never a default


def test_rules_on_right_answers() -> None:
    assert is_correct("Two dogs.", ["2 dogs"], "normalized")
    assert is_correct("a red car", ["red"], "word") and not is_correct("a red car", ["red"], "normalized")
    assert not is_correct("", ["no"], "substring") and not is_correct("no", [""], "substring")


# --- end to end: score and diff-runs agree, and agree on zero ------------------------------

NEGATION = SPECS / "examples" / "negation.toml"


@pytest.fixture(scope="module")
def negation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("negation")
    shutil.copytree(NEGATION.parent / "data", root / "spec" / "data")
    shutil.copy(NEGATION, root / "spec" / NEGATION.name)
    return root


def _evaluate(root: Path, spec: Path, answer: str, name: str) -> dict[str, Any]:
    common = {"cache_dir": root / "cache", "store_dir": root / "store"}
    manifest = api.compile(spec, root / f"m-{spec.stem}", progress=False, **common).manifest_dir
    api.run(manifest, root / name, model=f"test-constant:answer={answer}", progress=False, **common)
    return api.score(root / name, **common)


def _metric(scores: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in scores["metrics"] if m["name"] == name)


def test_a_model_that_never_knows_scores_zero_everywhere(negation: Path) -> None:
    scores = _evaluate(negation, negation / "spec" / NEGATION.name, "idk", "idk")
    accuracy = _metric(scores, "general.accuracy")
    assert [r["accuracy"] for r in accuracy["rows"]] == [0.0, 0.0]
    consistency = _metric(scores, "general.consistency")
    assert all(r["holds"] == 0.0 for r in consistency["rows"])
    diff = api.diff_runs(negation / "idk", negation / "idk")
    assert {m.name: m for m in diff.measures}["correct"].mean_a == 0.0


def test_without_extraction_the_default_rule_still_gives_zero(negation: Path) -> None:
    spec = negation / "spec" / "raw.toml"
    spec.write_text(NEGATION.read_text().replace('extract = ["yes_no"]', "extract = []"))
    scores = _evaluate(negation, spec, "idk", "idk-raw")
    assert [r["accuracy"] for r in _metric(scores, "general.accuracy")["rows"]] == [0.0, 0.0]
    lenient = negation / "spec" / "lenient.toml"
    lenient.write_text(spec.read_text().replace('by = ["perturbation"]',
                                                'by = ["perturbation"]\ncorrect = "substring"'))
    scores = _evaluate(negation, lenient, "idk", "idk-lenient")
    result = _metric(scores, "general.accuracy")
    assert any(r["accuracy"] > 0 for r in result["rows"])  # what a substring default used to report
    assert any("SUBSTRING" in note for note in result["notes"])


def test_score_and_diff_runs_give_one_accuracy(negation: Path) -> None:
    scores = _evaluate(negation, negation / "spec" / NEGATION.name, "yes", "yes")
    manifest = api.compile(negation / "spec" / NEGATION.name, negation / "m-negation", progress=False,
                           cache_dir=negation / "cache", store_dir=negation / "store").manifest_dir
    import polars as pl

    items = pl.read_parquet(manifest / "items.parquet")
    targets = [json.loads(t) for t in items["targets"]]
    expected_yes = sum(list(t.values())[0] == ["yes"] for t in targets) / len(targets)
    rows = _metric(scores, "general.accuracy")["rows"]
    overall = sum(r["accuracy"] * r["items"] for r in rows) / sum(r["items"] for r in rows) / 100
    assert overall == pytest.approx(expected_yes)  # every "yes" target right, every "no" wrong
    correct = {m.name: m for m in api.diff_runs(negation / "yes", negation / "yes").measures}["correct"]
    assert correct.mean_a == pytest.approx(overall)
    # a constant answer never flips with negation: the opposite relation never holds
    assert all(r["holds"] == 0.0 for r in _metric(scores, "general.consistency")["rows"])


@pytest.mark.parametrize("answer, target, right", [
    ("A", "A", True), ("a.", "A", True), ("(A)", "A", True), ("B", "A", False), ("An", "A", False),
    ("The", "A", False), ("A rectangle", "A", False), ("A", "B", False), ("", "A", False), ("the", "the", True),
])
def test_an_option_letter_a_is_not_an_article(answer: str, target: str, right: bool) -> None:
    # rules 3: "A" normalised to "" (SQuAD drops articles), so a right "A" was never right
    assert is_correct(answer, [target]) is right

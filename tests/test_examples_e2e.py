"""The example consistency tests of specs/examples/, each compiled, run on an offline model and
scored end to end, with every number checked against a count made by hand from the data:
rule-based models whose answers are known make the expected scores exact."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pytest
from pydantic import Field

from benchc import api
from benchc.runtime.backends.base import BackendOptions
from conftest import SPECS
from support.rule_backends import rule_backend

EXAMPLES = SPECS / "examples"
FACTS = {"capital of france": "Paris.", "spider": "8", "banana": "Yellow", "closest to the sun": "Mercury",
         "boiling point": "100", "romeo and juliet": "Shakespeare"}


def _paraphrase_rules(prompt: str) -> str:
    """Right on every wording, except that it hedges when asked for "just the answer" (a hedge
    reads wrong under `first_line, normalize`; "The answer is Paris." would read right: rules 4
    cut the label, as real models write it)."""
    fact = next(v for k, v in FACTS.items() if k in prompt.lower())
    return f"I think it is {fact}" if "just the answer" in prompt else fact


RULES = {"yes": lambda prompt: "Yes.", "a": lambda prompt: "A", "b": lambda prompt: "B", "c": lambda prompt: "C",
         "d": lambda prompt: "D", "paraphrase": _paraphrase_rules}


class RulesOptions(BackendOptions):
    rules: Literal["yes", "a", "b", "c", "d", "paraphrase"] = Field("yes", description="which rule answers")


Rules = rule_backend("test-rules", RulesOptions, lambda opts, prompt: RULES[opts.rules](prompt))
"""A rule-based model: ``rules=yes`` always says "Yes.", ``rules=b`` always picks option B (a, c, d likewise),
``rules=paraphrase`` knows the paraphrase example's facts."""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("examples")


def _evaluate(root: Path, name: str, model: str) -> tuple[pl.DataFrame, dict[str, dict[str, Any]]]:
    common = {"cache_dir": root / "cache", "store_dir": root / "store"}
    manifest = api.compile(EXAMPLES / f"{name}.toml", root / f"m-{name}", progress=False, **common).manifest_dir
    api.run(manifest, root / f"r-{name}", model=model, progress=False, **common)
    scores = api.score(root / f"r-{name}", **common)
    return pl.read_parquet(manifest / "items.parquet"), {m["name"]: m for m in scores["metrics"]}


def _rows(metric: dict[str, Any], key: str) -> dict[Any, dict[str, Any]]:
    return {row[key]: row for row in metric["rows"]}


def test_image_invariance_on_easy_vqa(root: Path) -> None:
    items, metrics = _evaluate(root, "image_invariance", "test-rules:rules=yes")
    assert items.height == 24 * 8  # original + 3 angles + 2 flips + 2 qualities
    ids = set(items["item_id"])
    assert "train/000000#rotated[angle=90]" in ids and "train/000000#jpeg[quality=10]" in ids
    yes = 8  # easy-VQA's 24 questions here: 8 answered "yes" (counted in the data)
    accuracy = _rows(metrics["general.accuracy"], "perturbation")
    assert set(accuracy) == {"original", "rotated", "flipped", "jpeg"}
    assert all(r["accuracy"] == pytest.approx(100 * yes / 24, abs=1e-3) for r in accuracy.values())
    consistency = _rows(metrics["general.consistency"], "perturbation")
    assert {p: r["holds"] for p, r in consistency.items()} == {"rotated": 100.0, "flipped": 100.0, "jpeg": 100.0}
    assert consistency["rotated"]["pairs"] == 24 * 3


def test_negation_needs_the_opposite_answer(root: Path) -> None:
    items, metrics = _evaluate(root, "negation", "test-rules:rules=yes")
    attrs = [json.loads(a) for a in items["attrs"]]
    targets = [list(json.loads(t).values())[0][0] for t in items["targets"]]
    originals = [t for a, t in zip(attrs, targets) if a["perturbation"] == "original"]
    negated = [t for a, t in zip(attrs, targets) if a.get("negated")]
    assert len(originals) == 16 and 0 < len(negated) <= 16  # easy-VQA yes/no questions here
    accuracy = _rows(metrics["general.accuracy"], "perturbation")
    assert accuracy["original"]["accuracy"] == pytest.approx(100 * originals.count("yes") / len(originals), abs=1e-3)
    assert accuracy["negated"]["accuracy"] == pytest.approx(100 * negated.count("yes") / len(negated), abs=1e-3)
    [row] = metrics["general.consistency"]["rows"]
    assert (row["relation"], row["pairs"], row["holds"]) == ("opposite", len(negated), 0.0)


def test_option_permutation_is_circular_eval(root: Path) -> None:
    items, metrics = _evaluate(root, "option_permutation", "test-rules:rules=b")
    attrs = [json.loads(a) for a in items["attrs"]]
    by_shift = {s: [a["expected"] for a in attrs if a["shift"] == s] for s in range(4)}
    accuracy = _rows(metrics["general.accuracy"], "shift")
    for shift, expected in by_shift.items():
        assert accuracy[shift]["accuracy"] == pytest.approx(100 * expected.count("B") / len(expected), abs=1e-3)
    [worst] = metrics["general.worst_case"]["rows"]
    assert worst["worst_case"] == 0.0  # the right letter moves: "always B" is never right 4 times
    # shift 0 vs k: both right needs B at both shifts, impossible for a rotated option
    assert all(r["holds"] == 0.0 for r in metrics["general.consistency"]["rows"])


@pytest.mark.parametrize("letter", "ACD")
def test_an_always_x_model_scores_one_in_k_for_every_letter(root: Path, letter: str) -> None:
    # "A" is an option, not an article: rules 3 (it normalised to "" and was never right)
    items, metrics = _evaluate(root, "option_permutation", f"test-rules:rules={letter.lower()}")
    expected = [json.loads(a)["expected"] for a in items["attrs"]]
    assert set(expected) == set("ABCD") and len(expected) % 4 == 0
    accuracy = _rows(metrics["general.accuracy"], "shift")
    assert sum(r["accuracy"] for r in accuracy.values()) / 4 == pytest.approx(25.0, abs=1e-9)
    for shift, row in accuracy.items():
        at = [json.loads(a)["expected"] for a in items["attrs"] if json.loads(a)["shift"] == shift]
        assert row["accuracy"] == pytest.approx(100 * at.count(letter) / len(at), abs=1e-9)
    assert metrics["general.worst_case"]["rows"][0]["worst_case"] == 0.0


def test_paraphrase_invariance_from_a_csv(root: Path) -> None:
    _, metrics = _evaluate(root, "paraphrase", "test-rules:rules=paraphrase")
    accuracy = {p: r["accuracy"] for p, r in _rows(metrics["general.accuracy"], "perturbation").items()}
    assert accuracy == {"original": 100.0, "lowercased": 100.0, "paraphrased": 50.0}
    holds = {p: r["holds"] for p, r in _rows(metrics["general.consistency"], "perturbation").items()}
    assert holds == {"lowercased": 100.0, "paraphrased": 50.0}


@pytest.mark.slow
def test_asr_invariance_on_espeak_speech(root: Path) -> None:
    items, metrics = _evaluate(root, "asr_invariance", "pocketsphinx")
    assert items.height == 3 * 5
    responses = pl.read_parquet(root / "r-asr_invariance" / "responses.parquet")
    texts = dict(zip(responses["item_id"], responses["text"]))
    sentences = {row["item_id"]: list(json.loads(row["targets"]).values())[0][0] for row in items.iter_rows(named=True)}

    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())

    accuracy = _rows(metrics["general.accuracy"], "perturbation")
    for perturbation, row in accuracy.items():
        mine = [i for i in sentences if json.loads(items.filter(pl.col("item_id") == i)["attrs"][0])["perturbation"]
                == perturbation]
        right = sum(norm(texts[i]) == norm(sentences[i]) for i in mine)
        assert row["accuracy"] == pytest.approx(100 * right / len(mine), abs=1e-3)
    assert set(_rows(metrics["general.consistency"], "perturbation")) == {"speed", "noise"}


def test_examples_copy_their_own_data() -> None:
    """Spec paths cannot leave the spec's folder: the examples' data lives beside them."""
    assert (EXAMPLES / "data" / "easy_vqa" / "LICENSE.easy-vqa").is_file()
    assert shutil.which("espeak-ng")  # audio.tts, for the ASR example

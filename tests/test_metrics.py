"""MM-R3 and MMCBench metrics, on hand-checked cases, with the real MiniLM embedder."""

from __future__ import annotations

import itertools
import statistics

import numpy as np
import pytest

from benchc.compiler.metrics import MMCBenchParams, MMR3Params
from benchc.runtime.score.embed import load_embedder
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem
from benchc.runtime.score.metrics.mmr3 import clean_literal, clean_words, harmonic


@pytest.fixture(scope="module")
def minilm():
    return load_embedder("minilm")


def _group(group: str, responses: list[str], answers: list[str], attrs=None) -> list[ScoredItem]:
    return [ScoredItem(f"{group}#{k}", group, dict(attrs or {}), {"answer": answers}, (r,))
            for k, r in enumerate(responses)]


def test_mmr3_paper_example(minilm) -> None:
    """MM-R3's worked example: answers columbia / north face / no, ground truth 'north face'."""
    responses = ["columbia", "north face", "no"]
    items = _group("q1", responses, ["north face"])
    result = METRICS.get("mmr3.all").score(MMR3Params(target="answer"), MetricInput(items, minilm, "model"))
    [row] = result.rows
    assert row["Acc"] == pytest.approx(100 / 3)
    emb = minilm.encode(responses)
    gt = minilm.encode(["north face"])[0]
    assert row["S_GT"] == pytest.approx(100 * float(np.mean(emb @ gt)), abs=1e-4)
    sims = [float(emb[i] @ emb[j]) for i, j in itertools.combinations(range(3), 2)]
    assert row["S_C"] == pytest.approx(100 * np.mean(sims), abs=1e-4)
    assert row["Con"] == pytest.approx(100 * np.mean([s > 0.7 for s in sims]))
    expected = statistics.harmonic_mean([(row["Acc"] + row["S_GT"]) / 2, (row["Con"] + row["S_C"]) / 2])
    assert row["O_all"] == pytest.approx(expected)


def test_mmr3_identical_correct_answers_score_full_marks(minilm) -> None:
    items = _group("a", ["a dog", "a dog", "a dog"], ["dog"]) + _group("b", ["cat", "cat", "cat"], ["cat"])
    [row] = METRICS.get("mmr3.all").score(MMR3Params(target="answer"), MetricInput(items, minilm, "m")).rows
    assert row["Acc"] == 100 and row["Con"] == 100 and row["S_C"] == pytest.approx(100, abs=1e-3)
    assert row["groups"] == 2 and row["responses"] == 6


def test_mmr3_pairs_never_cross_groups(minilm) -> None:
    items = _group("a", ["dog", "dog"], ["dog"]) + _group("b", ["airplane", "airplane"], ["airplane"])
    [row] = METRICS.get("mmr3.all").score(MMR3Params(target="answer"), MetricInput(items, minilm, "m")).rows
    assert row["Con"] == 100  # only (dog, dog) and (airplane, airplane) are compared


def test_published_masking_cleanup_is_replayed_literally() -> None:
    assert clean_literal("there is a dog in the masked region.") == "a dog "
    assert clean_literal("this is an image of a cat") == "than  cat"  # raw substring replaces: "this is " -> "th"
    assert clean_words("there is a dog in the masked region.") == "dog"
    assert clean_words("this is an image of a cat") == "this cat"


def test_harmonic_mean_of_zero_is_zero() -> None:
    assert harmonic(0.0, 50.0) == 0.0 and harmonic(50.0, 50.0) == 50.0


def test_mmcbench_consistency_sums_per_corruption_means(minilm) -> None:
    def item(group: str, corruption: str, text: str) -> ScoredItem:
        return ScoredItem(f"{group}#{corruption}", group, {"corruption": corruption, "severity": "heavy"}, {}, (text,))

    items = [item("g1", "clean", "a dog on a sofa"), item("g1", "ocr", "a dog on a sofa"),
             item("g1", "swap", "a plane in the sky"),
             item("g2", "clean", "two cats"), item("g2", "ocr", "two cats"), item("g2", "swap", "Two Cats ")]
    result = METRICS.get("mmcbench.consistency").score(MMCBenchParams(by=["severity"]),
                                                       MetricInput(items, minilm, "pocketsphinx"))
    [row] = result.rows
    a, b = minilm.encode(["a dog on a sofa", "a plane in the sky"])
    swap_mean = (float(a @ b) + 1.0) / 2  # 'Two Cats ' is normalised to 'two cats'
    assert row["score"] == pytest.approx(100 * (1.0 + swap_mean), abs=1e-3)
    assert row["max"] == 200 and row["groups"] == 2 and row["severity"] == "heavy"
    assert "pocketsphinx" in result.notes[0]

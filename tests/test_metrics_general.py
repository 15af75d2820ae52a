"""Agreement, flip rate and worst case for any spec, with their bootstrap intervals, on
hand-made items and hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from benchc.compiler.metrics import AgreementParams, FlipRateParams, WorstCaseParams
from benchc.runtime.score.embed import Embedder
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem
from benchc.runtime.score.metrics.text import bootstrap_ratio


def item(group: str, k: int, response: str, targets: list[str] | None = None, **attrs: str) -> ScoredItem:
    return ScoredItem(f"{group}#{k}", group, attrs, {"answer": targets or []}, (response,))


def rows(name: str, params: object, items: list[ScoredItem], embedder: Embedder | None = None) -> list[dict]:
    return METRICS.get(name).score(params, MetricInput(items, embedder, "m")).rows


AGREE = [item("g", 0, "Two dogs.", color="red"), item("g", 1, "2 dogs", color="red"),
         item("g", 2, "a cat", color="blue"),
         item("h", 0, "yes", color="red"), item("h", 1, "Yes", color="red"), item("h", 2, "yes", color="red")]


def test_agreement_exact_and_normalized() -> None:
    """g: (Two dogs., 2 dogs) agree once normalised, the cat never; h: all three 'yes' agree
    normalised, only the two lower-case ones exactly. Normalised: (1 + 3) / 6; exact: 1 / 6."""
    [normalized] = rows("general.agreement", AgreementParams(bootstrap=0), AGREE)
    [exact] = rows("general.agreement", AgreementParams(match="exact", bootstrap=0), AGREE)
    assert normalized["agreement"] == pytest.approx(400 / 6) and normalized["pairs"] == 6
    assert exact["agreement"] == pytest.approx(100 / 6)
    assert normalized["ci_low"] is None  # bootstrap = 0: no interval


def test_agreement_by_attribute_in_the_shape_of_mmr3_tables() -> None:
    blue, red = rows("general.agreement", AgreementParams(by=["color"], bootstrap=0), AGREE)
    assert (blue["color"], blue["pairs"], blue["agreement"]) == ("blue", 2, 0.0)  # the cat against both dogs
    assert (red["pairs"], red["agreement"]) == (6, pytest.approx(400 / 6))  # every pair touches a red item
    _, red_within = rows("general.agreement", AgreementParams(by=["color"], pairs_by="within", bootstrap=0), AGREE)
    assert (red_within["pairs"], red_within["agreement"]) == (4, 100.0)


def test_agreement_interval_is_seeded_and_brackets_the_value() -> None:
    params = AgreementParams(bootstrap=2000, seed=7)
    [row] = rows("general.agreement", params, AGREE)
    assert rows("general.agreement", params, AGREE) == [row]  # deterministic
    # resampling two groups (1 of 3 pairs agree, 3 of 3) gives 1/3, 2/3 or 1
    assert row["ci_low"] == pytest.approx(100 / 3) and row["ci_high"] == pytest.approx(100.0)
    assert row["groups"] == 2


def test_bootstrap_matches_a_plain_loop() -> None:
    rng = np.random.default_rng(1)
    num, den = rng.integers(0, 5, 30).astype(float), rng.integers(5, 9, 30).astype(float)
    low, high = bootstrap_ratio(num, den, 500, 0.9, seed=3)
    draws = np.random.default_rng(3).integers(0, 30, size=(500, 30))
    ratios = [num[d].sum() / den[d].sum() for d in draws]
    assert (low, high) == pytest.approx(tuple(np.quantile(ratios, [0.05, 0.95])))
    assert bootstrap_ratio(num, den, 500, 0.9, seed=3) == (low, high)


class Vectors:
    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        table = {"a dog": [1.0, 0.0], "a puppy": [0.8, 0.6], "a car": [0.0, 1.0]}
        return np.asarray([table[t] for t in texts], dtype=np.float32)


def test_agreement_by_embedding() -> None:
    items = [item("g", 0, "a dog"), item("g", 1, "a puppy"), item("g", 2, "a car")]
    embedder = Embedder("stub", Vectors(), {"embedder": "stub"})
    [row] = rows("general.agreement", AgreementParams(match="embedding", bootstrap=0), items, embedder)
    assert row["agreement"] == pytest.approx(100 / 3)  # only dog . puppy = 0.8 > 0.7
    assert row["similarity"] == pytest.approx(100 * (0.8 + 0.0 + 0.6) / 3)


FLIPS = [item("a", 0, "a dog", ["dog"], corruption="clean"), item("a", 1, "A dog!", ["dog"], corruption="ocr"),
         item("a", 2, "a cat", ["dog"], corruption="blur"),
         item("b", 0, "cat", ["cat"], corruption="clean"), item("b", 1, "dog", ["cat"], corruption="ocr"),
         item("b", 2, "cat", ["cat"], corruption="blur")]


def test_flip_rate_of_answers_per_perturbation() -> None:
    params = FlipRateParams(over="corruption", reference="clean", by=["corruption"], bootstrap=0)
    blur, ocr = rows("general.flip_rate", params, FLIPS)
    assert (blur["corruption"], blur["comparisons"], blur["flip_rate"]) == ("blur", 2, 50.0)
    assert (ocr["corruption"], ocr["flip_rate"]) == ("ocr", 50.0)  # 'A dog!' is 'a dog' normalised
    [overall] = rows("general.flip_rate", FlipRateParams(over="corruption", reference="clean", bootstrap=100), FLIPS)
    assert overall["flip_rate"] == 50.0 and overall["groups"] == 2
    assert overall["ci_low"] <= 50.0 <= overall["ci_high"]


def test_flip_rate_of_correctness() -> None:
    params = FlipRateParams(over="corruption", reference="clean", flip="correctness", target="answer", bootstrap=0)
    [row] = rows("general.flip_rate", params, FLIPS)
    assert (row["flip_rate"], row["right_to_wrong"], row["wrong_to_right"]) == (50.0, 50.0, 0.0)


def test_flip_rate_needs_a_target_for_correctness() -> None:
    with pytest.raises(ValueError, match="needs `target`"):
        FlipRateParams(over="corruption", reference="clean", flip="correctness")


def test_worst_case_over_a_group() -> None:
    items = [item("a", 0, "dog", ["dog"]), item("a", 1, "a dog", ["dog"]), item("a", 2, "cat", ["dog"]),
             item("b", 0, "cat", ["cat"]), item("b", 1, "cat", ["cat"])]
    [row] = rows("general.worst_case", WorstCaseParams(target="answer", bootstrap=1000), items)
    assert (row["groups"], row["answers"], row["accuracy"], row["worst_case"]) == (2, 5, 80.0, 50.0)
    assert (row["ci_low"], row["ci_high"]) == (0.0, 100.0)
    [exact] = rows("general.worst_case", WorstCaseParams(target="answer", correct="exact", bootstrap=0), items)
    assert exact["accuracy"] == 60.0  # 'a dog' is not exactly 'dog'

"""MM-R3's metrics on hand-made items, with a stub embedder that returns chosen vectors (so every
similarity is known), and hand-computed expected numbers."""

from __future__ import annotations

import numpy as np
import pytest

from benchc.compiler.metrics import MMR3Params
from benchc.runtime.score.embed import Embedder
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem

# Three unit vectors with the paper's pairwise similarities: columbia . north face = 0.27,
# columbia . no = 0.14, north face . no = 0.24 (rows of the Cholesky factor of their Gram matrix).
PAPER = {"columbia": [1.0, 0.0, 0.0], "north face": [0.27, 0.96286032, 0.0],
         "no": [0.14, 0.20999931, 0.96762611]}


class VectorModel:
    """A sentence-transformers stand-in: chosen vectors, and a log of what it was asked."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in vectors.items()}
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vectors[t] for t in texts])


def stub(vectors: dict[str, list[float]]) -> Embedder:
    return Embedder("stub", VectorModel(vectors), {"embedder": "stub"})


def axis(k: int, dim: int = 8) -> list[float]:
    return [1.0 if i == k else 0.0 for i in range(dim)]


def items_of(group: str, responses: list[str], answers: list[str], attrs: list[dict] | None = None,
             samples: int = 1) -> list[ScoredItem]:
    out = []
    for k in range(0, len(responses), samples):
        out.append(ScoredItem(f"{group}#{k // samples}", group, (attrs or [{}] * len(responses))[k // samples],
                              {"answer": answers}, tuple(responses[k:k + samples])))
    return out


def score(items: list[ScoredItem], embedder: Embedder, **params: object) -> list[dict]:
    return METRICS.get("mmr3.all").score(MMR3Params(target="answer", **params),
                                         MetricInput(items, embedder, "m")).rows


def test_the_papers_worked_example() -> None:
    """MM-R3 appendix: answers columbia / north face / no, ground truth 'north face': Acc
    0/100/0 -> 33.3; pairwise 0.27/0.14/0.24 -> Con 0 and S_C (0.27+0.14+0.24)/3."""
    [row] = score(items_of("q", ["columbia", "north face", "no"], ["North Face"]), stub(PAPER))
    assert row["Acc"] == pytest.approx(33.3333, abs=1e-3)
    assert row["Con"] == 0.0
    assert row["S_C"] == pytest.approx(21.6667, abs=1e-3)
    assert row["S_GT"] == pytest.approx(100 * (0.27 + 1.0 + 0.24) / 3, abs=1e-3)  # 50.333
    # O_all = H((33.333 + 50.333) / 2, (0 + 21.667) / 2) = H(41.833, 10.833)
    assert row["O_all"] == pytest.approx(2 * 41.8333 * 10.8333 / (41.8333 + 10.8333), abs=1e-2)  # 17.21
    assert (row["groups"], row["responses"], row["pairs"]) == (1, 3, 3)


def test_con_counts_pairs_strictly_above_the_threshold() -> None:
    vectors = {"a": [1.0, 0.0], "b": [0.7, np.sqrt(1 - 0.49)], "c": [1.0, 0.0]}
    [row] = score(items_of("g", ["a", "b", "c"], ["a"]), stub(vectors))
    # sims: a.b = 0.7 (not > 0.7), a.c = 1, b.c = 0.7 -> Con = 1/3
    assert row["Con"] == pytest.approx(100 / 3, abs=1e-4)
    assert row["S_C"] == pytest.approx(100 * (0.7 + 1 + 0.7) / 3, abs=1e-4)


def test_sampling_setting_pairs_the_samples_of_one_item_only() -> None:
    """Two items of one group, two samples each: 'variants' has 6 pairs, 'sampling' 2."""
    vectors = {"cat": axis(0), "dog": axis(1)}
    items = items_of("g", ["cat", "cat", "dog", "dog"], ["cat"], samples=2)
    [variants] = score(items, stub(vectors))
    [sampling] = score(items, stub(vectors), setting="sampling")
    assert (variants["pairs"], sampling["pairs"]) == (6, 2)
    assert variants["Con"] == pytest.approx(100 * 2 / 6)  # only (cat, cat) and (dog, dog)
    assert sampling["Con"] == 100.0 and sampling["S_C"] == pytest.approx(100.0)
    assert variants["Acc"] == sampling["Acc"] == 50.0


def test_failure_cases_keep_incorrect_answers_and_their_pairs() -> None:
    vectors = {"a cat": axis(0), "a dog": axis(1), "a wolf": [0.0, 0.8, 0.6] + [0.0] * 5, "cat": axis(3)}
    items = items_of("g", ["a cat", "a dog", "a wolf"], ["cat"])
    [row] = score(items, stub(vectors), subset="failures")
    assert row["responses"] == 2 and row["Acc"] == 0.0
    assert row["pairs"] == 1 and row["S_C"] == pytest.approx(80.0)  # dog . wolf only


def test_breakdown_by_attribute_touching_and_within() -> None:
    """MM-R3's Tables 8-11: one row per mask colour. Items red, red, blue of one group; a pair
    counts for each colour of its two items ('touching'), or only with both ('within')."""
    vectors = {"x": axis(0), "y": axis(1)}
    attrs = [{"color": "red"}, {"color": "red"}, {"color": "blue"}]
    items = items_of("g", ["x", "x", "y"], ["x"], attrs=attrs)
    blue, red = score(items, stub(vectors), by=["color"])
    assert (blue["color"], red["color"]) == ("blue", "red")
    assert (blue["responses"], blue["pairs"], blue["Acc"], blue["Con"]) == (1, 2, 0.0, 0.0)
    assert (red["responses"], red["pairs"], red["Acc"]) == (2, 3, 100.0)
    assert red["Con"] == pytest.approx(100 / 3)  # (x, x) agrees; (x, y) twice does not
    blue_w, red_w = score(items, stub(vectors), by=["color"], pairs_by="within")
    assert (blue_w["pairs"], red_w["pairs"], red_w["Con"]) == (0, 1, 100.0)


def test_published_code_options() -> None:
    vectors = {"eiffel tower": axis(0), "a tower": axis(1), "the eiffel tower at night": axis(2),
               "Eiffel Tower": axis(3)}
    items = items_of("g", ["eiffel tower", "a tower", "the eiffel tower at night"], ["Eiffel Tower"])
    assert score(items, stub(vectors))[0]["Acc"] == pytest.approx(200 / 3)
    # the restyle script compares the label as is: a capitalised label never matches
    assert score(items, stub(vectors), lowercase_target=False)[0]["Acc"] == 0.0
    # the rephrase/masking scripts copy the 3rd answer's correctness into the 2nd
    assert score(items, stub(vectors), published_column_bug=True)[0]["Acc"] == 100.0
    # soft correctness (token-set ratio >= 85): 'a tower' vs 'eiffel tower' scores 67, no match
    assert score(items, stub(vectors), correctness="fuzzy")[0]["Acc"] == pytest.approx(200 / 3)


def test_masking_cleanup_applies_before_matching_and_embedding() -> None:
    vectors = {"dog": axis(0), "a dog": axis(1)}
    items = items_of("g", ["There is a dog in the masked region.", "a dog"], ["dog"])
    embedder = stub(vectors)
    [row] = score(items, embedder, cleanup="mmr3_masking_words")
    assert row["Con"] == 100.0  # both answers become 'dog'
    assert embedder.model.calls == [["dog"]]


def test_each_distinct_string_is_embedded_once_in_one_batch() -> None:
    """Batched and cached: one call to the model for the whole metric, each string once, and
    nothing at all for a second metric over the same answers."""
    vectors = {"cat": axis(0), "dog": axis(1), "bird": axis(2)}
    items = (items_of("a", ["cat", "dog", "cat"], ["cat"]) + items_of("b", ["dog", "dog", "bird"], ["dog"]))
    embedder = stub(vectors)
    first = score(items, embedder)
    assert embedder.model.calls == [["bird", "cat", "dog"]]
    assert score(items, embedder, by=[]) == first and len(embedder.model.calls) == 1


def test_groups_without_pairs_have_no_con_not_zero() -> None:
    """An empty set of pairs has no Con or S_C (None, shown as n/a), and so no O_all: a 0 would
    read as measured inconsistency (issue 14)."""
    [row] = score(items_of("g", ["cat"], ["cat"]), stub({"cat": axis(0)}))
    assert (row["pairs"], row["Con"], row["S_C"], row["O_all"]) == (0, None, None, None)
    assert row["Acc"] == 100.0

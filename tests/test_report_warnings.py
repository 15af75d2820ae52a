"""Numbers that could mislead carry a warning, in scores.json (the metric's notes) and in the
report: an MMCBench score that sums fewer corruptions than the run has, or averages a corruption
over fewer groups; a cosine threshold (MM-R3's Con > 0.7) applied to one-word answers, where
"Yes." and "No." count as consistent. The numbers themselves stay as the papers define them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchc import api
from benchc.compiler.metrics import AgreementParams, MMCBenchCrossParams, MMCBenchParams, MMR3Params
from benchc.runtime.score.embed import Embedder
from benchc.runtime.score.metrics import METRICS, MetricInput, MetricResult
from benchc.runtime.score.metrics.base import ScoredItem
from benchc.runtime.score.core import _result_json
from support.scores_run import scores_run

YES_NO = 0.73  # cos("Yes.", "No.") under all-MiniLM-L6-v2, as MM-R3's follow-up code embeds them


class Vectors:
    """A sentence-embedder stand-in with chosen unit vectors."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in vectors.items()}

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def embedder(vectors: dict[str, list[float]]) -> Embedder:
    return Embedder("stub", Vectors(vectors), {"embedder": "stub"})


def _report_of(tmp_path: Path, result: MetricResult) -> str:
    """report.md of a run whose scores.json holds ``result`` as `benchc score` writes it."""
    run = scores_run(tmp_path, {"benchmark": {"name": "lab/w", "version": "1.0.0"}, "manifest_digest": "12" * 32,
                                "model": "m", "items": 4, "metrics": [_result_json(result)]})
    return api.report(run).read_text()


# MMCBench: missing corruptions ---------------------------------------------------------------------

def corrupted(group: str, corruption: str, text: str, severity: str = "heavy") -> ScoredItem:
    return ScoredItem(f"{group}#{corruption}#{severity}", group, {"corruption": corruption, "severity": severity},
                      {}, (text,))


TEXTS = {"a dog": [1.0, 0.0], "a cat": [0.6, 0.8]}


def test_mmcbench_names_the_corruptions_a_split_misses(tmp_path: Path) -> None:
    """heavy has ocr and swap in both groups; light has no swap at all, and g2 has no ocr there;
    g3 has no clean item. Each is said, by name, in the notes and in the report."""
    items = [corrupted("g1", "clean", "a dog"), corrupted("g1", "ocr", "a dog"), corrupted("g1", "swap", "a cat"),
             corrupted("g2", "clean", "a dog"), corrupted("g2", "ocr", "a cat"), corrupted("g2", "swap", "a dog"),
             corrupted("g1", "clean", "a dog", "light"), corrupted("g1", "ocr", "a dog", "light"),
             corrupted("g2", "clean", "a dog", "light"),
             corrupted("g3", "ocr", "a dog", "light"), corrupted("g3", "swap", "a dog", "light")]
    result = METRICS.get("mmcbench.consistency").score(MMCBenchParams(by=["severity"]),
                                                       MetricInput(items, embedder(TEXTS), "asr"))
    heavy, light = result.rows
    assert heavy["score"] == pytest.approx(100 * (0.8 + 0.8)) and heavy["corruptions"] == 2  # unchanged
    assert light["score"] == pytest.approx(100.0) and light["max"] == 100
    warnings = [n for n in result.notes if n.startswith("WARNING:")]
    assert warnings == [
        "WARNING: light: no corruption swap (1 of the 2 in this run): the score sums 1 means (max 100), not 2.",
        "WARNING: light: corruption missing from some groups, so its mean is over the other groups only: "
        "ocr (1 of 2 groups).",
        "WARNING: light: 1 of 3 groups have no single item with corruption = 'clean' and are left out.",
    ]
    assert not any(n.startswith("WARNING: heavy") for n in result.notes)
    report = _report_of(tmp_path, result)
    assert "> WARNING: light: no corruption swap (1 of the 2 in this run)" in report


def test_mmcbench_cross_modal_warns_the_same_way() -> None:
    class Clip:
        def embed_texts(self, texts: list[str]) -> np.ndarray:
            return np.stack([np.asarray(TEXTS[t], dtype=np.float32) for t in texts])

        def embed_images(self, images: list[bytes]) -> np.ndarray:
            return np.stack([np.asarray([1.0, 0.0], dtype=np.float32) for _ in images])

    def item(group: str, corruption: str, caption: str) -> ScoredItem:
        return ScoredItem(f"{group}#{corruption}", group, {"corruption": corruption}, {}, (caption,),
                          media=(("image", f"{group}{corruption}"),))

    items = [item("g1", "clean", "a dog"), item("g1", "ocr", "a cat"), item("g1", "blur", "a dog"),
             item("g2", "clean", "a dog"), item("g2", "ocr", "a dog")]
    result = METRICS.get("mmcbench.cross_modal").score(
        MMCBenchCrossParams(task="image2text", clip="unused"),
        MetricInput(items, None, "m", media=lambda kind, sha: sha.encode(), cross_embedder=Clip()))
    assert ("WARNING: corruption missing from some groups, so its mean is over the other groups only: "
            "blur (1 of 2 groups).") in result.notes


def test_mmcbench_with_every_corruption_everywhere_has_no_warning() -> None:
    items = [corrupted(g, c, "a dog") for g in ("g1", "g2") for c in ("clean", "ocr", "swap")]
    result = METRICS.get("mmcbench.consistency").score(MMCBenchParams(), MetricInput(items, embedder(TEXTS), "asr"))
    assert not [n for n in result.notes if n.startswith("WARNING")]


# a similarity threshold and one-word answers -------------------------------------------------------

SHORT = {"yes.": [1.0, 0.0], "no.": [YES_NO, float(np.sqrt(1 - YES_NO ** 2))],
         "the dog is on the sofa": [0.0, 1.0], "a dog is lying on a sofa": [0.1, 1.0],
         "yes": [1.0, 0.0], "dog": [0.2, 1.0]}  # the targets (S_GT)


def _mmr3(items: list[ScoredItem]) -> MetricResult:
    return METRICS.get("mmr3.all").score(MMR3Params(target="answer"), MetricInput(items, embedder(SHORT), "m"))


def test_mmr3_con_on_one_word_answers_carries_a_note_and_keeps_the_papers_number(tmp_path: Path) -> None:
    yes_no = [ScoredItem("q#0", "q", {}, {"answer": ["yes"]}, ("Yes.",)),
              ScoredItem("q#1", "q", {}, {"answer": ["yes"]}, ("No.",))]
    sentences = [ScoredItem("s#0", "s", {}, {"answer": ["dog"]}, ("The dog is on the sofa",)),
                 ScoredItem("s#1", "s", {}, {"answer": ["dog"]}, ("A dog is lying on a sofa",))]
    result = _mmr3(yes_no + sentences)
    [row] = result.rows
    assert row["Con"] == 100.0  # cos 0.73 > 0.7: "Yes." and "No." count as consistent, as the paper defines
    assert (row["pairs"], row["short_pairs"]) == (2, 1)
    [note] = [n for n in result.notes if "not meaningful" in n]
    assert note.startswith("WARNING: Con: 1 of 2 answer pairs are two answers of at most 2 words each.")
    assert "(> 0.7)" in note and '"Yes." vs "No."' in note
    assert "> WARNING: Con: 1 of 2 answer pairs" in _report_of(tmp_path, result)


def test_no_note_when_every_answer_is_a_sentence() -> None:
    sentences = [ScoredItem("s#0", "s", {}, {"answer": ["dog"]}, ("The dog is on the sofa",)),
                 ScoredItem("s#1", "s", {}, {"answer": ["dog"]}, ("A dog is lying on a sofa",))]
    result = _mmr3(sentences)
    assert result.rows[0]["short_pairs"] == 0 and not [n for n in result.notes if "not meaningful" in n]


def test_an_embedding_agreement_carries_the_same_note() -> None:
    items = [ScoredItem("q#0", "q", {}, {}, ("yes.",)), ScoredItem("q#1", "q", {}, {}, ("no.",))]
    result = METRICS.get("general.agreement").score(AgreementParams(match="embedding", threshold=0.7, bootstrap=0),
                                                    MetricInput(items, embedder(SHORT), "m"))
    assert result.rows[0]["agreement"] == 100.0
    assert any(n.startswith("WARNING: agreement: 1 of 1 answer pairs are two answers of at most 2 words")
               for n in result.notes)
    exact = METRICS.get("general.agreement").score(AgreementParams(bootstrap=0), MetricInput(items, None, "m"))
    assert not any("not meaningful" in n for n in exact.notes)  # no threshold, no note


def test_an_empty_set_of_pairs_has_no_score_and_the_report_says_n_a(tmp_path: Path) -> None:
    lone = [ScoredItem("q#0", "q", {"color": "red"}, {"answer": ["yes"]}, ("Yes.",)),
            ScoredItem("r#0", "r", {"color": "blue"}, {"answer": ["yes"]}, ("the dog is on the sofa",)),
            ScoredItem("r#1", "r", {"color": "blue"}, {"answer": ["yes"]}, ("a dog is lying on a sofa",))]
    result = METRICS.get("mmr3.all").score(MMR3Params(target="answer", by=["color"]),
                                           MetricInput(lone, embedder(SHORT), "m"))
    blue, red = result.rows
    assert red["pairs"] == 0 and (red["Con"], red["S_C"], red["O_all"]) == (None, None, None)
    assert blue["Con"] is not None
    line = next(row for row in _report_of(tmp_path, result).splitlines() if row.startswith("| red |"))
    assert line.startswith("| red | 1 | 1 | 100.00 |") and line.endswith("| n/a | n/a | n/a |")


def test_with_the_real_minilm_yes_and_no_pass_the_threshold_and_the_note_says_so() -> None:
    """The case behind the note, measured: all-MiniLM-L6-v2 (MM-R3's follow-up code's embedder)
    puts "Yes." and "No." at cosine 0.73, so Con counts them as consistent."""
    from benchc.runtime.score.embed import load_embedder

    items = [ScoredItem("q#0", "q", {}, {"answer": ["yes"]}, ("Yes.",)),
             ScoredItem("q#1", "q", {}, {"answer": ["yes"]}, ("No.",))]
    result = METRICS.get("mmr3.all").score(MMR3Params(target="answer"),
                                           MetricInput(items, load_embedder("minilm"), "m"))
    assert result.rows[0]["Con"] == 100.0 and result.rows[0]["S_C"] == pytest.approx(73.03, abs=0.01)
    assert result.notes[0].startswith("WARNING: Con: 1 of 1 answer pairs are two answers of at most 2 words")

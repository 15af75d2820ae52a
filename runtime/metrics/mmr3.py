"""MM-R3's metrics (seed 000; benchmarks.md 1.4, from the authors' follow-up code).

Per group (the variants of one source item) with responses r_1..r_k:
  Acc  = mean over responses of [some ground-truth answer is a substring of the response] x100
  S_GT = mean over responses of max over answers of cos(emb(r), emb(answer)) x100
  Con  = mean over response pairs of [cos(emb(r_i), emb(r_j)) > 0.7] x100 (strict >)
  S_C  = mean over response pairs of cos(emb(r_i), emb(r_j)) x100
  O_all = harmonic mean of (Acc + S_GT) / 2 and (Con + S_C) / 2
Responses are lower-cased with '</s>' removed, as in the published scripts. Means run over all
responses (and all pairs) of the split, as the published scripts average their [N, k] matrices.
"""

from __future__ import annotations

import itertools
import re
import statistics
from typing import Any

import numpy as np

from benchc.compiler.metrics import MMR3Params

from .base import METRICS, Metric, MetricInput, MetricResult, ScoredItem, groups_of, split_by

# The published masking clean-up: plain str.replace calls in this order, then one leading space
# dropped. They are raw substring replaces ('this ' becomes 'th'); kept literally for parity.
LITERAL_REPLACEMENTS = (
    (",", ""), (".", ""), ("in the masked region", ""), ("the masked region", ""),
    ("there is ", ""), ("is ", ""), ("contains ", ""), ("</s>", ""), ("the ", ""), ("in ", ""),
    ("of ", ""), ("image", ""), (" a ", " "), (" an ", " "),
)
# The paper's description ("filtering out common words like there, is, of, in, the ... masked
# region, image") applied to whole words, which does not mangle words such as 'this'.
FILLER_PHRASES = ("in the masked region", "the masked region", "masked region")
FILLER_WORDS = {"there", "is", "contains", "the", "in", "of", "image", "a", "an"}


def clean_literal(text: str) -> str:
    for old, new in LITERAL_REPLACEMENTS:
        text = text.replace(old, new)
    return text[1:] if text.startswith(" ") else text


def clean_words(text: str) -> str:
    for phrase in FILLER_PHRASES:
        text = text.replace(phrase, " ")
    words = re.findall(r"[\w'-]+", text)
    return " ".join(w for w in words if w not in FILLER_WORDS)


def prepare(text: str, cleanup: str) -> str:
    text = text.replace("</s>", "").lower()
    if cleanup == "mmr3_masking_literal":
        return clean_literal(text)
    if cleanup == "mmr3_masking_words":
        return clean_words(text)
    return text


def harmonic(a: float, b: float) -> float:
    return statistics.harmonic_mean([a, b]) if a > 0 and b > 0 else 0.0


class MMR3All(Metric):
    name = "mmr3.all"

    def score(self, params: MMR3Params, data: MetricInput) -> MetricResult:
        rows = []
        for key, part in split_by(data.items, params.by).items():
            row: dict[str, Any] = dict(zip(params.by, key))
            row.update(self._scores(params, part, data))
            rows.append(row)
        notes = [f"Similarities: {data.embedder.fingerprint['embedder']} (MM-R3's follow-up code uses "
                 "sentence-transformers/all-MiniLM-L6-v2)."]
        if params.cleanup != "none":
            notes.append(f"Response clean-up: {params.cleanup}.")
        columns = [*params.by, "groups", "responses", "Acc", "S_GT", "Con", "S_C", "O_all"]
        return MetricResult(self.name, columns, rows, notes=notes)

    def _scores(self, params: MMR3Params, items: list[ScoredItem], data: MetricInput) -> dict[str, Any]:
        correct, s_gt, pair_sims = [], [], []
        for group in groups_of(items).values():
            responses = [prepare(r, params.cleanup) for item in group for r in item.responses]
            answers = [a for a in group[0].targets.get(params.target, [])]
            emb = data.embedder.encode(responses)
            gt = data.embedder.encode([a.lower() for a in answers]) if answers else None
            for index, response in enumerate(responses):
                correct.append(any(a.lower() in response for a in answers))
                s_gt.append(float(np.max(gt @ emb[index])) if gt is not None else 0.0)
            pair_sims += [float(emb[i] @ emb[j]) for i, j in itertools.combinations(range(len(responses)), 2)]
        acc = 100 * float(np.mean(correct)) if correct else 0.0
        sgt = 100 * float(np.mean(s_gt)) if s_gt else 0.0
        con = 100 * float(np.mean([s > params.threshold for s in pair_sims])) if pair_sims else 0.0
        sc = 100 * float(np.mean(pair_sims)) if pair_sims else 0.0
        return {"groups": len(groups_of(items)), "responses": len(correct), "Acc": acc, "S_GT": sgt,
                "Con": con, "S_C": sc, "O_all": harmonic((acc + sgt) / 2, (con + sc) / 2)}


METRICS.register(MMR3All.name, MMR3All())

"""MM-R3's metrics (seed 000, appendix "Calculation of ..."; benchmarks.md 1.4, from the authors'
follow-up code, testtime_const_VLM@9051bff metrics_*_constant.py).

Per group (the variants of one source item) with responses r_1..r_k:
  Acc  = mean over responses of [some ground-truth answer is a substring of the response] x100
         (paper: "case-insensitive substring matching"; worked example: answers columbia /
         north face / no, ground truth "north face": 0/100/0 -> 33.3)
  S_GT = mean over responses of max over answers of cos(emb(r), emb(answer)) x100
  Con  = mean over response pairs of [cos(emb(r_i), emb(r_j)) > 0.7] x100 (strict >; paper:
         pairwise 0.27/0.14/0.24 -> Con 0)
  S_C  = mean over response pairs of cos(emb(r_i), emb(r_j)) x100 (paper: (0.27+0.14+0.24)/3 = 0.21)
  O_all = harmonic mean of (Acc + S_GT) / 2 and (Con + S_C) / 2 (0 if either is 0)
Responses are lower-cased with '</s>' removed, as in the published scripts. Means run over all
responses (and all pairs) of the split, as the published scripts average their [N, k] matrices.

Settings (MM-R3 section 4 and appendix):
  * ``setting = "variants"`` (All Data): pairs among all answers of a group (its variants, and
    their samples if any). ``"sampling"``: pairs among the samples of one item only (the same
    input asked k times: MM-R3 asks four times); Acc and S_GT still run over every answer.
  * ``subset = "failures"`` (MM-R3's Table 4, "we only focus on incorrect answers"): only
    answers that are not correct (under ``correctness``), and only pairs of two such answers.
    Which answers count as failures is not spelled out in the paper; this is our reading.
  * ``by``: rows per attribute value (MM-R3's Tables 8-11: style, mask colour, lines, shape).
    Each answer counts under its item's value. A pair of answers counts under the value of
    each of its two items (``pairs_by = "touching"``; a pair of two items with the same value
    counts once), so a style's Con says how consistent that style's answers are with the
    other styles of the same image; ``"within"`` keeps only pairs of two items with the value
    (empty when each group has one item per value). The paper does not say how its per-value
    Con was computed; "touching" is our reading.

Divergences from the published code, each available as an option:
  * ``correctness = "fuzzy"``: the follow-up code's "soft correctness",
    ``fuzz.token_set_ratio(gt, resp) >= 85`` (fuzzywuzzy), which its adaptive and restyle
    scripts use instead of Acc. Computed with rapidfuzz's ``token_set_ratio`` on
    ``default_process``-ed strings, rounded to an integer as fuzzywuzzy returns it.
  * ``lowercase_target = false``: the restyle script compares the ground truth as is against the
    lower-cased response, so capitalised landmark names never match.
  * ``published_column_bug = true``: the rephrase and masking scripts set the correctness of the
    2nd answer of each item from the 3rd answer (``correct[:, 1]`` from ``results_2``).
  * ``cleanup = "mmr3_masking_literal"``: the masking scripts' plain ``str.replace`` calls, in
    their order (they mangle words: 'this ' -> 'th'); ``"mmr3_masking_words"`` removes the same
    filler words and phrases as whole words (the paper's description).
The published masking scripts also reference undefined variables (they cannot run as
released); nothing of that is replayed.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

import numpy as np

from benchc.compiler.metrics import MMR3Params

from benchc.compiler.similarity import cosine, fmean, row_cosines
from .base import Metric, MetricInput, MetricResult, ScoredItem, groups_of, split_by, metric
from .text import is_short_answer, short_pairs_note

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


def harmonic(a: float | None, b: float | None) -> float | None:
    """MM-R3's O_all of its two halves: 0 if either is 0; None (n/a) if either is undefined."""
    if a is None or b is None:
        return None
    return statistics.harmonic_mean([a, b]) if a > 0 and b > 0 else 0.0


def _half(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else (x + y) / 2


def is_correct(response: str, answers: list[str], params: MMR3Params) -> bool:
    if params.correctness == "fuzzy":
        from rapidfuzz import fuzz, utils

        return any(round(fuzz.token_set_ratio(a, response, processor=utils.default_process))
                   >= params.fuzzy_threshold for a in answers)
    return any(a in response for a in answers)


class _Scored:
    """Every answer (its item, correctness, S_GT) and every pair (its two answers, cosine)."""

    def __init__(self, params: MMR3Params, items: list[ScoredItem], data: MetricInput) -> None:
        assert data.embedder is not None
        groups = groups_of(items)
        self.items: list[ScoredItem] = []
        texts: list[str] = []
        answer_texts: list[str] = []
        owner: list[int] = []  # answer index -> item index
        answer_span: list[tuple[int, int]] = []  # item index -> its group's answers in answer_texts
        correct: list[bool] = []
        pairs: list[tuple[int, int]] = []
        self.group_of: list[int] = []
        for g, group in enumerate(groups.values()):
            raw = group[0].targets.get(params.target, [])
            answers = [a.lower() for a in raw] if params.lowercase_target else list(raw)
            span = (len(answer_texts), len(answer_texts) + len(answers))
            answer_texts += answers
            group_start = len(texts)
            for item in group:
                item_index = len(self.items)
                self.items.append(item)
                self.group_of.append(g)
                answer_span.append(span)
                item_start = len(texts)
                for response in item.responses:
                    text = prepare(response, params.cleanup)
                    texts.append(text)
                    owner.append(item_index)
                    correct.append(is_correct(text, answers, params))
                if params.setting == "sampling":
                    pairs += _pairs(item_start, len(texts))
            if params.published_column_bug and len(texts) - group_start >= 3:
                correct[group_start + 1] = correct[group_start + 2]
            if params.setting == "variants":
                pairs += _pairs(group_start, len(texts))
        emb = data.embedder.encode(texts + answer_texts) if texts else np.zeros((0, 0), np.float32)
        responses, gt = emb[:len(texts)], emb[len(texts):]
        s_gt = np.zeros(len(texts))
        for index in range(len(texts)):
            lo, hi = answer_span[owner[index]]
            if hi > lo:  # an answer equal to a ground truth has S_GT exactly 1 (similarity.py)
                s_gt[index] = max(cosine(gt[k], responses[index], same=answer_texts[k] == texts[index])
                                  for k in range(lo, hi))
        self.owner = np.asarray(owner, dtype=np.int64)
        self.correct = np.asarray(correct, dtype=bool)
        self.short = np.asarray([is_short_answer(t) for t in texts], dtype=bool)
        self.s_gt = s_gt
        pair_array = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.pairs = pair_array
        same = [texts[a] == texts[b] for a, b in pair_array.tolist()]
        self.sims = row_cosines(responses[pair_array[:, 0]], responses[pair_array[:, 1]], same)

    def pairs_in(self, params: MMR3Params, in_split: np.ndarray) -> np.ndarray:
        """Which pairs count for the items ``in_split`` marks (``pairs_by``, ``subset``)."""
        a, b = self.pairs[:, 0], self.pairs[:, 1]
        item_a, item_b = self.owner[a], self.owner[b]
        if params.pairs_by == "touching":
            pair_in = in_split[item_a] | in_split[item_b]
        else:
            pair_in = in_split[item_a] & in_split[item_b]
        if params.subset == "failures":
            pair_in = pair_in & ~self.correct[a] & ~self.correct[b]
        return pair_in

    def short_pairs(self, pair_in: np.ndarray) -> int:
        """Pairs of two short answers (``text.is_short_answer``) among ``pair_in``."""
        return int((pair_in & self.short[self.pairs[:, 0]] & self.short[self.pairs[:, 1]]).sum())

    def row(self, params: MMR3Params, in_split: np.ndarray) -> dict[str, Any]:
        """Scores over the answers of the items ``in_split`` marks (a bool per item). With no
        answer (no pair) in the split, Acc and S_GT (Con and S_C) are None, shown as n/a: an
        empty set has no score, and a 0 would read as a measured one; O_all then is None too."""
        answer_in = in_split[self.owner]
        if params.subset == "failures":
            answer_in = answer_in & ~self.correct
        pair_in = self.pairs_in(params, in_split)
        sims = self.sims[pair_in]
        acc = 100 * float(np.mean(self.correct[answer_in])) if answer_in.any() else None
        sgt = 100 * fmean(self.s_gt[answer_in].tolist()) if answer_in.any() else None
        con = 100 * float(np.mean(sims > params.threshold)) if len(sims) else None
        sc = 100 * fmean(sims.tolist()) if len(sims) else None
        groups = len({self.group_of[i] for i in np.flatnonzero(in_split)})
        return {"groups": groups, "responses": int(answer_in.sum()), "pairs": int(pair_in.sum()),
                "short_pairs": self.short_pairs(pair_in), "Acc": acc, "S_GT": sgt, "Con": con, "S_C": sc,
                "O_all": harmonic(_half(acc, sgt), _half(con, sc))}


def _pairs(start: int, stop: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(start, stop) for j in range(i + 1, stop)]


@metric("mmr3.all", MMR3Params)
class MMR3All(Metric):
    percent_columns = frozenset({"Acc", "S_GT", "Con", "S_C", "O_all"})

    def score(self, params: MMR3Params, data: MetricInput) -> MetricResult:
        scored = _Scored(params, data.items, data)
        index = {item.item_id: k for k, item in enumerate(scored.items)}
        rows = []
        for key, part in split_by(scored.items, params.by).items():
            in_split = np.zeros(len(scored.items), dtype=bool)
            in_split[[index[item.item_id] for item in part]] = True
            row: dict[str, Any] = dict(zip(params.by, key))
            row.update(scored.row(params, in_split))
            rows.append(row)
        assert data.embedder is not None
        notes = [f"Similarities: {data.embedder.fingerprint['embedder']} (MM-R3's follow-up code uses "
                 "sentence-transformers/all-MiniLM-L6-v2)."]
        notes.append("Acc: the ground truth as a SUBSTRING of the answer (MM-R3's rule; lenient: 'no' is "
                     "inside 'not')." if params.correctness == "substring" else
                     f"Acc: fuzzy token-set ratio >= {params.fuzzy_threshold} (the follow-up code's soft rule).")
        if params.cleanup != "none":
            notes.append(f"Response clean-up: {params.cleanup}.")
        if params.setting == "sampling":
            notes.append("Sampling setting: Con and S_C compare the samples of each item.")
        if params.subset == "failures":
            notes.append("Failure cases only: incorrect answers, and pairs of two incorrect answers.")
        if params.by and params.pairs_by == "touching":
            notes.append(f"Pairs count under the {', '.join(params.by)} value of each of their two items.")
        every = scored.pairs_in(params, np.ones(len(scored.items), dtype=bool))
        short = short_pairs_note("Con", scored.short_pairs(every), int(every.sum()), params.threshold)
        if short is not None:
            notes.insert(0, short)
        # "pairs" and "short_pairs" are in each row (scores.json) but not table columns: the table
        # keeps its shape
        columns = [*params.by, "groups", "responses", "Acc", "S_GT", "Con", "S_C", "O_all"]
        return MetricResult(self.name, columns, rows, notes=notes)

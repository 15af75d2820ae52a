"""Consistency metrics for any spec: agreement within a group, flips against the unperturbed
item, and the worst case over a group, each with a seeded bootstrap interval over groups.

Matching two answers (``match``): ``exact`` (identical after stripping white space),
``normalized`` (SQuAD-style: lower-case, number words as digits, no punctuation or articles,
white space collapsed: "Two dogs." agrees with "2 dogs"), ``embedding`` (cosine similarity of
the sentence embeddings > ``threshold``; the mean similarity is reported too). Correctness
(``correct``): a target answer as a case-insensitive substring of the answer (MM-R3's Acc),
or equal to it exactly (case-insensitive) or after normalisation.

``general.agreement``: the share of answer pairs within a group that agree (every answer of a
group: its items' variants and samples). With ``by``, a pair counts under the value of each of
its two items (``pairs_by = "touching"``) or only when both have it (``"within"``), in the
shape of MM-R3's Tables 8-11.

``general.flip_rate``: each item of a group is compared with the group's unperturbed item
(``over`` = ``reference``), answer by answer for the same sample index. ``flip = "answer"``:
the two answers disagree; ``"correctness"``: one is correct and the other is not (reported
also as right_to_wrong and wrong_to_right). Rows split by the perturbed item's attributes
(``by = ["corruption"]`` gives one row per perturbation).

``general.worst_case``: a group is correct only if every answer of its items (in the split) is
correct; worst_case is the share of such groups, accuracy the plain share of correct answers.

Intervals: the groups of a split are resampled with replacement ``bootstrap`` times (one
``numpy`` index draw from ``default_rng(seed)``), the statistic recomputed as a ratio of summed
counts, and the percentile interval at ``confidence`` reported (ci_low, ci_high).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchc.compiler.metrics import AccuracyParams, AgreementParams, ConsistencyParams, FlipRateParams, WorstCaseParams

from ..answers import correctness_note, is_correct

from benchc.compiler.similarity import cosine
from .base import Metric, MetricInput, MetricResult, ScoredItem, Unit, groups_of, split_by, target_value, metric
from .mmcbench import anchored_groups, left_out_note
from .text import bootstrap_ratio, is_short_answer, normalize_answer, short_pairs_note, yes_no


class _Matcher:
    """Agreement of answer pairs, with the embeddings of all answers computed in one batch."""

    def __init__(self, match: str, threshold: float, data: MetricInput, texts: list[str]) -> None:
        self.match, self.threshold = match, threshold
        self.compared = 0  # pairs judged by the embedding threshold, and those of two short answers
        self.short = 0
        self.index = {t: k for k, t in enumerate(dict.fromkeys(texts))}
        self.emb = None
        if match == "embedding":
            assert data.embedder is not None
            self.emb = data.embedder.encode(list(self.index))
        elif match == "normalized":
            self.norm = [normalize_answer(t) for t in self.index]
        else:
            self.norm = [t.strip() for t in self.index]

    def similarity(self, a: str, b: str) -> float | None:
        if self.emb is None:
            return None
        return cosine(self.emb[self.index[a]], self.emb[self.index[b]], same=a == b)

    def agree(self, a: str, b: str) -> bool:
        """Whether two answers agree; an empty answer (nothing read) agrees with none. Counts
        the pairs the embedding threshold judges, and those of two short answers, for the note
        ``_short_note`` writes."""
        if not a.strip() or not b.strip():
            return False
        if self.emb is not None:
            self.compared += 1
            self.short += is_short_answer(a) and is_short_answer(b)
            return (self.similarity(a, b) or 0.0) > self.threshold
        return self.norm[self.index[a]] == self.norm[self.index[b]]


def targets_of(item: ScoredItem, path: str) -> list[str]:
    """The item's target(s) at ``path`` as strings ([] when it has none)."""
    value = target_value(item, path)
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _short_note(matcher: _Matcher | None, what: str) -> list[str]:
    """The threshold note (``text.short_pairs_note``) when an embedding match met short answers."""
    if matcher is None or matcher.emb is None:
        return []
    note = short_pairs_note(what, matcher.short, matcher.compared, matcher.threshold)
    return [note] if note is not None else []


def percent_interval(num: list[float], den: list[float], params: Any) -> dict[str, float | None]:
    """ci_low and ci_high (x100) of sum(num)/sum(den), one entry per group (``bootstrap_ratio``)."""
    low, high = bootstrap_ratio(np.asarray(num), np.asarray(den), params.bootstrap, params.confidence, params.seed)
    return {"ci_low": None if low is None else 100 * low, "ci_high": None if high is None else 100 * high}


def _in_split(items: list[ScoredItem], by: list[str]) -> list[tuple[tuple[Any, ...], set[str]]]:
    return [(key, {i.item_id for i in part}) for key, part in split_by(items, by).items()]


INTERVALS = frozenset({"ci_low", "ci_high"})


def _share(num: float, den: float) -> float | None:
    return num / den if den else None


def _item_units(row: int, tallies: dict[str, dict[str, list[float]]], refs: dict[str, str]) -> list[Unit]:
    """One unit per perturbed item, followed by the reference item it was compared with (``refs``):
    ``tallies`` item id -> column -> [count, of], in the order met."""
    return [Unit(row, "item", item, (item, refs[item]), {c: _share(*v) for c, v in columns.items()})
            for item, columns in tallies.items()]


def _references(anchored: list[tuple[ScoredItem, list[ScoredItem]]]) -> dict[str, str]:
    """perturbed item id -> the id of its group's reference item."""
    return {item.item_id: ref.item_id for ref, others in anchored for item in others}


@metric("general.agreement", AgreementParams)
class Agreement(Metric):
    percent_columns = frozenset({"agreement", "similarity", *INTERVALS})

    def needs_embedder(self, params: AgreementParams) -> bool:
        return params.match == "embedding"

    def score(self, params: AgreementParams, data: MetricInput) -> MetricResult:
        groups = groups_of(data.items)
        matcher = _Matcher(params.match, params.threshold, data, [r for i in data.items for r in i.responses])
        # every pair of answers within a group: (group, item a, item b, agree, similarity)
        pairs = []
        for g, group in enumerate(groups.values()):
            answers = [(item.item_id, r) for item in group for r in item.responses]
            for x in range(len(answers)):
                for y in range(x + 1, len(answers)):
                    (ia, a), (ib, b) = answers[x], answers[y]
                    pairs.append((g, ia, ib, matcher.agree(a, b), matcher.similarity(a, b)))
        rows: list[dict[str, Any]] = []
        units: list[Unit] = []
        for key, ids in _in_split(data.items, params.by):
            if params.pairs_by == "touching":
                mine = [p for p in pairs if p[1] in ids or p[2] in ids]
            else:
                mine = [p for p in pairs if p[1] in ids and p[2] in ids]
            per_group: dict[int, list[float]] = {}
            for g, _, _, agree, _ in mine:
                per_group.setdefault(g, [0.0, 0.0])
                per_group[g][0] += agree
                per_group[g][1] += 1
            num = [v[0] for v in per_group.values()]
            den = [v[1] for v in per_group.values()]
            row: dict[str, Any] = {**dict(zip(params.by, key)), "groups": len(per_group), "pairs": len(mine),
                                   "agreement": 100 * sum(num) / sum(den) if mine else None,
                                   **percent_interval(num, den, params)}
            if params.match == "embedding":
                row["similarity"] = 100 * float(np.mean([p[4] for p in mine])) if mine else None
            rows.append(row)
            units.extend(self._units(len(rows) - 1, mine, groups, params.match == "embedding"))
        columns = [*params.by, "groups", "pairs", "agreement", "ci_low", "ci_high"]
        if params.match == "embedding":
            columns.append("similarity")
        notes = [*_short_note(matcher, "agreement"), _note(params, data)]
        return MetricResult(self.name, columns, rows, notes=notes, units=units)

    @staticmethod
    def _units(row: int, pairs: list[tuple[Any, ...]], groups: dict[str, list[ScoredItem]],
               similar: bool) -> list[Unit]:
        """One unit per group with a pair in the row: the share of its pairs that agree."""
        names = list(groups)
        mine: dict[int, list[tuple[Any, ...]]] = {}
        for pair in pairs:
            mine.setdefault(pair[0], []).append(pair)
        units = []
        for g, kept in mine.items():
            values: dict[str, float | None] = {"agreement": sum(p[3] for p in kept) / len(kept)}
            if similar:
                values["similarity"] = float(np.mean([p[4] for p in kept]))
            units.append(Unit(row, "group", names[g], tuple(i.item_id for i in groups[names[g]]), values))
        return units


@metric("general.flip_rate", FlipRateParams)
class FlipRate(Metric):
    percent_columns = frozenset({"flip_rate", "right_to_wrong", "wrong_to_right", *INTERVALS})

    def needs_embedder(self, params: FlipRateParams) -> bool:
        return params.flip == "answer" and params.match == "embedding"

    def score(self, params: FlipRateParams, data: MetricInput) -> MetricResult:
        anchored = anchored_groups(data.items, params.over, params.reference)
        matcher = (_Matcher(params.match, params.threshold, data, [r for i in data.items for r in i.responses])
                   if params.flip == "answer" else None)
        # every comparison: (group, perturbed item, flipped, right_to_wrong, wrong_to_right)
        comparisons = []
        for g, (ref, others) in enumerate(anchored):
            truth = targets_of(ref, params.target) if params.target else []
            for item in others:
                for a, b in zip(ref.responses, item.responses):
                    if matcher is not None:
                        comparisons.append((g, item.item_id, not matcher.agree(a, b), False, False))
                    else:
                        was, now = (is_correct(a, truth, params.correct, ref.prompt),
                                    is_correct(b, truth, params.correct, item.prompt))
                        comparisons.append((g, item.item_id, was != now, was and not now, now and not was))
        perturbed = [i for _, others in anchored for i in others]
        rows: list[dict[str, Any]] = []
        units: list[Unit] = []
        for key, ids in _in_split(perturbed, params.by):
            mine = [c for c in comparisons if c[1] in ids]
            units.extend(self._units(len(rows), mine, params.flip == "correctness", _references(anchored)))
            per_group: dict[int, list[float]] = {}
            for c in mine:
                per_group.setdefault(c[0], [0.0, 0.0])
                per_group[c[0]][0] += c[2]
                per_group[c[0]][1] += 1
            num = [v[0] for v in per_group.values()]
            den = [v[1] for v in per_group.values()]
            row: dict[str, Any] = {**dict(zip(params.by, key)), "groups": len(per_group), "comparisons": len(mine),
                                   "flip_rate": 100 * sum(num) / sum(den) if mine else None,
                                   **percent_interval(num, den, params)}
            if params.flip == "correctness":
                row["right_to_wrong"] = 100 * float(np.mean([c[3] for c in mine])) if mine else None
                row["wrong_to_right"] = 100 * float(np.mean([c[4] for c in mine])) if mine else None
            rows.append(row)
        columns = [*params.by, "groups", "comparisons", "flip_rate", "ci_low", "ci_high"]
        if params.flip == "correctness":
            columns += ["right_to_wrong", "wrong_to_right"]
        notes = [*_short_note(matcher, "flip_rate"), _note(params, data),
                 f"Reference: the item with {params.over} = {params.reference!r} of each group "
                 f"({len(anchored)} groups have exactly one).",
                 *left_out_note(data.items, params.over)]
        return MetricResult(self.name, columns, rows, notes=notes, units=units)

    @staticmethod
    def _units(row: int, comparisons: list[tuple[Any, ...]], correctness: bool, refs: dict[str, str]) -> list[Unit]:
        """One unit per perturbed item: the share of its comparisons that flipped."""
        tallies: dict[str, dict[str, list[float]]] = {}
        names = ["flip_rate", "right_to_wrong", "wrong_to_right"] if correctness else ["flip_rate"]
        for c in comparisons:
            columns = tallies.setdefault(c[1], {n: [0.0, 0.0] for n in names})
            for n, flag in zip(names, c[2:]):
                columns[n][0] += flag
                columns[n][1] += 1
        return _item_units(row, tallies, refs)


@metric("general.worst_case", WorstCaseParams)
class WorstCase(Metric):
    uses_embedder = False
    percent_columns = frozenset({"accuracy", "acc_ci_low", "acc_ci_high", "worst_case", *INTERVALS})

    def score(self, params: WorstCaseParams, data: MetricInput) -> MetricResult:
        rows: list[dict[str, Any]] = []
        units: list[Unit] = []
        for key, part in split_by(data.items, params.by).items():
            worst, right, answers = [], [], []
            for group_id, group in groups_of(part).items():
                correct = [is_correct(r, targets_of(item, params.target), params.correct, item.prompt)
                           for item in group for r in item.responses]
                if not correct:
                    continue
                units.append(Unit(len(rows), "group", group_id, tuple(i.item_id for i in group),
                                  {"accuracy": sum(correct) / len(correct), "worst_case": float(all(correct))}))
                worst.append(float(all(correct)))
                right.append(float(sum(correct)))
                answers.append(float(len(correct)))
            ones = [1.0] * len(worst)
            acc = percent_interval(right, answers, params)
            rows.append({**dict(zip(params.by, key)), "groups": len(worst), "answers": int(sum(answers)),
                         "accuracy": 100 * sum(right) / sum(answers) if answers else None,
                         "acc_ci_low": acc["ci_low"], "acc_ci_high": acc["ci_high"],
                         "worst_case": 100 * float(np.mean(worst)) if worst else None,
                         **percent_interval(worst, ones, params)})
        columns = [*params.by, "groups", "answers", "accuracy", "acc_ci_low", "acc_ci_high", "worst_case",
                   "ci_low", "ci_high"]
        return MetricResult(self.name, columns, rows, notes=[_note(params, data)], units=units)


def _ratio_row(per_group: dict[Any, list[float]], params: Any, column: str) -> dict[str, Any]:
    """count, the ratio of summed counts (x100) and its interval, clustered by group."""
    num = [v[0] for v in per_group.values()]
    den = [v[1] for v in per_group.values()]
    total = sum(den)
    return {"groups": len(per_group), column: 100 * sum(num) / total if total else None,
            **percent_interval(num, den, params)}


@metric("general.accuracy", AccuracyParams)
class Accuracy(Metric):
    uses_embedder = False
    percent_columns = frozenset({"accuracy", *INTERVALS})

    def score(self, params: AccuracyParams, data: MetricInput) -> MetricResult:
        rows: list[dict[str, Any]] = []
        units: list[Unit] = []
        for key, part in split_by(data.items, params.by).items():
            per_group: dict[str, list[float]] = {}
            for item in part:
                targets = targets_of(item, params.target)
                counts = per_group.setdefault(item.group_id, [0.0, 0.0])
                right = [is_correct(response, targets, params.correct, item.prompt) for response in item.responses]
                counts[0] += sum(right)
                counts[1] += len(right)
                units.append(Unit(len(rows), "item", item.item_id, (item.item_id,),
                                  {"accuracy": _share(sum(right), len(right))}))
            row = {**dict(zip(params.by, key)), "items": len(part), **_ratio_row(per_group, params, "accuracy")}
            rows.append(row)
        columns = [*params.by, "items", "groups", "accuracy", "ci_low", "ci_high"]
        return MetricResult(self.name, columns, rows, notes=[_note(params, data)], units=units)


class _Relations:
    """Whether a (reference answer, variant answer) pair holds a relation."""

    def __init__(self, params: ConsistencyParams, data: MetricInput) -> None:
        self.params = params
        self.matcher = _Matcher(params.match, params.threshold, data, [r for i in data.items for r in i.responses])

    def relation_of(self, item: ScoredItem) -> str:
        return self.params.relations.get(str(item.attrs.get(self.params.over)), self.params.relation)

    def holds(self, relation: str, ref: ScoredItem, a: str, item: ScoredItem, b: str) -> bool:
        if relation == "same":
            return self.matcher.agree(a, b)
        if relation == "opposite":
            x, y = yes_no(a, "anywhere"), yes_no(b, "anywhere")
            return x is not None and y is not None and x != y
        assert self.params.target is not None  # the schema requires it for "expected"
        right = self.params.correct
        return (is_correct(a, targets_of(ref, self.params.target), right, ref.prompt)
                and is_correct(b, targets_of(item, self.params.target), right, item.prompt))


@metric("general.consistency", ConsistencyParams)
class Consistency(Metric):
    percent_columns = frozenset({"holds", *INTERVALS})

    def needs_embedder(self, params: ConsistencyParams) -> bool:
        return params.match == "embedding" and "same" in (params.relation, *params.relations.values())

    def score(self, params: ConsistencyParams, data: MetricInput) -> MetricResult:
        anchored = anchored_groups(data.items, params.over, params.reference)
        relations = _Relations(params, data)
        # every pair: (group, perturbed item id, relation, holds)
        pairs = [(ref.group_id, item.item_id, relations.relation_of(item),
                  relations.holds(relations.relation_of(item), ref, a, item, b))
                 for ref, others in anchored for item in others for a, b in zip(ref.responses, item.responses)]
        perturbed = [i for _, others in anchored for i in others]
        rows: list[dict[str, Any]] = []
        units: list[Unit] = []
        for key, ids in _in_split(perturbed, params.by):
            for relation in sorted({p[2] for p in pairs if p[1] in ids}):
                per_group: dict[str, list[float]] = {}
                tallies: dict[str, dict[str, list[float]]] = {}
                for group, item_id, _, held in (p for p in pairs if p[1] in ids and p[2] == relation):
                    counts = per_group.setdefault(group, [0.0, 0.0])
                    counts[0] += held
                    counts[1] += 1
                    mine = tallies.setdefault(item_id, {"holds": [0.0, 0.0]})["holds"]
                    mine[0] += held
                    mine[1] += 1
                units.extend(_item_units(len(rows), tallies, _references(anchored)))
                rows.append({**dict(zip(params.by, key)), "relation": relation,
                             "pairs": int(sum(v[1] for v in per_group.values())),
                             **_ratio_row(per_group, params, "holds")})
        columns = [*params.by, "relation", "pairs", "groups", "holds", "ci_low", "ci_high"]
        notes = [*_short_note(relations.matcher, "holds (relation 'same')"), _note(params, data),
                 f"Pairs: each item against the item with {params.over} = {params.reference!r} of its record "
                 f"({len(anchored)} records have one)" + _relation_words(params) + ".",
                 *left_out_note(data.items, params.over)]
        return MetricResult(self.name, columns, rows, notes=notes, units=units)


RELATION_WORDS = {"same": "same: the two answers agree", "opposite": "opposite: one answer reads yes and the other no",
                  "expected": "expected: each answer is right for its own target"}


def _relation_words(params: Any) -> str:
    """What the relations the metric checks mean (only those it checks)."""
    used = dict.fromkeys([params.relation, *params.relations.values()])
    return "; " + "; ".join(RELATION_WORDS[r] for r in used) if used else ""


def _note(params: Any, data: MetricInput) -> str:
    parts = []
    match = getattr(params, "match", None)
    if match == "embedding" and data.embedder is not None:
        parts.append(f"agreement: cosine of {data.embedder.fingerprint['embedder']} embeddings > {params.threshold}")
    elif match is not None and getattr(params, "flip", "answer") == "answer":
        parts.append(f"agreement: {match} match")
    if getattr(params, "target", None):
        parts.append(correctness_note(params.correct, params.target))
    if params.bootstrap:
        parts.append(bootstrap_note(params))
    return "; ".join(parts) + "."


def bootstrap_note(params: Any) -> str:
    """How the intervals were drawn (a ``Bootstrap`` schema's settings), for a metric's note."""
    return (f"{int(100 * params.confidence)}% percentile bootstrap over groups, "
            f"{params.bootstrap} resamples, seed {params.seed}")

"""Directional expectations (``general.direction``), as CheckList's DIR tests: along an ordered
attribute (a corruption's severity 1..5, a noise level's snr_db), a record's score may move only
one way.

Per group (source record), the quantity at each value of ``over`` is pooled over the group's
answers there: the share of correct answers (``quantity = "correct"``, higher is better; the
correctness rule of ``general.accuracy``), or the word or character error rate against
``target`` (``"wer"``, ``"cer"``: summed edits over summed reference words, as ``general.wer``;
lower is better). Walking the values in order (numbers ascending, or ``order`` as given), each
step from one value the group has to the next one it has *holds* when the quantity does not move
the forbidden way: ``relation = "not_better"`` (as the attribute grows the record must not get
better: noise does not help) or ``"not_worse"``. Equal quantities hold (compared as exact
fractions of the counts: 1 of 3 right against 2 of 6 is equal).

Reported per split of ``by``: the share of groups whose every step holds (``groups_hold``) and
the share of steps that hold (``steps_hold``), each with a seeded bootstrap interval over groups.
Items without the attribute are left out and counted; a group with fewer than two values (after
that, and after items whose reference is empty for wer/cer) has no step and is counted too. A
value of ``over`` that ``order`` does not list, or (without ``order``) one that is not a number,
is an error naming it. ``details`` has the pooled quantity per value (the curve) and the first
broken steps of each split.

Example::

    [[metric]]
    name = "general.direction"
    over = "severity"                # 1..5: numbers, ascending
    relation = "not_better"          # more severe must not score better
    quantity = "correct"             # or "wer" / "cer" against target
    target = "answer"
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from benchc.compiler.errors import BenchcError, Problem
from benchc.compiler.metrics import DirectionParams

from ..answers import correctness_note, is_correct
from .base import Metric, MetricInput, MetricResult, ScoredItem, groups_of, split_by, metric
from .errors import edits, normalize_note, normalize_text, reference_text
from .general import bootstrap_note, percent_interval, targets_of

BROKEN_LISTED = 20
"""Broken steps listed per split in ``details.broken``."""


def value_order(items: list[ScoredItem], params: DirectionParams) -> list[str]:
    """The values of ``over`` (as text) from first to last: ``order``, or the numbers ascending.
    Raises on a value ``order`` does not list, or (without it) on one that is not a number."""
    present = {str(i.attrs[params.over]) for i in items if i.attrs.get(params.over) is not None}
    if params.order is not None:
        order = [str(v) for v in params.order]
        absent = sorted(present - set(order))
        if absent:
            raise BenchcError(Problem(
                f"general.direction: {params.over} takes values that `order` does not list: "
                f"{', '.join(map(repr, absent))}",
                hint=f"order = {order}; list them where they belong, or leave their items out with `where`"))
        return order
    read = {v: _number(v) for v in present}
    numbers = {v: n for v, n in read.items() if n is not None}
    bad = sorted(present - set(numbers))
    if bad:
        raise BenchcError(Problem(f"general.direction: {params.over} takes values that are not numbers: "
                                  f"{', '.join(map(repr, bad))}",
                                  hint="give their order: order = [\"first\", \"second\", ...]"))
    return sorted(present, key=lambda v: (numbers[v], v))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def answer_counts(item: ScoredItem, params: DirectionParams) -> list[tuple[int, int]] | None:
    """(numerator, denominator) per answer: (correct, 1), or (errors, reference words/characters).
    None for wer/cer when the item's reference is empty (no denominator)."""
    if params.quantity == "correct":
        targets = targets_of(item, params.target)
        return [(int(is_correct(r, targets, params.correct, item.prompt)), 1) for r in item.responses]
    reference = reference_text(item, params.target, params.normalize)
    if not reference:
        return None
    counts = [edits(reference, normalize_text(params.normalize, r).strip(), params.quantity) for r in item.responses]
    return [(e.errors, e.reference) for e in counts]


def holds(before: Fraction, after: Fraction, params: DirectionParams) -> bool:
    """Whether a step from ``before`` to ``after`` moves only the allowed way (equal holds)."""
    better = after > before if params.quantity == "correct" else after < before
    worse = after < before if params.quantity == "correct" else after > before
    return not better if params.relation == "not_better" else not worse


@dataclass
class Walk:
    """One split's groups walked along the order."""

    per_group: dict[str, list[bool]] = field(default_factory=dict)  # the groups' steps: held or not
    broken: list[dict[str, Any]] = field(default_factory=list)
    pooled: dict[str, list[int]] = field(default_factory=dict)  # value -> [numerator, denominator]
    short_groups: int = 0
    empty_references: int = 0

    def add_group(self, group_id: str, items: list[ScoredItem], order: list[str], params: DirectionParams) -> None:
        cells: dict[str, list[int]] = {}
        for item in items:
            counts = answer_counts(item, params)
            if counts is None:
                self.empty_references += 1
                continue
            for num, den in counts:
                for table in (cells, self.pooled):
                    cell = table.setdefault(str(item.attrs[params.over]), [0, 0])
                    cell[0], cell[1] = cell[0] + num, cell[1] + den
        chain = [(v, Fraction(cells[v][0], cells[v][1])) for v in order if v in cells and cells[v][1] > 0]
        if len(chain) < 2:
            self.short_groups += 1
            return
        steps = self.per_group.setdefault(group_id, [])
        for (a, qa), (b, qb) in zip(chain, chain[1:]):
            steps.append(holds(qa, qb, params))
            if not steps[-1]:
                self.broken.append({"group": group_id, "from": a, "to": b, "before": float(qa), "after": float(qb)})

    def row(self, params: DirectionParams) -> dict[str, Any]:
        steps = list(self.per_group.values())
        whole = [float(all(s)) for s in steps]
        held, total = [float(sum(s)) for s in steps], [float(len(s)) for s in steps]
        step_ci = percent_interval(held, total, params)
        return {"groups": len(steps), "steps": int(sum(total)),
                "groups_hold": 100 * sum(whole) / len(whole) if whole else None,
                **percent_interval(whole, [1.0] * len(whole), params),
                "steps_hold": 100 * sum(held) / sum(total) if total else None,
                "steps_ci_low": step_ci["ci_low"], "steps_ci_high": step_ci["ci_high"]}


def walk(items: list[ScoredItem], order: list[str], params: DirectionParams) -> Walk:
    out = Walk()
    for group_id, group in groups_of(items).items():
        out.add_group(group_id, group, order, params)
    return out


@metric("general.direction", DirectionParams)
class Direction(Metric):
    uses_embedder = False
    percent_columns = frozenset({"groups_hold", "steps_hold", "ci_low", "ci_high", "steps_ci_low", "steps_ci_high"})

    def score(self, params: DirectionParams, data: MetricInput) -> MetricResult:
        kept = [i for i in data.items if i.attrs.get(params.over) is not None]
        order = value_order(kept, params)
        rows, walks = [], []
        details: dict[str, dict[str, Any]] = {"per_value": {}, "broken": {}}
        for key, part in split_by(kept, params.by).items():
            done = walk(part, order, params)
            walks.append(done)
            label = "/".join(str(k) for k in key) or "all"
            details["per_value"][label] = {v: 100 * n / d for v, (n, d) in done.pooled.items() if d}
            details["broken"][label] = done.broken[:BROKEN_LISTED]
            rows.append({**dict(zip(params.by, key)), "items": len(part), **done.row(params)})
        columns = [*params.by, "items", "groups", "steps", "groups_hold", "ci_low", "ci_high", "steps_hold",
                   "steps_ci_low", "steps_ci_high"]
        notes = self._notes(params, order, walks, len(data.items) - len(kept))
        return MetricResult(self.name, columns, rows, details=details, notes=notes)

    @staticmethod
    def _notes(params: DirectionParams, order: list[str], walks: list[Walk], missing: int) -> list[str]:
        notes = []
        if missing:
            notes.append(f"WARNING: {missing} items have no {params.over!r} and are left out.")
        empty = sum(w.empty_references for w in walks)
        if empty:
            notes.append(f"WARNING: {empty} items have an empty reference after normalisation and are left out.")
        short = sum(w.short_groups for w in walks)
        if short:
            notes.append(f"{short} groups have fewer than two values of {params.over!r} to compare and are left out.")
        way = "better" if params.relation == "not_better" else "worse"
        what = {"correct": "share of correct answers (higher is better)",
                "wer": "word error rate (lower is better)", "cer": "character error rate (lower is better)"}
        parts = [f"A step holds when a group's {what[params.quantity]} at the next value of {params.over!r} is not "
                 f"{way} than at the previous one (equal holds); order: {' < '.join(order)}"]
        if params.quantity == "correct":
            parts.append(correctness_note(params.correct, params.target))
        else:
            parts += [normalize_note(params.normalize), f"reference: {params.target!r}"]
        if params.bootstrap:
            parts.append(bootstrap_note(params))
        return [*notes, "; ".join(parts) + "."]

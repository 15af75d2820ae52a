"""``judge.score``: a judge model's verdict on each item (``runtime/score/judges.py``), and with two
judges their agreement (``runtime/score/judge_agreement.py``).

One row per judge (and ``by`` value): the items judged, how many answers the parser read and
could not read, and the judges' reading: the mean score (scale), the share of "yes" (yes_no) or
the share of each label (label), over the answers it read. The details hold each judge's
description (backend, fingerprint, prompt version and digests, parser), the answers that could
not be read (item and answer) and, for two judges, the agreement and the disagreeing items.
"""

from __future__ import annotations

from typing import Any

from benchc.compiler.errors import Problem, RunError
from benchc.compiler.metrics import Judge, JudgeParams

from ..judge_agreement import agreement
from ..judges import Case, Verdict, ask
from .base import Metric, MetricInput, MetricResult, ScoredItem, groups_of, metric, split_by


def cases_of(items: list[ScoredItem], params: JudgeParams) -> tuple[list[Case], int]:
    """The items to judge (with their group's reference item when ``over`` is set), and how
    many items were left out because their group has no reference item."""
    if params.over is None:
        return [Case(item) for item in sorted(items, key=lambda i: i.item_id)], 0
    cases, left_out = [], 0
    for group in groups_of(items).values():
        reference = next((i for i in group if str(i.attrs.get(params.over)) == str(params.reference)), None)
        others = [i for i in group if i is not reference]
        if reference is None:
            left_out += len(others)
            continue
        cases.extend(Case(item, reference) for item in others)
    return cases, left_out


def value_columns(judges: list[Judge]) -> list[str]:
    columns: list[str] = []
    for judge in judges:
        wanted = {"scale": ["mean"], "yes_no": ["yes"], "label": list(judge.labels)}[judge.parser]
        columns.extend(c for c in wanted if c not in columns)
    return columns


def reading(judge: Judge, values: list[Any]) -> dict[str, Any]:
    """The judge's reading of the values it could read: a mean score or shares in percent
    (None when it read none)."""
    if judge.parser == "scale":
        return {"mean": sum(values) / len(values) if values else None}
    if judge.parser == "yes_no":
        return {"yes": 100 * values.count("yes") / len(values) if values else None}
    return {label: 100 * values.count(label) / len(values) if values else None for label in judge.labels}


def rows_of(judge: Judge, verdicts: list[Verdict], items: dict[str, ScoredItem], by: list[str]) -> list[dict[str, Any]]:
    judged = [items[v.item_id] for v in verdicts]
    of_item = {v.item_id: v for v in verdicts}
    rows = []
    for key, part in split_by(judged, by).items():
        values = [of_item[i.item_id].value for i in part if of_item[i.item_id].value is not None]
        rows.append({"judge": judge.label, **dict(zip(by, key)), "items": len(part), "read": len(values),
                     "unreadable": len(part) - len(values), **reading(judge, values)})
    return rows


@metric("judge.score", JudgeParams)
class JudgeScore(Metric):
    """A judge model's verdict per item (score, yes/no or label); two judges' agreement."""

    uses_embedder = False

    def in_percent(self, columns: list[str]) -> set[str]:
        """The shares of labels (and of "yes") are percent; a scale's mean is on the judge's scale.
        The value columns come last, after the counts (``score``'s ``columns``)."""
        return set(columns[columns.index("unreadable") + 1:]) - {"mean"} if "unreadable" in columns else set()

    def score(self, params: JudgeParams, data: MetricInput) -> MetricResult:
        if data.models is None:
            raise RunError(Problem("judge.score needs a model client (benchc score gives one)"))
        cases, left_out = cases_of(data.items, params)
        items = {case.item.item_id: case.item for case in cases}
        verdicts: dict[str, list[Verdict]] = {}
        described = []
        for judge in params.judges:
            verdicts[judge.label], description = ask(judge, cases, data.models)
            described.append(description)
        rows = [row for judge in params.judges for row in rows_of(judge, verdicts[judge.label], items, params.by)]
        unreadable = {label: [{"item_id": v.item_id, "answer": v.answer} for v in found if v.value is None]
                      for label, found in verdicts.items()}
        details: dict[str, Any] = {"judges": described, "unreadable": unreadable}
        notes = self._notes(params, described, unreadable, left_out)
        if len(params.judges) == 2:
            first, second = (verdicts[j.label] for j in params.judges)
            details["agreement"] = agreement(first, second, params.kappa_weights)
            notes.append(self._agreement_note(params, details["agreement"]))
        columns = ["judge", *params.by, "items", "read", "unreadable", *value_columns(params.judges)]
        return MetricResult(self.name, columns, rows, details=details, notes=notes)

    @staticmethod
    def _notes(params: JudgeParams, described: list[dict[str, Any]], unreadable: dict[str, list[Any]],
               left_out: int) -> list[str]:
        notes = [f"Judge {d['name']!r}: {d['backend']}, prompt v{d['prompt_version']} "
                 f"(template sha256 {d['template_sha256'][:12]}), parser {d['parser']['kind']}." for d in described]
        notes.extend(f"WARNING: judge {label!r} gave {len(found)} answer(s) its parser could not read; they are "
                     "left out of its reading (listed in details.unreadable), not scored as 0."
                     for label, found in unreadable.items() if found)
        if params.over is not None:
            notes.append(f"Reference: the item with {params.over} = {params.reference!r} of each group, not judged.")
        if left_out:
            notes.append(f"{left_out} item(s) left out: their group has no reference item.")
        return notes

    @staticmethod
    def _agreement_note(params: JudgeParams, found: dict[str, Any]) -> str:
        first, second = (j.label for j in params.judges)
        kappa = "undefined" if found["kappa"] is None else f"{found['kappa']:.3f}"
        weights = "" if params.kappa_weights == "none" else f" ({params.kappa_weights} weights)"
        return (f"Agreement of {first!r} and {second!r} over the {found['items']} item(s) both read: "
                f"Cohen's kappa{weights} {kappa}, {len(found['disagreements'])} disagreement(s) "
                "(details.agreement).")

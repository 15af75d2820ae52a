"""Metrics name item attributes (``by``, ``over``) and attribute values (``reference``); a typo
there would silently put every item in one ``None`` group. The compiler knows every item's
attributes, so it checks those names against them before writing a manifest."""

from __future__ import annotations

import json
from typing import Any

from .errors import Problem, ProblemList, SpecError
from .registry import did_you_mean
from .resolve import Resolved


def check_metric_attrs(resolved: Resolved, rows: list[dict[str, Any]]) -> None:
    """Raise one SpecError listing every metric attribute name or value that no item has."""
    if not rows:
        return
    values: dict[str, set[str]] = {}
    for row in rows:
        for name, value in json.loads(row["attrs"]).items():
            values.setdefault(name, set()).add(str(value))
    problems = ProblemList()
    for index, metric in enumerate(resolved.metrics):
        for problem in _metric_problems(resolved, index, metric.params, values):
            problems.add(problem)
    problems.raise_if_any(SpecError)


def _metric_problems(resolved: Resolved, index: int, params: Any,
                     values: dict[str, set[str]]) -> list[Problem]:
    loaded = resolved.loaded
    names = sorted(values)
    out = []
    named = [("by", b) for b in getattr(params, "by", [])]
    if getattr(params, "over", None):
        named.append(("over", params.over))
    for key, attr in named:
        if attr not in values:
            hint = did_you_mean(attr, names)
            out.append(loaded.problem(
                f"metric[{index}].{key}", f"no item has the attribute {attr!r}",
                hint=f"{hint + ' ' if hint else ''}item attributes: {', '.join(names) or 'none'}"))
    over, reference = getattr(params, "over", None), getattr(params, "reference", None)
    if over in values and reference is not None and str(reference) not in values[over]:
        seen = sorted(values[over])
        hint = did_you_mean(str(reference), seen)
        out.append(loaded.problem(
            f"metric[{index}].reference", f"no item has {over} = {reference!r}: nothing to compare against",
            hint=f"{hint + ' ' if hint else ''}values of {over}: {', '.join(seen[:20])}"))
    for name, wanted in sorted((getattr(params, "where", {}) or {}).items()):
        if name not in values:
            hint = did_you_mean(name, names)
            out.append(loaded.problem(
                f"metric[{index}].where.{name}", f"no item has the attribute {name!r}",
                hint=f"{hint + ' ' if hint else ''}item attributes: {', '.join(names) or 'none'}"))
        elif not any(str(v) in values[name] for v in wanted):
            out.append(loaded.problem(
                f"metric[{index}].where.{name}",
                f"no item has {name} in {list(wanted)!r}: the metric would score nothing",
                hint=f"values of {name}: {', '.join(sorted(values[name])[:20])}"))
    for value in sorted(getattr(params, "relations", {}) or {}):
        if over in values and value not in values[over]:
            hint = did_you_mean(value, sorted(values[over]))
            out.append(loaded.problem(
                f"metric[{index}].relations", f"no item has {over} = {value!r}",
                hint=f"{hint + ' ' if hint else ''}values of {over}: {', '.join(sorted(values[over])[:20])}"))
    return out

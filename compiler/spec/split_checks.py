"""The checks of a ``[split]`` table that span its keys (fractions against keep), each with its
key path and a hint, for ``models.Split``'s validator."""

from __future__ import annotations

import math
import re

from ..registry import did_you_mean

SPLIT_NAME = re.compile(r"[a-z][a-z0-9_]*")
FRACTION_TOLERANCE = 1e-9
"""How far from 1 the fractions may sum: 0.7 + 0.2 + 0.1 is 0.9999999999999999 in floats."""


def split_problems(key: str | list[str] | None, fractions: dict[str, float] | None,
                   keep: list[str] | None) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """(key path, message) of each problem, and a hint per key path."""
    problems: list[tuple[str, str]] = []
    hints: dict[str, str] = {}
    if isinstance(key, list) and not key:
        problems.append(("key", "an empty list of key fields"))
        hints["key"] = 'name a record field, e.g. key = "image_id", or leave key out to use the record id'
    if fractions is None:
        if keep is not None or key is not None:
            problems.append(("fractions", "key and keep need fractions"))
            hints["fractions"] = "e.g. fractions = { train = 0.8, test = 0.2 }"
        return problems, hints
    problems += _fraction_problems(fractions, hints)
    for index, name in enumerate(keep or []):
        if name not in fractions:
            problems.append((f"keep[{index}]", f"{name!r} is not a split of fractions"))
            hints[f"keep[{index}]"] = (did_you_mean(name, sorted(fractions))
                                       or f"the splits: {', '.join(sorted(fractions))}")
    return problems, hints


def _fraction_problems(fractions: dict[str, float], hints: dict[str, str]) -> list[tuple[str, str]]:
    if not fractions:
        hints["fractions"] = "e.g. fractions = { train = 0.8, test = 0.2 }"
        return [("fractions", "no split named")]
    problems = []
    for name, share in fractions.items():
        if not SPLIT_NAME.fullmatch(name):
            problems.append((f"fractions.{name}", f"split name {name!r} must match [a-z][a-z0-9_]*"))
        elif not 0 < share <= 1:
            problems.append((f"fractions.{name}", f"{share} is not a share between 0 (excluded) and 1"))
            hints[f"fractions.{name}"] = "leave out a split that gets no record"
    total = math.fsum(fractions.values())
    if not problems and abs(total - 1) > FRACTION_TOLERANCE:
        problems.append(("fractions", f"the fractions sum to {total:g}, not 1"))
        hints["fractions"] = _fix_hint(fractions, total)
    return problems


def _fix_hint(fractions: dict[str, float], total: float) -> str:
    """Scale the shares to sum to 1 (rounded to 3 places), the last split taking what is left."""
    names = list(fractions)
    scaled = {name: round(fractions[name] / total, 3) for name in names[:-1]}
    scaled[names[-1]] = round(1 - math.fsum(scaled.values()), 3)
    shown = ", ".join(f"{name} = {share:g}" for name, share in scaled.items())
    return f"make them sum to 1, e.g. fractions = {{ {shown} }}"

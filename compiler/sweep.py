"""Sweeps: a value written ``{ grid = [...] }`` (one variant per value) or ``{ choice = [...] }``
(one value drawn per variant from its derived seed). The one parser of that syntax, used for a
node's ``params``, ``[select.probe]``'s and ``[generation]``'s keys."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from .canonical import canonical_json
from .seeds import rng_for

SWEEP_KINDS = frozenset({"grid", "choice"})


def is_sweep(value: Any) -> bool:
    """Whether a spec value is written as a sweep (``{ grid = ... }`` or ``{ choice = ... }``)."""
    return isinstance(value, dict) and bool(set(value) & SWEEP_KINDS)


@dataclass(frozen=True)
class Sweep:
    """Values split into fixed values, grid axes and per-variant choices."""

    fixed: dict[str, Any]
    grid: dict[str, list[Any]]
    choice: dict[str, list[Any]]

    def grid_points(self) -> list[dict[str, Any]]:
        names = sorted(self.grid)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.grid[n] for n in names))]

    def trials(self) -> list[dict[str, Any]]:
        """Fixed values with every candidate of every axis at least once (the others at their
        first value): what a schema check validates, without the axes' product."""
        axes = {**self.grid, **self.choice}
        first = {name: values[0] for name, values in axes.items()}
        points = [dict(first)] + [{**first, name: v} for name, values in axes.items() for v in values[1:]]
        return [{**self.fixed, **point} for point in points]

    def draw(self, seed: int) -> dict[str, Any]:
        """One value of each ``choice`` axis, drawn from ``seed`` (names in sorted order)."""
        if not self.choice:
            return {}
        rng = rng_for(seed)
        return {name: values[int(rng.integers(len(values)))] for name, values in sorted(self.choice.items())}


def _has_duplicates(values: list[Any]) -> bool:
    seen = [canonical_json(v) for v in values]
    return len(set(seen)) != len(seen)


def split_sweep(params: dict[str, Any]) -> tuple[Sweep, list[tuple[str, str]]]:
    """``params`` as a Sweep, and (name, message) for each sweep that is malformed."""
    fixed: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}
    choice: dict[str, list[Any]] = {}
    errors: list[tuple[str, str]] = []
    for name, value in params.items():
        if is_sweep(value):
            if len(value) != 1 or not isinstance(next(iter(value.values())), list) or not next(iter(value.values())):
                errors.append((name, "a sweep is { grid = [...] } or { choice = [...] } with a non-empty list"))
                continue
            values = list(next(iter(value.values())))
            if "grid" in value and _has_duplicates(values):
                errors.append((name, f"grid {values} names a value twice: a grid value is one variant "
                                     "(its id is the value); use `repeat` for several draws"))
                continue
            (grid if "grid" in value else choice)[name] = values
        else:
            fixed[name] = value
    return Sweep(fixed, grid, choice), errors

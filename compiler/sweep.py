"""Sweeps: a value written ``{ grid = [...] }`` (one variant per value) or ``{ choice = [...] }``
(one value drawn per variant from its derived seed). The one parser of that syntax, used for a
node's ``params``, ``[select.probe]``'s and ``[generation]``'s keys, and the templates of
``[prompt]`` and ``[[stage]]``: a *named* sweep, whose candidates are a table (``{ grid = {
terse = "...", full = "..." } }``, each named by its key) or a list (each named by its index,
0, 1, ...); its axis holds the names, and ``Sweep.named`` each name's value."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
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
    named: dict[str, dict[Any, Any]] = field(default_factory=dict)
    """For a named sweep's axis: each name's value (a template's source)."""

    def value(self, name: str, attrs: dict[str, Any]) -> Any:
        """The value of axis ``name`` for an item whose attributes hold its name (a named axis) or
        its value (any other)."""
        return self.named[name][attrs[name]] if name in self.named else attrs[name]

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


NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
"""A named sweep's names: readable in an item id (``prompt[template=terse]``)."""


def named_values(value: Any) -> dict[Any, Any] | None:
    """A named sweep's candidates by name (a table's keys, a list's indices), or None when
    ``value`` is not a well-formed named sweep."""
    if not is_sweep(value) or len(value) != 1:
        return None
    candidates = next(iter(value.values()))
    if isinstance(candidates, list):
        return dict(enumerate(candidates)) or None
    return dict(candidates) if isinstance(candidates, dict) and candidates else None


def _named_errors(value: dict[str, Any], table: dict[Any, Any] | None) -> list[str]:
    if table is None:
        return ["a sweep of values by name is { grid = { name = value, ... } } or { grid = [...] } (named by "
                "index), or the same with choice, with at least one value"]
    bad = [str(n) for n in table if isinstance(n, str) and not NAME.fullmatch(n)]
    if bad:
        return [f"name {bad[0]!r} is not a plain name ([A-Za-z0-9_-], as it is written into item ids)"]
    if "grid" in value and _has_duplicates(list(table.values())):
        return [f"grid {list(table)} holds the same value under two names: a grid value is one variant"]
    return []


def split_sweep(params: dict[str, Any], named: frozenset[str] = frozenset()) -> tuple[Sweep, list[tuple[str, str]]]:
    """``params`` as a Sweep, and (name, message) for each sweep that is malformed. A key in
    ``named`` is a named sweep: its axis holds the names, ``Sweep.named`` their values."""
    fixed: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}
    choice: dict[str, list[Any]] = {}
    tables: dict[str, dict[Any, Any]] = {}
    errors: list[tuple[str, str]] = []
    for name, value in params.items():
        if name in named and is_sweep(value):
            table = named_values(value)
            problems = _named_errors(value, table)
            errors += [(name, message) for message in problems]
            if table is not None and not problems:
                tables[name] = table
                (grid if "grid" in value else choice)[name] = list(table)
            continue
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
    return Sweep(fixed, grid, choice, tables), errors

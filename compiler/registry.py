"""A typed registry of the names users write in specs (sources, ops, metrics, backends).

Unknown names are answered with close matches ("did you mean ...") and the available names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import Problem

T = TypeVar("T")


class UnknownName(LookupError):
    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(problem.render())


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        current = self._entries.get(name)
        if current is not None and current is not entry:
            raise ValueError(f"{self.kind} {name!r} already registered ({current!r} vs {entry!r})")
        self._entries[name] = entry
        return entry

    def add(self, name: str) -> Callable[[T], T]:
        """Decorator form: ``@OPS.add("image.mask_object")``."""
        return lambda entry: self.register(name, entry)

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.unknown(name)) from None

    def unknown(self, name: str) -> Problem:
        names = sorted(self._entries)
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        available = ", ".join(names[:30])
        hint = f"{hint} Available: {available}" if hint else f"available: {available}"
        return Problem(f"unknown {self.kind} {name!r}", hint=hint)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._entries.items())


def did_you_mean(name: str, choices: list[str]) -> str | None:
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None


def closest_choices(given: str, choices: list[str], n: int = 3) -> list[str]:
    """Allowed values close to ``given``: by spelling (difflib), else those that start with it,
    else those that contain it (``'jpeg'`` -> ``'jpeg_compression'``); case and ``-``/space
    versus ``_`` do not count."""
    def norm(text: str) -> str:
        return text.strip().lower().replace("-", "_").replace(" ", "_")

    by_norm = {norm(c): c for c in choices}
    key = norm(given)
    if not key:
        return []
    close = difflib.get_close_matches(key, list(by_norm), n=n, cutoff=0.6)
    close = close or [c for c in by_norm if c.startswith(key)] or [c for c in by_norm if key in c]
    return [by_norm[c] for c in close[:n]]


def literal_choices(error: Mapping[str, Any]) -> list[str]:
    """The allowed values of a pydantic ``literal_error`` (its ``ctx['expected']``)."""
    expected = str((error.get("ctx") or {}).get("expected", ""))
    quoted = re.findall(r"'((?:[^'\\]|\\.)*)'", expected)
    return quoted or [v for v in re.split(r", | or ", expected) if v]


def literal_hint(error: Mapping[str, Any]) -> str | None:
    """For a pydantic ``literal_error`` (a value not among a Literal's): ``did you mean 'x'?``
    with the closest allowed values, else the allowed values; None for other errors."""
    if error.get("type") != "literal_error":
        return None
    choices = literal_choices(error)
    close = closest_choices(str(error.get("input")), choices)
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close)}?"
    return f"use one of: {', '.join(repr(c) for c in choices)}" if choices else None


def merge_union_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One error per field of a union type. Pydantic reports a value outside a union
    (``Corruption | Literal['clean']``, ``Literal[...] | tuple[int, int, int]``) once per member,
    each with the member's tag in its ``loc`` (``('corruption', "literal['a','b']")``). They
    become one error at the field's own ``loc``: for a text value, a single literal error over
    every allowed value of the union; otherwise the first other member's error."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    order: list[dict[str, Any] | tuple[Any, ...]] = []
    for err in errors:
        full = tuple(err.get("loc", ()))
        tags = [i for i, p in enumerate(full) if isinstance(p, str) and "[" in p]
        if not tags:
            order.append(err)
            continue
        loc = full[:tags[0]]
        if loc not in groups:
            groups[loc] = []
            order.append(loc)
        groups[loc].append(err)
    return [item if isinstance(item, dict) else _union_error(item, groups[item]) for item in order]


def _union_error(loc: tuple[Any, ...], errors: list[dict[str, Any]]) -> dict[str, Any]:
    literals = [e for e in errors if e.get("type") == "literal_error"]
    others = [e for e in errors if e.get("type") != "literal_error"]
    if literals and (isinstance(literals[0].get("input"), str) or not others):
        expected = ", ".join(repr(c) for e in literals for c in literal_choices(e))
        return {**literals[0], "loc": loc, "ctx": {"expected": expected},
                "msg": f"Input should be {expected}"}
    first = others[0]
    return {**first, "loc": tuple(p for p in first["loc"] if not (isinstance(p, str) and "[" in p))}

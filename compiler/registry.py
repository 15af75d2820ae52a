"""A typed registry of the names users write in specs (sources, ops, metrics, backends).

Unknown names are answered with close matches ("did you mean ...") and the available names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

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

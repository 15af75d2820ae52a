"""One registry per kind of name users write in specs (sources, ops, metrics, backends).

Everything is registered the same way, built-in or not:

- ``@OPS.add("mylab.shout")`` on a class names it and registers it (the registry decides what
  it keeps: an instance for ops, sources and metrics, the class itself for backends);
- ``OPS.register(name, entry)`` registers a ready entry (ops built from a table of parameters);
- an installed distribution declares *lazy* entries in the registry's entry-point group
  (``benchc.ops``, ``benchc.sources``, ``benchc.backends``, ``benchc.metrics``): the name is
  known at once (listed, and offered by did-you-mean), and its module is imported only when the
  name is used. See compiler/plugins.py for the discovery path and docs/extending.md.

Unknown names are answered with close matches ("did you mean ...") and the available names.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from typing import Any, Generic, TypeVar

from .errors import BenchcError, Problem

T = TypeVar("T")
C = TypeVar("C", bound=type)


class UnknownName(LookupError):
    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(problem.render())


class PluginError(BenchcError):
    """A plugin (an entry point or a ``--plugin`` module) that cannot be loaded or clashes."""


def keep(entry: Any) -> Any:
    """A registry's ``make`` that keeps the registered class itself (backends)."""
    return entry


def instance(cls: Any) -> Any:
    """A registry's ``make`` that keeps one instance of the registered class (stateless entries)."""
    return cls()


class Registry(Generic[T]):
    """Names -> entries of one kind. ``make`` turns a registered class into the entry kept
    (``instance`` for stateless ops, sources and metrics; ``keep``, the default, keeps the class)."""

    def __init__(self, kind: str, group: str | None = None, make: Callable[[Any], T] = keep) -> None:
        self.kind = kind
        self.group = group
        self._make = make
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, metadata.EntryPoint] = {}
        self._scanned = group is None

    def register(self, name: str, entry: T) -> T:
        current = self._entries.get(name)
        if current is not None and current is not entry:
            raise PluginError(Problem(f"{self.kind} {name!r} is registered twice ({current!r} and {entry!r})",
                                      hint="give one of them another name (plugins: prefix names with "
                                           "your project's, e.g. 'mylab.shout')"))
        self._entries[name] = entry
        self._lazy.pop(name, None)
        return entry

    def add(self, name: str) -> Callable[[C], C]:
        """Class decorator: ``@OPS.add("mylab.shout")`` names the class (its ``name``) and
        registers it under that name."""
        if not isinstance(name, str):
            raise TypeError(f"the {self.kind} decorator takes the name it registers: "
                            f"@....add(\"mylab.name\") on the class, not {name!r}")

        def decorate(cls: C) -> C:
            declared = vars(cls).get("name", name)
            if declared != name:
                raise PluginError(Problem(f"{self.kind} class {cls.__qualname__} is named {declared!r} and "
                                          f"registered as {name!r}", hint="name it in the decorator only"))
            setattr(cls, "name", name)  # noqa: B010  (a ClassVar every entry of a kind has)
            self.register(name, self._make(cls))
            return cls
        return decorate

    def get(self, name: str) -> T:
        self._scan()
        if name in self._lazy:
            self._load(name)
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.unknown(name)) from None

    def unknown(self, name: str) -> Problem:
        names = self.names()
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        available = ", ".join(names[:30])
        hint = f"{hint} Available: {available}" if hint else f"available: {available}"
        if "." in name and not close and self.group:
            hint += (f". A {self.kind} from a plugin needs its package installed (entry-point group "
                     f"{self.group!r}) or `benchc --plugin MODULE`")
        return Problem(f"unknown {self.kind} {name!r}", hint=hint)

    def names(self) -> list[str]:
        """Every name, lazy ones included, without importing anything."""
        self._scan()
        return sorted({*self._entries, *self._lazy})

    def __contains__(self, name: object) -> bool:
        self._scan()
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def items(self) -> list[tuple[str, T]]:
        """Every entry, loading the lazy ones."""
        return [(name, self.get(name)) for name in self.names()]

    def _scan(self) -> None:
        """Note the group's entry points (once): names only, nothing is imported."""
        if self._scanned:
            return
        self._scanned = True
        assert self.group is not None
        for point in sorted(metadata.entry_points(group=self.group), key=lambda p: (p.name, p.value)):
            if point.name not in self._entries:
                self._lazy.setdefault(point.name, point)

    def _load(self, name: str) -> None:
        """Import a lazy entry's module (its decorators may register it), else register the
        object the entry point names."""
        point = self._lazy[name]
        where = f"entry point {point.name} = {point.value!r} (group {self.group!r})"
        try:
            importlib.import_module(point.module)
            if name in self._entries:
                return
            obj = point.load()
        except Exception as exc:  # a plugin's own import error: one line, no traceback
            raise PluginError(Problem(f"{self.kind} {name!r}: {where} failed to load: "
                                      f"{type(exc).__name__}: {exc}",
                                      hint="fix or reinstall the plugin package")) from exc
        declared = getattr(obj, "name", name)
        if declared != name:
            raise PluginError(Problem(f"{self.kind} {name!r}: {where} names {declared!r}",
                                      hint="the entry point's name must be the class's `name`"))
        self.register(name, self._make(obj))


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

"""The stage packages' lazy re-exports (``runtime.run``, ``score``, ``interop``, ``reproduce``):
a package names its public API in ``__init__`` but loads the module that defines a name only on
first use, so importing one stage does not load the others' heavy dependencies (torch, polars,
the embedders). One mechanism for every package, instead of a copy in each."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str],
                 names: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each public name to
    the module of the package that defines it; a name is imported once, then cached in the
    package's namespace. ``names`` is the package's ``__all__``."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(import_module(f"{package}.{exports[name]}"), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted([*namespace, *names])

    return __getattr__, __dir__

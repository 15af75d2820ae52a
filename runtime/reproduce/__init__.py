"""``benchc reproduce``: a paper file (``papers/*.toml``) -> its tables and figures regenerated
from scored runs, and the drift from the recorded numbers (``--check``).

Its API is re-exported here and loaded on first use (``__getattr__``). See README.md for what
each module does.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import (COVERAGE_STATUS, Paper, PaperCoverage, PaperError, ReproduceResult, check, load_paper,
                       reproduce)
    from .reproduce_make import MakeRun, RunRecipe

_EXPORTS = {  # name -> the module of this package that defines it
    "COVERAGE_STATUS": "core",
    "Paper": "core",
    "PaperCoverage": "core",
    "PaperError": "core",
    "ReproduceResult": "core",
    "check": "core",
    "load_paper": "core",
    "reproduce": "core",
    "MakeRun": "reproduce_make",
    "RunRecipe": "reproduce_make",
}

__all__ = ["COVERAGE_STATUS", "MakeRun", "Paper", "PaperCoverage", "PaperError", "ReproduceResult", "RunRecipe",
           "check", "load_paper", "reproduce"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

"""``benchc reproduce``: a paper file (``papers/*.toml``) -> its tables and figures regenerated
from scored runs, and the drift from the recorded numbers (``--check``).

Its API is re-exported here and loaded on first use (``__getattr__``). See README.md for what
each module does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_exports import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

"""Default folders of the compile cache and the response store, spelled once. Kept free of
imports so that the command line can use them as option defaults without loading the compiler
(``benchc --help`` and ``benchc --version`` stay fast)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_CACHE = Path(".benchc/cache")
"""The content-addressed compile cache (``--cache``)."""
DEFAULT_STORE = Path(".benchc/store")
"""The response store of model answers (``--store``)."""

"""Import every module of a package so that the ops or sources they define register themselves.

A new op or source is a new module in compiler/ops/ or compiler/sources/; no list to edit.
Modules are imported in sorted order, so registration order never depends on the filesystem.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

NOT_PLUGINS = {"base", "rng_guard", "nltk_offline", "tables", "scenes_coco"}


def import_all(package: ModuleType) -> None:
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in NOT_PLUGINS:
            continue
        importlib.import_module(f"{package.__name__}.{info.name}")

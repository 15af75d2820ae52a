"""The one discovery path for sources, ops, backends and metrics.

1. Built-in entries: every module of the kind's package (``compiler/sources``, ``compiler/ops``,
   ``runtime/backends``, ``runtime/metrics``) is imported, in sorted order, when the package is,
   and registers its entries with the registry's decorator. A new built-in is a new module: no
   list to edit. Modules whose names start with ``_`` are private helpers and are skipped.
2. Installed plugins: a distribution declares entries in the entry-point groups ``benchc.sources``,
   ``benchc.ops``, ``benchc.backends``, ``benchc.metrics`` (name = the name specs use, value =
   ``module:Class``). The registry lists them at once and imports them only when used.
3. ``benchc --plugin MODULE`` (or ``load_plugin``) imports a module whose decorators register its
   entries: for work in progress that is not installed.

Worker processes import the module that defines the op or backend they run (compiler/pools.py),
so all three kinds of entries work in workers as in the parent.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from types import ModuleType

from .errors import Problem
from .registry import PluginError

ENTRY_POINT_GROUPS = {"source loader": "benchc.sources", "op": "benchc.ops",
                      "backend": "benchc.backends", "metric": "benchc.metrics"}
"""The entry-point group of each kind of registry."""


def import_all(package: ModuleType) -> None:
    """Import every public module of ``package`` (built-in entries register on import)."""
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")


def load_plugin(module: str) -> ModuleType:
    """Import a plugin module named on the command line, with one clear message if it fails.
    The working folder is searched too (after the installed packages), as ``python -m`` would:
    a plugin next to the spec needs no install."""
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        hint = ("is it on PYTHONPATH or installed in this environment? --plugin takes a module name "
                "(mylab.benchc_plugin), not a file path")
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise PluginError(Problem(f"--plugin {module}: no module named {exc.name!r}", hint=hint)) from None
        raise PluginError(Problem(f"--plugin {module}: it imports {exc.name!r}, which is not installed",
                                  hint="install the plugin's dependencies")) from None
    except PluginError:
        raise
    except Exception as exc:  # the plugin's own error: one line, no traceback
        raise PluginError(Problem(f"--plugin {module} failed to import: {type(exc).__name__}: {exc}",
                                  hint="fix the plugin module")) from exc

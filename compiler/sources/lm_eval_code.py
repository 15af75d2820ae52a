"""An lm-eval task's Python functions, run at compile time when a spec allows it.

A task YAML names Python with ``!function utils.process_docs``. benchc runs none of it unless the
spec's source says ``allow_task_code = true`` and lm-eval is installed (the ``lm-eval`` extra):
such code may import lm-eval, and lm-eval's version is then part of what the records were made
with. The functions are found as lm_eval/tasks/_yaml_loader.py ``_import_func_in_yml`` finds them:
``utils.py`` beside the YAML that names it (which must lie in the spec's data roots), else an
importable module. Each file run enters the lock (``source.files``), and every record carries
what ran (``lm_eval.code``: the functions, lm-eval's and datasets' versions), so that changing
the code or either version changes the manifest's digest.

Only the functions that make documents and prompts run here: ``process_docs``, ``doc_to_text``,
``doc_to_target``, ``doc_to_choice``, and the same keys of ``fewshot_config``. A ``!function``
anywhere else is still refused (a custom metric or filter is not a prompt).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import Problem, SourceError
from ..paths import check_within_roots
from .base import FileDigest, SourceContext

RUNNABLE_KEYS = ("process_docs", "doc_to_text", "doc_to_target", "doc_to_choice")
"""The task keys (and ``fewshot_config`` keys) whose ``!function`` runs with ``allow_task_code``."""

INSTALL_HINT = "install lm-eval (pip install 'lm-eval==0.4.13', the lm-eval extra of benchc)"


@dataclass
class TaskCode:
    """The task functions of one load: resolved once each, every file run recorded."""

    ctx: SourceContext
    package: str = "lm_eval"
    """The harness the code is written for (``lm_eval``, ``lmms_eval``): its version is pinned."""
    files: list[FileDigest] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    _modules: dict[Path, Any] = field(default_factory=dict)

    def resolve(self, function: Any, key: str) -> Callable[..., Any]:
        """The callable a ``TaskFunction`` names (``function.folder`` is its YAML's folder)."""
        module_name, _, name = function.name.rpartition(".")
        if not module_name:
            raise SourceError(Problem(f"!function {function.name}: no module (write utils.{function.name})",
                                      file=function.file, line=function.line, key=key))
        local = Path(function.folder) / f"{module_name.replace('.', '/')}.py"
        module = self._local(local, function, key) if local.is_file() else self._installed(module_name, function, key)
        found = getattr(module, name, None)
        if not callable(found):
            raise SourceError(Problem(f"!function {function.name}: {module_name} has no function {name!r}",
                                      file=function.file, line=function.line, key=key))
        self.names.append(f"{key}={function.name}")
        return found  # type: ignore[no-any-return]

    def _local(self, path: Path, function: Any, key: str) -> Any:
        path = check_within_roots(path.resolve(), self.ctx.roots, key, function.name, self.ctx.spec_file)
        if path not in self._modules:
            spec = importlib.util.spec_from_file_location(f"benchc_task_code_{len(self._modules)}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception as exc:  # noqa: BLE001 (the task's own code: any failure is the task's)
                raise SourceError(Problem(f"!function {function.name}: importing {path.name} failed: "
                                          f"{type(exc).__name__}: {exc}", file=function.file, line=function.line,
                                          key=key, hint="the task's code needs what it imports installed")) from None
            self._modules[path] = module
            self.files.append(self.ctx.file_digest(path))
        return self._modules[path]

    @staticmethod
    def _installed(module_name: str, function: Any, key: str) -> Any:
        try:
            return importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 (an import of someone else's module)
            raise SourceError(Problem(f"!function {function.name}: no {module_name}.py beside the YAML, and "
                                      f"importing {module_name} failed: {type(exc).__name__}: {exc}",
                                      file=function.file, line=function.line, key=key)) from None

    def pins(self) -> dict[str, Any]:
        """What ran, for every record (``lm_eval.code``)."""
        return {"functions": sorted(set(self.names)), self.package: metadata.version(self.package),
                "datasets": metadata.version("datasets"), "python": f"{sys.version_info[0]}.{sys.version_info[1]}"}


def lm_eval_installed(package: str = "lm_eval") -> bool:
    return importlib.util.find_spec(package) is not None


HARNESSES = {"lm_eval": ("lm-eval", INSTALL_HINT),
             "lmms_eval": ("lmms-eval", "install lmms-eval (pip install --no-deps 'lmms-eval==0.7.3', the lmms-eval "
                                        "extra of benchc)")}


def require_lm_eval(file: str, key: str, package: str = "lm_eval") -> None:
    name, hint = HARNESSES[package]
    if not lm_eval_installed(package):
        raise SourceError(Problem(f"allow_task_code runs the task's Python functions, which needs {name} "
                                  "installed; it is not", file=file, key=key, hint=hint))


def run_process_docs(process: Callable[..., Any], rows: list[dict[str, Any]], columns: list[str],
                     where: str) -> tuple[list[dict[str, Any]], list[str]]:
    """``process(dataset)`` on the split as a ``datasets.Dataset`` (what lm-eval passes), back as
    rows and columns."""
    import datasets

    dataset = datasets.Dataset.from_list(rows) if rows else datasets.Dataset.from_dict({c: [] for c in columns})
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # a compile prints its own progress, not datasets' "Map: 100%"
    try:
        out = process(dataset)
    except Exception as exc:  # noqa: BLE001 (the task's own code)
        raise SourceError(Problem(f"the task's process_docs failed on {where}: {type(exc).__name__}: {exc}",
                                  key="process_docs")) from None
    finally:
        if bars:
            datasets.enable_progress_bars()
    if isinstance(out, datasets.Dataset):
        return out.to_list(), list(out.column_names)
    processed = [dict(row) for row in out]
    return processed, list(processed[0]) if processed else list(columns)

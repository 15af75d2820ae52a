"""The design card's layout rule: compiler/ never imports runtime/."""

from __future__ import annotations

import ast

from conftest import ROOT


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(("." * node.level) + (node.module or ""))
    return names


def test_compiler_never_imports_runtime() -> None:
    offenders = []
    for path in sorted((ROOT / "compiler").rglob("*.py")):
        for name in _imports(path):
            if "runtime" in name.split("."):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, offenders


def test_every_metric_schema_has_an_implementation() -> None:
    from benchc.compiler.metrics import METRIC_SCHEMAS
    from benchc.runtime.metrics import METRICS

    assert list(METRIC_SCHEMAS) == list(METRICS)

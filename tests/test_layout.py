"""The design card's layout rules: compiler/ never imports runtime/; runtime/ is one package per
stage (run, score, interop, report, reproduce), each importing only the stages before it."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

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
    from benchc.runtime.score.metrics import METRICS

    assert list(METRIC_SCHEMAS) == list(METRICS)


# --- module graph: no import cycle, no private names across modules ----------------------------

PACKAGES = {"benchc": "benchc", "benchc.compiler": "compiler", "benchc.runtime": "runtime"}


def _modules() -> dict[str, object]:
    """Module name -> its file, as setup.py installs them (compiler/ is benchc.compiler)."""
    out = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _target(module: str, path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_level_imports(module: str, path, modules: dict) -> set[str]:
    """The benchc modules ``module`` imports when it is loaded (function-level and TYPE_CHECKING
    imports are not part of the load)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            continue
        for inner in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(inner, ast.ImportFrom):
                target = _target(module, path, inner)
                found.update(f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target
                             for a in inner.names)
            elif isinstance(inner, ast.Import):
                found.update(a.name for a in inner.names)
    return {name for name in found if name in modules and name != module}


def _is_type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): imports for the type checker only."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _all_imports(module: str, path, modules: dict) -> set[str]:
    """The benchc modules ``module`` imports anywhere: at module level and inside functions
    (a lazy import still needs the other module, and hides a cycle rather than breaking it),
    but not in ``if TYPE_CHECKING:`` blocks."""
    found = set()
    pending: list[ast.AST] = [ast.parse(path.read_text())]
    while pending:
        node = pending.pop()
        if _is_type_checking(node):
            pending.extend(node.orelse)  # its body is for the type checker; an else branch runs
            continue
        if isinstance(node, ast.ImportFrom):
            target = _target(module, path, node)
            found.update(f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return {name for name in found if name in modules and name != module}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module -> the modules it imports), as ``[a, b, ..., a]``;
    None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, trail: list[str]) -> list[str] | None:
        state[name] = 1
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                return [*trail[trail.index(dep):], dep]
            if dep not in state:
                found = visit(dep, [*trail, dep])
                if found:
                    return found
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def test_no_import_cycle() -> None:
    modules = _modules()
    graph = {name: _top_level_imports(name, path, modules) for name, path in modules.items()}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycle_in_the_compiler_counting_lazy_imports() -> None:
    """benchc.compiler is a layered package: no circle among its modules, even through an import
    inside a function (the usual way to hide one). ``if TYPE_CHECKING:`` imports do not count."""
    modules = _modules()
    compiler = {name: path for name, path in modules.items()
                if name == "benchc.compiler" or name.startswith("benchc.compiler.")}
    graph = {name: _all_imports(name, path, modules) & set(compiler) for name, path in compiler.items()}
    assert "benchc.compiler.media" in graph["benchc.compiler.disjoint"]  # the graph sees the imports
    cycle = _cycle(graph)
    assert cycle is None, "import cycle in benchc.compiler (function-level imports included): " + " -> ".join(
        cycle or [])


def test_no_private_name_is_imported_from_another_module() -> None:
    """A benchc module's _private names are its own: what another module needs is public."""
    modules = _modules()
    offenders = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _target(name, path, node)
            if source.split(".")[0] != "benchc":
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.endswith("__"):
                    offenders.append(f"{path.relative_to(ROOT)}: from {source} import {alias.name}")
    assert not offenders, offenders


# --- runtime/: one package per stage ------------------------------------------------------------

STAGES = ("run", "score", "interop", "report", "reproduce")
# What each runtime package may import (besides benchc.compiler, benchc.defaults and itself): the
# stages before it, runtime/artifacts.py, runtime/backends/ and runtime/lazy_exports.py (the
# packages' lazy re-exports). Anything else at the top of runtime/ is its own unit.
MAY_IMPORT = {
    "run": {"artifacts", "backends", "lazy_exports"},
    "score": {"artifacts", "backends", "run", "lazy_exports"},
    "interop": {"artifacts", "run", "score", "lazy_exports"},
    "report": {"artifacts", "run", "score", "lazy_exports"},
    "reproduce": {"artifacts", "run", "score", "report", "lazy_exports"},
    "backends": set(),
    "artifacts": set(),
    "lazy_exports": set(),
}


def _runtime_unit(module: str) -> str:
    """``benchc.runtime.score.metrics.general`` -> ``score``; ``benchc.runtime.artifacts`` -> ``artifacts``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def _runtime_package_graph() -> dict[str, set[str]]:
    """Runtime package -> the runtime packages it imports, at module level or inside functions
    (``if TYPE_CHECKING:`` imports left out)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if not name.startswith("benchc.runtime."):
            continue
        unit = _runtime_unit(name)
        deps = {_runtime_unit(dep) for dep in _all_imports(name, path, modules) if dep.startswith("benchc.runtime.")}
        graph.setdefault(unit, set()).update(deps - {unit})
    return graph


def test_runtime_has_a_package_per_stage_each_with_a_readme() -> None:
    for stage in STAGES:
        folder = ROOT / "runtime" / stage
        assert (folder / "__init__.py").is_file(), f"runtime/{stage}/ is not a package"
        readme = folder / "README.md"
        assert readme.is_file(), f"runtime/{stage}/README.md is missing"
        text = readme.read_text()
        assert "**Takes**" in text and "**Gives**" in text, f"runtime/{stage}/README.md: what it takes and gives"
    # what is left at the top of runtime/: the shared schemas, the backends and the packages'
    # lazy re-export mechanism, nothing of a stage
    top = sorted(p.name for p in (ROOT / "runtime").iterdir() if p.suffix == ".py" or
                 (p.is_dir() and (p / "__init__.py").exists()))
    assert top == sorted(["__init__.py", "artifacts.py", "backends", "lazy_exports.py", *STAGES]), top


def test_the_stage_packages_import_in_a_fresh_process() -> None:
    code = ("import benchc.runtime.run, benchc.runtime.score, benchc.runtime.interop, "
            "benchc.runtime.report, benchc.runtime.reproduce\n"
            "for package in (benchc.runtime.run, benchc.runtime.score, benchc.runtime.interop, "
            "benchc.runtime.report, benchc.runtime.reproduce):\n"
            "    for name in package.__all__:\n"
            "        getattr(package, name)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_a_stage_package_re_exports_names_it_does_not_shadow() -> None:
    """A re-exported name never equals a submodule's name: ``from benchc.runtime.interop import
    export`` would give the function or the module depending on what was imported before."""
    for stage in STAGES:
        package = importlib.import_module(f"benchc.runtime.{stage}")
        submodules = {p.stem for p in (ROOT / "runtime" / stage).iterdir() if p.suffix == ".py" or p.is_dir()}
        assert not set(package.__all__) & submodules, (stage, set(package.__all__) & submodules)


def test_runtime_packages_import_only_earlier_stages() -> None:
    """The package graph, imports inside functions counted: no cycle, and each package imports
    only what its README allows (run <- score <- interop, report <- reproduce)."""
    graph = _runtime_package_graph()
    assert set(STAGES) <= set(graph), sorted(graph)
    assert "backends" in graph["run"] and "run" in graph["score"]  # the graph sees the imports
    cycle = _cycle(graph)
    assert cycle is None, "import cycle among runtime packages: " + " -> ".join(cycle or [])
    extra = {unit: sorted(deps - MAY_IMPORT.get(unit, set())) for unit, deps in graph.items()
             if deps - MAY_IMPORT.get(unit, set())}
    assert not extra, f"runtime packages importing a later stage: {extra}"


# Within a package, two circles of modules go through an import inside a function (each lazy
# import is the way out of the circle at load time). Listed so that no new one appears unseen.
KNOWN_LAZY_CIRCLES = [
    ["benchc.runtime.interop.answer_files", "benchc.runtime.interop.harness_logs"],
    ["benchc.runtime.score.metrics.errors", "benchc.runtime.score.metrics.general",
     "benchc.runtime.score.metrics.mmcbench"],
]


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The components of ``graph`` with more than one module (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for dep in sorted(graph[name]):
            if dep not in index:
                visit(dep)
                low[name] = min(low[name], low[dep])
            elif dep in stack:
                low[name] = min(low[name], index[dep])
        if low[name] == index[name]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == name:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(found)


def test_runtime_module_circles_are_the_known_lazy_ones() -> None:
    modules = _modules()
    runtime = {name: path for name, path in modules.items() if name.startswith("benchc.runtime")}
    graph = {name: _all_imports(name, path, modules) & set(runtime) for name, path in runtime.items()}
    assert _strongly_connected(graph) == KNOWN_LAZY_CIRCLES


def test_the_module_graph_tests_cover_the_stage_packages() -> None:
    """test_no_import_cycle and test_no_private_name_is_imported_from_another_module walk every
    module setup.py installs, the stage packages' included."""
    modules = _modules()
    for stage in STAGES:
        assert f"benchc.runtime.{stage}" in modules
        assert any(name.startswith(f"benchc.runtime.{stage}.") for name in modules)
    assert "benchc.runtime.score.metrics.general" in modules

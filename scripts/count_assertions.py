"""Count the suite's checks at a git revision: ``assert`` statements, ``pytest.raises`` blocks and
``@pytest.mark.parametrize`` cases in tests/, so that a change which makes the suite cheaper can
show that it dropped none (issue 24). The number of collected tests comes from pytest itself:
``pytest --collect-only -q | tail -1``.

    python scripts/count_assertions.py            # the working tree
    python scripts/count_assertions.py 3c3423c    # a commit
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_sources(revision: str | None) -> dict[str, str]:
    """Every Python file under tests/, by path, as it is at ``revision`` (None: on disk)."""
    if revision is None:
        return {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "tests").rglob("*.py"))}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", revision, "tests"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {name: subprocess.run(["git", "show", f"{revision}:{name}"], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout for name in names if name.endswith(".py")}


def _is_pytest_attr(node: ast.AST, *names: str) -> bool:
    """``pytest.<names[0]>.<names[1]>...`` (as ``pytest.mark.parametrize`` or ``pytest.raises``)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return isinstance(node, ast.Name) and node.id == "pytest" and tuple(parts) == names


def _parametrize_cases(call: ast.Call) -> int:
    """How many cases a ``parametrize`` decorator with a literal list or tuple gives (1 if not literal)."""
    values = call.args[1] if len(call.args) > 1 else None
    return len(values.elts) if isinstance(values, (ast.List, ast.Tuple)) else 1


def count(source: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert):
            counts["assert statements"] += 1
        elif isinstance(node, ast.Call) and _is_pytest_attr(node.func, "raises"):
            counts["pytest.raises"] += 1
        elif isinstance(node, ast.Call) and _is_pytest_attr(node.func, "mark", "parametrize"):
            counts["parametrize decorators"] += 1
            counts["literal parametrize cases"] += _parametrize_cases(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            counts["test functions"] += 1
    return counts


def main(argv: list[str]) -> int:
    revision = argv[0] if argv else None
    total: Counter[str] = Counter()
    for source in test_sources(revision).values():
        total += count(source)
    print(f"tests/ at {revision or 'the working tree'}:")
    for key in ("test functions", "assert statements", "pytest.raises", "parametrize decorators",
                "literal parametrize cases"):
        print(f"  {key:26} {total[key]:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env bash
# mypy --strict (the [tool.mypy] settings of pyproject.toml) over benchc.compiler, the part that
# decides every digest, and the run-side artifact models. setup.py maps compiler/ and runtime/
# into the benchc package (benchc.compiler, benchc.runtime), a layout mypy cannot follow from
# the repository root, so it checks a tree of links with the installed layout (.typecheck/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
TREE=.typecheck/tree
rm -rf "$TREE"
mkdir -p "$TREE/benchc"
for file in benchc/*.py; do ln -s "$ROOT/$file" "$TREE/benchc/"; done
ln -s "$ROOT/compiler" "$TREE/benchc/compiler"
ln -s "$ROOT/runtime" "$TREE/benchc/runtime"
cd "$TREE"
"$ROOT/.venv/bin/mypy" --config-file "$ROOT/pyproject.toml" --cache-dir "$ROOT/.typecheck/cache" \
  -p benchc.compiler -m benchc.runtime.artifacts

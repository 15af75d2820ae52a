#!/usr/bin/env bash
# Sets up everything benchc needs on a fresh Debian machine with Python 3.11:
# Debian packages (espeak-ng, sox, chromium), a .venv with torch==2.13.0 (CPU) first, then the jointly
# checked pins of requirements.lock, then benchc itself (editable). Idempotent: a second run that
# finds the same requirements.lock installed does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
VENV=.venv
STAMP="$VENV/.benchc-installed"
WANT="$(cat requirements.lock requirements-nodeps.txt pyproject.toml setup.py | sha256sum | cut -d' ' -f1)"

need_apt=()
command -v espeak-ng >/dev/null || need_apt+=(espeak-ng)
command -v sox >/dev/null || need_apt+=(sox)
# headless Chromium checks the HTML report's item browser in tests/test_report.py (skipped without it)
command -v chromium >/dev/null || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  exit 0
fi

echo "setup: creating $VENV (torch 2.13.0 CPU first, then requirements.lock; ~2 min, ~3.5 GB)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# --no-compile: pip byte-compiles every file it installs (torch, transformers, ray, ...: 211 s for
# the whole setup here, 131 s without); Python compiles only what is imported, on first import.
INSTALL=(install --no-compile)
# pip warns about every local index folder a package is missing from; those lines are noise.
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "${PIP[@]}" "${INSTALL[@]}" torch==2.13.0
quiet "${PIP[@]}" "${INSTALL[@]}" -r requirements.lock
quiet "${PIP[@]}" "${INSTALL[@]}" --no-deps -r requirements-nodeps.txt
quiet "${PIP[@]}" "${INSTALL[@]}" --no-deps -e .
echo "$WANT" > "$STAMP"
echo "setup: done"

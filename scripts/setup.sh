#!/usr/bin/env bash
# Sets up everything benchc needs on a fresh Debian machine with Python 3.11:
# Debian packages (espeak-ng, sox, chromium), a .venv with torch==2.13.0 (CPU) and the jointly
# checked pins of requirements.lock (installed by uv, or by pip where uv fails), then benchc itself
# (editable). Idempotent: a second run that finds the same requirements.lock installed does nothing.
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

echo "setup: creating $VENV (torch 2.13.0 CPU and requirements.lock; ~1 min with uv, ~2 with pip; ~3.5 GB)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

# uv installs the same pins from the same sources as pip, about 3x faster (measured here on a cold
# cache: 30 s for torch and requirements.lock, against pip's ~100 s); scripts/uv_flags.py hands it
# pip's configured sources. Where uv cannot be had, or meets a pip setting it does not translate,
# or fails, pip installs everything as before.
UV_PIN=uv==0.13.9
install_with_uv() {
  local flags
  "${PIP[@]}" install --no-compile "$UV_PIN" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) || return 1
  flags=$("$VENV/bin/python" scripts/uv_flags.py "$VENV/bin/python") || return 1
  mapfile -t flags <<< "$flags"
  local UV=("$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" "${flags[@]}")
  # torch==2.13.0 is the first line of requirements.lock; one resolution installs it with the rest
  "${UV[@]}" -r requirements.lock && "${UV[@]}" --no-deps -r requirements-nodeps.txt && "${UV[@]}" --no-deps -e .
}

install_with_pip() {
  # --no-compile: pip byte-compiles every file it installs (torch, transformers, ray, ...: 211 s for
  # the whole setup here, 131 s without); Python compiles only what is imported, on first import.
  local INSTALL=(install --no-compile)
  # pip warns about every local index folder a package is missing from; those lines are noise.
  quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
  quiet "${PIP[@]}" "${INSTALL[@]}" torch==2.13.0
  quiet "${PIP[@]}" "${INSTALL[@]}" -r requirements.lock
  quiet "${PIP[@]}" "${INSTALL[@]}" --no-deps -r requirements-nodeps.txt
  quiet "${PIP[@]}" "${INSTALL[@]}" --no-deps -e .
}

install_with_uv || { echo "setup: uv could not install the pins; installing them with pip"; install_with_pip; }
# The CPU build or nothing: a CUDA torch here means a package source served the wrong wheel.
"$VENV/bin/python" -c "import sys, torch; sys.exit(torch.version.cuda is not None)" || {
  echo "setup: torch in $VENV is a CUDA build; expected torch 2.13.0 for CPU (see README, Install; scripts/setup.sh)" >&2; exit 1; }
echo "$WANT" > "$STAMP"
echo "setup: done"

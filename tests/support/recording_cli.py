"""``python -m support.recording_cli ARGS`` is ``benchc ARGS`` with the ``recording`` test backend.

Why a wrapper: backends register when their module is imported and benchc has no plugin entry
point, so importing the test backend before the real CLI's ``main`` is the least intrusive way to
give a real ``benchc run`` process one more backend. Worker processes of ``-j N`` import the
backend's module themselves (compiler/pools.py).
"""

from __future__ import annotations

import sys

import support.recording_backend  # noqa: F401  (registers "recording")
from benchc.cli import main

if __name__ == "__main__":
    sys.exit(main())

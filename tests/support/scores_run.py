"""A run folder holding only a scores.json: all the report commands need."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def scores_run(tmp_path: Path, scores: dict[str, Any]) -> Path:
    """``tmp_path``/run with ``scores`` as its scores.json; returns the run folder."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "scores.json").write_text(json.dumps(scores))
    return run

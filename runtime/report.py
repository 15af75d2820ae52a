"""``benchc report``: scores.json -> a Markdown report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchc.compiler.atomic import write_text_atomic
from benchc.compiler.errors import BenchcError, Problem

from .score import SCORES_FILE

REPORT_FILE = "report.md"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def markdown_table(columns: list[str], rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def render_report(scores: dict[str, Any]) -> str:
    bench = scores["benchmark"]
    out = [f"# {bench['name']} {bench['version']}", "",
           f"Model: `{scores.get('model')}` · items: {scores['items']} · "
           f"manifest `{scores['manifest_digest'][:16]}`", ""]
    for metric in scores["metrics"]:
        out += [f"## {metric['name']}", "", markdown_table(metric["columns"], metric["rows"]), ""]
        for label, per in metric.get("details", {}).get("per_corruption_x100", {}).items():
            out += [f"<details><summary>per corruption ({label}), mean similarity x100</summary>", "",
                    markdown_table(["corruption", "x100"], [{"corruption": c, "x100": v} for c, v in per.items()]),
                    "", "</details>", ""]
        out += [f"> {note}" for note in metric.get("notes", [])] + [""]
    return "\n".join(out)


def write_report(run_dir: Path) -> Path:
    try:
        scores = json.loads((Path(run_dir) / SCORES_FILE).read_text())
    except FileNotFoundError:
        raise BenchcError(Problem(f"{run_dir} has no {SCORES_FILE}", hint="run `benchc score RUN_DIR` first")) from None
    path = Path(run_dir) / REPORT_FILE
    write_text_atomic(path, render_report(scores))
    return path

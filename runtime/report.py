"""``benchc report``: scores.json -> a Markdown report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchc.compiler.errors import Problem, RunError

from .runfolder import read_json, write_text
from .score import SCORES_FILE

REPORT_FILE = "report.md"
SCORES_KEYS = ("benchmark", "manifest_digest", "items", "metrics")


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
    scores = read_json(Path(run_dir) / SCORES_FILE, "scores", f"run `benchc score {run_dir}` first")
    if not isinstance(scores, dict) or not all(k in scores for k in SCORES_KEYS):  # valid JSON, another shape
        raise RunError(Problem(f"{SCORES_FILE} is not a benchc scores file", file=str(Path(run_dir) / SCORES_FILE),
                               hint=f"rerun `benchc score {run_dir}`"))
    path = Path(run_dir) / REPORT_FILE
    write_text(path, render_report(scores), "report")
    return path

"""``benchc report``: a scored run -> ``report.md`` and a report folder.

* ``core``: the report itself (``build_report``, ``write_report``...; its names are this
  package's API, re-exported here);
* ``tables``: tables in Markdown, LaTeX and CSV, the provenance footer, the paper layouts;
* ``plots``: bar and radar figures;
* ``html``: the HTML page and its item browser;
* ``scoring``: a run scored again (breakdowns by attribute, the browser's groups);
* ``strength``: scores by perturbation strength;
* ``diff_runs``: ``benchc diff``, two runs of one manifest compared item by item (``RunsDiff``,
  ``render_runs``; the function ``diff_runs`` is read from its module).

The API is loaded on first use (``__getattr__``), so that importing ``tables`` or ``plots`` (as
``runtime.reproduce`` does) does not load ``core``, which imports the scoring stage.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import (DEFAULT_MAX_GROUPS, FIGURE_FORMATS, REPORT_DIR, REPORT_FILE, SCORES_KEYS, TABLE_FORMATS,
                       Browser, Figure, Part, ReportResult, bar_data, breakdown_parts, build_report, metric_parts,
                       radar_data, read_scores, render_markdown, render_report, write_report)
    from .diff_runs import RunsDiff, load_run, render_runs

__all__ = ["DEFAULT_MAX_GROUPS", "FIGURE_FORMATS", "REPORT_DIR", "REPORT_FILE", "SCORES_KEYS", "TABLE_FORMATS",
           "Browser", "Figure", "Part", "ReportResult", "bar_data", "breakdown_parts", "build_report",
           "metric_parts", "radar_data", "read_scores", "render_markdown", "render_report", "write_report",
           "RunsDiff", "load_run", "render_runs"]
_FROM_DIFF_RUNS = frozenset({"RunsDiff", "load_run", "render_runs"})


def __getattr__(name: str) -> Any:
    if name in __all__:
        module = "diff_runs" if name in _FROM_DIFF_RUNS else "core"
        value = getattr(import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

"""Report figures: grouped bars, per-attribute breakdowns and MMCBench-style radar charts.

A figure plots a data table (``report_tables.Table``): the first column names the categories
(bars' x positions, or the radar's spokes), every other column is one series (one bar colour, or
one polygon). That table is written beside the figure as CSV, so a reader (and ``benchc
reproduce``) can see the plotted numbers.

Figures are drawn on matplotlib's Agg canvas through the object API (no pyplot, no global
backend switch), under matplotlib's default style plus fixed settings, so a user's matplotlibrc
does not change them. PNG and SVG are written with fixed metadata (no date, no software
version; the provenance footer as the description) and SVG ids from a fixed salt, so two renders
of the same data are byte-identical.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any, Literal

from .report_tables import Table

FORMATS = ("png", "svg")
Normalize = Literal["none", "best"]

_RC: dict[str, Any] = {
    "svg.hashsalt": "benchc",
    "svg.fonttype": "none",   # text stays text: smaller files that a browser renders with its fonts
    "font.family": "DejaVu Sans",
    "font.size": 8.0,
    "axes.titlesize": 10.0,
    "legend.fontsize": 7.0,
    "figure.dpi": 100.0,
    "savefig.dpi": 150.0,
    "path.simplify": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
_FOOTER_POINTS = 6.5


def normalized(table: Table, normalize: Normalize) -> Table:
    """``best``: each category divided by the best series there (MMCBench Figure 2: the
    highest-scoring model is 1 on each corruption), to six decimals."""
    if normalize == "none":
        return table
    rows = []
    for row in table.rows:
        values = [v for v in row[1:] if isinstance(v, (int, float)) and v is not None]
        best = max(values) if values else 0
        rows.append([row[0], *((round(v / best, 6) if best and v is not None else v) for v in row[1:])])
    return Table(table.name, table.title, table.columns, rows, digits=max(table.digits, 3),
                 notes=[*table.notes, "each category divided by its best series"], footer=table.footer)


def render(kind: Literal["bar", "breakdown", "radar"], data: Table, fmt: str, ylabel: str | None = None) -> bytes:
    """The figure of ``data`` as PNG or SVG bytes."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(_RC)
        radar = kind == "radar"
        bars = len(data.rows) * max(1, len(data.columns) - 1)
        width, height = (7.0, 7.0) if radar else (min(16.0, max(6.4, 1.0 + 0.3 * bars)), 4.2)
        lines = _wrap(data.footer, width)
        footer = "\n".join(lines)
        footer_inches = (len(lines) * _FOOTER_POINTS * 1.35 + 6) / 72
        fig = Figure(figsize=(width, height + footer_inches))
        FigureCanvasAgg(fig)
        fig.set_layout_engine("constrained", rect=(0, footer_inches / (height + footer_inches), 1,
                                                   1 - footer_inches / (height + footer_inches)))
        if radar:
            _radar(fig, data)
        else:
            _bars(fig, data, ylabel)
        if footer:
            fig.text(0.01, 0.004, footer, fontsize=_FOOTER_POINTS, color="0.35", va="bottom", ha="left",
                     family="DejaVu Sans Mono")
        buffer = io.BytesIO()
        if fmt == "png":
            fig.savefig(buffer, format="png", metadata={"Software": None, "Description": footer or None})
        elif fmt == "svg":
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Description": footer or None})
        else:
            raise ValueError(f"unknown figure format {fmt!r}")
        return buffer.getvalue()


def _wrap(lines: Sequence[str], width_inches: float) -> list[str]:
    """Footer lines cut to the figure's width (a monospaced glyph is 0.6 em wide)."""
    import textwrap

    chars = max(40, int(width_inches * 72 / (_FOOTER_POINTS * 0.6)) - 4)
    return [part for line in lines for part in textwrap.wrap(line, chars, subsequent_indent="  ") or [""]]


def _numbers(row: Sequence[Any]) -> list[float]:
    return [float(v) if isinstance(v, (int, float)) and v is not None and math.isfinite(v) else math.nan
            for v in row]


def _bars(fig: Any, data: Table, ylabel: str | None) -> None:
    ax = fig.add_subplot()
    categories = [str(r[0]) for r in data.rows]
    series = data.columns[1:]
    count = max(1, len(series))
    width = 0.8 / count
    for index, name in enumerate(series):
        values = _numbers([r[index + 1] for r in data.rows])
        positions = [c + (index - (count - 1) / 2) * width for c in range(len(categories))]
        ax.bar(positions, values, width=width * 0.95, label=str(name), color=f"C{index % 10}")
    ax.set_xticks(range(len(categories)))
    ax.set_xlim(-0.5, len(categories) - 0.5)
    rotate = len(categories) > 6 or max((len(c) for c in categories), default=0) > 14
    ax.set_xticklabels(categories, rotation=35 if rotate else 0, ha="right" if rotate else "center")
    ax.set_title(data.title)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(axis="x", visible=False)
    if len(series) > 1:
        ax.legend(loc="best", frameon=False)


def _radar(fig: Any, data: Table) -> None:
    ax = fig.add_subplot(projection="polar")
    spokes = [str(r[0]) for r in data.rows]
    n = len(spokes)
    angles = [2 * math.pi * i / n for i in range(n)] if n else []
    top = 0.0
    for index, name in enumerate(data.columns[1:]):
        values = _numbers([r[index + 1] for r in data.rows])
        top = max([top, *(v for v in values if not math.isnan(v))])
        closed_a, closed_v = angles + angles[:1], values + values[:1]
        ax.plot(closed_a, closed_v, color=f"C{index % 10}", linewidth=1.2, label=str(name))
        ax.fill(closed_a, closed_v, color=f"C{index % 10}", alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels(spokes, fontsize=6 if n > 12 else 7)
    ax.set_ylim(0, top * 1.05 if top > 0 else 1)
    ax.tick_params(axis="y", labelsize=6)
    ax.set_title(data.title, pad=18)
    if len(data.columns) > 2:
        ax.legend(loc="upper right", bbox_to_anchor=(1.25, 1.12), frameon=False)

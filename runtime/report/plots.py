"""Report figures: grouped bars, per-attribute breakdowns and MMCBench-style radar charts.

A figure plots a data table (``tables.Table``): the first column names the categories
(bars' x positions, or the radar's spokes), every other column is one series (one bar colour, or
one polygon). In bar charts, interval bounds (``ci_low``/``ci_high``, also prefixed:
``acc_ci_low``) are not series: they are the error bar of the estimate column before them
(``bar_series``), and a missing estimate is labelled n/a instead of drawn as no bar. That table
is written beside the figure as CSV, so a reader (and ``benchc reproduce``) can see the plotted
numbers.

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
from dataclasses import dataclass
from typing import Any, Literal

from .tables import Table

FORMATS = ("png", "svg")
INTERVAL_SUFFIXES = ("ci_low", "ci_high")
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
    highest-scoring model is 1 on each corruption), to six decimals. Interval bounds are divided
    by the same number and never count as the best."""
    if normalize == "none":
        return table
    estimates = [not is_interval_column(c) for c in table.columns[1:]]
    rows = []
    for row in table.rows:
        values = [v for v, estimate in zip(row[1:], estimates)
                  if estimate and isinstance(v, (int, float)) and v is not None]
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
        bars = len(data.rows) * max(1, len(bar_series(data.columns)))
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


@dataclass(frozen=True)
class Series:
    """One bar series of a figure table: its estimate column and, if the table has them, the
    columns of its interval (indices into the table's columns)."""

    name: str
    column: int
    low: int | None = None
    high: int | None = None


def is_interval_column(name: str) -> bool:
    """``ci_low``, ``ci_high`` and their prefixed forms (``acc_ci_low``, ``llava ci_high``)."""
    return str(name).lower().endswith(INTERVAL_SUFFIXES)


def bar_series(columns: Sequence[str]) -> list[Series]:
    """The bars of a figure table: every column after the first except interval bounds. A bound
    (``..ci_low``, ``..ci_high``) belongs to the nearest estimate column before it, as the
    metrics write them (``agreement, ci_low, ci_high``; ``accuracy, acc_ci_low, acc_ci_high,
    worst_case, ci_low, ci_high``), and is drawn as that bar's error bar, never as a bar."""
    out: list[Series] = []
    for index, name in enumerate(columns[1:], start=1):
        if not is_interval_column(name):
            out.append(Series(str(name), index))
        elif out:
            last = out[-1]
            if str(name).lower().endswith("ci_low") and last.low is None:
                out[-1] = Series(last.name, last.column, index, last.high)
            elif str(name).lower().endswith("ci_high") and last.high is None:
                out[-1] = Series(last.name, last.column, last.low, index)
    return out


def _bars(fig: Any, data: Table, ylabel: str | None) -> None:
    """One bar per estimate (no bar where it is missing: an "n/a" label instead, so an absent
    value never reads as 0) with its interval, if the table has one, as an error bar from
    ci_low to ci_high. A figure without intervals or missing values draws as it always did
    (the same bytes: paper files record their hashes)."""
    ax = fig.add_subplot()
    categories = [str(r[0]) for r in data.rows]
    series = bar_series(data.columns)
    count = max(1, len(series))
    width = 0.8 / count
    for index, one in enumerate(series):
        values = _numbers([r[one.column] if one.column < len(r) else None for r in data.rows])
        positions = [c + (index - (count - 1) / 2) * width for c in range(len(categories))]
        shown = [k for k, v in enumerate(values) if not math.isnan(v)]
        color = f"C{index % 10}"
        ax.bar([positions[k] for k in shown], [values[k] for k in shown], width=width * 0.95, label=one.name,
               color=color)
        for k in (k for k, v in enumerate(values) if math.isnan(v)):
            ax.text(positions[k], 0, "n/a", ha="center", va="bottom", fontsize=7, color="0.4")
        _error_bars(ax, data, one, positions)
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


def _error_bars(ax: Any, data: Table, one: Series, positions: Sequence[float]) -> None:
    """The interval ci_low..ci_high of each bar that has both bounds (drawn from the bounds
    themselves, so an estimate outside its percentile interval is still shown as it is)."""
    if one.low is None or one.high is None:
        return
    lows = _numbers([r[one.low] if one.low < len(r) else None for r in data.rows])
    highs = _numbers([r[one.high] if one.high < len(r) else None for r in data.rows])
    keep = [k for k in range(len(data.rows)) if not math.isnan(lows[k]) and not math.isnan(highs[k])]
    if not keep:
        return
    middle = [(lows[k] + highs[k]) / 2 for k in keep]
    half = [abs(highs[k] - lows[k]) / 2 for k in keep]
    ax.errorbar([positions[k] for k in keep], middle, yerr=half, fmt="none", ecolor="0.15", elinewidth=1.0,
                capsize=3, zorder=3)


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

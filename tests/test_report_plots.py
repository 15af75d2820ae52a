"""Each kind of figure a report makes (bar, breakdown, radar), read back from its SVG: one bar per
estimate, an interval as an error bar (never as bars of its own), n/a where an estimate is
missing, one polygon per radar series; and a figure without intervals draws as it always did."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from benchc import api
from benchc.runtime.report.plots import bar_series, normalized, render
from benchc.runtime.report.tables import Table, read_csv
from support.scores_run import scores_run

SVG = "{http://www.w3.org/2000/svg}"
COLOURS = ("#1f77b4", "#ff7f0e")  # matplotlib's C0, C1: the first two series

AGREEMENT = {  # general.agreement's shape: an estimate and its bootstrap interval
    "name": "general.agreement",
    "columns": ["color", "groups", "pairs", "agreement", "ci_low", "ci_high"],
    "rows": [{"color": "blue", "groups": 4, "pairs": 12, "agreement": 75.0, "ci_low": 60.0, "ci_high": 90.0},
             {"color": "green", "groups": 0, "pairs": 0, "agreement": None, "ci_low": None, "ci_high": None},
             {"color": "red", "groups": 4, "pairs": 12, "agreement": 50.0, "ci_low": 35.5, "ci_high": 66.25}],
    "details": {"per_style": {"candy": {"a": 1.0, "b": 2.0, "c": 3.0, "d": 2.5},
                              "mosaic": {"a": 2.0, "b": 1.0, "c": 0.5, "d": 1.5}}},
    "notes": [],
}
WORST_CASE = {  # general.worst_case's shape: two estimates, each with its interval
    "name": "general.worst_case",
    "columns": ["groups", "answers", "accuracy", "acc_ci_low", "acc_ci_high", "worst_case", "ci_low", "ci_high"],
    "rows": [{"groups": 5, "answers": 15, "accuracy": 80.0, "acc_ci_low": 70.0, "acc_ci_high": 90.0,
              "worst_case": 40.0, "ci_low": 20.0, "ci_high": 60.0}],
    "details": {},
    "notes": [],
}


@dataclass
class Marks:
    bars: list[str]          # the fill colour of each bar in the plot area
    error_bars: int          # vertical lines of error bars
    texts: list[str]
    lines: list[str]         # stroke colours of plotted series lines (radar)
    polygons: list[str]      # fill colours of filled series areas (radar)


def _style(element: ET.Element) -> dict[str, str]:
    pairs = (part.split(":", 1) for part in (element.get("style") or "").split(";") if ":" in part)
    return {k.strip(): v.strip() for k, v in pairs}


def marks(svg: bytes) -> Marks:
    """What a matplotlib SVG draws in its axes (the legend left out)."""
    root = ET.fromstring(svg)
    axes = next(g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("axes_"))
    found = Marks([], 0, [], [], [])

    def walk(node: ET.Element) -> None:
        for child in node:
            ident = child.get("id", "")
            if ident.startswith("legend_"):
                continue
            paths = child.findall(f"{SVG}path")
            if ident.startswith("patch_"):
                for path in paths:
                    fill = _style(path).get("fill", "none")
                    if fill in COLOURS and "opacity" in _style(path):  # ax.fill: a translucent area
                        found.polygons.append(fill)
                    elif fill in COLOURS:
                        found.bars.append(fill)
            elif ident.startswith("LineCollection_"):
                found.error_bars += len(paths)
            elif ident.startswith("line2d_"):
                found.lines += [s for p in paths if (s := _style(p).get("stroke")) in COLOURS]
            found.texts += [t.text or "" for t in child.findall(f"{SVG}text")]
            walk(child)

    walk(axes)
    return found


def _report(tmp_path: Path, metrics: list[dict]) -> Path:
    run = scores_run(tmp_path, {"benchmark": {"name": "lab/plots", "version": "1.0.0"}, "manifest_digest": "cd" * 32,
                                "model": "m", "items": 8, "metrics": metrics})
    api.report(run)
    return run / "report" / "plots"


def test_a_bar_chart_draws_each_estimate_once_with_its_interval_as_an_error_bar(tmp_path: Path) -> None:
    plots = _report(tmp_path, [AGREEMENT])
    drawn = marks((plots / "general.agreement.bar.svg").read_bytes())
    # two estimates (green has none): two bars, both of the one series; no bar for ci_low/ci_high
    assert drawn.bars == [COLOURS[0]] * 2
    assert drawn.error_bars == 2  # blue 60..90 and red 35.5..66.25
    assert drawn.texts.count("n/a") == 1  # green: no bar, so that it cannot read as 0
    # the data beside the figure keeps the interval columns: what is plotted, honestly
    columns, rows = read_csv((plots / "general.agreement.bar.csv").read_text())
    assert columns == ["color", "agreement", "ci_low", "ci_high"] and len(rows) == 3


def test_each_estimate_gets_its_own_interval(tmp_path: Path) -> None:
    columns = ["rows", "accuracy", "acc_ci_low", "acc_ci_high", "worst_case", "ci_low", "ci_high"]
    assert [(s.name, s.low, s.high) for s in bar_series(columns)] == [("accuracy", 2, 3), ("worst_case", 5, 6)]
    plots = _report(tmp_path, [WORST_CASE])
    drawn = marks((plots / "general.worst_case.bar.svg").read_bytes())
    assert drawn.bars == list(COLOURS) and drawn.error_bars == 2


def test_a_breakdown_figure_draws_the_same_marks() -> None:
    data = Table("m.by-color.breakdown", "m by color", ["color", "agreement", "ci_low", "ci_high"],
                 [["blue", 75.0, 60.0, 90.0], ["red", 50.0, 40.0, 55.0], ["white", 10.0, None, None]])
    drawn = marks(render("breakdown", data, "svg"))
    assert drawn.bars == [COLOURS[0]] * 3 and drawn.error_bars == 2 and "n/a" not in drawn.texts


def test_a_radar_chart_draws_one_polygon_per_series(tmp_path: Path) -> None:
    plots = _report(tmp_path, [AGREEMENT])
    drawn = marks((plots / "general.agreement.per_style.radar.svg").read_bytes())
    assert sorted(drawn.lines) == sorted(drawn.polygons) == list(COLOURS)  # candy, mosaic
    assert drawn.bars == [] and drawn.error_bars == 0
    assert {"a", "b", "c", "d"} <= set(drawn.texts)


def test_best_normalisation_leaves_intervals_out_of_the_best() -> None:
    data = Table("d", "t", ["key", "a", "ci_low", "ci_high", "b"], [["x", 2.0, 1.0, 8.0, 4.0]])
    assert normalized(data, "best").rows == [["x", 0.5, 0.25, 2.0, 1.0]]

"""``benchc report``: a scored run -> ``report.md`` and a report folder.

The run folder gets ``report.md`` (every metric's table, its details tables, notes, footer) and
``report/``::

    report/index.html                 tables, figures and the item browser (html.py)
    report/tables/NAME.{md,tex,csv}   each table in Markdown, LaTeX and CSV (tables.py)
    report/plots/NAME.KIND.{png,svg}  bars per metric, radar charts of details matrices,
    report/plots/NAME.KIND.csv        and the numbers each figure plots (plots.py)
    report/media/SHA256.EXT           the browsed groups' images and audio

Tables and figures are generic over scores.json: a metric's rows make a table and a bar chart of
its measurement columns; each details matrix (label -> key -> number) a table and a radar chart.
``by`` adds per-attribute breakdowns (MM-R3 Tables 8-11): the run re-scored by
``runtime.score`` with the metrics split by that attribute. The folder is written into a staging
folder and swapped in whole. Each artifact carries the provenance footer (tables.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchc.compiler.atomic import make_staging_dir, replace_dir_atomic, write_bytes_atomic
from benchc.compiler.errors import BenchcError, Problem, RunError

from ...defaults import DEFAULT_CACHE, DEFAULT_STORE
from ..artifacts import RunRecord
from ..run.runfolder import RUN_FILE, read_json, read_run_record, write_text
from ..score.core import SCORES_FILE
from .tables import (RENDERERS, Provenance, Table, detail_shape, footer_lines, markdown_footer, markdown_table,
                     md_escape, metric_slugs, metric_title, row_keys, row_label, run_tables, slugify, value_columns)

REPORT_FILE = "report.md"
REPORT_DIR = "report"
SCORES_KEYS = ("benchmark", "manifest_digest", "items", "metrics")
DEFAULT_MAX_GROUPS = 100
TABLE_FORMATS = ("md", "tex", "csv")
FIGURE_FORMATS = ("png", "svg")
Browser = Literal["auto", "on", "off"]


@dataclass
class Figure:
    name: str          # file stem under plots/
    kind: str          # bar | breakdown | radar
    data: Table        # first column: categories; the others: series
    ylabel: str | None = None


@dataclass
class Part:
    """A metric (or a breakdown of one) in the report: tables and figures."""

    title: str
    tables: list[Table]
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReportResult:
    markdown: Path
    folder: Path
    files: list[str]
    browser_note: str | None  # why the item browser was left out, if it was


def read_scores(run_dir: Path) -> dict[str, Any]:
    scores = read_json(Path(run_dir) / SCORES_FILE, "scores", f"run `benchc score {run_dir}` first")
    if not isinstance(scores, dict) or not all(k in scores for k in SCORES_KEYS):  # valid JSON, another shape
        raise RunError(Problem(f"{SCORES_FILE} is not a benchc scores file", file=str(Path(run_dir) / SCORES_FILE),
                               hint=f"rerun `benchc score {run_dir}`"))
    return scores


def write_report(run_dir: Path, **options: Any) -> Path:
    """Write report.md and the report folder (see ``build_report``); return report.md's path."""
    return build_report(Path(run_dir), **options).markdown


def build_report(run_dir: Path, out_dir: Path | None = None, *, cache_dir: Path = DEFAULT_CACHE,
                 store_dir: Path = DEFAULT_STORE, manifest_dir: Path | None = None,
                 by: Sequence[str] = (), max_groups: int = DEFAULT_MAX_GROUPS, browser: Browser = "auto",
                 digits: int = 2) -> ReportResult:
    """``browser="auto"`` leaves the item browser out (saying why on the page) when the run's
    manifest, record or media cannot be read; ``"on"`` makes that an error; ``"off"`` skips it.

    Without ``out_dir`` the report is the run's own: ``RUN/report.md`` and ``RUN/report/``.
    With it, everything is written under ``out_dir`` (report.md included) and the run folder
    is only read: a report of a run elsewhere must not rewrite the run's report.md."""
    run_dir = Path(run_dir)
    scores = read_scores(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir / REPORT_DIR
    inside = out_dir is not None  # report.md goes into the report folder, not beside it in the run
    record, manifest, problem = _run_context(run_dir, manifest_dir, strict=browser == "on" or bool(by))
    splits = _splits(scores, manifest)
    provenance = [Provenance.of(scores, record)]
    footer = footer_lines(provenance)
    parts = metric_parts(scores, splits, provenance, digits)
    for attribute in by:
        parts += breakdown_parts(run_dir, manifest_dir, attribute, provenance, digits, (cache_dir, store_dir))
    _check_out_dir(out)
    staging = make_staging_dir(out)
    try:
        files = _write_artifacts(staging, parts)
        browser_data, note = None, problem
        if browser != "off" and manifest is not None and record is not None:
            browser_data, note = _browser(run_dir, manifest_dir, record, manifest, staging, cache_dir, store_dir,
                                          max_groups, strict=browser == "on")
        elif browser == "off":
            note = "the item browser was not requested"
        files.append("index.html")
        (staging / "index.html").write_text(_page(scores, record, parts, browser_data, note, footer), encoding="utf-8")
        if inside:
            files.append(REPORT_FILE)
            (staging / REPORT_FILE).write_text(render_markdown(scores, parts, footer, out, out, run_facts(record)),
                                               encoding="utf-8")
        replace_dir_atomic(staging, out)
    except OSError as exc:
        raise RunError(Problem(f"cannot write the report folder: {exc.strerror or exc}", file=str(out))) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    markdown = out / REPORT_FILE if inside else run_dir / REPORT_FILE
    if not inside:
        write_text(markdown, render_markdown(scores, parts, footer, out, run_dir, run_facts(record)), "report")
    return ReportResult(markdown, out, sorted(files), note)


# what goes in --------------------------------------------------------------------------------

def _run_context(run_dir: Path, manifest_dir: Path | None, strict: bool) -> tuple[Any, Any, str | None]:
    """(run record, manifest, why the browser cannot be built): a report of a run whose record
    or manifest is gone still has its tables and figures, unless ``strict``."""
    from .scoring import run_manifest

    if not (run_dir / RUN_FILE).is_file() and not strict:
        return None, None, f"no {RUN_FILE} beside scores.json, so the items cannot be shown"
    try:
        record, manifest, _ = run_manifest(run_dir, manifest_dir)
        return record, manifest, None
    except BenchcError as exc:
        if strict:
            raise
        try:
            record = read_run_record(run_dir)
        except BenchcError:
            record = None
        return record, None, f"the items cannot be shown: {exc.render()}"


def _splits(scores: dict[str, Any], manifest: Any) -> list[list[str]]:
    """Each metric's split attributes: the spec's ``by``; without the manifest, the leading
    text columns of its rows."""
    from .scoring import metric_splits

    if manifest is not None:
        found = metric_splits(manifest.spec)
        if len(found) == len(scores["metrics"]):
            return found
    out = []
    for metric in scores["metrics"]:
        split = []
        for column in metric.get("columns", []):
            if not all(isinstance(r.get(column), str) for r in metric.get("rows", [])) or not metric.get("rows"):
                break
            split.append(column)
        out.append(split)
    return out


def metric_parts(scores: dict[str, Any], splits: list[list[str]], provenance: Sequence[Provenance],
                 digits: int = 2) -> list[Part]:
    """Tables carry the full footer; figures the short one (digests cut to 16 hex digits)."""
    footer, short = footer_lines(provenance), footer_lines(provenance, short=True)
    parts = []
    slugs = metric_slugs(scores)
    for (metric, tables), split, slug in zip(run_tables(scores, digits), splits, slugs):
        for table in tables:
            table.footer = footer
        figures = []
        bars = bar_data(metric, split, f"{slug}.bar", metric_title(metric), short, digits)
        if bars is not None:
            figures.append(Figure(bars.name, "bar", bars))
        for key, value in (metric.get("details") or {}).items():
            radar = radar_data(value, f"{slug}.{slugify(key)}.radar", f"{metric_title(metric)}: {key}", short, digits)
            if radar is not None:
                figures.append(Figure(radar.name, "radar", radar))
        notes = list(tables[0].notes)
        tables[0].notes = []
        parts.append(Part(metric_title(metric), tables, figures, notes))
    return parts


def bar_data(metric: dict[str, Any], split: Sequence[str], name: str, title: str, footer: list[str],
             digits: int = 2) -> Table | None:
    columns = value_columns(metric, split)
    if not columns or not metric.get("rows"):
        return None
    keys = row_keys(metric, split)  # a bar per row, labelled by all that tells the rows apart
    label = "/".join(keys) or "rows"
    rows = [[row_label(row, keys), *(row.get(c) for c in columns)] for row in metric["rows"]]
    return Table(name, title, [label, *columns], rows, digits=digits, footer=footer)


def radar_data(value: Any, name: str, title: str, footer: list[str], digits: int = 2) -> Table | None:
    """A radar chart's data from a details entry with at least three keys (spokes)."""
    shape = detail_shape(value)
    if shape is None:
        return None
    matrix = value if shape == "matrix" else {"all": value}
    keys: list[str] = []
    for mapping in matrix.values():
        keys += [k for k in mapping if k not in keys]
    if len(keys) < 3:
        return None
    return Table(name, title, ["key", *matrix], [[k, *(m.get(k) for m in matrix.values())] for k in keys],
                 digits=digits, footer=footer)


def breakdown_parts(run_dir: Path, manifest_dir: Path | None, attribute: str, provenance: Sequence[Provenance],
                    digits: int = 2, media: tuple[Path | None, Path | None] = (None, None)) -> list[Part]:
    """Each metric re-scored with its rows split by ``attribute`` (``runtime.score``); a strength
    attribute (``ssim_bin``, runtime/report/strength.py) is measured from the stored images first."""
    from .scoring import rescore
    from .strength import STRENGTH_ATTRS, rescore_by_strength

    footer, short = footer_lines(provenance), footer_lines(provenance, short=True)
    split_scores = (rescore_by_strength(run_dir, manifest_dir, attribute, media) if attribute in STRENGTH_ATTRS
                    else rescore(run_dir, manifest_dir, by=[attribute], media=media))
    parts = []
    for metric, slug in zip(split_scores["metrics"], metric_slugs(split_scores)):
        name = f"{slug}.by-{slugify(attribute)}"
        title = f"{metric['name']} by {attribute}"
        columns = list(metric.get("columns", []))
        table = Table(name, title, columns, [[row.get(c) for c in columns] for row in metric.get("rows", [])],
                      digits=digits, footer=footer)
        bars = bar_data(metric, [attribute], f"{name}.breakdown", title, short, digits)
        figures = [Figure(bars.name, "breakdown", bars)] if bars is not None else []
        parts.append(Part(title, [table], figures, list(metric.get("notes", []))))
    return parts


# what comes out ------------------------------------------------------------------------------

def _check_out_dir(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "index.html").is_file())):
        raise RunError(Problem(f"{out} exists and is not a benchc report folder; refusing to replace it",
                               file=str(out), hint="choose a new or empty folder for -o/--out"))


def _write_artifacts(folder: Path, parts: list[Part]) -> list[str]:
    from .plots import render
    from .tables import to_csv

    files = []
    for part in parts:
        for table in part.tables:
            for fmt in TABLE_FORMATS:
                files.append(f"tables/{table.name}.{fmt}")
                write_bytes_atomic(folder / files[-1], RENDERERS[fmt](table).encode("utf-8"), durable=False)
        for figure in part.figures:
            files.append(f"plots/{figure.name}.csv")
            write_bytes_atomic(folder / files[-1], to_csv(figure.data).encode("utf-8"), durable=False)
            for fmt in FIGURE_FORMATS:
                files.append(f"plots/{figure.name}.{fmt}")
                write_bytes_atomic(folder / files[-1], render(figure.kind, figure.data, fmt, figure.ylabel),
                                   durable=False)
    return files


def _browser(run_dir: Path, manifest_dir: Path | None, record: RunRecord, manifest: Any, folder: Path,
             cache_dir: Path, store_dir: Path, max_groups: int, strict: bool) -> tuple[Any, str | None]:
    from .html import MediaCopier, browser_data, check_media, load_run_items
    from .scoring import group_scores

    try:
        items, responses = load_run_items(run_dir, record, manifest)
        shown = list(dict.fromkeys(items["group_id"].to_list()))[:max_groups]
        scores = group_scores(run_dir, manifest_dir, shown, (cache_dir, store_dir))
        stages = [s.stage for s in record.stages]
        copier = MediaCopier(folder, Path(cache_dir), Path(store_dir))
        data = browser_data(items, responses, stages, scores, copier, max_groups)
        if strict:
            check_media(copier)
        note = (f"{len(copier.missing)} media file(s) were not found in {cache_dir} or {store_dir}: "
                f"`benchc report-html {run_dir} --cache DIR --store DIR` with the folders the run used shows them"
                if copier.missing else None)
        return data, note
    except BenchcError as exc:
        if strict:
            raise
        return None, f"the items cannot be shown: {exc.render()}"


def _page(scores: dict[str, Any], record: RunRecord | None, parts: list[Part], browser: Any,
          note: str | None, footer: list[str]) -> str:
    from .html import Section, render_page

    bench = scores["benchmark"]
    groups = browser["total_groups"] if browser else None
    summary = [("benchmark", f"{bench['name']} {bench['version']}"), ("model", str(scores.get("model"))),
               ("items", str(scores["items"]))] + ([("groups", str(groups))] if groups is not None else []) + [
               ("manifest", scores["manifest_digest"])]
    if record is not None:
        summary.append(("stages", ", ".join(f"{s.stage}: {s.backend}" for s in record.stages)))
    if record is not None and record.verify is not None:
        summary.append(("verify", record.verify.summary()))
    sections = [Section(p.title, p.tables, [(f"plots/{f.name}.svg", f.data.title) for f in p.figures], p.notes)
                for p in parts]
    return render_page(f"{bench['name']} {bench['version']}", summary, sections, browser, note, footer)


def run_facts(record: RunRecord | None) -> list[str]:
    """Facts of the run that qualify every number below it: the server determinism that
    ``run --verify`` measured (a ``WARNING:`` when answers differed)."""
    if record is None or record.verify is None:
        return []
    head = "WARNING: " if record.verify.differ else ""
    return [f"{head}Determinism (run --verify {record.verify.requested}): {record.verify.summary()}."]


def render_markdown(scores: dict[str, Any], parts: list[Part], footer: list[str], folder: Path | None = None,
                    run_dir: Path | None = None, facts: Sequence[str] = ()) -> str:
    """``facts``: lines about the run (``run_facts``), quoted under the heading."""
    bench = scores["benchmark"]
    out = [f"# {md_escape(bench['name'])} {md_escape(str(bench['version']))}", "",
           (f"Model: `{scores.get('model')}` · items: {scores['items']} · "
            f"manifest `{scores['manifest_digest'][:16]}`"), ""]
    if facts:
        out += [f"> {md_escape(fact)}" for fact in facts] + [""]
    for part in parts:
        main, *details = part.tables
        out += [f"## {md_escape(part.title)}", "", markdown_table(main), ""]
        for table in details:
            out += [f"<details><summary>{md_escape(table.title)}</summary>", "", markdown_table(table), "",
                    "</details>", ""]
        out += [f"> {md_escape(note)}" for note in part.notes] + [""]
    if folder is not None:
        where = folder.relative_to(run_dir) if run_dir is not None and folder.is_relative_to(run_dir) else folder
        page = "index.html" if str(where) == "." else f"{where}/index.html"
        out += [f"Tables (Markdown, LaTeX, CSV), figures and the item browser: `{page}`", ""]
    out += markdown_footer(footer)
    return "\n".join(out)


def render_report(scores: dict[str, Any]) -> str:
    """report.md's text from scores alone (no run record: the footer lacks the backends)."""
    provenance = [Provenance.of(scores)]
    return render_markdown(scores, metric_parts(scores, _splits(scores, None), provenance), footer_lines(provenance))

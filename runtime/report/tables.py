"""Report tables: built from scores.json generically, written as Markdown, LaTeX and CSV.

Nothing here knows a metric by name. A metric result is ``{name, columns, rows, details,
notes}``; its rows become a table as they are, and each ``details`` entry that is a matrix
(label -> key -> number, e.g. MMCBench's per-corruption means per severity) or a series
(key -> number) becomes a table of its own, so a new metric renders without code changes.

Paper layouts (``benchc reproduce``) combine the same metric over several runs:

* ``rows``: the metric's rows, one block per run (a leading ``run`` column when there are
  several), optionally filtered (``where``) and cut to some columns;
* ``breakdown``: MM-R3 Tables 8-11: one row per run, one column group per value of the split
  attributes (``by``), the chosen columns inside each group;
* ``details``: a details matrix: one row per key (e.g. corruption), one column per run and label;
* ``combined``: MM-R3 Table 2, MERLIM Table 2: a row per model (run label), a column group per
  part, each part a metric's columns from runs of any spec (one row of the metric per run).

Any of them can gain an average column (``with_average``: the mean of chosen columns, named in a
note; n/a when one of them is) and an order (``sorted_by``, n/a rows last). A row keeps its keys
(``row_keys``: split attributes and text columns) whichever columns are chosen. A missing value
renders as ``n/a`` (``MISSING``), never as 0 or an empty cell; CSV keeps it empty, as data.
Metric notes that start with ``WARNING:`` (a number that may mislead) follow the metric into
every paper table made from it.

Every table carries a footer (``Provenance``): the spec's name and version, the manifest
digest, a digest of each backend's fingerprint, and the benchc version that rendered it. Output
bytes depend only on the scores and that footer (no dates, no paths), so a render is repeatable.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from benchc import __version__
from benchc.compiler.canonical import digest

from ..artifacts import RunRecord

# provenance ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Provenance:
    """What one run's artifacts were made from (the footer of each artifact)."""

    spec: str
    version: str
    manifest_digest: str
    backends: tuple[tuple[str, str, str], ...] = ()  # (stage, backend name, fingerprint digest)
    label: str | None = None
    known_backends: bool = True

    @classmethod
    def of(cls, scores: dict[str, Any], record: RunRecord | None = None,
           label: str | None = None) -> Provenance:
        bench = scores.get("benchmark") or {}
        fingerprints = record.backends if record is not None and "backends" in record.model_fields_set else None
        backends: tuple[tuple[str, str, str], ...] = ()
        if isinstance(fingerprints, dict):
            backends = tuple((str(stage), str(fp.get("backend", "?")) if isinstance(fp, dict) else "?",
                              digest(fp)[:16]) for stage, fp in sorted(fingerprints.items()))
        return cls(str(bench.get("name", "?")), str(bench.get("version", "?")),
                   str(scores.get("manifest_digest", "?")), backends, label,
                   known_backends=isinstance(fingerprints, dict))

    def line(self, short: bool = False) -> str:
        manifest = self.manifest_digest[:16] if short else self.manifest_digest
        if self.known_backends:
            backends = ", ".join(f"{stage}={name}@{fp}" for stage, name, fp in self.backends) or "none"
        else:
            backends = "unknown (no run.json)"
        head = f"{self.label}: " if self.label else ""
        return f"{head}{self.spec} {self.version} · manifest {manifest} · backends {backends}"


def footer_lines(provenance: Sequence[Provenance], short: bool = False) -> list[str]:
    """``benchc X`` then one line per run (runs with the same line are listed once)."""
    lines = [f"benchc {__version__}"]
    for p in provenance:
        text = p.line(short)
        if text not in lines:
            lines.append(text)
    return lines


# tables -------------------------------------------------------------------------------------


@dataclass
class Table:
    """A table with optional column groups: ``groups`` spans the columns after the first
    ``stub`` ones (e.g. a group per colour over Acc/S_GT/Con/S_C)."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    groups: list[tuple[str, int]] | None = None
    stub: int = 0
    digits: int = 2
    notes: list[str] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)

    def flat_columns(self) -> list[str]:
        """Column names with their group (``red/Acc``), as Markdown and CSV write them."""
        if not self.groups:
            return list(self.columns)
        out = list(self.columns[: self.stub])
        index = self.stub
        for label, span in self.groups:
            out += [f"{label}/{c}" for c in self.columns[index: index + span]]
            index += span
        return out + list(self.columns[index:])

    def numeric(self, column: int) -> bool:
        values = [r[column] for r in self.rows if column < len(r) and r[column] is not None]
        return bool(values) and all(_is_number(v) for v in values)

    def rounded(self) -> Table:
        """The table with every float cell rounded to ``digits``: what a paper artifact is
        written, drawn and hashed from, so that a last-bit difference (another CPU's kernels)
        cannot change a file unless it changes a printed digit."""
        rows = [[round_cell(v, self.digits) for v in row] for row in self.rows]
        return replace(self, rows=rows)


def round_cell(value: Any, digits: int) -> Any:
    """A float rounded to ``digits`` decimals (-0.0 as 0.0), lists element-wise; others as they are."""
    if isinstance(value, float) and math.isfinite(value):
        return round(value, digits) + 0.0
    if isinstance(value, (list, tuple)):
        return type(value)(round_cell(v, digits) for v in value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


MISSING = "n/a"
"""How a missing value (None: an empty set of items or pairs, a run without that column) reads
in a rendered table: never as 0, and never as an empty cell that could be taken for one."""


def format_cell(value: Any, digits: int) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = f"{value:.{digits}f}"
        return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.00"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_cell(v, digits) for v in value)
    return str(value)


def raw_cell(value: Any) -> str:
    """A cell as CSV keeps it: full precision, no formatting."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ";".join(raw_cell(v) for v in value)
    return str(value)


# Markdown -----------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\|*`\[\]<>])")


def md_escape(text: str) -> str:
    text = _MD_SPECIAL.sub(r"\\\1", text.replace("\r", " ").replace("\n", " "))
    # an underscore inside a word never emphasises (GFM); at a word's edge it may
    return re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", text)


def markdown_table(table: Table) -> str:
    columns = table.flat_columns()
    align = ["---:" if table.numeric(i) else "---" for i in range(len(columns))]
    lines = ["| " + " | ".join(md_escape(c) for c in columns) + " |", "|" + "|".join(align) + "|"]
    for row in table.rows:
        cells = [md_escape(format_cell(row[i] if i < len(row) else None, table.digits)) for i in range(len(columns))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def to_markdown(table: Table, heading: str = "###") -> str:
    out = [f"{heading} {md_escape(table.title)}", "", markdown_table(table), ""]
    out += [f"> {md_escape(note)}" for note in table.notes]
    if table.notes:
        out.append("")
    out += markdown_footer(table.footer)
    return "\n".join(out)


def markdown_footer(lines: Iterable[str]) -> list[str]:
    lines = list(lines)
    return ["<sub>" + "<br>".join(md_escape(line) for line in lines) + "</sub>", ""] if lines else []


# LaTeX --------------------------------------------------------------------------------------

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}"}


def tex_escape(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text.replace("\r", " ").replace("\n", " "))


def to_latex(table: Table) -> str:
    """A booktabs table; column groups become \\multicolumn headers with \\cmidrule lines. The
    footer is kept as comment lines, so the paper shows the table and the source its origin."""
    n = len(table.columns)
    spec = "".join("r" if table.numeric(i) else "l" for i in range(n))
    out = [r"\begin{table}[t]", r"\centering", rf"\caption{{{tex_escape(table.title)}}}",
           rf"\label{{tab:{table.name}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    if table.groups:
        cells = [""] * table.stub
        rules, start = [], table.stub + 1
        for label, span in table.groups:
            cells.append(rf"\multicolumn{{{span}}}{{c}}{{{tex_escape(label)}}}")
            rules.append(rf"\cmidrule(lr){{{start}-{start + span - 1}}}")
            start += span
        cells += [""] * (n - start + 1)
        out += [" & ".join(cells) + r" \\", " ".join(rules)]
    out.append(" & ".join(tex_escape(c) for c in table.columns) + r" \\")
    out.append(r"\midrule")
    for row in table.rows:
        out.append(" & ".join(tex_escape(format_cell(row[i] if i < len(row) else None, table.digits))
                              for i in range(n)) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    out += [f"% {tex_escape(note)}" for note in table.notes]
    out += [f"% {line}" for line in table.footer]
    return "\n".join(out) + "\n"


# CSV ----------------------------------------------------------------------------------------


def to_csv(table: Table) -> str:
    """Full-precision cells under one header row (groups flattened as ``group/column``); the
    footer follows as ``#`` lines (``read_csv`` and pandas' ``comment="#"`` skip them)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = table.flat_columns()
    writer.writerow(columns)
    for row in table.rows:
        writer.writerow([raw_cell(row[i] if i < len(row) else None) for i in range(len(columns))])
    for line in table.footer:
        buffer.write(f"# {line}\n")
    return buffer.getvalue()


def read_csv(text: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV written by ``to_csv`` (footer lines skipped)."""
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    rows = list(csv.reader(lines))
    return (rows[0], rows[1:]) if rows else ([], [])


RENDERERS = {"md": lambda t: to_markdown(t, "#"), "tex": to_latex, "csv": to_csv}
"""Format -> renderer of a standalone table file."""


# tables from a run's scores ------------------------------------------------------------------


def metric_table(metric: dict[str, Any], name: str, title: str | None = None, digits: int = 2) -> Table:
    columns = list(metric.get("columns") or _row_keys(metric.get("rows", [])))
    rows = [[row.get(c) for c in columns] for row in metric.get("rows", [])]
    return Table(name, title or metric["name"], columns, rows, digits=digits, notes=list(metric.get("notes", [])))


def _row_keys(rows: list[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    return keys


def detail_shape(value: Any) -> str | None:
    """``matrix`` (label -> key -> number), ``series`` (key -> number) or None."""
    if not isinstance(value, dict) or not value:
        return None
    if all(_is_number(v) for v in value.values()):
        return "series"
    if all(isinstance(v, dict) and v and all(_is_number(x) for x in v.values()) for v in value.values()):
        return "matrix"
    return None


def detail_table(key: str, value: dict[str, Any], name: str, title: str, digits: int = 2) -> Table | None:
    shape = detail_shape(value)
    if shape == "series":
        return Table(name, title, ["key", key], [[k, v] for k, v in value.items()], digits=digits)
    if shape == "matrix":
        labels = list(value)
        keys = _union_keys(value[label] for label in labels)
        return Table(name, title, ["key", *labels], [[k, *(value[label].get(k) for label in labels)] for k in keys],
                     digits=digits)
    return None


def _union_keys(mappings: Iterable[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for mapping in mappings:
        keys += [k for k in mapping if k not in keys]
    return keys


def run_tables(scores: dict[str, Any], digits: int = 2) -> list[tuple[dict[str, Any], list[Table]]]:
    """For each metric of a scores file: its rows table, then one table per details entry."""
    out = []
    names = metric_slugs(scores)
    for metric, slug in zip(scores["metrics"], names):
        tables = [metric_table(metric, slug, metric_title(metric), digits)]
        for key, value in (metric.get("details") or {}).items():
            table = detail_table(key, value, f"{slug}.{slugify(key)}", f"{metric_title(metric)}: {key}", digits)
            if table is not None:
                tables.append(table)
        out.append((metric, tables))
    return out


def slugify(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "x"


def metric_title(metric: dict[str, Any]) -> str:
    """A metric's name, with the named answer rule it read by and the choice-loglik stage it
    scored: ``general.accuracy (strict-match)``, ``general.accuracy (stage acc_norm)``."""
    parts = [metric["answer"]] if metric.get("answer") else []
    if metric.get("stage"):
        parts.append(f"stage {metric['stage']}")
    return metric["name"] + (f" ({', '.join(parts)})" if parts else "")


def metric_slugs(scores: dict[str, Any]) -> list[str]:
    """A file name per metric: its name (and named answer rule), with ``-2``, ``-3`` for repeats."""
    seen: dict[str, int] = {}
    out = []
    for metric in scores["metrics"]:
        slug = slugify(metric["name"] + "".join(f".{metric[k]}" for k in ("answer", "stage") if metric.get(k)))
        seen[slug] = seen.get(slug, 0) + 1
        out.append(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}")
    return out


def value_columns(metric: dict[str, Any], split: Sequence[str] = ()) -> list[str]:
    """Columns that hold measurements: numeric, not a split attribute, and not integer counts
    (``groups``, ``responses``, ``max``): those are the ones a float appears in."""
    out = []
    for column in metric.get("columns", []):
        if column in split:
            continue
        values = [row.get(column) for row in metric.get("rows", []) if row.get(column) is not None]
        if values and all(_is_number(v) for v in values) and any(isinstance(v, float) for v in values):
            out.append(column)
    return out


def row_label(row: dict[str, Any], split: Sequence[str]) -> str:
    return "/".join(str(row.get(c)) for c in split) if split else "all"


def row_keys(metric: dict[str, Any], split: Sequence[str] = ()) -> list[str]:
    """The columns that say which row a row is, in the metric's order: its split attributes and
    every column whose values are all text (``relation`` of general.consistency, ``question``
    of merlim.relations, ``image`` and ``prompt`` of merlim.recognition)."""
    rows = metric.get("rows", [])
    out = []
    for column in metric.get("columns", []):
        values = [row.get(column) for row in rows if row.get(column) is not None]
        if column in split or (values and all(isinstance(v, str) for v in values)):
            out.append(column)
    return out


WARNING = "WARNING:"
"""Notes that start with this say a number may mislead (missing corruptions, a threshold that
cannot tell short answers apart): paper tables carry them too, not only the run's report."""


def warnings_of(metric: dict[str, Any]) -> list[str]:
    return [str(n) for n in metric.get("notes", []) if str(n).startswith(WARNING)]


def _run_warnings(found: Iterable[tuple[str, dict[str, Any]]], several: bool) -> list[str]:
    """Each picked metric's warnings, once, prefixed with the run's label when there are several."""
    out: list[str] = []
    for label, metric in found:
        for note in warnings_of(metric):
            text = f"{label}: {note}" if several else note
            if text not in out:
                out.append(text)
    return out


# paper layouts over several runs -----------------------------------------------------------


@dataclass(frozen=True)
class RunScores:
    """One run's scores for a paper artifact: its label, scores, split attributes per metric
    (from the spec) and provenance."""

    label: str
    scores: dict[str, Any]
    split: list[list[str]]  # per metric of scores["metrics"], the spec's `by`
    provenance: Provenance


class LayoutError(ValueError):
    """A paper artifact asks for something the scores do not have (raised with a clear text);
    ``key`` names the artifact's key at fault (``sort``, ``average``, ``part[1].columns``)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def pick_metric(run: RunScores, name: str, occurrence: int = 0) -> tuple[dict[str, Any], list[str]]:
    found = [(m, s) for m, s in zip(run.scores["metrics"], run.split) if m["name"] == name]
    if not found:
        have = ", ".join(sorted({m["name"] for m in run.scores["metrics"]})) or "none"
        raise LayoutError(f"run {run.label!r} has no metric {name!r} (it has: {have})")
    if occurrence >= len(found):
        raise LayoutError(f"run {run.label!r} has {len(found)} metric(s) named {name!r}; "
                          f"occurrence {occurrence} does not exist")
    return found[occurrence]


def _check_columns(metric: dict[str, Any], columns: Sequence[str], run: RunScores) -> None:
    missing = [c for c in columns if c not in metric.get("columns", [])]
    if missing:
        raise LayoutError(f"run {run.label!r}: metric {metric['name']!r} has no column(s) {', '.join(missing)} "
                          f"(it has: {', '.join(metric.get('columns', []))})")


def _matches(row: dict[str, Any], where: dict[str, Any]) -> bool:
    return all(str(row.get(k)) == str(v) for k, v in where.items())


def layout_rows(runs: Sequence[RunScores], name: str, title: str, metric_name: str, occurrence: int = 0,
                columns: Sequence[str] | None = None, where: dict[str, Any] | None = None,
                digits: int = 2) -> Table:
    """The metric's rows, a block per run. With ``columns``, the row keys (``row_keys``: split
    attributes and text columns) stay in front of them, so that every row still says which
    row it is."""
    where = where or {}
    out_columns: list[str] | None = None
    rows: list[list[Any]] = []
    found = []
    for run in runs:
        metric, split = pick_metric(run, metric_name, occurrence)
        found.append((run.label, metric))
        wanted = list(columns) if columns else list(metric.get("columns", []))
        if columns:
            _check_columns(metric, wanted, run)
            wanted = [c for c in row_keys(metric, split) if c not in wanted] + wanted
        _check_columns(metric, wanted, run)
        if out_columns is None:
            out_columns = wanted
        elif wanted != out_columns:
            raise LayoutError(f"run {run.label!r}: metric {metric_name!r} has other columns than the first run's")
        for row in metric.get("rows", []):
            if _matches(row, where):
                rows.append(([run.label] if len(runs) > 1 else []) + [row.get(c) for c in wanted])
    cols = (["run"] if len(runs) > 1 else []) + (out_columns or [])
    return Table(name, title, cols, rows, digits=digits, notes=_run_warnings(found, len(runs) > 1),
                 footer=footer_lines([r.provenance for r in runs]))


def layout_breakdown(runs: Sequence[RunScores], name: str, title: str, metric_name: str, occurrence: int = 0,
                     columns: Sequence[str] | None = None, where: dict[str, Any] | None = None,
                     digits: int = 2) -> Table:
    """One row per run; a column group per split value (the metric's ``by``)."""
    where = where or {}
    groups: list[str] = []
    cells: list[dict[tuple[str, str], Any]] = []
    wanted: list[str] | None = None
    found = []
    for run in runs:
        metric, split = pick_metric(run, metric_name, occurrence)
        found.append((run.label, metric))
        if not split:
            raise LayoutError(f"run {run.label!r}: metric {metric_name!r} is not split by any attribute; "
                              "a breakdown needs `by` (in the spec, or in this artifact to re-score)")
        cols = list(columns) if columns else value_columns(metric, split)
        _check_columns(metric, cols, run)
        wanted = wanted or cols
        keys = row_keys(metric, split)  # a group per row: other text keys (relation) label it too
        mine: dict[tuple[str, str], Any] = {}
        for row in metric.get("rows", []):
            if not _matches(row, where):
                continue
            label = row_label(row, keys)
            if label not in groups:
                groups.append(label)
            mine.update({(label, c): row.get(c) for c in cols})
        cells.append(mine)
    wanted = wanted or []
    columns_out = ["run"] + [c for _ in groups for c in wanted]
    rows = [[run.label] + [mine.get((g, c)) for g in groups for c in wanted] for run, mine in zip(runs, cells)]
    return Table(name, title, columns_out, rows, groups=[(g, len(wanted)) for g in groups], stub=1,
                 digits=digits, notes=_run_warnings(found, len(runs) > 1),
                 footer=footer_lines([r.provenance for r in runs]))


def layout_details(runs: Sequence[RunScores], name: str, title: str, metric_name: str, detail: str,
                   occurrence: int = 0, labels: Sequence[str] | None = None, digits: int = 2) -> Table:
    """One row per details key (e.g. corruption); a column per run and details label."""
    series: dict[str, dict[str, Any]] = {}
    for run in runs:
        metric, _ = pick_metric(run, metric_name, occurrence)
        value = (metric.get("details") or {}).get(detail)
        shape = detail_shape(value)
        if shape is None:
            have = ", ".join(metric.get("details") or {}) or "none"
            raise LayoutError(f"run {run.label!r}: metric {metric_name!r} has no details table {detail!r} "
                              f"(it has: {have})")
        matrix = {"all": value} if shape == "series" else value
        for label, mapping in matrix.items():
            if labels and label not in labels:
                continue
            series[label if len(runs) == 1 else f"{run.label} {label}"] = mapping
    if not series:
        raise LayoutError(f"no details label of {detail!r} matches {list(labels or [])}")
    keys = _union_keys(series.values())
    rows = [[k, *(series[s].get(k) for s in series)] for k in keys]
    return Table(name, title, ["key", *series], rows, digits=digits, footer=footer_lines([r.provenance for r in runs]))


def layout_series(runs: Sequence[RunScores], name: str, title: str, metric_name: str, occurrence: int = 0,
                  columns: Sequence[str] | None = None, where: dict[str, Any] | None = None, digits: int = 2,
                  need_split: bool = False, label_column: str | None = None) -> Table:
    """A figure's data: one row per metric row (its split values, or its ``label_column``:
    Koala's contextualisation score), one column per run and column."""
    where = where or {}
    categories: list[str] = []
    series: dict[str, dict[str, Any]] = {}
    head = "rows"
    for run in runs:
        metric, split = pick_metric(run, metric_name, occurrence)
        if need_split and not split:
            raise LayoutError(f"run {run.label!r}: metric {metric_name!r} is not split by any attribute; "
                              "a breakdown needs `by` (in the spec, or in this artifact to re-score)")
        keys = [label_column] if label_column else row_keys(metric, split)  # a category labelled by all its keys
        if label_column:
            _check_columns(metric, [label_column], run)
        head = "/".join(keys) or head
        cols = list(columns) if columns else value_columns(metric, split)
        _check_columns(metric, cols, run)
        for row in metric.get("rows", []):
            if not _matches(row, where):
                continue
            category = row_label(row, keys)
            if category not in categories:
                categories.append(category)
            for column in cols:
                key = column if len(runs) == 1 else run.label if len(cols) == 1 else f"{run.label} {column}"
                series.setdefault(key, {})[category] = row.get(column)
    rows = [[c, *(series[s].get(c) for s in series)] for c in categories]
    return Table(name, title, [head, *series], rows, digits=digits, footer=footer_lines([r.provenance for r in runs]))


# tables over several specs: a row per model, a column group per part ------------------------


@dataclass(frozen=True)
class ColumnPart:
    """One column group of a combined table: a metric's columns from some runs (each run gives
    the row of its label), e.g. MM-R3 Table 2's "Rephrasing" group: mmr3.all of the runs of
    the rephrasing spec, one per model."""

    label: str
    runs: Sequence[RunScores]
    metric: str
    occurrence: int = 0
    columns: Sequence[str] | None = None
    where: dict[str, Any] = field(default_factory=dict)
    key: str = ""  # the paper file's key of this part (for errors): "part[0]"


def layout_combined(parts: Sequence[ColumnPart], name: str, title: str, digits: int = 2,
                    stub: str = "model", rows_by: Sequence[str] = ()) -> Table:
    """A row per run label (models, in the order they first appear), a column group per part.
    Each run gives one row of its metric (``where`` picks it when the metric has several), or,
    with ``rows_by``, one row per value of those attributes (MM-R3 Table 7: a row per model and
    temperature); a label no run of a part has is n/a there, and a note says so."""
    keys: list[tuple[Any, ...]] = []
    cells: dict[tuple[tuple[Any, ...], int, str], Any] = {}
    wanted: list[list[str]] = []
    found, provenance = [], []
    for index, part in enumerate(parts):
        seen: set[str] = set()
        cols: list[str] | None = list(part.columns) if part.columns else None
        for run in part.runs:
            if run.label in seen:
                raise LayoutError(f"part {part.label!r}: two runs are labelled {run.label!r}; a combined table has "
                                  "one row per label", key=f"{part.key}.runs")
            seen.add(run.label)
            metric, split = pick_metric(run, part.metric, part.occurrence)
            found.append((f"{run.label} ({part.label})", metric))
            provenance.append(run.provenance)
            cols = cols if cols is not None else value_columns(metric, split)
            _check_columns(metric, cols, run)
            for values, row in _part_rows(run, metric, split, part, rows_by):
                key = (run.label, *values)
                if key not in keys:
                    keys.append(key)
                cells.update({(key, index, c): row.get(c) for c in cols})
        wanted.append(cols or [])
    columns = [stub, *rows_by] + [c for cols in wanted for c in cols]
    rows = [[*key] + [cells.get((key, i, c)) for i, cols in enumerate(wanted) for c in cols] for key in keys]
    notes = []
    labels = list(dict.fromkeys(key[0] for key in keys))
    for part in parts:
        missing = [label for label in labels if label not in {r.label for r in part.runs}]
        if missing:
            notes.append(f"n/a in {part.label}: no run of {', '.join(missing)}.")
    return Table(name, title, columns, rows, groups=[(p.label, len(c)) for p, c in zip(parts, wanted)],
                 stub=1 + len(rows_by), digits=digits, notes=notes + _run_warnings(found, True),
                 footer=footer_lines(provenance))


def bars_of(table: Table) -> Table:
    """A table as a bar figure's data: a category per value column (``group/column``), a series
    per row (its stub cells joined), so a combined table draws as grouped bars per model."""
    flat = table.flat_columns()
    series = [" ".join(str(c) for c in row[: table.stub]) for row in table.rows]
    rows = [[flat[i], *(row[i] if i < len(row) else None for row in table.rows)] for i in range(table.stub, len(flat))]
    return Table(table.name, table.title, ["column", *series], rows, digits=table.digits, footer=table.footer)


def _part_rows(run: RunScores, metric: dict[str, Any], split: Sequence[str], part: ColumnPart,
               rows_by: Sequence[str]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(the ``rows_by`` values, row) of each row a run gives a combined table's part."""
    if not rows_by:
        return [((), _one_row(run, metric, split, part))]
    absent = [a for a in rows_by if a not in split]
    if absent:
        raise LayoutError(f"part {part.label!r}: run {run.label!r}'s {part.metric!r} is not split by "
                          f"{', '.join(absent)} (its by: {', '.join(split) or 'none'}); rows_by needs the "
                          "spec's metric split by them", key="rows_by")
    out: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for row in metric.get("rows", []):
        if not _matches(row, part.where):
            continue
        values = tuple(row.get(a) for a in rows_by)
        if any(v == values for v, _ in out):
            raise LayoutError(f"part {part.label!r}: run {run.label!r} has several rows of {part.metric!r} with "
                              f"{dict(zip(rows_by, values))}; pick one with `where`", key=f"{part.key}.where")
        out.append((values, row))
    if not out:
        raise LayoutError(f"part {part.label!r}: run {run.label!r} has no row of {part.metric!r} with "
                          f"{part.where}", key=f"{part.key}.where")
    return out


def _one_row(run: RunScores, metric: dict[str, Any], split: Sequence[str], part: ColumnPart) -> dict[str, Any]:
    rows = [row for row in metric.get("rows", []) if _matches(row, part.where)]
    if len(rows) == 1:
        return rows[0]
    keys = row_keys(metric, split)
    if not rows:
        raise LayoutError(f"part {part.label!r}: run {run.label!r} has no row of {part.metric!r} with "
                          f"{part.where}", key=f"{part.key}.where")
    shown = "; ".join(row_label(r, keys) for r in rows[:6])
    raise LayoutError(f"part {part.label!r}: run {run.label!r} has {len(rows)} rows of {part.metric!r} "
                      f"({'/'.join(keys) or 'rows'}: {shown}); a combined table takes one row per run",
                      key=f"{part.key}.where")


# averages and order, for any table -----------------------------------------------------------


def matching_columns(table: Table, name: str, key: str) -> list[int]:
    """The columns ``name`` means: a flat name (``Rephrasing/O_all``) means that column; a bare
    name (``O_all``) means every column of that name, one per column group."""
    flat = table.flat_columns()
    if name in flat:
        return [flat.index(name)]
    bare = [i for i, c in enumerate(flat) if c.rpartition("/")[2] == name]
    if bare:
        return bare
    from benchc.compiler.registry import did_you_mean

    hint = did_you_mean(name, flat)
    raise LayoutError(f"the table has no column {name!r}" + (f" ({hint})" if hint else "")
                      + f"; its columns: {', '.join(flat)}", key=key)


def resolve_column(table: Table, name: str, key: str) -> int:
    """The one column ``name`` means (``matching_columns``); a bare name in several column
    groups is an error naming them."""
    found = matching_columns(table, name, key)
    if len(found) > 1:
        flat = table.flat_columns()
        raise LayoutError(f"column {name!r} is in {len(found)} column groups: "
                          f"{', '.join(flat[i] for i in found)}; name one as GROUP/COLUMN", key=key)
    return found[0]


def with_average(table: Table, columns: Sequence[str] | None, label: str = "Average",
                 of_rounded: bool = False, cell_digits: int | None = None) -> Table:
    """The table with a last column ``label``: the mean of ``columns`` in each row (a bare name
    means that column in every group, ``matching_columns``; None: every value column, i.e.
    each numeric column after the row labels that holds a float). A row missing any of them
    has no average (n/a): a mean over fewer columns would not compare. A note names the
    columns averaged. ``of_rounded``: the mean of the cells as printed, each averaged cell
    rounded to ``cell_digits`` (default: the table's ``digits``) in the table and before the
    mean, as MMCBench prints integer cells and the 2-decimal mean of those integers."""
    flat = table.flat_columns()
    if label in flat:
        raise LayoutError(f"the table already has a column {label!r}", key="average_label")
    if columns is None:
        chosen = [i for i in range(table.stub, len(flat)) if table.numeric(i)
                  and any(isinstance(r[i], float) for r in table.rows if i < len(r))]
    else:
        chosen = list(dict.fromkeys(i for c in columns for i in matching_columns(table, c, "average")))
    if not chosen:
        raise LayoutError("the table has no numeric column to average", key="average")
    for i in chosen:
        if not table.numeric(i) and any(r[i] is not None for r in table.rows if i < len(r)):
            raise LayoutError(f"column {flat[i]!r} is not numeric: it cannot be averaged", key="average")
    digits = table.digits if cell_digits is None else cell_digits
    rows = []
    for row in table.rows:
        if of_rounded:
            row = [round_cell(v, digits) if i in chosen else v for i, v in enumerate(row)]
        values = [row[i] if i < len(row) else None for i in chosen]
        mean = None if any(v is None for v in values) else math.fsum(values) / len(values)
        rows.append([*row, mean])
    rounded = (f", each cell rounded to {digits} decimal{'s' if digits != 1 else ''} first as printed "
               "(average_of = 'rounded', MMCBench's rule)") if of_rounded else ""
    note = f"{label}: the mean of {', '.join(flat[i] for i in chosen)}{rounded} (n/a where any of them is n/a)."
    return Table(table.name, table.title, [*table.columns, label], rows, groups=table.groups, stub=table.stub,
                 digits=table.digits, notes=[note, *table.notes], footer=table.footer)


def sorted_by(table: Table, column: str, descending: bool = True) -> Table:
    """The rows ordered by ``column`` (numbers as numbers, anything else as text), ties kept in
    their order; rows without a value (n/a) always come last."""
    index = resolve_column(table, column, "sort")
    numeric = table.numeric(index)

    def key(row: list[Any]) -> Any:
        value = row[index] if index < len(row) else None
        return value if numeric else str(value)

    present = [r for r in table.rows if index < len(r) and r[index] is not None]
    missing = [r for r in table.rows if not (index < len(r) and r[index] is not None)]
    rows = sorted(present, key=key, reverse=descending) + missing
    return Table(table.name, table.title, table.columns, rows, groups=table.groups, stub=table.stub,
                 digits=table.digits, notes=table.notes, footer=table.footer)

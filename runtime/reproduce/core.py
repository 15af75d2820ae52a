"""``benchc reproduce PAPER.toml``: regenerate a paper's tables and figures from pinned runs and
check them against the sha256 recorded in the paper file.

A paper file names its runs (run folders, each with the spec name and version it must be a run
of) and its artifacts::

    [paper]
    title = "..."
    output = "artifacts"             # folder for the artifacts, beside the paper file

    [[run]]
    id = "espeak"
    path = "../out/demo/run"         # a run folder, relative to the paper file
    spec = "mmcbench/text2speech"
    version = "1.0.0"
    # cache = "../.benchc/cache"     # only for metrics that look at media (MMCBench's CLIP ones)

    [[table]]
    name = "table4"                  # -> table4.md, table4.tex, table4.csv
    metric = "mmcbench.consistency"
    layout = "rows"                  # rows | breakdown | details | combined (a row per model,
                                     # a column group per [[table.part]], across specs)
    columns = ["score", "max"]

    [[figure]]
    name = "fig2c"                   # -> fig2c.png, fig2c.svg and its data, fig2c.csv
    kind = "radar"                   # bar | breakdown | radar
    metric = "mmcbench.consistency"
    detail = "per_corruption_x100"

Nothing is read from a run's scores.json: every run is scored again from its responses.parquet
and its manifest by ``runtime.score`` (``report.scoring.rescore``), with the artifact's ``by``
if it has one. ``--record`` writes the manifest digest of each run and the sha256 of each file
into the paper's ``[recorded]`` tables. Without it, any difference fails (exit 1) and says what
changed: which file of which artifact, and which cells of its table (or of the data a figure
plots) against the copy in the output folder. Files that match are (re)written to the output
folder; files that do not go to ``OUTPUT/drift/`` for a look.
"""

from __future__ import annotations


import difflib
import hashlib
import json
import re
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace as replaced
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchc import __version__
from benchc.compiler.atomic import write_bytes_atomic, write_text_atomic
from benchc.compiler.canonical import canonical_json
from benchc.compiler.errors import BenchcError, CheckFailed, Problem
from benchc.compiler.paths import within_roots
from benchc.compiler.registry import did_you_mean
from benchc.compiler.spec.locate import index_lines, line_of

from ..artifacts import RunRecord
from ..report.plots import normalized, render
from ..report.tables import (RENDERERS, ColumnPart, bars_of, LayoutError, Provenance, RunScores, Table, footer_lines,
                            layout_breakdown, layout_combined, layout_details, layout_rows, layout_series, read_csv,
                            sorted_by, to_csv, with_average)
from .reproduce_make import MakeRun, RunRecipe, is_missing, make_order
from ..score.rules import RULES_VERSION, rules_change

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)]
Scalar = str | int | float | bool
DRIFT_DIR = "drift"
RECORD_HINT = "if the change is intended, rerun with --record to record the new hashes"


class PaperError(BenchcError):
    """The paper file is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PaperMeta(_Strict):
    title: str
    output: str = Field("artifacts", description="folder for the artifacts, relative to the paper file")
    description: str = ""


class PaperRun(_Strict):
    id: Name
    path: str = Field(description="run folder, relative to the paper file")
    spec: str = Field(description="the spec name the run must be of ([benchmark].name)")
    version: str = Field(description="the spec version the run must be of ([benchmark].version)")
    manifest: str | None = Field(None, description="manifest folder, if not the one the run recorded")
    label: str | None = Field(None, description="the run's name in tables and legends (default: id)")
    cache: str | None = Field(None, description="the run's compile cache, for metrics that look at media")
    store: str | None = Field(None, description="the run's response store, for metrics that look at media")
    make: RunRecipe | None = Field(None, description="how to compile and run it when its folder is missing")


class _Artifact(_Strict):
    name: Name
    title: str | None = None
    runs: list[str] | None = Field(None, description="run ids (default: every run, in order)")
    metric: str
    occurrence: int = Field(0, ge=0, description="which metric of that name (a spec may score one twice)")
    by: list[str] | None = Field(None, description="re-score with the metric's rows split by these attributes")
    params: dict[str, Scalar] = Field(default_factory=dict, description="re-score with these parameters of the "
                                                                       "metric replaced (e.g. MM-R3 Table 4's "
                                                                       "subset = 'failures')")
    row_labels: dict[str, str] = Field(default_factory=dict, description="run label -> the name its rows (or "
                                                                        "series) take in this artifact; a note "
                                                                        "names each run so renamed")
    columns: list[str] | None = None
    where: dict[str, Scalar] = Field(default_factory=dict, description="keep rows whose columns have these values")
    detail: str | None = Field(None, description="a details entry of the metric (details layout, radar)")
    labels: list[str] | None = Field(None, description="details labels to keep")
    digits: int = Field(2, ge=0, le=8, description="decimals the artifact is printed, written (CSV), drawn and "
                                                    "hashed at: cells are rounded to them first")


class PaperPart(_Strict):
    """A column group of a ``combined`` table (``[[table.part]]``): a metric's columns from some
    runs, one row per run label. ``metric``, ``columns`` and ``where`` default to the table's."""

    label: str = Field(description="the column group's header (e.g. the task)")
    runs: list[str] | None = Field(None, description="run ids")
    spec: str | None = Field(None, description="or: every run pinned to this spec name")
    metric: str | None = Field(None, description="default: the table's metric")
    occurrence: int | None = Field(None, ge=0, description="default: the table's occurrence")
    columns: list[str] | None = Field(None, description="default: the table's columns, else the value columns")
    where: dict[str, Scalar] | None = Field(None, description="default: the table's where; must leave one row "
                                                              "per run (per `rows_by` value)")
    params: dict[str, Scalar] | None = Field(None, description="default: the table's params (metric parameters "
                                                               "replaced when re-scoring)")

    @model_validator(mode="after")
    def _runs(self) -> PaperPart:
        if (self.runs is None) == (self.spec is None):
            raise ValueError("a part needs `runs` (run ids) or `spec` (every run of that spec), not both")
        return self


class PaperTable(_Artifact):
    layout: Literal["rows", "breakdown", "details", "combined"] = "rows"
    formats: list[Literal["md", "tex", "csv"]] = Field(default_factory=lambda: ["md", "tex", "csv"], min_length=1)
    part: list[PaperPart] = Field(default_factory=list, description="layout 'combined': its column groups")
    average: bool | list[str] = Field(False, description="add a column with the mean of these columns (a bare "
                                                         "name: that column of every group; true: every "
                                                         "value column)")
    average_label: str = Field("Average", min_length=1, description="the average column's name")
    average_of: Literal["values", "rounded"] = Field(
        "values", description="average the cells' values (default), or the cells as printed, each rounded to "
                              "`digits` first (MMCBench's rule; named in the table's note)")
    cell_digits: int | None = Field(None, ge=0, le=8, description="with average_of = 'rounded': the decimals the "
                                                                  "averaged cells are printed at and rounded to "
                                                                  "before the mean (default `digits`)")
    rows_by: list[str] = Field(default_factory=list, description="layout 'combined': a row per model and value of "
                                                                 "these attributes (the metric must be split by "
                                                                 "them), e.g. MM-R3 Table 7's temperature")
    sort: str | None = Field(None, description="order the rows by this column (GROUP/COLUMN, or the average's)")
    descending: bool = Field(True, description="with sort: highest first")
    notes: list[str] = Field(default_factory=list, description="said under the table (before the metrics' own "
                                                               "notes): where it departs from the paper, and why")
    draw: list[Literal["png", "svg"]] = Field(default_factory=list, description="also draw the table as grouped "
                                                                               "bars in these formats (a bar "
                                                                               "per row, a group per column): a "
                                                                               "figure the paper draws from "
                                                                               "several metrics")

    @model_validator(mode="before")
    @classmethod
    def _of_rounded(cls, data: Any) -> Any:
        """``average = "of_rounded"``: every value column, averaged as printed (``average_of``)."""
        if isinstance(data, dict) and data.get("average") == "of_rounded":
            if data.get("average_of", "rounded") != "rounded":
                raise ValueError("average = 'of_rounded' averages the rounded cells: it takes no other average_of")
            return {**data, "average": True, "average_of": "rounded"}
        return data

    @model_validator(mode="after")
    def _cell_digits(self) -> PaperTable:
        if self.cell_digits is not None and self.average_of != "rounded":
            raise ValueError("cell_digits is the precision of averaged cells under average_of = 'rounded'")
        return self

    @field_validator("average", mode="before")
    @classmethod
    def _average(cls, value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return value
        raise ValueError("average is true (the mean of every value column), a list of column names, or "
                         "'of_rounded' (every value column, each cell rounded to `digits` first)")

    @model_validator(mode="after")
    def _detail(self) -> PaperTable:
        if self.layout == "details" and not self.detail:
            raise ValueError("layout 'details' needs `detail` (a details entry of the metric)")
        if self.layout == "combined" and not self.part:
            raise ValueError("layout 'combined' needs [[table.part]] entries (label, runs or spec, columns)")
        if self.part and self.layout != "combined":
            raise ValueError(f"[[table.part]] is read by layout 'combined' only (this table's layout is "
                             f"{self.layout!r})")
        if self.layout == "combined" and (self.runs or self.by or self.detail or self.labels):
            raise ValueError("layout 'combined' reads no `runs`, `by`, `detail` or `labels`: each part names its "
                             "runs (`runs` or `spec`) and takes one row per run (pick it with `where`)")
        if self.rows_by and self.layout != "combined":
            raise ValueError("rows_by splits the rows of a 'combined' table (other layouts take `by`)")
        return self


class PaperFigure(_Artifact):
    kind: Literal["bar", "breakdown", "radar"]
    category: str | None = Field(None, description="kind 'bar': the metric column that labels each bar group "
                                                   "(default: the rows' split and text columns)")
    normalize: Literal["none", "best"] = "none"
    ylabel: str | None = None
    formats: list[Literal["png", "svg"]] = Field(default_factory=lambda: ["png", "svg"], min_length=1)

    @model_validator(mode="after")
    def _detail(self) -> PaperFigure:
        if self.kind == "radar" and not self.detail:
            raise ValueError("kind 'radar' needs `detail` (a details entry with one number per spoke)")
        return self


class Recorded(_Strict):
    benchc: str | None = None
    rules: int | None = Field(None, description="the scoring-rules version the artifacts were made under "
                                                "(runtime/score/rules.py; absent: 1)")
    runs: dict[str, str] = Field(default_factory=dict)
    backends: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="run id -> stage -> the canonical JSON of the fingerprint of the "
                                          "backend that answered it (what `reproduce` names when numbers move)")
    artifacts: dict[str, str] = Field(default_factory=dict)


COVERAGE_STATUS = ("shipped", "reachable", "needs data", "needs weights", "not reachable")
"""Where a paper's table or figure stands (``[[coverage]]``): made by this file (shipped); a
bundled spec and metric could make it offline, no table lays it out yet (reachable); it needs
the paper's real data, or model weights, that are not bundled; benchc cannot compute it."""


class PaperCoverage(_Strict):
    """``[[coverage]]``: one table or figure of the paper that reports numbers, and where benchc
    stands on it (``benchc reproduce --list``)."""

    ref: str = Field(min_length=1, description="the paper's own number: 'Table 3', 'Figure 6'")
    title: str = Field(min_length=1, description="what it reports")
    status: Literal["shipped", "reachable", "needs data", "needs weights", "not reachable"]
    by: list[str] = Field(default_factory=list, description="status shipped: the [[table]] / [[figure]] names "
                                                            "that make it")
    needs: str | None = Field(None, description="what a user must supply, or what benchc lacks (not shipped)")

    @model_validator(mode="after")
    def _shipped_by(self) -> PaperCoverage:
        if (self.status == "shipped") != bool(self.by):
            raise ValueError(f"{self.ref}: `by` names the tables that ship it, for status 'shipped' only")
        if self.status != "shipped" and not self.needs:
            raise ValueError(f"{self.ref}: status {self.status!r} says what it needs (`needs`)")
        return self


class Paper(_Strict):
    paper: PaperMeta
    run: list[PaperRun] = Field(min_length=1)
    table: list[PaperTable] = Field(default_factory=list)
    figure: list[PaperFigure] = Field(default_factory=list)
    coverage: list[PaperCoverage] = Field(default_factory=list, description="every table and figure of the paper "
                                                                            "that reports numbers")
    recorded: Recorded = Field(default_factory=Recorded)

    @model_validator(mode="after")
    def _coverage_names_artifacts(self) -> Paper:
        made = {a.name for a in [*self.table, *self.figure]}
        refs = [c.ref for c in self.coverage]
        for entry in self.coverage:
            unknown = [name for name in entry.by if name not in made]
            if unknown:
                raise ValueError(f"coverage {entry.ref}: no [[table]] or [[figure]] named {unknown[0]!r} "
                                 f"(this file makes: {', '.join(sorted(made)) or 'none'})")
        twice = sorted({r for r in refs if refs.count(r) > 1})
        if twice:
            raise ValueError(f"coverage lists {twice[0]!r} twice")
        return self


@dataclass(frozen=True)
class PaperFile:
    path: Path
    text: str
    paper: Paper
    lines: dict[str, int]

    @property
    def folder(self) -> Path:
        return self.path.resolve().parent

    @property
    def output(self) -> Path:
        return self.folder / self.paper.paper.output

    def problem(self, key: str, message: str, hint: str | None = None) -> Problem:
        return Problem(message, file=str(self.path), line=line_of(self.lines, key), key=key, hint=hint)


# reading the paper file ------------------------------------------------------------------------

def load_paper(path: Path) -> PaperFile:
    path = Path(path)
    if path.exists() and not path.is_file():  # a folder, a FIFO (a read would wait for ever), /dev/zero
        raise PaperError(Problem("not a paper file", file=str(path), hint="give the path of a paper .toml file"))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PaperError(Problem("paper file not found", file=str(path))) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PaperError(Problem(f"cannot read the paper file: {getattr(exc, 'strerror', None) or exc}",
                                 file=str(path), hint="give the path of a paper .toml file")) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        raise PaperError(Problem(f"not valid TOML: {exc}", file=str(path), line=int(match.group(1)) if match else None,
                                 hint="check quotes, brackets and '=' on that line")) from None
    lines = paper_lines(text)
    try:
        paper = Paper.model_validate(raw)
    except ValidationError as exc:
        raise PaperError([_problem_of(err, path, lines) for err in exc.errors()]) from None
    loaded = PaperFile(path, text, paper, lines)
    problems = _cross_checks(loaded)
    if problems:
        raise PaperError(problems)
    return loaded


_PART_HEADER = re.compile(r"^\s*\[\[\s*(table|figure)\s*(?:\.\s*(part)\s*)?\]\]")


def paper_lines(text: str) -> dict[str, int]:
    """``index_lines`` plus the keys of ``[[table.part]]`` under the table they belong to: the
    scanner numbers them across the file (``table.part[3]``); errors name them per table
    (``table[1].part[0]``)."""
    lines = index_lines(text)
    parents: dict[str, int] = {}   # [[table]] -> its index so far
    seen: dict[str, int] = {}      # [[table.part]] -> how many so far, in the whole file
    mine = 0                       # parts of the current parent
    renamed: dict[str, str] = {}
    for raw in text.splitlines():
        header = _PART_HEADER.match(raw)
        if header is None:
            continue
        section, child = header.groups()
        if child is None:
            parents[section] = parents.get(section, -1) + 1
            mine = 0
            continue
        count = seen.get(section, 0)
        renamed[f"{section}.part[{count}]"] = f"{section}[{parents.get(section, 0)}].part[{mine}]"
        seen[section], mine = count + 1, mine + 1
    for key, line in list(lines.items()):
        for old, new in renamed.items():
            if key == old or key.startswith((f"{old}.", f"{old}[")):
                lines.setdefault(new + key[len(old):], line)
    return lines


def _key_path(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_MODELS: dict[str, type[BaseModel]] = {"paper": PaperMeta, "run": PaperRun, "table": PaperTable, "part": PaperPart,
                                        "figure": PaperFigure, "recorded": Recorded}


def _problem_of(err: dict[str, Any], path: Path, lines: dict[str, int]) -> Problem:
    union_tags = ("str", "int", "float", "bool")  # pydantic names the member of a union in the location
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (p.startswith("function-") or p in union_tags)))
    key = _key_path(loc)
    kind, message, hint = err["type"], err["msg"].removeprefix("Value error, "), None
    if kind == "extra_forbidden":
        nested = "part" if "part" in loc[1:-1] else str(loc[0])
        model = RunRecipe if "make" in loc[:-1] else _MODELS.get(nested) if len(loc) > 1 else Paper
        names = sorted(model.model_fields) if model else []
        message = "unknown key"
        hint = did_you_mean(str(loc[-1]), names) or (f"known keys: {', '.join(names)}" if names else None)
    elif kind == "missing":
        message, hint = "required key is missing", "add this key"
        if key in ("paper", "run"):
            hint = "a paper file needs [paper] (title, output) and at least one [[run]]"
    elif kind == "string_pattern_mismatch":
        message = f"{err['input']!r} is not a file name"
        hint = "use letters, digits, '_', '.' and '-' (it names output files)"
    elif "input" in err and not isinstance(err["input"], (dict, list)):
        message = f"{message} (got {err['input']!r})"
    return Problem(message, file=str(path), line=line_of(lines, key), key=key, hint=hint)


def _part_checks(loaded: PaperFile, key: str, table: PaperTable) -> list[Problem]:
    """Each part's runs exist, and its spec is the pinned spec of some run."""
    ids = [r.id for r in loaded.paper.run]
    specs = sorted({r.spec for r in loaded.paper.run})
    problems = []
    for index, part in enumerate(table.part):
        where = f"{key}.part[{index}]"
        for position, run_id in enumerate(part.runs or []):
            if run_id not in ids:
                problems.append(loaded.problem(f"{where}.runs[{position}]", f"no [[run]] has id {run_id!r}",
                                               hint=did_you_mean(run_id, ids) or f"runs: {', '.join(ids)}"))
        if part.spec is not None and part.spec not in specs:
            problems.append(loaded.problem(f"{where}.spec", f"no [[run]] is pinned to spec {part.spec!r}",
                                           hint=did_you_mean(part.spec, specs) or f"specs: {', '.join(specs)}"))
    return problems


def _rescoring_checks(loaded: PaperFile, key: str, artifact: _Artifact) -> list[Problem]:
    """``params`` name parameters of the artifact's metrics; ``row_labels`` name run labels."""
    from benchc.compiler.metrics import METRIC_SCHEMAS

    problems = []
    parts = artifact.part if isinstance(artifact, PaperTable) else []
    checked = [(f"{key}.params", artifact.metric, artifact.params)]
    checked += [(f"{key}.part[{i}].params", part.metric or artifact.metric, part.params or {})
                for i, part in enumerate(parts)]
    for where, metric, params in checked:
        if metric not in METRIC_SCHEMAS.names():
            continue  # an unknown metric is named when the runs are scored
        fields = sorted(METRIC_SCHEMAS.get(metric).model_fields)
        for name in params:
            if name not in fields:
                problems.append(loaded.problem(f"{where}.{name}", f"metric {metric!r} has no parameter {name!r}",
                                               hint=did_you_mean(name, fields) or f"its parameters: "
                                                                                 f"{', '.join(fields)}"))
    labels = sorted({r.label or r.id for r in loaded.paper.run})
    for old in artifact.row_labels:
        if old not in labels:
            problems.append(loaded.problem(f"{key}.row_labels.{old}", f"no [[run]] is labelled {old!r}",
                                           hint=did_you_mean(old, labels) or f"run labels: {', '.join(labels)}"))
    return problems


def _cross_checks(loaded: PaperFile) -> list[Problem]:
    paper, problems = loaded.paper, []
    ids = [r.id for r in paper.run]
    for index, run in enumerate(paper.run):
        if ids.index(run.id) != index:
            problems.append(loaded.problem(f"run[{index}].id", f"run id {run.id!r} is used twice",
                                           hint="give each [[run]] its own id"))
    seen: dict[str, str] = {}
    for section, artifacts in (("table", paper.table), ("figure", paper.figure)):
        for index, artifact in enumerate(artifacts):
            key = f"{section}[{index}]"
            if artifact.name in seen:
                problems.append(loaded.problem(f"{key}.name", f"artifact name {artifact.name!r} is used twice "
                                               f"(also {seen[artifact.name]})", hint="names make file names: "
                                               "give each table and figure its own"))
            seen.setdefault(artifact.name, key)
            for position, run_id in enumerate(artifact.runs or []):
                if run_id not in ids:
                    problems.append(loaded.problem(f"{key}.runs[{position}]", f"no [[run]] has id {run_id!r}",
                                                   hint=did_you_mean(run_id, ids) or f"runs: {', '.join(ids)}"))
            if isinstance(artifact, PaperTable):
                problems += _part_checks(loaded, key, artifact)
            problems += _rescoring_checks(loaded, key, artifact)
    if not paper.table and not paper.figure:
        problems.append(loaded.problem(
            "table", "the paper file lists no [[table]] and no [[figure]]",
            hint="add a [[table]] (name, metric, layout) or a [[figure]] (name, metric, kind)"))
    return problems


# regenerating -----------------------------------------------------------------------------------

@dataclass
class RunContext:
    config: PaperRun
    run_dir: Path
    manifest_dir: Path | None
    record: RunRecord
    manifest: Any
    media: tuple[Path | None, Path | None] = (None, None)
    scores: dict[Any, dict[str, Any]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.config.label or self.config.id

    def scored(self, by: Sequence[str] | None, metric: str, params: Mapping[str, Any] | None = None,
               row_labels: Mapping[str, str] | None = None) -> RunScores:
        """The run scored again (once per ``by`` and ``params``), as the layouts want it, under
        the name ``row_labels`` gives its label (the provenance keeps the run's own)."""
        from ..report.scoring import metric_splits, rescore

        params = dict(params or {})
        key = ((tuple(by) if by is not None else None), metric, json.dumps(params, sort_keys=True)) \
            if by is not None or params else None
        if key not in self.scores:
            self.scores[key] = rescore(self.run_dir, self.manifest_dir, by=by, params=params,
                                       metric=metric if by is not None or params else None, media=self.media)
        scores = self.scores[key]
        splits = metric_splits(self.manifest.spec)
        if by is not None:
            splits = [list(by) if m["name"] == metric else s for m, s in zip(scores["metrics"], splits)]
        provenance = Provenance.of(scores, self.record, self.label)
        return RunScores((row_labels or {}).get(self.label, self.label), scores, splits, provenance)


@dataclass(frozen=True)
class Drift:
    artifact: str
    key: str         # table[i] / figure[i] / run[i]
    message: str
    pin: bool = False  # a run is not of the spec version the paper pins (--record does not fix that)
    hint: str = RECORD_HINT


@dataclass
class ReproduceResult:
    output: Path
    files: dict[str, str]          # file name -> sha256 now
    drift: list[Drift]
    recorded: bool
    status: dict[str, str] = field(default_factory=dict)  # file name -> ok | changed | new
    made: list[str] = field(default_factory=list)  # ids of the runs made from their [run.make]

    def changed(self) -> list[str]:
        return [name for name, state in self.status.items() if state != "ok"]


def _open_runs(loaded: PaperFile) -> tuple[list[RunContext], list[Drift]]:
    from ..report.scoring import run_manifest

    runs, drift = [], []
    for index, config in enumerate(loaded.paper.run):
        run_dir = loaded.folder / config.path
        manifest_dir = loaded.folder / config.manifest if config.manifest else None
        try:
            record, manifest, _ = run_manifest(run_dir, manifest_dir)
        except BenchcError as exc:
            key = f"run[{index}].manifest" if config.manifest and "manifest" in exc.render() else f"run[{index}].path"
            raise BenchcError([loaded.problem(key, f"run {config.id!r}: {p.message}" + _where(p), p.hint)
                               for p in exc.problems]) from None
        bench = manifest.locked.benchmark
        key = f"run[{index}]"
        if (bench.name, bench.version) != (config.spec, config.version):
            drift.append(Drift(f"run {config.id}", key, f"run {config.id!r} is a run of {bench.name} "
                               f"{bench.version}, but the paper pins {config.spec} {config.version}", pin=True,
                               hint="point the run's path at a run of the pinned spec version, or change the pin"))
        recorded = loaded.paper.recorded.runs.get(config.id)
        digest = manifest.locked.manifest_digest
        if recorded is not None and recorded != digest:
            drift.append(Drift(f"run {config.id}", key, f"run {config.id!r}: manifest digest changed: recorded "
                               f"{recorded[:16]}, now {digest[:16]} (the run was made from another manifest)"))
        media = tuple(loaded.folder / p if p else None for p in (config.cache, config.store))
        runs.append(RunContext(config, run_dir, manifest_dir, record, manifest, media))  # type: ignore[arg-type]
    return runs, drift


def _where(problem: Problem) -> str:
    return f" ({problem.file})" if problem.file and problem.file not in problem.message else ""


def _artifact_runs(artifact: _Artifact, runs: list[RunContext]) -> list[RunContext]:
    by_id = {r.config.id: r for r in runs}
    return [by_id[i] for i in artifact.runs] if artifact.runs else runs


def _table_of(artifact: PaperTable, runs: list[RunContext]) -> Table:
    """The artifact's layout, then its average column and its order."""
    title = artifact.title or artifact.name
    if artifact.layout == "combined":
        parts = [_column_part(artifact, index, part, runs) for index, part in enumerate(artifact.part)]
        table = layout_combined(parts, artifact.name, title, artifact.digits, rows_by=artifact.rows_by)
    else:
        scored = _scored(artifact, _artifact_runs(artifact, runs))
        common = {"name": artifact.name, "title": title, "metric_name": artifact.metric,
                  "occurrence": artifact.occurrence, "digits": artifact.digits}
        if artifact.layout == "rows":
            table = layout_rows(scored, columns=artifact.columns, where=artifact.where, **common)
        elif artifact.layout == "breakdown":
            table = layout_breakdown(scored, columns=artifact.columns, where=artifact.where, **common)
        else:
            table = layout_details(scored, detail=artifact.detail or "", labels=artifact.labels, **common)
    if artifact.average is not False:
        table = with_average(table, None if artifact.average is True else artifact.average, artifact.average_label,
                             of_rounded=artifact.average_of == "rounded", cell_digits=artifact.cell_digits)
    table = table.rounded()  # sorted, written and hashed as printed: noise cannot reorder rows
    if artifact.sort is not None:
        table = sorted_by(table, artifact.sort, artifact.descending)
    notes = [*artifact.notes, *_renamed_notes(artifact, runs), *_params_notes(artifact)]
    if notes:
        table = replaced(table, notes=[*notes, *table.notes])
    return table


def _scored(artifact: _Artifact, runs: list[RunContext]) -> list[RunScores]:
    return [r.scored(artifact.by, artifact.metric, artifact.params, artifact.row_labels) for r in runs]


def _params_notes(artifact: PaperTable) -> list[str]:
    """Metric parameters the artifact re-scores with, said under it: the spec scores otherwise."""
    sets = [artifact.params, *(p.params for p in artifact.part if p.params is not None)]
    shown = list(dict.fromkeys(", ".join(f"{k} = {v!r}" for k, v in sorted(s.items())) for s in sets if s))
    return [f"Re-scored with {s} (the spec's metric as it is otherwise)." for s in shown]


def _renamed_notes(artifact: _Artifact, runs: list[RunContext]) -> list[str]:
    """What each renamed row is: rows named for a paper's models but made by stand-in runs must
    say so under the table."""
    labels = {r.label for r in runs}
    return [f"{new!r}: the rows of run {old!r}." for old, new in artifact.row_labels.items() if old in labels]


def _column_part(table: PaperTable, index: int, part: PaperPart, runs: list[RunContext]) -> ColumnPart:
    """A ``[[table.part]]`` with the table's defaults filled in and its runs scored."""
    chosen = ([r for i in part.runs for r in runs if r.config.id == i] if part.runs is not None
              else [r for r in runs if r.config.spec == part.spec])
    metric = part.metric or table.metric
    params = part.params if part.params is not None else table.params
    return ColumnPart(part.label, [r.scored(None, metric, params, table.row_labels) for r in chosen], metric,
                      table.occurrence if part.occurrence is None else part.occurrence,
                      part.columns if part.columns is not None else table.columns,
                      dict(part.where if part.where is not None else table.where), key=f"part[{index}]")


def _figure_data(artifact: PaperFigure, scored: list[RunScores]) -> Table:
    common = {"name": artifact.name, "title": artifact.title or artifact.name, "metric_name": artifact.metric,
              "occurrence": artifact.occurrence, "digits": artifact.digits}
    if artifact.kind == "radar":
        data = layout_details(scored, detail=artifact.detail or "", labels=artifact.labels, **common)
    else:
        data = layout_series(scored, columns=artifact.columns, where=artifact.where,
                             need_split=artifact.kind == "breakdown", label_column=artifact.category, **common)
    data = normalized(data, artifact.normalize).rounded()  # drawn and hashed as printed (Table.rounded)
    data.footer = footer_lines([r.provenance for r in scored], short=True)
    return data


def regenerate(loaded: PaperFile, runs: list[RunContext]) -> dict[str, tuple[str, str, bytes]]:
    """file name -> (artifact key, artifact name, bytes), in the paper's order."""
    out: dict[str, tuple[str, str, bytes]] = {}
    for section, artifacts in (("table", loaded.paper.table), ("figure", loaded.paper.figure)):
        for index, artifact in enumerate(artifacts):
            key = f"{section}[{index}]"
            try:
                if isinstance(artifact, PaperTable):
                    table = _table_of(artifact, runs)
                    for fmt in artifact.formats:
                        out[f"{artifact.name}.{fmt}"] = (key, artifact.name, RENDERERS[fmt](table).encode("utf-8"))
                    for fmt in artifact.draw:
                        out[f"{artifact.name}.{fmt}"] = (key, artifact.name, render("bar", bars_of(table), fmt))
                else:
                    scored = _scored(artifact, _artifact_runs(artifact, runs))
                    data = _figure_data(artifact, scored)
                    data.footer = [*_renamed_notes(artifact, runs), *data.footer]  # drawn, and in the CSV
                    out[f"{artifact.name}.csv"] = (key, artifact.name, to_csv(data).encode("utf-8"))
                    for fmt in artifact.formats:
                        out[f"{artifact.name}.{fmt}"] = (key, artifact.name, render(artifact.kind, data, fmt,
                                                                                    artifact.ylabel))
            except LayoutError as exc:
                raise PaperError(loaded.problem(f"{key}.{exc.key}" if exc.key else key, str(exc),
                                                hint="check metric, columns, detail and by against the run's "
                                                     "scores.json")) from None
            except ValidationError as exc:  # a `params` value the metric refuses when re-scoring
                first = exc.errors()[0]
                field = ".".join(str(p) for p in first["loc"])
                raise PaperError(loaded.problem(f"{key}.params", f"re-scoring {artifact.metric!r}: {field}: "
                                                f"{first['msg']}", hint="check the artifact's params against "
                                                "the metric's (docs/reference.md)")) from None
    return out


def make_missing_runs(loaded: PaperFile, make_run: MakeRun) -> list[str]:
    """Make each run whose folder is missing and that has a ``[run.make]`` recipe; the ids made.
    A missing run without a recipe is left to ``_open_runs``, which says it is missing."""
    made = []
    for index, config in enumerate(loaded.paper.run):
        run_dir = loaded.folder / config.path
        if config.make is None or not is_missing(run_dir):
            continue
        order = make_order(config.id, config.make, run_dir, loaded.folder, config.cache, config.store)
        roots = [loaded.folder, *order.data_roots]
        if order.answers is not None and not within_roots(order.answers, roots):  # e.g. "/etc/passwd"
            raise PaperError(loaded.problem(
                f"run[{index}].make.answers", f"answers {config.make.answers!r} lie outside the paper file's "
                                              "folder and the recipe's data_roots (symlinks followed)",
                hint="copy the answers under the paper file's folder and name them relative to it"))
        if not order.spec_file.is_file():
            raise PaperError(loaded.problem(f"run[{index}].make.spec_file", f"spec file {order.spec_file} not found",
                                            hint="spec_file is relative to the paper file"))
        make_run(order)
        made.append(config.id)
    return made


def reproduce(paper_path: Path, *, record: bool = False, make_run: MakeRun | None = None) -> ReproduceResult:
    """Regenerate the paper's artifacts and compare them with the recorded hashes. ``make_run``
    (the API's compile + run) makes the runs whose folders are missing from their recipes."""
    loaded = load_paper(paper_path)
    made = make_missing_runs(loaded, make_run) if make_run is not None else []
    result = _reproduce(loaded, record)
    result.made = made
    return result


def _reproduce(loaded: PaperFile, record: bool) -> ReproduceResult:
    runs, drift = _open_runs(loaded)
    files = regenerate(loaded, runs)
    hashes = {name: hashlib.sha256(data).hexdigest() for name, (_, _, data) in files.items()}
    output = loaded.output
    if record:
        pins = [d for d in drift if d.pin]
        if pins:  # nothing is recorded for runs that are not what the paper says they are
            return ReproduceResult(output, hashes, pins, True, {n: "not recorded" for n in hashes})
        shutil.rmtree(output / DRIFT_DIR, ignore_errors=True)
        for name, (_, _, data) in files.items():
            write_bytes_atomic(output / name, data)
        digests = {r.config.id: r.manifest.locked.manifest_digest for r in runs}
        text = recorded_text(loaded.text, digests, hashes, {r.config.id: _fingerprints(r.record) for r in runs})
        write_text_atomic(loaded.path, text)
        return ReproduceResult(output, hashes, [], True, {n: "recorded" for n in hashes})
    recorded = loaded.paper.recorded.artifacts
    status = {n: "ok" if recorded.get(n) == h else "new" if n not in recorded else "changed"
              for n, h in hashes.items()}
    changes = _compare(loaded, files, hashes)
    if changes and loaded.paper.recorded.artifacts:
        drift += _causes(loaded, runs)
    drift += changes
    drifted = {d.artifact for d in drift}
    if not drift:
        shutil.rmtree(output / DRIFT_DIR, ignore_errors=True)
    for name, (_, artifact, data) in files.items():
        target = output / DRIFT_DIR / name if artifact in drifted else output / name
        if artifact in drifted or not target.is_file() or target.read_bytes() != data:
            write_bytes_atomic(target, data)
    return ReproduceResult(output, hashes, drift, False, status)


def check(result: ReproduceResult, paper_path: Path) -> None:
    """Raise CheckFailed (exit 1) listing every drift."""
    if result.drift:
        try:
            lines = index_lines(Path(paper_path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            lines = {}
        raise CheckFailed([Problem(d.message, file=str(paper_path), line=line_of(lines, d.key), key=d.key, hint=d.hint)
                           for d in result.drift])


# comparing --------------------------------------------------------------------------------------

def _fingerprints(record: RunRecord) -> dict[str, str]:
    """stage -> the canonical JSON of the fingerprint of the backend that answered it."""
    return {stage: canonical_json(found) for stage, found in sorted(record.backends.items())}


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    return {prefix[:-1]: value}


def _setting_changes(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """Each backend setting that differs, "stage.key: recorded X, now Y"."""
    out = []
    for stage in sorted(set(recorded) | set(now)):
        if stage not in now or stage not in recorded:
            out.append(f"stage {stage}: {'no longer answered' if stage not in now else 'not in the recorded run'}")
            continue
        old, new = _flat(json.loads(recorded[stage])), _flat(json.loads(now[stage]))
        for key in sorted(set(old) | set(new)):
            before, after = old.get(key, _UNSET), new.get(key, _UNSET)
            if before != after:
                out.append(f"{stage}.{key}: recorded {_shown(before)}, now {_shown(after)}")
    return out


_UNSET = object()


def _shown(value: Any) -> str:
    return "(not set)" if value is _UNSET else json.dumps(value)


def _causes(loaded: PaperFile, runs: list[RunContext]) -> list[Drift]:
    """What differs between the recorded runs and these, named when artifacts changed: the
    scoring-rules version and each backend setting (a judge's beam, a model's digest...)."""
    out = []
    rules = rules_change(loaded.paper.recorded.rules)
    if rules is not None:
        out.append(Drift("(rules)", "recorded", rules, hint="if the new numbers are intended, rerun with --record "
                                                             "(and say so in the paper's notes)"))
    for index, run in enumerate(runs):
        recorded = loaded.paper.recorded.backends.get(run.config.id)
        if recorded is None:
            continue
        settings = _setting_changes(recorded, _fingerprints(run.record))
        if settings:
            out.append(Drift(f"run {run.config.id}", f"run[{index}]",
                             f"run {run.config.id!r} was made with other backend settings than the recorded run: "
                             + "; ".join(settings),
                             hint="make the run with the recorded settings ([run.make] backends, or the command "
                                  "that made it), or rerun with --record if the new settings are intended"))
    return out


def _compare(loaded: PaperFile, files: dict[str, tuple[str, str, bytes]], hashes: dict[str, str]) -> list[Drift]:
    recorded = loaded.paper.recorded.artifacts
    if not recorded:
        return [Drift("(all)", "recorded", "the paper file has no recorded hashes yet",
                      hint=f"run `benchc reproduce {loaded.path} --record` once and commit the paper file with them")]
    changed: dict[tuple[str, str], list[str]] = {}
    for name, (key, artifact, _) in files.items():
        if recorded.get(name) != hashes[name]:
            changed.setdefault((key, artifact), []).append(name)
    drift = []
    for (key, artifact), names in changed.items():
        new = [n for n in names if n not in recorded]
        differ = [n for n in names if n in recorded]
        parts = []
        if differ:
            parts.append(f"{', '.join(differ)} differ{'s' if len(differ) == 1 else ''} from the recorded sha256")
        if new:
            parts.append(f"{', '.join(new)} {'has' if len(new) == 1 else 'have'} no recorded sha256")
        details = _explain(loaded.output, artifact, differ, files, recorded) if differ else []
        drift.append(Drift(artifact, key, f"artifact {artifact!r} changed: {'; '.join(parts)}"
                           + "".join(f"\n    {line}" for line in details)))
    for name in sorted(set(recorded) - set(files)):
        drift.append(Drift(name, "recorded.artifacts", f"{name} is recorded but no artifact makes it any more"))
    return drift


def _explain(output: Path, artifact: str, names: list[str], files: dict[str, tuple[str, str, bytes]],
             recorded: dict[str, str]) -> list[str]:
    """What changed: cell differences of the artifact's CSV (a table's, or the data a figure
    plots) against the recorded copy in the output folder, else a few changed lines."""
    data_name = f"{artifact}.csv"
    if data_name not in files:
        return [line for name in names if name.endswith((".md", ".tex"))
                for line in [f"{name}:", *_line_diff(output / name, files[name][2])]]
    old_file = output / data_name
    if not old_file.is_file():
        return [f"(no copy of {data_name} in {output} to compare cells with)"]
    old_bytes = old_file.read_bytes()
    lines = [] if hashlib.sha256(old_bytes).hexdigest() == recorded.get(data_name) else [
        f"(compared with {old_file}, which is not the recorded version either)"]
    cells = cell_diff(old_bytes.decode("utf-8"), files[data_name][2].decode("utf-8"))
    if cells:
        return lines + cells
    if any(n.endswith((".png", ".svg")) for n in names):
        return [*lines, ("the plotted data is the same: only the drawing differs (another matplotlib or font?) "
                         "or the footer (backends, manifest, benchc version)")]
    return [*lines, ("the cells are the same: only the layout or the footer differs (backends, manifest, "
                     "benchc version)")]


def _line_diff(old_file: Path, new: bytes, limit: int = 12) -> list[str]:
    if not old_file.is_file():
        return [f"(no copy of {old_file.name} to compare with)"]
    old_lines = old_file.read_text(encoding="utf-8").splitlines()
    diff = [d for d in difflib.unified_diff(old_lines, new.decode("utf-8").splitlines(), lineterm="", n=0)
            if not d.startswith(("---", "+++", "@@"))]
    return diff[:limit] + ([f"... {len(diff) - limit} more changed lines"] if len(diff) > limit else [])


def cell_diff(old_text: str, new_text: str, limit: int = 20) -> list[str]:
    """Human-readable cell differences between two CSV tables (rows matched by their leading
    label columns)."""
    old_cols, old_rows = read_csv(old_text)
    new_cols, new_rows = read_csv(new_text)
    out = []
    gone = [c for c in old_cols if c not in new_cols]
    added = [c for c in new_cols if c not in old_cols]
    if gone:
        out.append(f"columns removed: {', '.join(gone)}")
    if added:
        out.append(f"columns added: {', '.join(added)}")
    width = _key_width(old_rows, new_rows, min(len(old_cols), len(new_cols)))
    old_by = {tuple(r[:width]) if width else (str(i),): r for i, r in enumerate(old_rows, 1)}
    new_by = {tuple(r[:width]) if width else (str(i),): r for i, r in enumerate(new_rows, 1)}
    for key in list(dict.fromkeys([*old_by, *new_by])):
        label = _row_label(key, old_cols[:width]) if width else f"row {key[0]}"
        if key not in new_by:
            out.append(f"{label} removed")
            continue
        if key not in old_by:
            out.append(f"{label} added")
            continue
        old_row, new_row = dict(zip(old_cols, old_by[key])), dict(zip(new_cols, new_by[key]))
        for column in new_cols:
            if column in old_row and old_row[column] != new_row.get(column):
                out.append(f"{label}, column {column!r}: {old_row[column] or '(empty)'} -> "
                           f"{new_row.get(column) or '(empty)'}")
    return out[:limit] + ([f"... {len(out) - limit} more differences"] if len(out) > limit else [])


def _key_width(old_rows: list[list[str]], new_rows: list[list[str]], columns: int) -> int:
    """The fewest leading columns that tell each row apart in both tables (0: by position)."""
    for width in range(1, columns + 1):
        unique = all(len({tuple(r[:width]) for r in rows}) == len(rows) for rows in (old_rows, new_rows))
        if unique and all(not _numeric(c) for rows in (old_rows, new_rows) for r in rows for c in r[:width]):
            return width
    return 0


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return "." in cell or "e" in cell


def _row_label(key: tuple[str, ...], columns: list[str]) -> str:
    return "row " + ", ".join(f"{c}={v!r}" for c, v in zip(columns, key))


# recording --------------------------------------------------------------------------------------

def _toml_string(value: str) -> str:
    """A TOML literal string ('...', JSON's quotes left as they are) where it can be one."""
    return f"'{value}'" if "'" not in value and value.isprintable() else json.dumps(value)


_RECORDED_HEADER = re.compile(r"^\s*\[\s*recorded\s*(\.[^\]]*)?\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


def recorded_text(text: str, runs: dict[str, str], artifacts: dict[str, str],
                  backends: dict[str, dict[str, str]] | None = None) -> str:
    """The paper file's text with its ``[recorded]`` tables replaced (everything else kept as
    written, comments included)."""
    kept, inside = [], False
    for line in text.splitlines():
        if _RECORDED_HEADER.match(line):
            inside = True
            continue
        if inside and _ANY_HEADER.match(line):
            inside = False
        if not inside:
            kept.append(line)
    while kept and (not kept[-1].strip() or kept[-1].startswith("# recorded by")):
        kept.pop()
    out = kept + ["", "# recorded by `benchc reproduce --record`: do not edit by hand",
                  "[recorded]", f"benchc = {json.dumps(__version__)}", f"rules = {RULES_VERSION}", "",
                  "[recorded.runs]"]
    out += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in runs.items()]
    for run, stages in (backends or {}).items():
        out += ["", f"[recorded.backends.{json.dumps(run)}]"] + [f"{json.dumps(k)} = {_toml_string(v)}"
                                                                  for k, v in stages.items()]
    out += ["", "[recorded.artifacts]"] + [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in artifacts.items()]
    result = "\n".join(out) + "\n"
    check = Paper.model_validate(tomllib.loads(result)).recorded
    assert check.runs == runs and check.artifacts == artifacts and check.backends == (backends or {}), \
        "recorded tables did not round-trip"
    return result

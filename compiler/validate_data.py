"""`benchc validate --data`: a resolved spec checked against its data, without compiling.

The source is loaded as a compile loads it (same roots, same path checks, same duplicate-id and
pin checks), into a throw-away media store; no op runs and nothing is written. Then every data
path the spec names must resolve inside the data roots, and every record field and media it
names must exist in the loaded records (the first ``limit`` of them): the prompt templates'
``record.x``, the filters' ``where``, ``sample.per`` / ``sample.stratify``, node params that
name fields (``field``, ``*_field``, or described as "record field ..."), node inputs that name
media, and metric ``target`` fields.
Each problem names the spec's file, line and key path, with a did-you-mean from the records'
actual fields; all of them are raised together as one ``SpecError``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import TemplateSyntaxError, nodes

from . import settings as run_settings
from .cas import ContentStore
from .compile_options import CompileOptions, data_roots
from .errors import BenchcError, Problem, ProblemList, SourceError, SpecError
from .paths import resolve_in_roots
from .ops.fields import LIST_CELL_HINT, text_list
from .registry import did_you_mean
from .resolve import Resolved, ResolvedNode
from .select import apply_filters
from .source_loading import load_source
from .sources import LoadedSource
from .spec.models import Select
from .spec.parse import LoadedSpec
from .templates import TemplateProblem, make_environment, render
from .values import Record

RECORD_LIMIT = 1000
"""How many records (the source's first) the field checks read."""
PATH_PARAMS = ("weights", "model")
"""Node params that name a file or folder in the data roots (style weights, model folders)."""
GUARD_TESTS = ("defined", "undefined")
GUARD_FILTERS = ("default", "d")


@dataclass(frozen=True)
class DataReport:
    """What ``validate_data`` read."""

    records: int
    """Records the source loaded."""
    checked: int
    """Of those, how many the field checks read (the first ``limit``)."""
    kept: int
    """Of the checked ones, how many pass the filters."""
    skipped: int
    """Malformed rows skipped (``source.on_error = "skip"``)."""


@dataclass(frozen=True)
class FieldUse:
    """A record field the spec names at ``key``."""

    key: str
    path: str
    strict: bool
    """True: every record must have it (a compile fails on any record without it); False: some
    record must (ops may treat a missing field as absent)."""
    text_list: bool = False
    """True: where a record has it, it must hold a list of texts (or a JSON list in a text cell)."""


def validate_data(resolved: Resolved, roots: Collection[Path] = (), limit: int = RECORD_LIMIT,
                  path_backends: Collection[str] = ()) -> DataReport:
    """Load ``resolved``'s source and check the spec against it; raise ``SpecError`` with every
    problem. ``roots``: the --data-root folders; ``path_backends``: backend names whose target is
    a model path in the data roots (model steps' ``backend`` params, ``[select] models``)."""
    loaded = resolved.loaded
    options = CompileOptions(data_roots=[Path(r) for r in roots])
    problems = ProblemList()
    for problem in path_problems(resolved, data_roots(loaded, options), path_backends):
        problems.add(problem)
    source = _load(resolved, options, problems)
    records = source.records[:limit] if source else []
    kept = field_problems(resolved, records, problems)
    for problem in sample_render_problems(resolved, kept[0] if kept else None):
        problems.add(problem)
    problems.raise_if_any(SpecError)
    assert source is not None  # a failed load adds its problems
    return DataReport(len(source.records), len(records), len(kept), len(source.skipped))


# --- one sample render of each template --------------------------------------------------------

SAMPLE_TEXT = "sample text"
RENDER_FAULTS = ("template exceeds a sandbox limit", "template tried an unsafe operation")


def sample_render_problems(resolved: Resolved, record: Record | None) -> list[Problem]:
    """Render the prompt and system templates once, for ``record`` (the first record the data
    gives) or, without data, for an empty one, so that a template that would blow a sandbox limit
    (``{{ 9**999999999 }}``, ``'a' * 10**10``, nested ``range``) or try an unsafe operation is
    refused by ``validate``, not at the first item of a compile. Only those faults are reported:
    a sample item lacks the attributes and node outputs a real one has, so an undefined name here
    says nothing (``validate --data`` checks the record fields the templates name)."""
    context: dict[str, Any] = {"record": record.fields if record else {},
                               "attrs": dict(record.attrs) if record else {},
                               "item_id": record.id if record else "sample",
                               "record_id": record.id if record else "sample",
                               "text": SAMPLE_TEXT}
    problems = []
    for key, template in resolved.every_prompt_template():
        try:
            render(template, context)
        except TemplateProblem as exc:
            if str(exc).startswith(RENDER_FAULTS):
                where = f"record {record.id!r}" if record else "an empty sample record"
                problems.append(resolved.loaded.problem(key, f"{exc} (a sample render for {where})",
                                                        hint="keep numbers, repetitions and ranges small"))
    return problems


# --- data paths -------------------------------------------------------------------------------


def path_problems(resolved: Resolved, roots: list[Path], path_backends: Collection[str]) -> list[Problem]:
    """Node params that name files (``weights``, ``model``) and the model paths of model steps
    and ``[select]``, each resolved in the data roots as the compile will."""
    loaded = resolved.loaded
    found = []
    for key, value in _named_paths(resolved, path_backends):
        try:
            resolve_in_roots(value, roots, key, str(loaded.path))
        except SourceError as exc:
            found += [loaded.problem(key, p.message, p.hint) for p in exc.problems]
    return found


SOURCE_PATH_PARAMS = ("path", "images", "audio", "annotations", "coco_images", "edited_images", "folder",
                      "image_data", "instances", "questions", "relationships", "webqa_images", "files")
"""Source params that name a file or folder of the data."""


def source_path_problems(resolved: Resolved, roots: list[Path]) -> list[Problem]:
    """Each data file and folder the spec's ``[source]`` names, resolved in the data roots as the
    compile will: checked by plain ``validate`` too (a missing file said "ok" until ``--data``)."""
    loaded = resolved.loaded
    written = loaded.spec.source.params
    found = []
    for name in SOURCE_PATH_PARAMS:
        values = written.get(name)
        for index, value in enumerate(values if isinstance(values, list) else [values]):
            if not isinstance(value, str) or not value:
                continue
            key = f"source.{name}" + (f"[{index}]" if isinstance(values, list) else "")
            try:
                resolve_in_roots(value, roots, key, str(loaded.path))
            except SourceError as exc:
                found += [loaded.problem(key, p.message, p.hint) for p in exc.problems]
    return found


def _named_paths(resolved: Resolved, path_backends: Collection[str]) -> Iterator[tuple[str, str]]:
    for node in resolved.all_nodes:
        for name, values in given_params(node).items():
            key = f"{node.where}.params.{name}"
            if name in PATH_PARAMS:
                yield from ((key, v) for v in values if isinstance(v, str))
            elif name == "backend" and node.op.model_backed:
                targets = (_backend_target(v, path_backends) for v in values)
                yield from ((key, t) for t in targets if t)
    select = resolved.loaded.spec.select
    for index, backend in enumerate(select.models if isinstance(select, Select) else []):
        target = _backend_target(backend, path_backends)
        if target:
            yield f"select.models[{index}]", target


def _backend_target(value: Any, path_backends: Collection[str]) -> str | None:
    """``hf:models/llm,batch_size=8`` -> ``models/llm`` when ``hf`` reads a path; else None
    (absolute paths are the user's own)."""
    name, _, rest = str(value).partition(":")
    first = next((p.strip() for p in rest.split(",") if p.strip() and "=" not in p), "")
    return first if name.strip() in path_backends and first and not Path(first).is_absolute() else None


def given_params(node: ResolvedNode) -> dict[str, list[Any]]:
    """The params the spec gives a node: each fixed value, or every value of a sweep."""
    out = {name: [value] for name, value in node.sweep.fixed.items()}
    out.update({name: list(values) for name, values in node.sweep.grid.items()})
    out.update({name: list(values) for name, values in node.sweep.choice.items()})
    return out


# --- the source ---------------------------------------------------------------------------------


def _load(resolved: Resolved, options: CompileOptions, problems: ProblemList) -> LoadedSource | None:
    """The source as a compile loads it, its media kept in a temporary store."""
    with tempfile.TemporaryDirectory(prefix="benchc-validate-") as folder:
        store = ContentStore(Path(folder), durable=False)
        try:
            return load_source(resolved, resolved.loaded, store, options)
        except BenchcError as exc:
            for problem in exc.problems:
                problems.add(_located(resolved.loaded, problem))
            return None
        finally:
            store.close()


def _located(loaded: LoadedSpec, problem: Problem) -> Problem:
    """A loader's problem about a spec key (``source.path``) gets the spec's file and line."""
    about_spec = problem.file in (None, str(loaded.path))
    if problem.key and problem.line is None and about_spec:
        return loaded.problem(problem.key, problem.message, problem.hint)
    return problem


# --- record fields -------------------------------------------------------------------------------


def field_problems(resolved: Resolved, records: list[Record], problems: ProblemList) -> list[Record]:
    """Check every field and media the spec names against ``records``; returns those that pass
    the filters (the others' fields are checked on them, or on all records if none pass)."""
    if not records:
        return []
    loaded = resolved.loaded
    where = [FieldUse(f"filter[{i}].where", f.where, True) for i, f in enumerate(loaded.spec.filter)]
    found = check_fields(loaded, where, records)
    kept = records if found else _filtered(loaded, records, problems)
    found += check_fields(loaded, field_uses(resolved), kept or records)
    found += media_problems(resolved, kept or records)
    for problem in found:
        problems.add(problem)
    return kept


def _filtered(loaded: LoadedSpec, records: list[Record], problems: ProblemList) -> list[Record]:
    try:
        return apply_filters(loaded, records)
    except SourceError as exc:  # a value the filter cannot compare
        for problem in exc.problems:
            problems.add(problem)
        return records


def field_uses(resolved: Resolved) -> list[FieldUse]:
    """Every record field the spec names, but the filters'."""
    spec = resolved.loaded.spec
    uses = [FieldUse(key, path, strict) for _, key, source in run_settings.prompt_sources(spec) if source
            for path, strict in template_fields(source)]
    uses += [FieldUse(f"sample.{name}", path, True)
             for name, path in (("per", spec.sample.per), ("stratify", spec.sample.stratify)) if path]
    for node in resolved.all_nodes:
        for name, values in given_params(node).items():
            if names_a_field(node, name):
                uses += [FieldUse(f"{node.where}.params.{name}", v, False, names_a_list(node, name))
                         for v in _texts(values)]
    for index, metric in enumerate(resolved.metrics):
        target = getattr(metric.params, "target", None)
        if isinstance(target, str) and "{{" not in target and "{%" not in target:
            uses.append(FieldUse(f"metric[{index}].target", target, True))
    return uses


def names_a_field(node: ResolvedNode, param: str) -> bool:
    """Whether an op param names a record field: by its name (``field``, ``*_field``) or by its
    declared description (``"record field holding ..."``, as ``text.permute_options``'s
    ``options`` and ``answer``)."""
    if param in ("field", "fields") or param.endswith(("_field", "_fields")):
        return True
    info = node.op.Params.model_fields.get(param)
    about = (info.description or "").lower() if info else ""
    return about.startswith(("record field", "dotted record field"))


def names_a_list(node: ResolvedNode, param: str) -> bool:
    """Whether the field an op param names must hold a list of texts (declared by its
    description: "record field holding the list of ...")."""
    info = node.op.Params.model_fields.get(param)
    return (info.description or "").lower().startswith("record field holding the list of") if info else False


def _texts(values: list[Any]) -> Iterator[str]:
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, str))


def check_fields(loaded: LoadedSpec, uses: list[FieldUse], records: list[Record]) -> list[Problem]:
    found = []
    for use in uses:
        missing = [r for r in records if not has_field(r, use.path)]
        if len(missing) == len(records):
            found.append(loaded.problem(use.key, f"no record has the field {use.path!r} "
                                        f"(checked {len(records)} record(s))", field_hint(use.path, records)))
        elif missing and use.strict:
            found.append(loaded.problem(
                use.key, f"{len(missing)} of {len(records)} records have no field {use.path!r}, "
                         f"e.g. record {missing[0].id!r}",
                hint="filter those records out, or fix the data"))
        found += list_problems(loaded, use, records) if use.text_list else []
    return found


def list_problems(loaded: LoadedSpec, use: FieldUse, records: list[Record]) -> list[Problem]:
    """The records whose field ``use.path`` holds something other than a list of texts."""
    wrong = [r for r in records if has_field(r, use.path) and text_list(r.get(use.path)) is None]
    if not wrong:
        return []
    shown = json.dumps(wrong[0].get(use.path), ensure_ascii=False)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return [loaded.problem(use.key, f"{len(wrong)} of {len(records)} records' field {use.path!r} is not a list of "
                                    f"texts, e.g. record {wrong[0].id!r} holds {shown}", hint=LIST_CELL_HINT)]


def has_field(record: Record, path: str) -> bool:
    try:
        record.get(path)
    except KeyError:
        return False
    return True


def field_hint(path: str, records: list[Record]) -> str:
    known = sorted({p for record in records[:50] for p in field_paths(record.fields)})
    shown = ", ".join(known[:40]) + (" ..." if len(known) > 40 else "")
    close = did_you_mean(path, known)
    return f"{close} Record fields: {shown}" if close else f"record fields: {shown or 'none'}"


def field_paths(fields: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Every dotted path of ``fields`` (objects are walked; lists are leaves)."""
    for name, value in fields.items():
        path = f"{prefix}{name}"
        yield path
        if isinstance(value, dict):
            yield from field_paths(value, f"{path}.")


def media_problems(resolved: Resolved, records: list[Record]) -> list[Problem]:
    """A node whose input is not another node reads a record media of its input kind."""
    loaded = resolved.loaded
    node_ids = {n.id for n in resolved.nodes}
    found = []
    for node in resolved.all_nodes:
        kind = node.op.input_kind
        if kind is None or node.input in node_ids:
            continue
        missing = [r for r in records if getattr(r.media.get(node.input), "kind", None) != kind]
        if missing:
            names = sorted({n for r in records[:50] for n, ref in r.media.items() if ref.kind == kind})
            hint = did_you_mean(node.input, names) or f"the records' {kind} media: {', '.join(names) or 'none'}"
            article = "an" if kind[0] in "aeiou" else "a"
            what = f"no record has {article} {kind} named {node.input!r}" if len(missing) == len(records) else \
                f"{len(missing)} of {len(records)} records have no {kind} named {node.input!r}, " \
                f"e.g. record {missing[0].id!r}"
            found.append(loaded.problem(f"{node.where}.input", what, hint))
    return found


# --- templates ---------------------------------------------------------------------------------


def template_fields(source: str) -> list[tuple[str, bool]]:
    """(dotted record path, strict) for each ``record.x.y`` / ``record['x']`` a template reads,
    but those it tests or defaults (``is defined``, ``| default``) and method calls. Strict
    unless the template has control blocks (``{% if %}`` may keep a record from reading it)."""
    try:
        tree = make_environment().parse(source)
    except TemplateSyntaxError:
        return []  # reported by validate
    guarded = _guarded(tree)
    strict = "{%" not in source
    paths: dict[str, bool] = {}
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        path = None if id(node) in guarded else _record_path(node)
        if path:
            paths[".".join(path)] = strict
    longest = [p for p in paths if not any(q.startswith(p + ".") for q in paths)]
    return [(p, paths[p]) for p in longest]


def _guarded(tree: nodes.Template) -> set[int]:
    """Ids of the nodes under ``is defined`` tests, ``default`` filters and called methods."""
    roots: list[nodes.Node] = [t.node for t in tree.find_all(nodes.Test) if t.name in GUARD_TESTS]
    roots += [f.node for f in tree.find_all(nodes.Filter) if f.name in GUARD_FILTERS and f.node]
    roots += [c.node for c in tree.find_all(nodes.Call)]
    return {id(n) for root in roots for n in (root, *root.find_all(nodes.Node))}


def _record_path(node: nodes.Node) -> list[str] | None:
    """``record.a.b`` -> ["a", "b"]; None for anything not read from ``record``."""
    if isinstance(node, nodes.Name):
        return [] if node.name == "record" else None
    if isinstance(node, nodes.Getattr):
        base = _record_path(node.node)
        return None if base is None else [*base, node.attr]
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
        base = _record_path(node.node)
        return None if base is None else [*base, node.arg.value]
    return None

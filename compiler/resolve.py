"""Stage 2: names -> registered sources, ops and metrics; parameters checked against schemas.

Every problem of a spec is collected and raised together, each with file, line and key path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, get_args

import jinja2
from jinja2 import meta
from pydantic import BaseModel, ValidationError

from . import settings as run_settings
from .errors import Problem, ProblemList, SpecError
from .metrics import METRIC_SCHEMAS, MetricParams
from .ops import OPS, Op
from .registry import did_you_mean, literal_hint, merge_union_errors
from .secrets import secret_problems
from .sources import SOURCES, SourceLoader
from .spec.models import (GENERATION_SWEEPABLE as SWEEPABLE, KIND_CORRECT, RESERVED_INPUTS, Generation, Select,
                          TextSelect)
from .spec.parse import LoadedSpec
from .sweep import Sweep, split_sweep as _split_sweep
from .templates import TemplateProblem, compile_template, make_environment


@dataclass(frozen=True)
class ResolvedNode:
    index: int
    id: str
    op: Op
    input: str
    sweep: Sweep
    repeat: int
    spec_key: str | None = None
    """Where the node is in the spec, for messages: ``node[index]`` unless set (``select.probe``)."""

    @property
    def where(self) -> str:
        return self.spec_key or f"node[{self.index}]"


@dataclass(frozen=True)
class ResolvedSelect:
    """``[select]`` with its probe resolved as a node, id ``select.probe``: node ids cannot hold a
    dot, so no node of the graph shares the probe's variant paths (``select.probe.N``), from
    which seeds are derived."""

    settings: Select
    probe: ResolvedNode

    @property
    def nodes(self) -> list[ResolvedNode]:
        return [self.probe]


@dataclass(frozen=True)
class ResolvedTextSelect:
    """``[select]`` of kind ``text``: the text node (``text.field`` of ``field``, id
    ``select.text``) and the probe over it (id ``select.probe``), run as a two-node graph."""

    settings: TextSelect
    text: ResolvedNode
    probe: ResolvedNode

    @property
    def nodes(self) -> list[ResolvedNode]:
        return [self.text, self.probe]


@dataclass(frozen=True)
class ResolvedMetric:
    name: str
    params: MetricParams


@dataclass(frozen=True)
class Resolved:
    loaded: LoadedSpec
    source: SourceLoader
    source_params: BaseModel
    nodes: list[ResolvedNode]
    template: jinja2.Template
    system_template: jinja2.Template | None
    metrics: list[ResolvedMetric]
    select: ResolvedSelect | ResolvedTextSelect | None = None
    generation: Sweep | None = None
    """The run settings' swept keys (``compiler/settings.py``): ``[generation]``'s and the swept
    templates' (named axes), or None when nothing is swept."""
    templates: dict[str, dict[Any, tuple[str, jinja2.Template]]] = field(default_factory=dict)
    """``[prompt]``'s swept templates (``template``, ``system``): each name's key path and template."""

    def prompt_templates(self, attrs: dict[str, Any]) -> tuple[tuple[str, jinja2.Template],
                                                               tuple[str, jinja2.Template] | None]:
        """The (key path, template) of an item's prompt and system prompt, by its attributes."""
        prompt = self.templates["template"][attrs["template"]] if "template" in self.templates \
            else ("prompt.template", self.template)
        if "system" in self.templates:
            return prompt, self.templates["system"][attrs["system"]]
        return prompt, (("prompt.system", self.system_template) if self.system_template is not None else None)

    def every_prompt_template(self) -> list[tuple[str, jinja2.Template]]:
        """Every (key path, template) of ``[prompt]``, each swept one's names included."""
        out = []
        for name, single in (("template", self.template), ("system", self.system_template)):
            if name in self.templates:
                out += list(self.templates[name].values())
            elif single is not None:
                out.append((f"prompt.{name}", single))
        return out

    @property
    def all_nodes(self) -> list[ResolvedNode]:
        """The graph's nodes and the selection's probe: every op the compile may run."""
        return self.nodes + (self.select.nodes if self.select else [])

    @property
    def sinks(self) -> list[ResolvedNode]:
        consumed = {n.input for n in self.nodes}
        return [n for n in self.nodes if n.id not in consumed]


def resolve(loaded: LoadedSpec) -> Resolved:
    problems = ProblemList()
    for problem in secret_problems(loaded.raw, loaded.problem):
        problems.add(problem)
    source, source_params = _resolve_source(loaded, problems)
    nodes = _resolve_nodes(loaded, problems)
    compiled = {name: _templates(loaded, key, value, problems)
                for name, (key, value) in run_settings.written_templates(loaded.spec).items()
                if name in run_settings.PROMPT_TEMPLATES}
    _check_template_names(loaded, nodes, problems)
    _check_stage_templates(loaded, problems)
    metrics = _resolve_metrics(loaded, problems)
    select = _resolve_select(loaded, problems)
    generation = _merge_sweeps(_resolve_generation(loaded, problems), _resolve_template_sweeps(loaded, problems))
    problems.raise_if_any(SpecError)
    single = {name: next(iter(found.values()))[1] for name, found in compiled.items() if None in found}
    swept = {name: found for name, found in compiled.items() if None not in found}
    return Resolved(loaded, source, source_params, nodes, single.get("template"),  # type: ignore[arg-type]
                    single.get("system"), metrics, select, generation, swept)


def _templates(loaded: LoadedSpec, key: str, value: Any, problems: ProblemList
               ) -> dict[Any, tuple[str, jinja2.Template]]:
    """Each template a key holds, compiled, by name (None for a plain template), with its key
    path; each syntax error is a problem at that path (``prompt.template.grid.terse``)."""
    out = {}
    for name, where, source in run_settings.template_sources(key, value):
        template = _template(loaded, source, where, problems)
        if template is not None:
            out[name] = (where, template)
    return out


def _resolve_template_sweeps(loaded: LoadedSpec, problems: ProblemList) -> Sweep | None:
    """The templates written as sweeps (``compiler/settings.py``), by attribute name; each
    malformed one, or a table that is not a sweep, a problem at its key path."""
    written = run_settings.swept_templates(loaded.spec)
    if not written:
        return None
    sweep, errors = _split_sweep({name: value for name, (_, value) in written.items()}, named=frozenset(written))
    for name, message in errors:
        problems.add(loaded.problem(written[name][0], message))
    for name in sorted(sweep.fixed):
        problems.add(loaded.problem(written[name][0], "a template is a string, or templates swept by name: "
                                                      "{ grid = { name = \"...\", ... } } or { grid = [...] }"))
    for name, table in sorted(sweep.named.items()):
        key, value = written[name]
        for value_name in [n for n, source in table.items() if not isinstance(source, str)]:
            problems.add(loaded.problem(run_settings.template_key(key, value, value_name),
                                        "a swept template is a string"))
    return sweep


def _merge_sweeps(generation: Sweep | None, templates: Sweep | None) -> Sweep | None:
    """One sweep of every run setting: ``[generation]``'s keys and the templates' names."""
    if generation is None or templates is None:
        return generation or templates
    return Sweep({}, {**generation.grid, **templates.grid}, {**generation.choice, **templates.choice},
                 templates.named)


def _resolve_generation(loaded: LoadedSpec, problems: ProblemList) -> Sweep | None:
    """``[generation]``'s swept keys, checked like a node's params: each a well-formed sweep of a
    key that may be swept, every candidate a valid value."""
    generation = loaded.spec.generation
    if not generation.sweeps:
        return None
    sweep, errors = _split_sweep(generation.sweeps)
    for name, message in errors:
        problems.add(loaded.problem(f"generation.{name}", message))
    for name in sorted(sweep.fixed):  # a table that is not a sweep
        problems.add(loaded.problem(f"generation.{name}", "a sweep is { grid = [...] } or { choice = [...] } "
                                                          "with a non-empty list"))
    for name in sorted({*sweep.grid, *sweep.choice} - set(SWEEPABLE)):
        problems.add(loaded.problem(f"generation.{name}", f"{name} cannot be swept",
                                    hint=f"sweepable: {', '.join(SWEEPABLE)}"))
    fixed = generation.model_dump(mode="json", exclude={"sweeps", *generation.sweeps})
    check_sweep_values(loaded, Generation, Sweep(fixed, sweep.grid, sweep.choice), "generation", problems)
    return sweep


def _validation_problems(loaded: LoadedSpec, exc: ValidationError, prefix: str,
                         schema: type[BaseModel] | None = None) -> list[Problem]:
    out = []
    for err in merge_union_errors([dict(e) for e in exc.errors()]):
        loc, inner = (_walk(schema, err["loc"], err["type"] == "extra_forbidden") if schema is not None
                      else (tuple(err["loc"]), None))
        key = ".".join([prefix, *(str(p) for p in loc)])
        msg = "unknown parameter" if err["type"] == "extra_forbidden" else err["msg"]
        hint = None
        if err["type"] == "extra_forbidden" and inner is not None and err["loc"]:
            names = sorted(inner.model_fields)
            hint = did_you_mean(str(err["loc"][-1]), names) or f"parameters: {', '.join(names) or 'none'}"
        if err["type"] == "literal_error":
            hint = literal_hint(err) or msg.replace("Input should be", "use")
            msg = f"invalid value {err.get('input')!r}"
        out.append(loaded.problem(key, msg, hint))
    return out


def _walk(schema: type[BaseModel], loc: tuple[Any, ...],
          unknown: bool) -> tuple[tuple[Any, ...], type[BaseModel] | None]:
    """An error's location as the spec writes it (the tags pydantic adds for a tagged union, as
    ``correct.table``, left out), and the model whose field the location's last part names
    (``correct = { rule = ..., ignore_cases = true }``: the table's model, for its hint).
    ``unknown``: the last part is a key the model does not know (kept), not a tag."""
    model: type[BaseModel] | None = schema
    kept: list[Any] = []
    for depth, part in enumerate(loc):
        if isinstance(part, int) or model is None:
            kept.append(part)
            continue
        if part not in model.model_fields:
            if depth == len(loc) - 1 and unknown:
                kept.append(part)
            continue  # else a union's tag, not a key the user wrote
        kept.append(part)
        if depth < len(loc) - 1:
            model = _model_in(model.model_fields[part].annotation)
    return tuple(kept), model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The first pydantic model an annotation holds (``X | LmEvalExact``), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)


def _resolve_source(loaded: LoadedSpec, problems: ProblemList) -> tuple[SourceLoader | None, Any]:
    spec = loaded.spec.source
    if spec.loader not in SOURCES:
        problems.add(loaded.unknown(SOURCES, spec.loader, "source.loader"))
        return None, None
    loader = SOURCES.get(spec.loader)
    try:
        return loader, loader.Params.model_validate(spec.params)
    except ValidationError as exc:
        for p in _validation_problems(loaded, exc, "source"):
            problems.add(p)
        return loader, None


def _resolve_nodes(loaded: LoadedSpec, problems: ProblemList) -> list[ResolvedNode]:
    resolved: list[ResolvedNode] = []
    known: dict[str, Op] = {}
    for index, node in enumerate(loaded.spec.node):
        key = f"node[{index}]"
        if node.op not in OPS:
            problems.add(loaded.unknown(OPS, node.op, f"{key}.op"))
            continue
        op = OPS.get(node.op)
        sweep, errors = _split_sweep(node.params)
        for name, message in errors:
            problems.add(loaded.problem(f"{key}.params.{name}", message))
        _check_params(loaded, op, sweep, f"{key}.params", problems)
        input_name = node.input or op.default_input
        _check_input(loaded, op, input_name, known, f"{key}.input", problems)
        known[node.id] = op
        resolved.append(ResolvedNode(index, node.id, op, input_name, sweep, node.repeat))
    return resolved


PROBE_ID = "select.probe"
SELECT_MEDIA = {"generate": "image", "speech-to-text": "audio"}
"""What the selection's models read, by task: the probe op must take and make it."""


def _resolve_select(loaded: LoadedSpec, problems: ProblemList) -> ResolvedSelect | ResolvedTextSelect | None:
    settings = loaded.spec.select
    if settings is None:
        return None
    if isinstance(settings, TextSelect):
        return _resolve_text_select(loaded, settings, problems)
    probe, key = settings.probe, "select.probe"
    if probe.op not in OPS:
        problems.add(loaded.unknown(OPS, probe.op, f"{key}.op"))
        return None
    op = OPS.get(probe.op)
    sweep, errors = _split_sweep(probe.params)
    for name, message in errors:
        problems.add(loaded.problem(f"{key}.params.{name}", message))
    _check_params(loaded, op, sweep, f"{key}.params", problems)
    media = SELECT_MEDIA[settings.task]
    if op.input_kind != media or op.output_kind != media:
        problems.add(loaded.problem(f"{key}.op", f"op {op.name!r} takes {op.input_kind} and makes "
                                    f"{op.output_kind}; the {settings.task} models read {media}",
                                    hint=f"a probe perturbs the record's {media} (e.g. "
                                         f"{'image.imagenet_c' if media == 'image' else 'audio.corrupt'})"))
    input_name = probe.input or op.default_input
    if input_name in RESERVED_INPUTS or any(n.id == input_name for n in loaded.spec.node):
        problems.add(loaded.problem(f"{key}.input", f"a probe reads a record media, not {input_name!r}",
                                    hint=f"name the record's {media} (e.g. '{media}')"))
    if op.model_backed:
        problems.add(loaded.problem(f"{key}.op", f"op {op.name!r} asks a model; a probe perturbs media",
                                    hint="use a perturbation op such as image.imagenet_c or audio.corrupt"))
    node = ResolvedNode(-1, PROBE_ID, op, input_name, sweep, probe.repeat, spec_key=key)
    return ResolvedSelect(settings, node)


TEXT_ID = "select.text"


def _resolve_text_select(loaded: LoadedSpec, settings: TextSelect, problems: ProblemList) -> ResolvedTextSelect | None:
    """The probe perturbs the text of ``field`` (a ``text.field`` node), as a node of the graph
    would perturb a node's text."""
    probe, key = settings.probe, "select.probe"
    if probe.op not in OPS:
        problems.add(loaded.unknown(OPS, probe.op, f"{key}.op"))
        return None
    op = OPS.get(probe.op)
    if op.input_kind != "text" or op.output_kind != "text":  # its params would only add noise
        problems.add(loaded.problem(f"{key}.op", f"op {op.name!r} takes {op.input_kind} and makes "
                                    f"{op.output_kind}; a text selection's probe perturbs text",
                                    hint="e.g. op = \"text.corrupt\", params.severity = \"heavy\""))
        return None
    sweep, errors = _split_sweep(probe.params)
    for name, message in errors:
        problems.add(loaded.problem(f"{key}.params.{name}", message))
    _check_params(loaded, op, sweep, f"{key}.params", problems)
    if probe.input is not None:
        problems.add(loaded.problem(f"{key}.input", "a text selection's probe reads the record field `field`",
                                    hint="leave probe.input out and set select.field"))
    if op.model_backed:
        problems.add(loaded.problem(f"{key}.op", f"op {op.name!r} asks a model; a probe perturbs text",
                                    hint="use a perturbation op such as text.corrupt"))
    field_op = OPS.get("text.field")
    text = ResolvedNode(-1, TEXT_ID, field_op, "record", _split_sweep({"field": settings.field})[0], 1,
                        spec_key="select.field")
    return ResolvedTextSelect(settings, text, ResolvedNode(-1, PROBE_ID, op, TEXT_ID, sweep, probe.repeat,
                                                           spec_key=key))


def _check_params(loaded: LoadedSpec, op: Op, sweep: Sweep, key: str, problems: ProblemList) -> None:
    """Validate the fixed params with every candidate of every sweep axis."""
    check_sweep_values(loaded, op.Params, sweep, key, problems)


def check_sweep_values(loaded: LoadedSpec, schema: type[BaseModel], sweep: Sweep, key: str,
                       problems: ProblemList) -> None:
    """Validate ``schema`` with the fixed values and every candidate of every sweep axis."""
    seen: set[str] = set()
    for trial in sweep.trials():
        try:
            schema.model_validate(trial)
        except ValidationError as exc:
            for p in _validation_problems(loaded, exc, key, schema):
                if p.render() not in seen:
                    seen.add(p.render())
                    problems.add(p)


def _check_input(loaded: LoadedSpec, op: Op, name: str, known: dict[str, Op], key: str,
                 problems: ProblemList) -> None:
    """An input is an earlier node, 'record' (ops that read the record), or a record media name."""
    if name in known:
        upstream = known[name]
        if op.input_kind is not None and upstream.output_kind != op.input_kind:
            problems.add(loaded.problem(key, f"op {op.name!r} takes {op.input_kind} but node "
                                        f"{name!r} makes {upstream.output_kind}"))
    elif any(n.id == name for n in loaded.spec.node):
        problems.add(loaded.problem(key, f"node {name!r} is defined after this node",
                                    hint="list nodes in dependency order"))
    elif op.input_kind is None and name != "record":
        problems.add(loaded.problem(key, f"op {op.name!r} reads the record; its input must be 'record'"))
    elif op.input_kind is not None and name in RESERVED_INPUTS:
        problems.add(loaded.problem(key, f"op {op.name!r} takes {op.input_kind}, not {name!r}",
                                    hint="name a record media (e.g. 'image') or an earlier node"))
    elif op.input_kind == "text":  # a record's media are images and audio: a text comes from a node
        nodes = [n.id for n in loaded.spec.node]
        problems.add(loaded.problem(key, f"no node {name!r} makes the text op {op.name!r} takes",
                                    hint=did_you_mean(name, nodes) or f"nodes: {', '.join(nodes)}"))


def _template(loaded: LoadedSpec, source: str, key: str, problems: ProblemList) -> jinja2.Template | None:
    try:
        return compile_template(source)
    except TemplateProblem as exc:
        problems.add(loaded.problem(key, str(exc)))
        return None


TEMPLATE_NAMES = {"record", "attrs", "item_id", "record_id"}


def _check_template_names(loaded: LoadedSpec, nodes: list[ResolvedNode], problems: ProblemList) -> None:
    """Undefined names are found before any item is rendered (StrictUndefined catches the rest)."""
    consumed = {n.input for n in nodes}
    sinks = [n for n in nodes if n.id not in consumed]
    names = set(TEMPLATE_NAMES)
    if sinks and all(n.op.output_kind == "text" for n in sinks):
        names.add("text")
    for _, key, source in run_settings.prompt_sources(loaded.spec):
        if not source:
            continue
        try:
            used = meta.find_undeclared_variables(make_environment().parse(source))
        except jinja2.TemplateSyntaxError:
            continue  # reported by _template
        for name in sorted(used - names):
            hint = did_you_mean(name, sorted(names)) or f"variables: {', '.join(sorted(names))}"
            problems.add(loaded.problem(key, f"template uses undefined variable {name!r}", hint=hint))


STAGE_TEMPLATE_NAMES = {"answer", "attrs", "prompt"}


def _check_stage_templates(loaded: LoadedSpec, problems: ProblemList) -> None:
    """A later stage's template compiles and uses only the names a run gives it."""
    for index, stage in enumerate(loaded.spec.stage):
        for _, key, source in run_settings.template_sources(f"stage[{index}].template", stage.template):
            if _template(loaded, source, key, problems) is None:
                continue
            used = meta.find_undeclared_variables(make_environment().parse(source))
            for name in sorted(used - STAGE_TEMPLATE_NAMES):
                problems.add(loaded.problem(key, f"template uses undefined variable {name!r}",
                                            hint=did_you_mean(name, sorted(STAGE_TEMPLATE_NAMES))
                                            or f"variables: {', '.join(sorted(STAGE_TEMPLATE_NAMES))}"))


def _with_kind_rule(loaded: LoadedSpec, schema: type[MetricParams], params: dict[str, Any]) -> dict[str, Any]:
    """A metric's params with the ``correct`` rule of ``[answer].kind`` (or, on a choice-loglik
    stage, the exact choice) where the metric takes one and does not set it."""
    if "correct" not in schema.model_fields or "correct" in params:
        return params
    stage = params.get("stage") or loaded.spec.stage[-1].id
    if any(s.id == stage and s.task == "choice-loglik" for s in loaded.spec.stage):
        # a chosen choice is right only as the gold choice's text: "normalized" would let two
        # choices that differ in case, punctuation or an article ("a mirror", "Mirror") both count
        return {**params, "correct": dict(EXACT_CHOICE)}
    rule = params.get("answer")
    answer = loaded.spec.answers.get(rule) if isinstance(rule, str) else loaded.spec.answer
    if answer is None or answer.kind is None:
        return params
    return {**params, "correct": KIND_CORRECT[answer.kind]}


EXACT_CHOICE = {"rule": "lm_eval_exact", "ignore_case": False, "ignore_punctuation": False}
"""The ``correct`` rule of a metric on a choice-loglik stage that sets none: the gold choice's
text, exactly."""


def _resolve_metrics(loaded: LoadedSpec, problems: ProblemList) -> list[ResolvedMetric]:
    out = []
    stage_ids = [s.id for s in loaded.spec.stage]
    for index, metric in enumerate(loaded.spec.metric):
        key = f"metric[{index}]"
        if metric.name not in METRIC_SCHEMAS:
            problems.add(loaded.unknown(METRIC_SCHEMAS, metric.name, f"{key}.name"))
            continue
        schema = METRIC_SCHEMAS.get(metric.name)
        try:
            params = schema.model_validate(_with_kind_rule(loaded, schema, metric.params))
        except ValidationError as exc:
            for p in _validation_problems(loaded, exc, key, METRIC_SCHEMAS.get(metric.name)):
                problems.add(p)
            continue
        if params.answer is not None and params.answer not in loaded.spec.answers:
            rules = sorted(loaded.spec.answers)
            problems.add(loaded.problem(f"{key}.answer", f"no answer rule {params.answer!r}",
                                        hint=did_you_mean(params.answer, rules)
                                        or (f"rules: {', '.join(rules)}" if rules
                                            else "name a rule in the spec: [answers.NAME] with extract, pattern")))
        if params.stage is not None and params.stage not in stage_ids:
            problems.add(loaded.problem(f"{key}.stage", f"no stage {params.stage!r}",
                                        hint=f"stages: {', '.join(stage_ids)}"))
        out.append(ResolvedMetric(metric.name, params))
    return out

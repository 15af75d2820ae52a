"""The compiler's driver: spec file -> manifest folder (items table + lock + spec).

Stages: parse -> resolve -> load source -> filter/sample -> expand ops -> render -> write.
An unchanged recompile (same spec, same source bytes, same op and library versions, same model
backends) is answered from a memo of the previous output and does no op work.

Specs with model-backed nodes need ``CompileOptions.model_client`` (``benchc.api.compile`` gives
the runtime's); every backend such a node may use is fingerprinted before any other work, and
the fingerprints enter the memo key and the lock (``model_steps``).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .artifacts import ItemRow, Lock, LockBenchmark, LockSource, LockSourceFile, SelectLock, SplitLock, TextSelectLock
from .atomic import make_staging_dir, remove_stale_staging, replace_dir_atomic
from .canonical import HASH_RECIPE_VERSION, SEED_RECIPE_VERSION, canonical_json, digest
from .cas import ContentStore
from .compile_options import CompileOptions as CompileOptions, data_roots  # re-exports CompileOptions (API)
from .disjoint import Footprint, footprint_of_records, refuse_overlap
from .disjoint_from import guards as disjoint_guards
from .errors import BenchcError, OpError, Problem, SpecError, SourceError
from .expand import Variant, expand
from .folders import own_folder
from .ops.base import library_versions
from .model_steps import ModelSteps
from .manifest import (LOCK_VERSION, MANIFEST_SCHEMA_VERSION, Manifest, ManifestModifiedError, check_output_dir,
                       is_manifest_dir, manifest_digest, read_manifest, write_manifest)
from .metric_attrs import check_metric_attrs
from .metrics import is_template
from .registry import did_you_mean
from . import selection as selection_kinds
from . import settings as run_settings
from .resolve import Resolved, ResolvedNode, resolve
from .select import apply_filters_counted, sample, stratum_sizes
from .source_loading import load_source, source_digest
from .split import apply_split
from .sources import LoadedSource
from .spec.models import Stage
from .spec.locate import line_of
from .spec.parse import LoadedSpec, load_spec
from .templates import TemplateProblem, compile_template, render
from .values import Record, Value

ALWAYS_TRACKED = ("benchc", "jinja2", "numpy", "pillow")


@dataclass(frozen=True)
class CompileResult:
    manifest_dir: Path
    lock: dict[str, Any]
    """lock.json's JSON value (``locked``: its typed model)."""
    memo_hit: bool
    ops_run: int = 0
    model_prompts: int = 0
    """Prompts this compile sent to the model client (node-cache misses of model nodes)."""
    repaired: list[str] = field(default_factory=list)
    """Keys of the damaged cache objects ``--repair`` deleted before this compile recomputed them."""
    model_requests: int | None = None
    """Distinct requests among them, and how many of those a model answered (the rest came from
    the response store): set by callers that know their client (``benchc.api.compile``)."""
    model_calls: int | None = None

    @property
    def locked(self) -> Lock:
        return Lock.model_validate(self.lock)


def compile_spec(spec_path: Path | str, out_dir: Path | str, options: CompileOptions | None = None) -> CompileResult:
    options = options or CompileOptions()
    check_output_dir(Path(out_dir))  # before any work: a refused -o should fail fast
    remove_stale_staging(Path(out_dir).absolute().parent)  # what a killed compile left beside -o
    loaded = load_spec(spec_path, options.overrides)
    resolved = resolve(loaded)
    models = ModelSteps(options.model_client, data_roots(loaded, options), loaded.problem)
    model_pins = models.pin(resolved.nodes)  # fails fast: no client, a missing model
    select_pins = selection_kinds.pin(resolved.select, models) if resolved.select is not None else None
    store = ContentStore(own_folder(options.cache_dir, "cache", "--cache"))
    remove_stale_staging(store.root / "compiled")  # ... and in the memo
    try:
        source = load_source(resolved, loaded, store, options)
        guards = disjoint_guards(loaded, options, store)
        memo_key = _memo_key(resolved, source, model_pins, select_pins, guards)
        memo_dir = store.root / "compiled" / memo_key
        hit = _memo_hit(memo_dir, Path(out_dir)) if options.use_memo else None
        if hit is not None:
            return CompileResult(Path(out_dir), hit.lock, True, 0)
        try:
            rows, lock, ops_run = _build(resolved, loaded, source, store, options, models, model_pins, select_pins)
        except OpError as exc:  # an op's error names its node's key path: point at the spec's line too
            raise OpError([_at_spec_line(p, loaded) for p in exc.problems]) from None
        if guards:
            refuse_overlap(loaded, _footprint(loaded, source, rows), guards)
        spec_json = spec_document(resolved)
        write_manifest(Path(out_dir), rows, lock, spec_json)
        write_manifest(memo_dir, rows, lock, spec_json, replace=False)
        return CompileResult(Path(out_dir), lock, False, ops_run, models.prompts_asked)
    finally:
        store.close()


def _at_spec_line(problem: Problem, loaded: LoadedSpec) -> Problem:
    """``problem`` with the spec's file and the line of its key path (``node[1].params.options``),
    where it names none."""
    if problem.file is not None or problem.key is None:
        return problem
    line = line_of(loaded.lines, problem.key)
    return replace(problem, file=str(loaded.path), line=line) if line is not None else problem


def _memo_hit(memo_dir: Path, out_dir: Path) -> Manifest | None:
    """The memo of an unchanged compile, checked against its lock before it is handed out. The
    memo is a cache, rebuilt from spec and data: one that was edited or damaged is dropped and
    the compile runs, never reported "(unchanged)" (issue 13)."""
    if not is_manifest_dir(memo_dir):
        return None
    try:
        manifest = read_manifest(memo_dir)
    except ManifestModifiedError:
        shutil.rmtree(memo_dir, ignore_errors=True)
        return None
    _copy_dir(memo_dir, out_dir)
    return manifest


ANSWER_KEYS_OF_RULES_4 = {"group": None, "select": "first", "drop_echo": True, "kind": None, "strip": True}
"""[answer] keys added after its first release (rules 4, and kind and strip in rules 5), written
only where set."""


def spec_document(resolved: Resolved) -> dict[str, Any]:
    """The spec with every default made explicit, of the spec's own keys and of the registered
    source, op and metric parameters: what the runtime reads and what the spec digest hashes, so
    writing a default out changes nothing and a changed default changes the digest."""
    doc = resolved.loaded.spec.model_dump(mode="json", by_alias=True)
    doc["source"] = {**doc["source"], **resolved.source_params.model_dump(mode="json")}
    for node_doc, node in zip(doc["node"], resolved.nodes):
        node_doc["params"] = _with_defaults(node, node_doc["params"])
    if doc.get("answer") is None:  # absent, not null: specs without one keep their digests
        doc.pop("answer", None)
    else:  # keys added in rules 4, written only where set: specs written before keep their digests
        _trim_answer(doc["answer"])
    if not doc.get("answers"):  # absent, not empty: specs without named rules keep their digests
        doc.pop("answers", None)
    for rule in doc.get("answers", {}).values():
        _trim_answer(rule)
    if doc.get("split") is None:  # absent, not null: specs without one keep their digests
        doc.pop("split", None)
    if resolved.select is None:  # absent, not null: specs without one keep their digests
        del doc["select"]
    else:
        doc["select"]["probe"]["params"] = _with_defaults(resolved.select.probe, doc["select"]["probe"]["params"])
    doc["metric"] = [{"name": m.name, **m.params.model_dump(mode="json")} for m in resolved.metrics]
    doc["stage"] = [_stage_document(stage) for stage in resolved.loaded.spec.stage]
    return doc


def _trim_answer(rule: dict[str, Any]) -> None:
    for key, default in ANSWER_KEYS_OF_RULES_4.items():
        if rule.get(key) == default:
            del rule[key]


def _with_defaults(node: ResolvedNode, params: dict[str, Any]) -> dict[str, Any]:
    """A node's params with every default of its op written out."""
    defaults = {name: field.get_default(call_default_factory=True)
                for name, field in node.op.Params.model_fields.items() if not field.is_required()}
    return {**_json_defaults(node.op.Params, defaults), **params}


def _stage_document(stage: Stage) -> dict[str, Any]:
    """A stage's keys; ``template`` and ``media`` only where they differ from their defaults, so
    that specs written before the keys existed keep their digests (and writing a default out
    still changes nothing)."""
    doc = stage.model_dump(mode="json", exclude={"template", "media"})
    if stage.template is not None:
        doc["template"] = stage.template
    if stage.sends != Stage(id=stage.id, input=stage.input).sends:
        doc["media"] = stage.sends
    return doc


def _json_defaults(model: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in model.model_construct(**defaults).model_dump(mode="json").items() if k in defaults}


def spec_digest(resolved: Resolved) -> str:
    """The digest of what the spec makes: its document without the description and the version
    (editing prose changes no item; the version is what a content change must bump, so a bump
    alone must not look like a content change)."""
    doc = spec_document(resolved)
    doc["benchmark"] = {k: v for k, v in doc["benchmark"].items() if k not in ("description", "version")}
    return digest({"kind": "spec", "spec": doc})


def _library_versions(resolved: Resolved) -> dict[str, str]:
    """Versions of every library and engine the spec's ops may use (``environment(None)``)."""
    versions = library_versions(ALWAYS_TRACKED)
    for node in resolved.all_nodes:
        versions.update(node.op.environment(None))
    return dict(sorted(versions.items()))


def _memo_key(resolved: Resolved, source: LoadedSource, model_pins: dict[str, Any],
              select_pins: dict[str, Any] | None, guards: list[Footprint] | None = None) -> str:
    selection: dict[str, Any] = {} if select_pins is None else {"select": select_pins}  # absent: earlier keys hold
    if guards:  # a memo holds no overlap with the evaluation sets it was checked against
        selection["disjoint_from"] = [g.digest() for g in guards]
    return digest({"kind": "compile-memo", "spec": spec_document(resolved),
                   "source": source_digest(source), "skipped": len(source.skipped),
                   "ops": _op_versions(resolved), "libraries": _library_versions(resolved),
                   "models": model_pins, "recipe": HASH_RECIPE_VERSION,
                   "seed_recipe": SEED_RECIPE_VERSION, "schema": MANIFEST_SCHEMA_VERSION, **selection})


def _op_versions(resolved: Resolved) -> dict[str, str]:
    return {n.op.name: n.op.version for n in resolved.all_nodes}


def _build(resolved: Resolved, loaded: LoadedSpec, source: LoadedSource, store: ContentStore,
           options: CompileOptions, models: ModelSteps,
           model_pins: dict[str, Any], select_pins: dict[str, Any] | None
           ) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    filtered, after_filters = apply_filters_counted(loaded, source.records)
    counts = _Counts(loaded, len(source.records), len(source.skipped), after_filters)
    counts.refuse_if_empty(len(filtered))
    split = apply_split(loaded, filtered)
    if split is not None:
        filtered = split.kept
        counts.split = len(filtered)
        counts.refuse_if_empty(len(filtered), "split")
    records = sample(loaded, filtered)
    _check_sample(loaded, filtered, records)
    counts.sampled = len(records)
    seed = loaded.spec.benchmark.seed
    check_scale(resolved, min(len(records), resolved.select.settings.keep) if resolved.select else len(records),
                options)
    selection = None
    if resolved.select is not None:
        selection = selection_kinds.run(resolved.select, records, seed, store, options.workers, models)
        records = selection.kept
        counts.selected = len(records)
        counts.refuse_if_empty(len(records), "select")
    expansion = expand(resolved.nodes, records, seed, store, options.workers,
                       tuple(data_roots(loaded, options)), models, options.progress)
    if resolved.sinks:
        finals = [v for node in resolved.sinks for v in expansion.by_node[node.id]]
        counts.refuse_if_empty(len(finals), "node", expansion.dropped)
        known = _attribute_names([v.record.attrs for v in finals] + [v.attrs for v in finals])
        known |= run_settings.names(resolved.generation)
        rows = [_item_row(resolved, v.record, v, known, s) for v in finals
                for s in run_settings.settings_for(resolved.generation, seed, v.record.id, v.path)]
    else:
        known = _attribute_names([r.attrs for r in records]) | run_settings.names(resolved.generation)
        rows = [_item_row(resolved, r, None, known, s) for r in records
                for s in run_settings.settings_for(resolved.generation, seed, r.id, "")]
    rows.sort(key=lambda row: row["item_id"])
    check_metric_attrs(resolved, rows)
    chosen = None
    if selection is not None:
        assert select_pins is not None  # pinned with resolved.select
        chosen = selection.locked(select_pins)
    split_lock = split.lock(loaded.spec.split) if split is not None and loaded.spec.split is not None else None
    lock = _lock(resolved, loaded, source, records, rows, expansion.dropped, model_pins, chosen, split_lock)
    return rows, lock.to_json(), expansion.ops_run + (selection.ops_run if selection is not None else 0)


@dataclass
class _Counts:
    """How many records each step of a compile kept, for the message that refuses an empty
    manifest: a manifest of 0 items is a spec or data mistake, never a benchmark."""

    loaded: LoadedSpec
    records: int
    skipped_rows: int
    after_filters: list[int]
    split: int | None = None
    sampled: int | None = None
    selected: int | None = None

    def refuse_if_empty(self, kept: int, step: str | None = None,
                        dropped: dict[str, dict[str, int]] | None = None) -> None:
        if kept:
            return
        skipped = f" ({self.skipped_rows} malformed row(s) skipped)" if self.skipped_rows else ""
        steps = [f"{self.records} record(s) loaded{skipped}"]
        steps += [f"{n} after filter[{i}]" for i, n in enumerate(self.after_filters)]
        if self.split is not None:
            steps.append(f"{self.split} in the kept splits")
        if self.sampled is not None:
            steps.append(f"{self.sampled} after [sample]")
        if self.selected is not None:
            steps.append(f"{self.selected} after [select]")
        if step == "node":
            lost = "; ".join(f"{node}: {', '.join(f'{n} {why}' for why, n in reasons.items())}"
                             for node, reasons in (dropped or {}).items())
            steps.append("0 items from the nodes" + (f" (dropped: {lost})" if lost else ""))
        key, hint = self._where(step)
        error = SourceError if key == "source" else SpecError
        raise error(self.loaded.problem(key, "the manifest would have 0 items: " + ", ".join(steps), hint))

    def _where(self, step: str | None) -> tuple[str, str]:
        if not self.records:
            return "source", ("the source has no records: check its path(s) and rows"
                              + (" (and the rows skipped: on_error = 'skip')" if self.skipped_rows else ""))
        if step is None:
            first = next(i for i, n in enumerate(self.after_filters) if n == 0)
            return f"filter[{first}]", "this filter removes every record left: check its field and values"
        if step == "select":
            return "select", "no candidate record was kept: check [select] and its probe"
        if step == "split":
            return "split.keep", "no record falls in the kept splits: check [split] keep, fractions and key"
        return "node", "every variant was dropped: check the nodes' validators and inputs"


def _check_sample(loaded: LoadedSpec, pool: list[Record], chosen: list[Record]) -> None:
    """``sample.n`` above the records there are is a mistake (a typo, the wrong data), not a
    request for all of them: say how many there are."""
    spec = loaded.spec.sample
    if spec.n is None:
        return
    per = f" (one per {spec.per})" if spec.per else ""
    if spec.stratify is None:
        if len(chosen) < spec.n:
            raise SpecError(loaded.problem(
                "sample.n", f"sample.n = {spec.n} but only {len(chosen)} records pass the filters{per}",
                hint=f"lower n to {len(chosen)} or less, or remove it to keep every record"))
        return
    largest = max(stratum_sizes(loaded, chosen).values(), default=0)
    if largest < spec.n:
        raise SpecError(loaded.problem(
            "sample.n", f"sample.n = {spec.n} per {spec.stratify}, but no value of {spec.stratify} has more "
                        f"than {largest} of the {len(pool)} records that pass the filters{per}",
            hint=f"lower n to {largest} or less, or remove it to keep every record"))


# scale ------------------------------------------------------------------------------------------

DEFAULT_MAX_ITEMS = 1_000_000
DEFAULT_MAX_OUTPUT_BYTES = 50 * 10**9
ANNOUNCE_ITEMS = 10_000
"""A compile estimated above this many items says its estimate before work starts."""
BYTES_PER_OUTPUT = {"text": 1_000, "image": 100_000, "audio": 200_000}
"""The rough size of one op output of each kind (a text, a JPEG/PNG image, a few seconds of audio)."""
MAX_ITEMS_ENV, MAX_OUTPUT_GB_ENV = "BENCHC_MAX_ITEMS", "BENCHC_MAX_OUTPUT_GB"


@dataclass(frozen=True)
class ScaleEstimate:
    """What a compile will make, estimated before it expands anything.

    Items: records x the variants per record of each sink node, summed over the sinks, where a
    node's variants per record are its input node's (1 for a record input) x its grid points (the
    product of its grid sizes; ``choice`` draws add none) x ``repeat``; without nodes, the
    records; either times the grid points of ``[generation]``'s sweeps. Output bytes: every
    node's outputs (intermediate nodes' too: all go to the compile cache), each at
    BYTES_PER_OUTPUT of the node's output kind (text ~1 KB, image ~100 KB, audio ~200 KB);
    without nodes, ~1 KB per item. Both are upper bounds: validators may drop variants."""

    records: int
    items: int
    output_bytes: int

    def describe(self) -> str:
        per_record = f" ({self.items // self.records:,} per record)" if self.records else ""
        return (f"{self.items:,} items from {self.records:,} records{per_record}, "
                f"~{_size(self.output_bytes)} of op outputs")


def estimate_scale(resolved: Resolved, records: int) -> ScaleEstimate:
    per_record: dict[str, int] = {}
    output_bytes = 0
    for node in resolved.nodes:
        points = math.prod(len(values) for values in node.sweep.grid.values())
        per_record[node.id] = per_record.get(node.input, 1) * points * node.repeat
        output_bytes += records * per_record[node.id] * BYTES_PER_OUTPUT.get(node.op.output_kind, 1_000)
    settings = run_settings.points(resolved.generation)  # each variant once per swept setting
    if not resolved.sinks:
        return ScaleEstimate(records, records * settings, records * settings * BYTES_PER_OUTPUT["text"])
    return ScaleEstimate(records, records * settings * sum(per_record[n.id] for n in resolved.sinks), output_bytes)


def check_scale(resolved: Resolved, records: int, options: CompileOptions) -> ScaleEstimate:
    """Refuse a compile estimated above the item or size limit (with the estimate and how to
    raise the limit); say the estimate of a large one before any op runs."""
    estimate = estimate_scale(resolved, records)
    max_items = options.max_items if options.max_items is not None else _limit(MAX_ITEMS_ENV, DEFAULT_MAX_ITEMS, 1)
    max_bytes = (options.max_output_bytes if options.max_output_bytes is not None
                 else _limit(MAX_OUTPUT_GB_ENV, DEFAULT_MAX_OUTPUT_BYTES, 10**9))
    over = []
    if estimate.items > max_items:
        over.append(f"the limit is {max_items:,} items (set {MAX_ITEMS_ENV}=N to raise it)")
    if estimate.output_bytes > max_bytes:
        over.append(f"the limit is {_size(max_bytes)} of op outputs (set {MAX_OUTPUT_GB_ENV}=G to raise it)")
    if over:
        raise SpecError(Problem(
            f"this compile would make {estimate.describe()}: {'; '.join(over)}", file=str(resolved.loaded.path),
            hint=f"lower sample.n or shrink the grids and repeats; or, to compile it anyway, rerun with "
                 f"{MAX_ITEMS_ENV}={max(estimate.items, max_items)} and {MAX_OUTPUT_GB_ENV}="
                 f"{max(math.ceil(estimate.output_bytes / 10**9), math.ceil(max_bytes / 10**9))} "
                 f"in the environment"))
    if estimate.items > ANNOUNCE_ITEMS:
        (options.notify or _to_stderr)(f"estimate: {estimate.describe()}")
    return estimate


def _limit(variable: str, default: int, unit: int) -> int:
    text = os.environ.get(variable, "").strip().replace("_", "")
    if not text:
        return default
    try:
        value = float(text) if unit > 1 else int(text)
    except ValueError:
        value = -1
    if not value > 0 or not math.isfinite(value):
        raise BenchcError(Problem(f"{variable}={os.environ[variable]!r} is not a positive "
                                  f"{'number' if unit > 1 else 'whole number'}",
                                  hint=f"e.g. {variable}={'100' if unit > 1 else '5000000'}"))
    return int(value * unit)


def _size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} bytes"


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _attribute_names(attr_dicts: list[dict[str, Any]]) -> frozenset[str]:
    return frozenset(name for attrs in attr_dicts for name in attrs)


def _item_attrs(resolved: Resolved, record: Record, variant: Variant | None) -> dict[str, Any]:
    """The record's attributes, then its variant's; a variant never overwrites the split's
    attribute (an op that sets it, e.g. `attribute = "corruption"` beside image corruptions,
    would put test records under a train value: exports by attribute would mix the splits)."""
    made = variant.attrs if variant else {}
    split = resolved.loaded.spec.split
    if split is not None and split.attribute in record.attrs and split.attribute in made \
            and made[split.attribute] != record.attrs[split.attribute]:
        raise SpecError(resolved.loaded.problem(
            "split.attribute", f"the split's attribute {split.attribute!r} is also set by node "
                               f"{variant.node_id if variant else ''!r} ({made[split.attribute]!r} on {record.id!r}, "
                               f"split {record.attrs[split.attribute]!r})",
            hint="name the split's attribute after no attribute an op sets, e.g. attribute = \"fold\""))
    return {**record.attrs, **made}


def _item_row(resolved: Resolved, record: Record, variant: Variant | None,
              known_attrs: frozenset[str] = frozenset(), setting: run_settings.Setting | None = None
              ) -> dict[str, Any]:
    value = variant.value if variant else None
    path = setting.path(variant.path if variant else "") if setting else (variant.path if variant else "")
    item_id = f"{record.id}#{path}" if path else record.id
    attrs = run_settings.with_setting(resolved.loaded, _item_attrs(resolved, record, variant), setting, item_id)
    context: dict[str, Any] = {"record": record.fields, "attrs": attrs, "item_id": item_id,
                               "record_id": record.id}
    if value is not None and value.kind == "text":
        context["text"] = value.text
    (prompt_key, prompt_template), system_template = resolved.prompt_templates(attrs)
    prompt = _render(resolved, prompt_template, prompt_key, context, item_id)
    system = _render(resolved, system_template[1], system_template[0], context, item_id) if system_template else None
    return ItemRow(
        item_id=item_id,
        group_id=record.id,
        record_id=record.id,
        record_digest=record.digest,
        node=variant.node_id if variant else "",
        attrs=canonical_json(attrs),
        system=system,
        prompt=prompt,
        text=value.text if value is not None and value.kind == "text" else None,
        media=canonical_json(_media(record, value)),
        targets=canonical_json(_targets(resolved, record, _target_context(context, known_attrs))),
        lineage=canonical_json(list(variant.lineage) if variant else []),
    ).model_dump()


def _render(resolved: Resolved, template: Any, key: str, context: dict[str, Any], item_id: str) -> str:
    try:
        return render(template, context)
    except TemplateProblem as exc:
        raise SpecError(resolved.loaded.problem(
            key, f"{exc} (item {item_id!r})",
            hint=f"variables: {', '.join(sorted(context))}; record fields: "
                 f"{', '.join(sorted(context['record']))}")) from None


def _media(record: Record, value: Value | None) -> list[dict[str, str]]:
    """The item's own media value (if any), then the record's media of other kinds."""
    media = []
    if value is not None and value.media is not None:
        media.append({"name": value.kind, **value.media.as_json()})
    taken = {m["kind"] for m in media}
    for name, ref in sorted(record.media.items()):
        if ref.kind not in taken and name in ("image", "audio"):
            media.append({"name": name, **ref.as_json()})
    return media


def _target_context(context: dict[str, Any], known_attrs: frozenset[str]) -> dict[str, Any]:
    """A target template's variables: an attribute that other items have and this one lacks
    reads as none (the original item has no ``negated``); one that no item has stays an error."""
    return {**context, "attrs": {**{name: None for name in known_attrs}, **context["attrs"]}}


def _targets(resolved: Resolved, record: Record, context: dict[str, Any]) -> dict[str, list[str]]:
    """Each metric's target for one item, keyed by the metric's ``target``: a record field's
    value(s), or a template rendered with the item's record and attributes (a per-item target)."""
    out: dict[str, list[str]] = {}
    for index, metric in enumerate(resolved.metrics):
        field_path = getattr(metric.params, "target", None)
        if field_path is None:
            continue
        if is_template(field_path):
            rendered = _render(resolved, compile_template(field_path), f"metric[{index}].target", context,
                               context["item_id"])
            out[field_path] = [rendered.strip()] if rendered.strip() else []
            continue
        try:
            value = record.get(field_path)
        except KeyError:
            raise SpecError(resolved.loaded.problem(
                f"metric[{index}].target", f"record {record.id!r} has no field {field_path!r}",
                hint=did_you_mean(field_path, sorted(record.fields))
                or f"its fields: {', '.join(sorted(record.fields))}")) from None
        out[field_path] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    out.update(_stage_choices(resolved, record))
    return out


def _stage_choices(resolved: Resolved, record: Record) -> dict[str, list[str]]:
    """The choices of each choice-loglik stage that reads them from a record field, keyed by
    the field's path beside the metrics' targets (the run reads them there: ``targets`` holds
    every per-item list of texts the compiler reads from records)."""
    out: dict[str, list[str]] = {}
    for index, stage in enumerate(resolved.loaded.spec.stage):
        if stage.task != "choice-loglik" or not isinstance(stage.choices, str):
            continue
        key = f"stage[{index}].choices"
        try:
            value = record.get(stage.choices)
        except KeyError:
            raise SpecError(resolved.loaded.problem(
                key, f"record {record.id!r} has no field {stage.choices!r}",
                hint=did_you_mean(stage.choices, sorted(record.fields))
                or f"its fields: {', '.join(sorted(record.fields))}")) from None
        if not isinstance(value, list) or len(value) < 2 or not all(isinstance(v, (str, int, float)) for v in value):
            raise SpecError(resolved.loaded.problem(
                key, f"record {record.id!r}: field {stage.choices!r} holds {str(value)[:60]!r}, not a list of at "
                     "least two choices", hint="choices are texts (numbers are read as their text)"))
        texts = [str(v) for v in value]
        if len(set(texts)) != len(texts):
            raise SpecError(resolved.loaded.problem(
                key, f"record {record.id!r}: field {stage.choices!r} repeats a choice ({texts!r})",
                hint="two equal choices cannot be told apart by their log-likelihood"))
        out[stage.choices] = texts
    return out


def _lock(resolved: Resolved, loaded: LoadedSpec, source: LoadedSource, records: list[Record],
          rows: list[dict[str, Any]], dropped: dict[str, dict[str, int]],
          model_pins: dict[str, Any], select: SelectLock | TextSelectLock | None = None,
          split: SplitLock | None = None) -> Lock:
    spec = loaded.spec
    chosen: dict[str, Any] = {} if select is None else {"select": select}  # absent, not null, without [select]
    if split is not None:
        chosen["split"] = split
    return Lock(
        lock_version=LOCK_VERSION,
        manifest_schema=MANIFEST_SCHEMA_VERSION,
        hash_recipe=HASH_RECIPE_VERSION,
        benchmark=LockBenchmark(name=spec.benchmark.name, version=spec.benchmark.version,
                                seed=spec.benchmark.seed),
        spec_digest=spec_digest(resolved),
        source=LockSource(
            loader=resolved.source.name, loader_version=resolved.source.version,
            digest=source_digest(source),
            files=[LockSourceFile(path=f.path, sha256=f.sha256, rows=f.rows) for f in source.files],
            records=len(source.records), selected=len(records),
            skipped_rows=len(source.skipped),
        ),
        ops=_op_versions(resolved),
        libraries=_library_versions(resolved),
        dropped=dropped,
        model_steps=model_pins,
        item_count=len(rows),
        manifest_digest=manifest_digest(rows),
        **chosen,
    )


def _footprint(loaded: LoadedSpec, source: LoadedSource, rows: list[dict[str, Any]]) -> Footprint:
    """What this compile's items were made from: their records (with the records' own media) and
    the items' media."""
    by_id = {r.id: r for r in source.records}
    records = [by_id[i] for i in sorted({row["record_id"] for row in rows}) if i in by_id]
    media = [(m["sha256"], m["kind"], row["record_id"]) for row in rows for m in json.loads(row["media"])]
    return footprint_of_records(str(loaded.path), records, media)


def _copy_dir(src: Path, dst: Path) -> None:
    check_output_dir(dst)
    staging = make_staging_dir(dst)
    shutil.rmtree(staging)
    try:
        shutil.copytree(src, staging)
        replace_dir_atomic(staging, dst)
    finally:
        shutil.rmtree(staging, ignore_errors=True)

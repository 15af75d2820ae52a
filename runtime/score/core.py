"""``benchc score``: a run's responses + the manifest -> metric results (scores.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from benchc.compiler.errors import BenchcError, Problem, RunError, SpecError
from benchc.compiler.manifest import SPEC_FILE, Manifest
from benchc.compiler.metrics import METRIC_SCHEMAS, metric_stage_problems, selects
from benchc.compiler.spec.models import Answer, Spec, Stage

from ...defaults import DEFAULT_CACHE, DEFAULT_STORE
from .answers import describe, extract_all
from ..artifacts import MetricResultRecord, RunRecord, Scores
from .embed import load_embedder
from .metrics import METRICS, MetricInput, MetricResult
from .rules import RULES_VERSION
from .metrics.base import ScoredItem
from ..run.runfolder import RUN_FILE, manifest_items, open_manifest, read_responses, read_run_record, write_text

SCORES_FILE = "scores.json"


def _items_with_responses(items: pl.DataFrame, responses: pl.DataFrame, stage: str,
                          answer: Answer | None = None) -> list[ScoredItem]:
    """The items with their answers of ``stage``, read by the spec's ``[answer]`` extraction."""
    answers = (responses.filter(pl.col("stage") == stage).sort("item_id", "sample")
               .group_by("item_id", maintain_order=True).agg(pl.col("text"), pl.col("blob")))
    prompts = dict(items.select("item_id", "prompt").iter_rows()) if "prompt" in items.columns else {}
    by_item = {row["item_id"]: (extract_all((t or "" for t in row["text"]), answer, prompts.get(row["item_id"]) or ""),
                                tuple(row["blob"]))
               for row in answers.iter_rows(named=True)}
    out = []
    wanted = ("item_id", "group_id", "attrs", "targets", "node", "prompt", "media")
    columns = [c for c in wanted if c in items.columns]
    for row in items.select(columns).iter_rows(named=True):
        if row["item_id"] not in by_item:
            raise BenchcError(Problem(f"item {row['item_id']!r} has no {stage!r} response in this run",
                                      hint="rerun `benchc run`; it resumes where it stopped"))
        texts, blobs = by_item[row["item_id"]]
        media = tuple((m["kind"], m["sha256"]) for m in json.loads(row.get("media") or "[]"))
        out.append(ScoredItem(row["item_id"], row["group_id"], json.loads(row["attrs"]),
                              json.loads(row["targets"]), texts, node=row.get("node") or "",
                              prompt=row.get("prompt") or "", media=media, blobs=blobs))
    return out


def _selected(items: pl.DataFrame, where: dict[str, list[Any]]) -> pl.DataFrame:
    """The items a metric's ``where`` keeps (all of them without one)."""
    if not where:
        return items
    keep = [selects(where, json.loads(attrs)) for attrs in items["attrs"]]
    return items.filter(pl.Series(keep, dtype=pl.Boolean))


class _LazyMedia:
    """Item media and media answers, read from the compile cache and the response store, which
    are opened on the first read (most metrics read none)."""

    def __init__(self, cache_dir: Path, store_dir: Path) -> None:
        self.cache_dir, self.store_dir = Path(cache_dir), Path(store_dir)
        self._source: Any = None

    def __call__(self, kind: str, sha256: str) -> bytes:
        if self._source is None:
            from ..run.executor import MediaSource

            self._source = MediaSource(self.cache_dir, self.store_dir)
        return self._source(kind, sha256)


class _LazyModels:
    """The judges' model client (``model_client.RuntimeModelClient``: backends answered through
    the response store, item images from the compile cache), built on the first judge's use."""

    def __init__(self, cache_dir: Path, store_dir: Path) -> None:
        self.cache_dir, self.store_dir = Path(cache_dir), Path(store_dir)
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            from .model_client import RuntimeModelClient

            self._client = RuntimeModelClient(self.cache_dir, self.store_dir, progress=False)
        return self._client

    def fingerprint(self, ref: Any) -> dict[str, Any]:
        return dict(self.client().fingerprint(ref))

    def generate(self, ref: Any, prompts: Any) -> list[str]:
        return list(self.client().generate(ref, prompts))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def score_run(run_dir: Path, manifest_dir: Path | None = None, *, cache_dir: Path = DEFAULT_CACHE,
              store_dir: Path = DEFAULT_STORE, derived: Manifest | None = None) -> dict[str, Any]:
    """``score_results`` without the metrics' results: scores.json's content."""
    return score_results(run_dir, manifest_dir, cache_dir=cache_dir, store_dir=store_dir, derived=derived)[0]


def score_results(run_dir: Path, manifest_dir: Path | None = None, *, cache_dir: Path = DEFAULT_CACHE,
                  store_dir: Path = DEFAULT_STORE,
                  derived: Manifest | None = None) -> tuple[dict[str, Any], list[MetricResult]]:
    """Score a run with its manifest's metrics; ``manifest_dir`` stands in for the manifest the
    run recorded (moved or copied), and must have the same digest. ``cache_dir`` and
    ``store_dir`` (the run's) are read only by metrics that look at media (MMCBench's CLIP ones).
    ``derived`` replaces the manifest folder with one made in memory from the run's checked
    manifest (``run_manifest_of``): a report's rescoring with other metric splits or a subset of
    the items. A folder is always checked against its lock; a derived manifest has nothing on
    disk to check, and must hold its items and the run's manifest digest."""
    run_dir = Path(run_dir)
    record = read_run_record(run_dir)
    if derived is None:
        manifest, spec = run_manifest_of(run_dir, record, manifest_dir)
    else:
        manifest, spec = _derived_manifest(run_dir, record, derived)
    _check_metric_stages(manifest, spec)
    items, responses = manifest_items(manifest), read_responses(run_dir, record)
    media = _LazyMedia(cache_dir, store_dir)
    models = _LazyModels(cache_dir, store_dir)
    try:
        results = [_score_metric(metric, spec, items, responses, record, run_dir, media, models)
                   for metric in spec.metric]
    finally:
        models.close()
    scores = Scores(benchmark=manifest.locked.benchmark, manifest_digest=manifest.locked.manifest_digest,
                    model=record.model, items=items.height, rules=RULES_VERSION,
                    metrics=[_result_record(r) for r in results]).to_json()
    write_text(run_dir / SCORES_FILE, json.dumps(scores, indent=2, sort_keys=True) + "\n", "scores")
    return scores, results


def _score_metric(metric: Any, spec: Spec, items: pl.DataFrame, responses: pl.DataFrame, record: RunRecord,
                  run_dir: Path, media: _LazyMedia, models: _LazyModels) -> MetricResult:
    """One metric's result over the items it selects, with the notes every metric gets."""
    backends = record.backend_of()
    params = METRIC_SCHEMAS.get(metric.name).model_validate(metric.params)
    implementation = METRICS.get(metric.name)
    stage = params.stage or spec.stage[-1].id
    for needed in [stage, *params.extra_stages()]:
        if needed not in backends:
            raise RunError(Problem(f"the run record has no stage {needed!r}", file=str(run_dir / RUN_FILE),
                                   hint="rerun `benchc run`; it resumes where it stopped"))
    scored = _selected(items, params.where)
    rule = spec.answers[params.answer] if params.answer is not None else spec.answer
    data = MetricInput(_items_with_responses(scored, responses, stage, rule),
                       load_embedder(params.embedder) if implementation.needs_embedder(params) else None,
                       backends[stage],
                       stages={s: _items_with_responses(scored, responses, s, rule)
                               for s in params.extra_stages()},
                       media=media, models=models)
    result = implementation.score(params, data)
    result.answer = params.answer
    chooser = next((s for s in spec.stage if s.id == stage and s.task == "choice-loglik"), None)
    if chooser is not None:
        result.stage = stage
        result.notes.append(choice_note(chooser))
    if params.where:
        result.notes.append(f"Items: the {scored.height} of {items.height} with "
                            + " and ".join(f"{k} in {list(v)}" for k, v in params.where.items()) + " (where).")
    read = describe(rule, params.answer)
    if read is not None:
        result.notes.append(read)
    _note_unreadable(result, data.items, params.answer)
    result.notes.extend(import_notes(record))  # an imported run says so, and how many answers it lacked
    return result


def _note_unreadable(result: MetricResult, items: list[ScoredItem], rule: str | None = None) -> None:
    """Counts and lists the text answers read as no answer (the ``[answer]`` rules found none, or
    the answer only echoed the prompt): they are scored wrong and agree with nothing, and a
    reader must see how many there are."""
    unreadable = [{"item_id": item.item_id, "sample": k} for item in items
                  for k, (text, blob) in enumerate(zip(item.responses, item.blobs or (None,) * len(item.responses)))
                  if not text.strip() and blob is None]
    if not unreadable:
        return
    total = sum(len(item.responses) for item in items)
    rules = "[answer] rules" if rule is None else f"rule {rule!r}"
    result.notes.append(f"{len(unreadable)} of {total} answer(s) read as no answer (no answer found by the "
                        f"{rules}, or only the prompt echoed): scored wrong, agreeing with none "
                        "(listed in details.no_answer).")
    result.details["no_answer"] = unreadable


def run_manifest_of(run_dir: Path, record: RunRecord, manifest_dir: Path | None) -> tuple[Manifest, Spec]:
    """The manifest a run was made from: the recorded one, or ``manifest_dir`` if its digest matches."""
    recorded = Path(record.manifest)
    record_file = str(run_dir / RUN_FILE)
    if manifest_dir is None and not recorded.is_dir():
        raise RunError(Problem(f"the manifest this run was made from is gone: {recorded}", file=record_file,
                               hint="pass --manifest DIR with that manifest (moved or copied elsewhere)"))
    path = Path(manifest_dir) if manifest_dir is not None else recorded
    manifest, spec = open_manifest(path)
    found, wanted = manifest.locked.manifest_digest, record.manifest_digest
    if found != wanted:
        what = "--manifest" if manifest_dir is not None else "the recorded manifest (it was recompiled since)"
        raise RunError(Problem(f"{what} {path} has digest {found[:16]}, but this run was made from a manifest "
                               f"with digest {wanted[:16]}", file=record_file,
                               hint=f"pass the manifest the run was made from (recorded: {recorded}), "
                                    "or rerun `benchc run` with this one"))
    return manifest, spec


def _derived_manifest(run_dir: Path, record: RunRecord, derived: Manifest) -> tuple[Manifest, Spec]:
    if derived.frame is None or derived.locked.manifest_digest != record.manifest_digest:
        raise RunError(Problem("a derived manifest must hold its items and the run's manifest digest",
                               file=str(run_dir / RUN_FILE), hint="derive it from `run_manifest_of`'s manifest"))
    try:
        return derived, Spec.model_validate(derived.spec)
    except ValueError as exc:  # pydantic's ValidationError
        raise RunError(Problem(f"the derived manifest's spec is not valid: {exc}", file=str(derived.root))) from None


def _check_metric_stages(manifest: Manifest, spec: Spec) -> None:
    """Metrics read text: refuse, before any embedder loads, a metric on an audio stage."""
    problems = [Problem(p.message, file=str(Path(manifest.root) / SPEC_FILE), key=p.key, hint=p.hint)
                for p in metric_stage_problems(spec)]
    if problems:
        raise SpecError(problems)


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def _result_record(result: MetricResult) -> MetricResultRecord:
    rule = {"answer": result.answer} if result.answer is not None else {}  # absent unless named: bytes kept
    if result.stage is not None:
        rule["stage"] = result.stage
    return MetricResultRecord(name=result.name, columns=result.columns,
                              rows=[{k: _round(v) for k, v in row.items()} for row in result.rows],
                              details=result.details, notes=result.notes, **rule)


def choice_note(stage: Stage) -> str:
    """How a choice-loglik stage chose its answers, named in the report (lm-eval's metric names)."""
    how = ("the highest log-likelihood per character of the choice (lm-eval's acc_norm)"
           if stage.choose_by == "loglik_per_char" else "the highest log-likelihood (lm-eval's acc)")
    return (f"Answers (stage {stage.id!r}, choice-loglik): the model wrote none; each choice was scored as the "
            f"continuation {stage.delimiter!r} + choice of the prompt, and the answer is the choice of {how}.")


def _result_json(result: MetricResult) -> dict[str, Any]:
    """One metric's entry in scores.json."""
    return _result_record(result).to_json()


def import_notes(record: RunRecord) -> list[str]:
    """The lines a scored import carries into scores.json (and so into its report): where its
    answers came from, which variants had none, and how many were missing. It reads only the run
    record that ``benchc import`` (``runtime/interop/import_answers.py``) wrote, so scoring needs
    nothing from interop/."""
    source = record.imported
    if not isinstance(source, dict):
        return []
    name = Path(str(source.get("source", "?"))).name
    read = f", {source['read']}" if source.get("read") else ""
    notes = [f"Answers imported with `benchc import` from {name} (sha256 {str(source.get('source_sha256'))[:16]}, "
             f"format {source.get('format')}{read}, matched by {source.get('key')}), not produced by `benchc run`."]
    variants = source.get("unanswered_variants") or {}
    by_record = source.get("by_record") or {}
    if variants:
        shown = ", ".join(f"{name or '(none)'} ({count} items)" for name, count in variants.items())
        went = (f"Answers keyed by record id went to each record's {by_record.get('variant')!r} variant. "
                if by_record else "")
        notes.append(f"{went}Variants with no answers in the imported file: {shown}. Their items are missing, "
                     "scored as unanswered (wrong, agreeing with nothing): read only the answered variant's rows.")
    lacking = int(source.get("missing") or 0) - int(source.get("missing_in_unanswered_variants") or 0)
    if lacking:
        notes.append(f"{lacking} of {source.get('expected')} answers were missing from the imported file "
                     "(--allow-missing): each is scored as unanswered (wrong, agreeing with nothing).")
    return notes

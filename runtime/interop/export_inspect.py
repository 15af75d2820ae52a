"""``benchc score RUN --format inspect``: a scored run as an inspect-ai eval log (the JSON log
format, as inspect-ai 0.3.285 writes it with ``--log-format json``), so that
``inspect_ai.log.read_eval_log`` reads it and ``inspect view`` shows it. Written beside
scores.json, in ``RUN/inspect/<time>_<task>_<task id>.json`` (inspect's own naming).

Mapping (one inspect task per benchmark):

* ``eval``: ``task`` the benchmark name, ``task_version`` its version, ``model`` the run's model
  (an import without one: ``imported/<format>``), ``dataset`` {name, samples, sample_ids},
  ``config.epochs`` the spec's ``generation.n``, ``model_args`` the backends' fingerprints,
  ``scorers`` one per ``[[metric]]``, no ``revision``, and ``metadata`` benchc's facts (version,
  manifest and spec digests, the sha256 of scores.json and of the responses, the import).
* ``plan``: one step per stage (its task, id and backend); ``config`` the generation settings
  inspect has names for (a swept setting is left out: it differs between items).
* ``samples``: one per item and sample of the stage the first metric scores (``epoch`` = sample
  + 1), in manifest order: ``input`` the rendered prompt (messages when the item has a system
  prompt or media; media are referred to as ``benchc-media:<kind>:<sha256>``, not embedded),
  ``target`` the item's target(s) for the first metric that names one, ``output`` one choice
  holding the raw answer, ``scores`` {scorer: "C"/"I", the answer after ``[answer]``
  extraction, the rule} for the metrics defined on one answer (``general.accuracy``,
  ``general.worst_case``: the correctness benchc's metric counts), ``metadata`` the item's group,
  record, node, attributes, targets and media. An answer that is missing (an import with
  ``--allow-missing``) is a sample with an ``error`` and no output, scored as benchc scores it
  (wrong), and not counted in ``completed_samples``.
* ``results.scores``: one ``EvalScore`` per row of each metric of scores.json (a metric split
  by attributes gives ``<scorer>:<attr>=<value>:...``), its numeric value columns as metrics.
  Columns the metric reports in percent are written as fractions (inspect's convention: 0.7,
  not 70); counts go to the score's ``metadata``. ``reductions`` hold each item's share of
  correct samples (inspect's ``mean`` reducer when there are several epochs).
* ``stats``: the run's start and end from run.json (an import has none: empty strings).

The ids (``task_id``, ``eval_id``, ``run_id``, sample and message ids) are derived from the
digests, not drawn at random, and the bytes do not change from one export to the next. Keys keep
inspect's field order, not sorted: its header reader stops at ``samples``, so ``version``,
``status``, ``eval``, ``plan``, ``results`` and ``stats`` must come before it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel

from benchc import __version__
from benchc.compiler.atomic import make_staging_dir, replace_dir_atomic, write_text_atomic
from benchc.compiler.errors import Problem, RunError
from benchc.compiler.metrics import METRIC_SCHEMAS, selects
from benchc.compiler.spec.models import Answer, Spec

from ..score.answers import extract, is_correct
from ..artifacts import RunRecord
from ..score.metrics import METRICS
from ..score.metrics.base import ScoredItem
from ..score.metrics.general import targets_of
from ..run.runfolder import manifest_items, read_responses, read_run_record
from ..score.core import SCORES_FILE, run_manifest_of

EXPORT_DIR = "inspect"
LOG_VERSION = 2
NO_TIME = "1970-01-01T00:00:00+00:00"
"""``eval.created`` (required by inspect) and the file name's time for a run without a start (an import)."""
ALPHABET57 = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
"""shortuuid's alphabet, which inspect's ids use."""
MEDIA_SCHEME = "benchc-media"
PER_SAMPLE = frozenset({"general.accuracy", "general.worst_case"})
"""Metrics whose value for one answer is defined on its own: whether it is correct."""
SCORED = "items"
"""The count column that is inspect's ``scored_samples`` (items, as inspect counts samples after epochs)."""


@dataclass(frozen=True)
class InspectExport:
    path: Path  # the log file written
    samples: int  # EvalSample entries (items x epochs)
    items: int
    scores: int  # EvalScore entries in results.scores


@dataclass(frozen=True)
class _Scorer:
    """A metric whose value is defined on one answer, as a sample scorer."""

    name: str
    params: Any  # the metric's parameters (its MetricParams)
    rule: Answer | None = None  # how it reads the answers: its named rule ([answers.NAME]), else [answer]


def base57_id(text: str) -> str:
    """A 22-character id in inspect's alphabet, derived from ``text`` (as inspect's own
    ``base57_id_hash``: blake2s-128, base 57, the last 22 characters)."""
    n = int.from_bytes(hashlib.blake2s(text.encode("utf-8"), digest_size=16).digest(), "big")
    out = ""
    while n:
        n, rem = divmod(n, 57)
        out = ALPHABET57[rem] + out
    return out[-22:].rjust(22, ALPHABET57[0])


def _scores_sha256(run_dir: Path) -> str:
    path = run_dir / SCORES_FILE
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise RunError(Problem(f"cannot read the scores: {exc.strerror or exc}", file=str(path),
                               hint=f"score the run first: `benchc score {run_dir}`")) from None


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)


def export_inspect(run_dir: Path, scores: dict[str, Any], manifest_dir: Path | None = None) -> InspectExport:
    """Write ``RUN/inspect/<name>.json`` for a run scored into ``scores`` (``score_run``'s value;
    scores.json must be the file it wrote). The folder is swapped in whole, so it holds this
    log only (an earlier export's, under another name, goes with it)."""
    run_dir = Path(run_dir)
    record = read_run_record(run_dir)
    manifest, spec = run_manifest_of(run_dir, record, manifest_dir)
    items, responses = manifest_items(manifest), read_responses(run_dir, record)
    lock = manifest.locked
    scores_sha = _scores_sha256(run_dir)
    task_id = base57_id(f"task:{lock.manifest_digest}")
    stage = samples_stage(spec)
    scorers = sample_scorers(spec, stage)
    samples = _samples(spec, items, responses, stage, scorers, _model(record), task_id)
    results = _results(scores, spec, samples)
    evals = _eval_spec(spec, record, lock, scores, scores_sha, task_id, items, stage)
    if "headline" in results:  # declared, so that inspect view leads with benchc's first metric
        evals["headline_metric"] = {k: results["headline"][k] for k in ("scorer", "metric")}
    log: dict[str, Any] = {"version": LOG_VERSION, "status": "success", "eval": evals,
                           "plan": _plan(spec, record), "results": results, "stats": _stats(record),
                           "invalidated": False, "tags": [], "metadata": {}, "samples": samples,
                           "reductions": _reductions(samples, scorers, spec.generation.n)}
    name = log_name(record.started, lock.benchmark.name, task_id)
    folder = run_dir / EXPORT_DIR
    _write(folder, name, _dumps(log) + "\n")
    return InspectExport(folder / name, len(samples), items.height, len(results["scores"]))


def _write(folder: Path, name: str, text: str) -> None:
    """Swap in ``folder`` holding the one file (a folder that cannot be written is a RunError,
    and leaves the earlier export as it was)."""
    staging: Path | None = None
    try:
        staging = make_staging_dir(folder)
        write_text_atomic(staging / name, text)
        replace_dir_atomic(staging, folder)
    except OSError as exc:
        raise RunError(Problem(f"cannot write the inspect export: {exc.strerror or exc}", file=str(folder),
                               hint="make the run folder writable, or score a copy of it")) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


# names and times -----------------------------------------------------------------------------

def utc_time(started: str | None) -> str | None:
    """run.json's ``started`` ("2026-12-06T03:30:45Z") as inspect writes times
    ("2026-12-06T03:30:45+00:00"); None when absent or unreadable."""
    try:
        when = datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ") if isinstance(started, str) else None
    except ValueError:
        return None
    return when.replace(tzinfo=UTC).isoformat() if when else None


def log_name(started: str | None, benchmark: str, task_id: str) -> str:
    """inspect's log file name: ``<ISO time, ':' and '+' as '-'>_<task>_<id>.json``."""
    when = (utc_time(started) or NO_TIME).replace(":", "-").replace("+", "-")
    task = re.sub(r"\W", "-", benchmark)
    return f"{when}_{task}_{task_id}.json"


def scorer_names(names: list[str]) -> list[str]:
    """An inspect scorer name per metric: its name with characters other than word characters,
    '.' and '-' as '_', numbered ``_1``, ``_2`` ... when the spec has it more than once."""
    out = []
    for k, name in enumerate(names):
        base = re.sub(r"[^\w.-]", "_", name)
        out.append(f"{base}_{names[:k + 1].count(name)}" if names.count(name) > 1 else base)
    return out


def metric_scorer_names(spec: Spec) -> list[str]:
    """The scorer name of each [[metric]]: its name, and its named answer rule where it has one."""
    return scorer_names([m.name + (f"_{m.params['answer']}" if m.params.get("answer") else "") for m in spec.metric])


def filter_name(spec: Spec) -> str:
    """The ``[answer].extract`` steps joined with "+" ("none" without any), as the lm-eval export names them."""
    return "+".join(spec.answer.extract) if spec.answer is not None and spec.answer.extract else "none"


def _model(record: RunRecord) -> str:
    if record.model:
        return record.model
    if record.imported:
        return f"imported/{record.imported.get('format') or 'answers'}"
    return "unknown"


# eval, plan, stats ---------------------------------------------------------------------------

def _eval_spec(spec: Spec, record: RunRecord, lock: Any, scores: dict[str, Any], scores_sha: str, task_id: str,
               items: pl.DataFrame, stage: str) -> dict[str, Any]:
    bench = lock.benchmark
    names = metric_scorer_names(spec)
    return {
        "eval_id": base57_id(f"eval:{lock.manifest_digest}:{record.responses_sha256}:{scores_sha}"),
        "run_id": base57_id(f"run:{lock.manifest_digest}:{record.responses_sha256}"),
        "created": utc_time(record.started) or NO_TIME, "task": bench.name, "task_id": task_id,
        "task_version": bench.version, "task_display_name": bench.name, "task_attribs": {}, "task_args": {},
        "task_args_passed": {},
        "dataset": {"name": bench.name, "samples": items.height, "sample_ids": items["item_id"].to_list(),
                    "shuffled": False},
        "model": _model(record), "model_generate_config": {}, "model_args": record.backends,
        "config": {"epochs": spec.generation.n, "log_samples": True},
        "packages": {"benchc": __version__},
        "metadata": {"benchc": __version__, "benchmark": bench.to_json(), "manifest_digest": lock.manifest_digest,
                     "spec_digest": lock.spec_digest, "scores_sha256": scores_sha,
                     "responses_sha256": record.responses_sha256, "scoring_rules": scores.get("rules") or 1,
                     "samples_stage": stage, "filter": filter_name(spec), "imported": record.imported,
                     "values": "fractions: scores.json's percent columns divided by 100"},
        "scorers": [{"name": name, "options": dict(m.params), "metrics": [{"name": c, "options": {}} for c in
                                                                           _value_columns(result, m.params)],
                     "metadata": {"benchc_metric": m.name}}
                    for name, m, result in zip(names, spec.metric, scores["metrics"])],
    }


GENERATE_CONFIG = {"max_new_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "seed": "seed",
                   "stop": "stop_seqs"}
"""benchc's [generation] keys -> inspect's GenerateConfig keys (``n`` is ``eval.config.epochs``)."""


def _plan(spec: Spec, record: RunRecord) -> dict[str, Any]:
    backends = record.backend_of()
    generation = spec.generation.model_dump(mode="json")
    config = {ours: generation[key] for key, ours in GENERATE_CONFIG.items()
              if generation.get(key) is not None and key not in spec.generation.sweeps}
    steps = [{"solver": s.task, "params": {"stage": s.id, "backend": backends.get(s.id, s.backend), "input": s.input},
              "params_passed": {}} for s in spec.stage]
    return {"name": "plan", "steps": steps, "config": config}


def _stats(record: RunRecord) -> dict[str, Any]:
    started = utc_time(record.started)
    completed = ""
    if started and record.seconds is not None:
        completed = (datetime.fromisoformat(started) + timedelta(seconds=record.seconds)).isoformat()
    return {"started_at": started or "", "completed_at": completed, "model_usage": {}, "role_usage": {},
            "connection_limit_history": []}


# results -------------------------------------------------------------------------------------

def _labels(result: dict[str, Any], params: dict[str, Any]) -> list[str]:
    """The columns that name a row: the metric's ``by`` and any other text column."""
    by = set(params.get("by") or [])
    rows = result.get("rows", [])

    def is_text(column: str) -> bool:
        present = [r[column] for r in rows if r.get(column) is not None]
        return bool(present) and all(isinstance(v, str) for v in present)

    return [c for c in result.get("columns", []) if c in by or is_text(c)]


def _value_columns(result: dict[str, Any], params: dict[str, Any]) -> list[str]:
    """The numeric columns that are values (percent columns and any holding a non-integer), not counts."""
    labels, percent = set(_labels(result, params)), _percent(result)
    rows = result.get("rows", [])
    return [c for c in result.get("columns", []) if c not in labels and (c in percent or any(
        isinstance(r.get(c), float) for r in rows))]


def _percent(result: dict[str, Any]) -> set[str]:
    return METRICS.get(result["name"]).in_percent(list(result.get("columns", [])))


def _fraction(value: float, percent: bool) -> float:
    """A value as inspect shows it: percent as a fraction (scores.json rounds to 4 places, so 6 are exact)."""
    return round(value / 100, 6) if percent else value


def _results(scores: dict[str, Any], spec: Spec, samples: list[dict[str, Any]]) -> dict[str, Any]:
    names = metric_scorer_names(spec)
    out = []
    for name, result, declared in zip(names, scores["metrics"], spec.metric):
        out.extend(_row_scores(name, result, dict(declared.params)))
    completed = sum(1 for s in samples if "error" not in s)
    results: dict[str, Any] = {"total_samples": len(samples), "completed_samples": completed, "scores": out}
    first = next((s for s in out if s["metrics"]), None)
    if first is not None:
        results["headline"] = {"scorer": first["scorer"], "score": first["name"],
                               "metric": next(iter(first["metrics"]))}
    return results


def _row_scores(scorer: str, result: dict[str, Any], params: dict[str, Any]) -> list[dict[str, Any]]:
    labels, values, percent = _labels(result, params), _value_columns(result, params), _percent(result)
    rows = result.get("rows", [])
    out = []
    for row in rows:
        split = {c: row.get(c) for c in labels}
        name = ":".join([scorer, *(f"{c}={v}" for c, v in split.items())])
        metrics = {c: {"name": c, "value": _fraction(row[c], c in percent), "params": {}} for c in values
                   if isinstance(row.get(c), (int, float)) and not isinstance(row.get(c), bool)}
        counts = {c: row[c] for c in result.get("columns", []) if c not in labels and c not in values
                  and row.get(c) is not None}
        entry: dict[str, Any] = {"name": name, "scorer": scorer}
        if isinstance(row.get(SCORED), int):
            entry["scored_samples"] = row[SCORED]
        entry.update({"params": split, "metrics": metrics,
                      "metadata": {"benchc_metric": result["name"], "split": split, "counts": counts,
                                   "percent_columns": sorted(percent & set(values)), "notes": result.get("notes", [])}})
        out.append(entry)
    return out


# samples -------------------------------------------------------------------------------------

def samples_stage(spec: Spec) -> str:
    """The stage the samples show: the first metric's, else the last stage (as the lm-eval export)."""
    for metric in spec.metric:
        return METRIC_SCHEMAS.get(metric.name).model_validate(metric.params).stage or spec.stage[-1].id
    return spec.stage[-1].id


def sample_scorers(spec: Spec, stage: str) -> list[_Scorer]:
    """The metrics defined on one answer that score ``stage``, with their scorer names."""
    names = metric_scorer_names(spec)
    out = []
    for name, metric in zip(names, spec.metric):
        params = METRIC_SCHEMAS.get(metric.name).model_validate(metric.params)
        if metric.name in PER_SAMPLE and (params.stage or spec.stage[-1].id) == stage:
            out.append(_Scorer(name, params, spec.answers[params.answer] if params.answer else spec.answer))
    return out


def _first_targets(spec: Spec, item: ScoredItem) -> str | list[str]:
    """The item's target(s) for the first metric that names one ("" when none does)."""
    for metric in spec.metric:
        path = getattr(METRIC_SCHEMAS.get(metric.name).model_validate(metric.params), "target", None)
        if isinstance(path, str):
            targets = targets_of(item, path)
            return targets[0] if len(targets) == 1 else targets
    return ""


def _rule(correct: Any) -> str:
    """A ``correct`` rule as text: its name, or its table (lm_eval_exact's flags) as JSON."""
    if isinstance(correct, BaseModel):
        return json.dumps(correct.model_dump(mode="json"), sort_keys=True)
    return str(correct)


def _score(scorer: _Scorer, item: ScoredItem, answer: str) -> dict[str, Any]:
    """The sample's score by one metric's target and rule, as benchc's metric counts it."""
    targets = targets_of(item, scorer.params.target)
    right = is_correct(answer, targets, scorer.params.correct, item.prompt)
    explanation = f"correct = {_rule(scorer.params.correct)}; target(s): {json.dumps(targets, ensure_ascii=False)}"
    return {"value": "C" if right else "I", "answer": answer, "explanation": explanation, "history": []}


def _content(kind: str, sha256: str) -> dict[str, Any]:
    """A media reference as inspect content; the bytes are in benchc's cache or store, not in the log."""
    ref = f"{MEDIA_SCHEME}:{kind}:{sha256}"
    if kind == "audio":
        return {"type": "audio", "audio": ref, "format": "wav"}
    return {"type": "image", "image": ref, "detail": "auto"}


def _input(row: dict[str, Any], ids: str) -> str | list[dict[str, Any]]:
    """The rendered prompt: a string, or messages when the item has a system prompt or media."""
    prompt = row["prompt"] or ""
    media = json.loads(row["media"] or "[]")
    if not media and not row["system"]:
        return prompt
    content: Any = prompt
    if media:
        content = ([{"type": "text", "text": prompt}] if prompt else []) + [_content(m["kind"], m["sha256"])
                                                                             for m in media]
    messages = [{"id": base57_id(f"{ids}:system"), "content": row["system"], "source": "input", "role": "system"}
                ] if row["system"] else []
    return [*messages, {"id": base57_id(f"{ids}:user"), "content": content, "source": "input", "role": "user"}]


def _assistant(answer: dict[str, Any], model: str, ids: str) -> dict[str, Any]:
    content: Any = answer["text"] or ""
    if answer["kind"] in ("audio", "image") and answer["blob"]:
        content = [_content(answer["kind"], answer["blob"])]
    return {"id": base57_id(f"{ids}:assistant"), "content": content, "source": "generate", "role": "assistant",
            "model": model}


def _messages(given: str | list[dict[str, Any]], ids: str) -> list[dict[str, Any]]:
    if isinstance(given, list):
        return list(given)
    return [{"id": base57_id(f"{ids}:user"), "content": given, "source": "input", "role": "user"}]


def _answers(responses: pl.DataFrame, stage: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in responses.filter(pl.col("stage") == stage).sort("item_id", "sample").iter_rows(named=True):
        out.setdefault(row["item_id"], []).append(row)
    return out


def _item(row: dict[str, Any], texts: tuple[str, ...]) -> ScoredItem:
    media = tuple((m["kind"], m["sha256"]) for m in json.loads(row["media"] or "[]"))
    return ScoredItem(row["item_id"], row["group_id"], json.loads(row["attrs"] or "{}"),
                      json.loads(row["targets"] or "{}"), texts, node=row["node"] or "", prompt=row["prompt"] or "",
                      media=media)


def _metadata(row: dict[str, Any], item: ScoredItem, stage: str) -> dict[str, Any]:
    out = {"group_id": row["group_id"], "record_id": row["record_id"], "node": row["node"], "attrs": item.attrs,
           "targets": item.targets, "media": json.loads(row["media"] or "[]"), "stage": stage}
    if row.get("text") is not None:  # the item's source text (a text-to-speech item's), beside its prompt
        out["text"] = row["text"]
    return out


def _samples(spec: Spec, items: pl.DataFrame, responses: pl.DataFrame, stage: str, scorers: list[_Scorer],
             model: str, task_id: str) -> list[dict[str, Any]]:
    answers = _answers(responses, stage)
    out = []
    for row in items.iter_rows(named=True):
        mine = answers.get(row["item_id"]) or [{"sample": 0, "kind": "missing", "text": None, "blob": None}]
        prompt = row["prompt"] or ""
        read = [extract(a["text"] or "", spec.answer, prompt) for a in mine]
        item = _item(row, tuple(read))
        target, metadata = _first_targets(spec, item), _metadata(row, item, stage)
        mine_scorers = [s for s in scorers if selects(s.params.where, item.attrs)]
        for answer, text in zip(mine, read):
            by_rule = {s.name: text if s.rule is spec.answer else extract(answer["text"] or "", s.rule, prompt)
                       for s in mine_scorers}
            out.append(_sample(row, item, answer, by_rule, target, metadata, mine_scorers, model, task_id))
    return out


def _sample(row: dict[str, Any], item: ScoredItem, answer: dict[str, Any], read: dict[str, str],
            target: str | list[str],
            metadata: dict[str, Any], scorers: list[_Scorer], model: str, task_id: str) -> dict[str, Any]:
    epoch = answer["sample"] + 1
    ids = f"{task_id}:{row['item_id']}:{epoch}"
    given = _input(row, ids)
    missing = answer["kind"] == "missing"
    messages = _messages(given, ids)
    output: dict[str, Any] = {"model": model, "choices": [], "completion": ""}
    if not missing:
        reply = _assistant(answer, model, ids)
        messages.append(reply)
        output = {"model": model, "choices": [{"message": reply, "stop_reason": "unknown"}],
                  "completion": answer["text"] or ""}
    sample: dict[str, Any] = {
        "id": row["item_id"], "epoch": epoch, "input": given, "target": target, "messages": messages,
        "output": output, "scores": {s.name: _score(s, item, read[s.name]) for s in scorers}, "metadata": metadata,
        "store": {}, "events": [], "model_usage": {}, "role_usage": {}, "uuid": base57_id(f"{ids}:sample")}
    if missing:
        sample["error"] = {"message": "no answer: the run recorded this answer as missing (benchc scores it wrong)",
                           "traceback": "", "traceback_ansi": ""}
    sample["attachments"] = {}
    return sample


def _reductions(samples: list[dict[str, Any]], scorers: list[_Scorer], epochs: int) -> list[dict[str, Any]]:
    """Per scorer, each item's share of correct samples (inspect's ``mean`` over epochs)."""
    out = []
    for scorer in scorers:
        by_item: dict[str, list[dict[str, Any]]] = {}
        for sample in samples:
            if scorer.name in sample["scores"]:
                by_item.setdefault(sample["id"], []).append(sample["scores"][scorer.name])
        reduced = [{"value": sum(s["value"] == "C" for s in given) / len(given),
                    "answer": given[0]["answer"] if len(given) == 1 else None,
                    "explanation": given[0]["explanation"], "history": [], "sample_id": item_id}
                   for item_id, given in by_item.items()]
        entry: dict[str, Any] = {"scorer": scorer.name}
        if epochs > 1:
            entry["reducer"] = "mean"
        out.append({**entry, "samples": [{k: v for k, v in s.items() if v is not None} for s in reduced]})
    return out

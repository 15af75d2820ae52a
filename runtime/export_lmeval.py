"""``benchc score RUN --format lm-eval``: a scored run in lm-evaluation-harness's output schema
(``lm_eval/result_schema.py``, which lmms-eval mirrors), so that tools that read lm-eval
results read benchc's too. Written beside scores.json, in ``RUN/lm-eval/``:

* ``results.json``: ``results`` {task: {"alias", "<column>,<filter>": value,
  "<column>_stderr,<filter>": "N/A"}}, ``groups``, ``group_subtasks``, ``configs``,
  ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples`` {task: {original, effective}},
  ``config``, ``git_hash``, ``date``, ``task_hashes``, ``model_name``,
  ``model_name_sanitized``, ``total_evaluation_time_seconds``, and ``benchc`` (benchc's version,
  the benchmark, manifest and spec digests, the sha256 of scores.json, and the import facts of
  an imported run).
* ``samples_<benchmark>.jsonl``: one line per item, in manifest order: ``doc_id`` (its index),
  ``doc`` (the item: id, group, record, node, attributes, targets, media and their sha256s),
  ``target``, ``arguments`` ({"gen_args_0": {"arg_0": prompt, "arg_1": generation settings}},
  as lm-eval saves them), ``resps`` ([[one raw answer per sample]]), ``filtered_resps`` (what
  the metrics read after ``[answer]`` extraction), ``filter``, ``metrics``, the per-sample values
  of the metrics that have them (``general.accuracy``, ``general.worst_case``: the share of the
  item's samples that are correct, by the metric's own target and rule), ``doc_hash``,
  ``prompt_hash`` and ``target_hash`` (sha256 hex digests, as lm-eval's ``hash_string``).

Mapping: a task is ``<benchmark>:<metric>`` (``#k`` added when a spec has a metric twice); a
metric whose rows are split by attributes becomes a group of subtasks
``<benchmark>:<metric>:<attr>=<value>:...``, one per row, listed in ``group_subtasks`` (benchc
computes no aggregate over the rows, so ``groups`` holds only their aliases). A row's
non-integer numeric columns are its metric keys, with benchc's values as they are in
scores.json (rates in percent, not fractions); integer columns (counts) are left to
scores.json, and the first of items/answers/comparisons/pairs/groups is the task's
``n-samples``. benchc reports bootstrap intervals (``ci_low``/``ci_high`` keys), not standard
errors, so every ``_stderr`` is "N/A", lm-eval's own value for a metric without one. The filter
is ``none``, or the ``[answer].extract`` steps joined with ``+``.

Bytes are deterministic: sorted keys, no time but ``date``, which is the run's start from
run.json (an import has none: null).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from calendar import timegm
from dataclasses import dataclass
from pathlib import Path
from time import strptime
from typing import Any

import polars as pl

from benchc import __version__
from benchc.compiler.artifacts import Lock
from benchc.compiler.atomic import make_staging_dir, replace_dir_atomic, write_text_atomic
from benchc.compiler.errors import Problem, RunError
from benchc.compiler.metrics import METRIC_SCHEMAS
from benchc.compiler.spec.models import Spec

from .answers import extract, is_correct
from .artifacts import RunRecord
from .metrics.base import target_value
from .runfolder import manifest_items, read_responses, read_run_record
from .score import SCORES_FILE, run_manifest_of

EXPORT_DIR = "lm-eval"
RESULTS_FILE = "results.json"
PER_SAMPLE = frozenset({"general.accuracy", "general.worst_case"})
"""Metrics whose value for one item is defined on its own: the share of its samples that are correct."""
COUNT_COLUMNS = ("items", "answers", "comparisons", "pairs", "groups")
INTERVAL = re.compile(r"(^|_)ci_(low|high)$")
HIGHER_IS_BETTER = {"accuracy": True, "agreement": True, "holds": True, "worst_case": True, "acknowledged": None,
                    "similarity": True, "flip_rate": False, "right_to_wrong": False, "wrong_to_right": True}
"""Known columns; any other column's direction is null (unknown), never guessed."""


@dataclass(frozen=True)
class LmEvalExport:
    folder: Path
    results: Path
    samples: Path
    tasks: int
    samples_written: int


def sanitized(name: str) -> str:
    """lm-eval's ``model_name_sanitized`` rule, also used here for file names: "/" -> "__"."""
    return re.sub(r"[^A-Za-z0-9._-]", "__", name)


def hash_string(text: str) -> str:
    """lm-eval's ``hash_string``: sha256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _dumps(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False)


def export_lm_eval(run_dir: Path, scores: dict[str, Any], manifest_dir: Path | None = None) -> LmEvalExport:
    """Write ``RUN/lm-eval/`` (results.json and the samples file) for a run scored into ``scores``
    (``score_run``'s value; scores.json must be the file it wrote). The folder is swapped in
    whole, so its two files always belong together."""
    run_dir = Path(run_dir)
    record = read_run_record(run_dir)
    manifest, spec = run_manifest_of(run_dir, record, manifest_dir)
    items, responses = manifest_items(manifest), read_responses(run_dir, record)
    stage = _samples_stage(spec)
    samples_name = f"samples_{sanitized(manifest.locked.benchmark.name)}.jsonl"
    samples_text = "".join(_dumps(s) + "\n" for s in _samples(spec, items, responses, stage))
    results = _results(scores, spec, manifest.locked, record, _scores_sha256(run_dir), samples_name,
                       hash_string(samples_text), stage)
    folder = run_dir / EXPORT_DIR
    staging = make_staging_dir(folder)
    try:
        write_text_atomic(staging / samples_name, samples_text)
        write_text_atomic(staging / RESULTS_FILE, _dumps(results, indent=2) + "\n")
        replace_dir_atomic(staging, folder)
    except OSError as exc:
        raise RunError(Problem(f"cannot write the lm-eval export: {exc.strerror or exc}", file=str(folder))) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return LmEvalExport(folder, folder / RESULTS_FILE, folder / samples_name, len(results["results"]), items.height)


def _scores_sha256(run_dir: Path) -> str:
    return hashlib.sha256((run_dir / SCORES_FILE).read_bytes()).hexdigest()


def _samples_stage(spec: Spec) -> str:
    """The stage the samples show: the first metric's, else the last stage."""
    for metric in spec.metric:
        params = METRIC_SCHEMAS.get(metric.name).model_validate(metric.params)
        return params.stage or spec.stage[-1].id
    return spec.stage[-1].id


def filter_name(spec: Spec) -> str:
    return "+".join(spec.answer.extract) if spec.answer is not None and spec.answer.extract else "none"


# tasks and results ---------------------------------------------------------------------------

def _metric_tasks(scores: dict[str, Any], benchmark: str) -> list[tuple[str, dict[str, Any]]]:
    """(task base name, metric) per metric of scores.json, a repeated metric name numbered."""
    names = [m["name"] for m in scores["metrics"]]
    out = []
    for k, metric in enumerate(scores["metrics"]):
        suffix = f"#{names[:k + 1].count(metric['name'])}" if names.count(metric["name"]) > 1 else ""
        out.append((f"{benchmark}:{metric['name']}{suffix}", metric))
    return out


def _kind(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, str) for v in present):
        return "label"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "value" if any(isinstance(v, float) for v in present) else "count"
    return "label" if not present else "other"


def _columns(metric: dict[str, Any]) -> dict[str, str]:
    rows = metric.get("rows", [])
    return {c: _kind([r.get(c) for r in rows]) for c in metric.get("columns", [])}


def _row_task(base: str, row: dict[str, Any], labels: list[str]) -> str:
    return ":".join([base, *(f"{c}={row.get(c)}" for c in labels)])


def _row_entry(task: str, row: dict[str, Any], values: list[str], filt: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"alias": task}
    for column in values:
        entry[f"{column},{filt}"] = row.get(column)
        if not INTERVAL.search(column):
            entry[f"{column}_stderr,{filt}"] = "N/A"
    return entry


def _n_samples(row: dict[str, Any], default: int) -> dict[str, int]:
    count = next((row[c] for c in COUNT_COLUMNS if isinstance(row.get(c), int)), default)
    return {"original": count, "effective": count}


def _results(scores: dict[str, Any], spec: Spec, lock: Lock, record: RunRecord, scores_sha: str,
             samples_name: str, samples_hash: str, stage: str) -> dict[str, Any]:
    bench = lock.benchmark.to_json()
    filt = filter_name(spec)
    out: dict[str, Any] = {key: {} for key in ("results", "groups", "group_subtasks", "configs", "versions",
                                                "n-shot", "higher_is_better", "n-samples", "task_hashes")}
    declared = list(spec.metric)  # scores.json has one entry per [[metric]], in spec order
    for k, (base, metric) in enumerate(_metric_tasks(scores, bench["name"])):
        kinds = _columns(metric)
        labels = [c for c, k in kinds.items() if k == "label"]
        values = [c for c, k in kinds.items() if k == "value"]
        rows = metric.get("rows", [])
        tasks = [_row_task(base, row, labels) for row in rows]
        if len(rows) != 1 or labels:
            out["groups"][base] = {"alias": base}
            out["group_subtasks"][base] = tasks
        for task, row in zip(tasks, rows):
            out["results"][task] = _row_entry(task, row, values, filt)
            out["n-samples"][task] = _n_samples(row, scores["items"])
            out["higher_is_better"][task] = {c: HIGHER_IS_BETTER.get(c) for c in values if not INTERVAL.search(c)}
            out["configs"][task] = _task_config(task, spec, metric, declared[k] if k < len(declared) else None, row,
                                                labels, values, bench, stage)
            out["versions"][task] = bench["version"]
            out["n-shot"][task] = 0
            out["task_hashes"][task] = samples_hash
    out.update(_run_config(spec, record, scores, lock, scores_sha, samples_name, filt, stage))
    return out


def _generation(spec: Spec) -> dict[str, Any]:
    return spec.generation.model_dump(mode="json")


def _task_config(task: str, spec: Spec, metric: dict[str, Any], declared: Any, row: dict[str, Any],
                 labels: list[str], values: list[str], bench: dict[str, Any], stage: str) -> dict[str, Any]:
    params = dict(declared.params) if declared is not None else {}
    return {"task": task, "output_type": "generate_until", "generation_kwargs": _generation(spec),
            "repeats": spec.generation.n, "num_fewshot": 0,
            "metric_list": [{"metric": c, "higher_is_better": HIGHER_IS_BETTER.get(c)} for c in values
                            if not INTERVAL.search(c)],
            "metadata": {"version": bench["version"], "benchc_metric": metric["name"], "benchc_params": params,
                         "split": {c: row.get(c) for c in labels}, "stage": params.get("stage") or stage}}


def _started(record: RunRecord) -> float | None:
    """run.json's ``started`` (UTC, ISO 8601) as lm-eval's ``date`` (seconds since the epoch)."""
    started = record.started
    try:
        return float(timegm(strptime(started, "%Y-%m-%dT%H:%M:%SZ"))) if isinstance(started, str) else None
    except ValueError:
        return None


def _run_config(spec: Spec, record: RunRecord, scores: dict[str, Any], lock: Lock, scores_sha: str,
                samples_name: str, filt: str, stage: str) -> dict[str, Any]:
    model = record.model or ("imported" if record.imported else "unknown")
    bootstrap = next((m.params.get("bootstrap") for m in spec.metric if "bootstrap" in m.params), None)
    seconds = record.seconds
    return {
        "config": {"model": model, "model_args": _dumps(record.backends), "batch_size": None,
                   "batch_sizes": [], "device": None, "use_cache": None, "limit": None,
                   "bootstrap_iters": bootstrap, "gen_kwargs": _generation(spec),
                   "random_seed": spec.benchmark.seed, "numpy_seed": None, "torch_seed": None, "fewshot_seed": None},
        "git_hash": None, "date": _started(record), "model_name": model, "model_name_sanitized": sanitized(model),
        "total_evaluation_time_seconds": str(seconds) if seconds is not None else None,
        "benchc": {"version": __version__, "benchmark": lock.benchmark.to_json(),
                   "manifest_digest": lock.manifest_digest, "spec_digest": lock.spec_digest,
                   "scores_sha256": scores_sha, "scoring_rules": scores.get("rules") or 1,
                   "samples_file": samples_name,
                   "filter": filt, "samples_stage": stage, "responses_sha256": record.responses_sha256,
                   "imported": record.imported,
                   "per_sample_metrics": sorted({m.name for m in spec.metric if m.name in PER_SAMPLE}),
                   "values": "as in scores.json: rates in percent (0-100)"},
    }


# samples -------------------------------------------------------------------------------------

def _answers(responses: pl.DataFrame, stage: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in responses.filter(pl.col("stage") == stage).sort("item_id", "sample").iter_rows(named=True):
        out.setdefault(row["item_id"], []).append(row)
    return out


def _doc(row: dict[str, Any]) -> dict[str, Any]:
    media = json.loads(row["media"] or "[]")
    return {"item_id": row["item_id"], "group_id": row["group_id"], "record_id": row["record_id"],
            "node": row["node"], "attrs": json.loads(row["attrs"] or "{}"),
            "targets": json.loads(row["targets"] or "{}"),
            "media": media, "media_sha256": [m["sha256"] for m in media], "system": row["system"], "text": row["text"]}


def _per_sample(spec: Spec, row: dict[str, Any], texts: list[str], stage: str) -> dict[str, float | None]:
    """Each per-sample metric's value for the item: the share of its samples that are correct."""
    from .metrics.base import ScoredItem

    item = ScoredItem(row["item_id"], row["group_id"], json.loads(row["attrs"] or "{}"),
                      json.loads(row["targets"] or "{}"), tuple(texts))
    names = [m.name for m in spec.metric]
    out: dict[str, float | None] = {}
    for k, metric in enumerate(spec.metric):
        if metric.name not in PER_SAMPLE:
            continue
        params = METRIC_SCHEMAS.get(metric.name).model_validate(metric.params)
        if (params.stage or spec.stage[-1].id) != stage:
            continue  # it scores another stage than the one the samples show
        value = target_value(item, params.target)
        targets = [] if value is None else [str(v) for v in value] if isinstance(value, list) else [str(value)]
        right = [is_correct(t, targets, params.correct, item.prompt) for t in item.responses]
        name = metric.name + (f"#{names[:k + 1].count(metric.name)}" if names.count(metric.name) > 1 else "")
        out[name] = sum(right) / len(right) if right else None
    return out


def _samples(spec: Spec, items: pl.DataFrame, responses: pl.DataFrame, stage: str) -> list[dict[str, Any]]:
    answers = _answers(responses, stage)
    filt = filter_name(spec)
    out = []
    for doc_id, row in enumerate(items.iter_rows(named=True)):
        mine = answers.get(row["item_id"], [])
        raw = [a["text"] for a in mine if a["kind"] != "missing"]
        prompt = row["prompt"] or ""
        read = [extract(a["text"] or "", spec.answer, prompt) for a in mine]
        doc = _doc(row)
        target = row["targets"] or "{}"
        metrics = _per_sample(spec, row, read, stage)
        sample = {"doc_id": doc_id, "doc": doc, "target": target,
                  "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": _generation(spec)}},
                  "resps": [raw], "filtered_resps": [read[0] if len(read) == 1 else read],
                  "filter": filt, "metrics": sorted(metrics), "stage": stage,
                  "missing": sum(a["kind"] == "missing" for a in mine),
                  "doc_hash": hash_string(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)),
                  "prompt_hash": hash_string(prompt), "target_hash": hash_string(str(target)), **metrics}
        out.append(sample)
    return out

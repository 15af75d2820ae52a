"""``benchc score RUN --format lm-eval``: a scored run as lm-evaluation-harness 0.4 writes its
``--output_path`` folder, so that lm-eval's own consumers read it: ``make_table``, the
``WandbLogger``, the Zeno upload script's discovery and frames. Written in
``RUN/lm-eval/<model_name_sanitized>/`` (a model folder, as lm-eval writes, so a folder of runs
reads as a folder of models):

* ``results_<datetime>.json``: lm-eval's results schema (``lm_eval/result_schema.py``):
  ``results`` and ``groups`` {task: {"name", "alias", "sample_len", "<column>,<filter>": value,
  "<column>_stderr,<filter>": "N/A"}}, ``group_subtasks``, ``configs`` (one per task, with
  ``metric_list`` entries that name their ``aggregation``), ``versions`` (floats, as lm-eval's
  task versions), ``n-shot``, ``higher_is_better``, ``n-samples``, ``config`` (``model_args`` a
  mapping stage -> backend), ``date``, ``task_hashes``, ``model_name``, ``model_name_sanitized``,
  ``model_source`` "benchc", and ``benchc`` (benchc's version, the benchmark, manifest and spec
  digests, the sha256 of scores.json, the import facts of an imported run).
* ``samples_<task>_<datetime>.jsonl``, one per task: one line per *unit* of the task's row (an
  item, or a group for the metrics whose value is a group's: agreement, worst case), with
  ``doc_id``, ``doc``, ``target``, ``arguments`` ({"gen_args_<k>": {"arg_0": prompt, "arg_1":
  generation settings}}, one per item of the unit), ``resps``, ``filtered_resps`` (after
  ``[answer]`` extraction), ``filter``, ``metrics``, the unit's value of each ``metric_list``
  metric, ``doc_hash``, ``prompt_hash``, ``target_hash`` (sha256, lm-eval's ``hash_string``).
* ``media/<sha256>.<ext>``: the items' images and audio, which ``doc.media[].path`` names.

Mapping: a task is one row of one metric of scores.json, named ``<benchmark>_<metric>`` (``_<k>``
when a spec has a metric twice) and, for a metric whose rows are split by attributes,
``_<attr>_<value>...``, every character outside ``\\w`` as ``_`` (lm-eval's
``sanitize_task_name``: the Zeno script finds a task's samples file by that name, and W&B keys
split at ``/``). Such a metric is a group of its row tasks; the group's values are what lm-eval
computes for a group, the mean of its tasks' values weighted by their sample counts (flagged
``aggregation: mean, weight_by_size: true`` in ``benchc.groups``), which equals benchc's own
overall value only when the rows partition the units. Values are fractions (0-1) everywhere:
the columns a metric reports in percent (``Metric.in_percent``) are divided by 100; counts are
left to scores.json. A row's value is the mean of its units' values when every unit has the same
number of answers (benchc computes it as a ratio of summed counts). Metrics that keep no value
per unit (the papers' own aggregates) write ``null`` per sample. benchc reports bootstrap
intervals (``ci_low``/``ci_high`` keys, fractions too), not standard errors, so every
``_stderr`` is "N/A", lm-eval's own value for a metric without one. The filter is ``none``, or
the ``[answer].extract`` steps joined with ``+``.

Bytes are deterministic: sorted keys, no time but the run's start from run.json (``date`` and
the ``<datetime>`` of the file names; an imported run has none: ``1970-01-01T00-00-00``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from calendar import timegm
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import strptime
from typing import Any

import polars as pl

from benchc import __version__
from benchc.compiler.artifacts import Lock
from benchc.compiler.atomic import make_staging_dir, replace_dir_atomic, write_bytes_atomic, write_text_atomic
from benchc.compiler.errors import Problem, RunError
from benchc.compiler.metrics import METRIC_SCHEMAS
from benchc.compiler.spec.models import Answer, Spec

from ..score.answers import extract
from ..artifacts import RunRecord
from ..score.metrics import METRICS, MetricResult
from ..score.metrics.base import Unit, target_value
from ..run.runfolder import manifest_items, read_responses, read_run_record
from ..score.core import SCORES_FILE, run_manifest_of

EXPORT_DIR = "lm-eval"
NO_DATE = "1970-01-01T00-00-00"
COUNT_COLUMNS = ("items", "answers", "comparisons", "pairs", "groups")
INTERVAL = re.compile(r"(^|_)ci_(low|high)$")
HIGHER_IS_BETTER = {"accuracy": True, "agreement": True, "holds": True, "worst_case": True, "acknowledged": None,
                    "similarity": True, "flip_rate": False, "right_to_wrong": False, "wrong_to_right": True,
                    "wer": False, "cer": False}
"""Known columns; any other column's direction is null (unknown), never guessed."""
MEDIA_EXTENSIONS = ((b"\x89PNG", ".png"), (b"\xff\xd8\xff", ".jpg"), (b"GIF8", ".gif"), (b"RIFF", ".wav"),
                    (b"fLaC", ".flac"), (b"OggS", ".ogg"), (b"ID3", ".mp3"))

MediaReader = Callable[[str, str], bytes]


@dataclass(frozen=True)
class LmEvalExport:
    folder: Path  # RUN/lm-eval/<model_name_sanitized>
    results: Path
    samples: tuple[Path, ...]
    tasks: int
    samples_written: int
    media: int


@dataclass
class _Task:
    """One task of the export: one row of one metric."""

    name: str
    alias: str
    group: str | None
    metric: int  # index into scores.json's metrics (and the spec's [[metric]])
    row: dict[str, Any]
    labels: list[str]
    metrics: list[str]  # metric_list: the row's value columns without the intervals
    values: list[str]  # every value column written in results (intervals too)
    percent: set[str]
    stage: str
    units: list[Unit] = field(default_factory=list)
    has_units: bool = False
    filter: str = "none"  # lm-eval's filter name: the named answer rule, else the [answer] steps
    rule: Answer | None = None  # the answer extraction of the metric


def sanitize_model_name(name: str) -> str:
    """lm-eval's ``sanitize_model_name`` (``model_name_sanitized`` and the model folder)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def sanitize_task_name(name: str) -> str:
    """lm-eval's ``sanitize_task_name``: what its samples file names hold."""
    return re.sub(r"\W", "_", name)


def hash_string(text: str) -> str:
    """lm-eval's ``hash_string``: sha256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _dumps(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False)


def export_lm_eval(run_dir: Path, scores: dict[str, Any], results: list[MetricResult],
                   manifest_dir: Path | None = None, media: MediaReader | None = None) -> LmEvalExport:
    """Write ``RUN/lm-eval/`` for a run scored into ``scores`` and ``results`` (``score_results``'
    values; scores.json must be the file it wrote). ``media`` reads an item's medium by kind and
    sha256 (none: the samples name media by sha256 only). The folder is swapped in whole, so its
    files always belong together."""
    run_dir = Path(run_dir)
    record = read_run_record(run_dir)
    manifest, spec = run_manifest_of(run_dir, record, manifest_dir)
    items, responses = manifest_items(manifest), read_responses(run_dir, record)
    stamp = _stamp(record)
    tasks = _tasks(scores, results, spec, manifest.locked.benchmark.name)
    rows = {row["item_id"]: row for row in items.iter_rows(named=True)}
    order = {item_id: k for k, item_id in enumerate(rows)}
    shas = _MediaNames(media)
    files: dict[str, str] = {}
    written = 0
    for task in tasks:
        samples = _samples(spec, task, rows, order, _answers(responses, task.stage), shas)
        files[f"samples_{task.name}_{stamp}.jsonl"] = "".join(_dumps(s) + "\n" for s in samples)
        written += len(samples)
    hashes = {t.name: hash_string(files[f"samples_{t.name}_{stamp}.jsonl"]) for t in tasks}
    model = record.model or ("imported" if record.imported else "unknown")
    body = _results(tasks, scores, spec, manifest.locked, record, run_dir, hashes, model)
    files[f"results_{stamp}.json"] = _dumps(body, indent=2) + "\n"
    folder = run_dir / EXPORT_DIR / sanitize_model_name(model)
    _write(run_dir / EXPORT_DIR, folder.name, files, shas)
    return LmEvalExport(folder, folder / f"results_{stamp}.json",
                        tuple(folder / f"samples_{t.name}_{stamp}.jsonl" for t in tasks), len(tasks), written,
                        len(shas.names))


class _MediaNames:
    """The file name under ``media/`` of each medium the samples name (none without a reader)."""

    def __init__(self, media: MediaReader | None) -> None:
        self.media = media
        self.names: dict[str, tuple[str, str]] = {}  # sha256 -> (kind, file name)

    def path(self, kind: str, sha256: str) -> str | None:
        if self.media is None:
            return None
        if sha256 not in self.names:
            self.names[sha256] = (kind, sha256 + _extension(self.media(kind, sha256)))
        return "media/" + self.names[sha256][1]


def _write(root: Path, model_folder: str, files: dict[str, str], shas: _MediaNames) -> None:
    staging = make_staging_dir(root)
    try:
        folder = staging / model_folder
        folder.mkdir()
        for name, text in files.items():
            write_text_atomic(folder / name, text)
        if shas.media is not None and shas.names:
            (folder / "media").mkdir()
            for sha, (kind, name) in sorted(shas.names.items()):
                write_bytes_atomic(folder / "media" / name, shas.media(kind, sha), durable=False)
        replace_dir_atomic(staging, root)
    except OSError as exc:
        raise RunError(Problem(f"cannot write the lm-eval export: {exc.strerror or exc}", file=str(root))) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extension(data: bytes) -> str:
    """A file extension from the medium's first bytes, so that viewers open it (``.bin`` if unknown)."""
    return next((ext for magic, ext in MEDIA_EXTENSIONS if data.startswith(magic)), ".bin")


def _stamp(record: RunRecord) -> str:
    """lm-eval's ``<datetime>`` of file names (``:`` as ``-``), from the run's start."""
    started = record.started
    if isinstance(started, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", started):
        return started[:-1].replace(":", "-")
    return NO_DATE


def filter_name(spec: Spec) -> str:
    return "+".join(spec.answer.extract) if spec.answer is not None and spec.answer.extract else "none"


# tasks ---------------------------------------------------------------------------------------

def _kind(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, str) for v in present):
        return "label"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "value" if any(isinstance(v, float) for v in present) else "count"
    return "label" if not present else "other"


def _tasks(scores: dict[str, Any], results: list[MetricResult], spec: Spec, benchmark: str) -> list[_Task]:
    names = [(m["name"], m.get("answer")) for m in scores["metrics"]]
    taken: set[str] = set()
    tasks = []
    for k, metric in enumerate(scores["metrics"]):
        key = names[k]
        suffix = f"_{names[:k + 1].count(key)}" if names.count(key) > 1 else ""
        named = metric.get("answer")
        rule = spec.answers.get(named) if named else spec.answer
        base = sanitize_task_name(f"{benchmark}_{metric['name']}" + (f"_{named}" if named else "") + suffix)
        rows = metric.get("rows", [])
        kinds = {c: _kind([r.get(c) for r in rows]) for c in metric.get("columns", [])}
        labels = [c for c, kind in kinds.items() if kind == "label"]
        values = [c for c, kind in kinds.items() if kind == "value"]
        grouped = len(rows) != 1 or bool(labels)
        result = results[k] if k < len(results) else None
        percent = METRICS.get(metric["name"]).in_percent(list(kinds)) if metric["name"] in METRICS else set()
        stage = _stage(spec, k)
        for r, row in enumerate(rows):
            name = _unique(sanitize_task_name("_".join([base, *(f"{c}_{row.get(c)}" for c in labels)])), taken)
            alias = " ".join([f"{benchmark} {metric['name']}" + (f" ({named})" if named else "")
                              + suffix.replace('_', '#'),
                              *(f"{c}={row.get(c)}" for c in labels)])
            units = [u for u in result.units if u.row == r] if result is not None else []
            tasks.append(_Task(name, alias, base if grouped else None, k, row, labels,
                               [c for c in values if not INTERVAL.search(c)], values, percent, stage, units,
                               bool(result is not None and result.units), named or filter_name(spec), rule))
    return tasks


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... when two rows' values sanitize to the same name."""
    out, k = name, 1
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    taken.add(out)
    return out


def _stage(spec: Spec, k: int) -> str:
    """The stage metric ``k`` scores: its own, else the last stage."""
    if k < len(spec.metric):
        params = METRIC_SCHEMAS.get(spec.metric[k].name).model_validate(spec.metric[k].params)
        return params.stage or spec.stage[-1].id
    return spec.stage[-1].id


def _fraction(value: Any, percent: bool) -> Any:
    if percent and isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(value / 100, 8)
    return value


# results -------------------------------------------------------------------------------------

def _size(task: _Task, items: int) -> int:
    if task.has_units:
        return len(task.units)
    return next((task.row[c] for c in COUNT_COLUMNS if isinstance(task.row.get(c), int)), items)


def _task_entry(task: _Task, filt: str, size: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": task.name, "alias": task.alias, "sample_len": size}
    for column in task.values:
        entry[f"{column},{filt}"] = _fraction(task.row.get(column), column in task.percent)
        if not INTERVAL.search(column):
            entry[f"{column}_stderr,{filt}"] = "N/A"
    return entry


def _group_entry(name: str, members: list[tuple[_Task, int]], filt: str) -> dict[str, Any]:
    """lm-eval's group value: the tasks' values weighted by their sample counts (weight_by_size)."""
    entry: dict[str, Any] = {"name": name, "alias": name, "sample_len": sum(s for _, s in members)}
    for column in members[0][0].metrics:
        pairs = [(_fraction(t.row.get(column), column in t.percent), s) for t, s in members]
        pairs = [(v, s) for v, s in pairs if isinstance(v, (int, float)) and s > 0]
        weight = sum(s for _, s in pairs)
        entry[f"{column},{filt}"] = round(sum(v * s for v, s in pairs) / weight, 6) if weight else None
        entry[f"{column}_stderr,{filt}"] = "N/A"
    return entry


def _version(version: str) -> float | str:
    """lm-eval's task versions are floats: MAJOR.MINOR of benchc's version (the whole in metadata)."""
    parts = version.split(".")
    try:
        return float(".".join(parts[:2]))
    except ValueError:
        return version


def _results(tasks: list[_Task], scores: dict[str, Any], spec: Spec, lock: Lock, record: RunRecord,
             run_dir: Path, hashes: dict[str, str], model: str) -> dict[str, Any]:
    bench = lock.benchmark.to_json()
    filt = filter_name(spec)
    out: dict[str, Any] = {key: {} for key in ("results", "groups", "group_subtasks", "configs", "versions",
                                                "n-shot", "higher_is_better", "n-samples", "task_hashes")}
    members: dict[str, list[tuple[_Task, int]]] = {}
    for task in tasks:
        size = _size(task, scores["items"])
        out["results"][task.name] = _task_entry(task, task.filter, size)
        out["n-samples"][task.name] = {"original": size, "effective": size}
        out["configs"][task.name] = _task_config(task, spec, bench, task.filter)
        out["task_hashes"][task.name] = hashes[task.name]
        if task.group is not None:
            members.setdefault(task.group, []).append((task, size))
    for group, mine in members.items():
        out["groups"][group] = out["results"][group] = _group_entry(group, mine, mine[0][0].filter)
        out["group_subtasks"][group] = [t.name for t, _ in mine]
    for name in [*out["results"]]:
        task = next(t for t in tasks if name in (t.name, t.group))
        out["versions"][name] = _version(bench["version"])
        out["n-shot"][name] = 0
        out["higher_is_better"][name] = {c: HIGHER_IS_BETTER.get(c) for c in task.metrics}
    out.update(_run_config(spec, record, scores, lock, run_dir, filt, model, sorted(members)))
    return out


def _generation(spec: Spec) -> dict[str, Any]:
    """benchc's [generation] under lm-eval's ``generation_kwargs`` names (``until``, ``max_gen_toks``)."""
    gen = spec.generation
    out: dict[str, Any] = {"until": list(gen.stop), "do_sample": gen.temperature > 0, "temperature": gen.temperature,
                           "top_p": gen.top_p, "max_gen_toks": gen.max_new_tokens}
    if gen.seed is not None:
        out["seed"] = gen.seed
    return out


def _task_config(task: _Task, spec: Spec, bench: dict[str, Any], filt: str) -> dict[str, Any]:
    declared = spec.metric[task.metric] if task.metric < len(spec.metric) else None
    config: dict[str, Any] = {
        "task": task.name, "dataset_path": "benchc", "output_type": "generate_until",
        "generation_kwargs": _generation(spec), "repeats": spec.generation.n, "num_fewshot": 0,
        "metric_list": [{"metric": c, "aggregation": "mean", "higher_is_better": HIGHER_IS_BETTER.get(c)}
                        for c in task.metrics],
        "metadata": {"version": _version(bench["version"]), "benchc_version": bench["version"],
                     "benchc_metric": declared.name if declared is not None else None,
                     "benchc_params": dict(declared.params) if declared is not None else {},
                     "split": {c: task.row.get(c) for c in task.labels}, "stage": task.stage,
                     "per_sample": "unit values" if task.has_units else "none (null per sample)",
                     "from_percent": sorted(c for c in task.values if c in task.percent)}}
    if task.group is not None:
        config["group"] = task.group
    if filt != "none":
        steps = task.rule.extract if task.rule is not None else []
        config["filter_list"] = [{"name": filt, "filter": [{"function": step} for step in steps]}]
    return config


def _started(record: RunRecord) -> float | None:
    """run.json's ``started`` (UTC, ISO 8601) as lm-eval's ``date`` (seconds since the epoch)."""
    started = record.started
    try:
        return float(timegm(strptime(started, "%Y-%m-%dT%H:%M:%SZ"))) if isinstance(started, str) else None
    except ValueError:
        return None


def _run_config(spec: Spec, record: RunRecord, scores: dict[str, Any], lock: Lock, run_dir: Path, filt: str,
                model: str, groups: list[str]) -> dict[str, Any]:
    bootstrap = next((m.params.get("bootstrap") for m in spec.metric if "bootstrap" in m.params), None)
    config: dict[str, Any] = {"model": model, "model_args": {s.stage: s.backend for s in record.stages},
                              "batch_size": None, "batch_sizes": [], "device": None, "use_cache": None,
                              "limit": None, "gen_kwargs": _generation(spec), "random_seed": spec.benchmark.seed}
    if isinstance(bootstrap, int):
        config["bootstrap_iters"] = bootstrap
    out: dict[str, Any] = {
        "config": config, "model_source": "benchc", "model_name": model,
        "model_name_sanitized": sanitize_model_name(model),
        "benchc": {"version": __version__, "benchmark": lock.benchmark.to_json(),
                   "manifest_digest": lock.manifest_digest, "spec_digest": lock.spec_digest,
                   "scores_sha256": hashlib.sha256((run_dir / SCORES_FILE).read_bytes()).hexdigest(),
                   "scoring_rules": scores.get("rules") or 1, "filter": filt,
                   "responses_sha256": record.responses_sha256, "imported": record.imported,
                   "backends": record.backends,
                   "groups": {g: {"aggregation": "mean", "weight_by_size": True} for g in groups},
                   "values": "fractions (0-1); scores.json has the same rates in percent"}}
    date = _started(record)
    if date is not None:
        out["date"] = date
    if record.seconds is not None:
        out["total_evaluation_time_seconds"] = str(record.seconds)
    return out


# samples -------------------------------------------------------------------------------------

def _answers(responses: pl.DataFrame, stage: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in responses.filter(pl.col("stage") == stage).sort("item_id", "sample").iter_rows(named=True):
        out.setdefault(row["item_id"], []).append(row)
    return out


def _doc(row: dict[str, Any], shas: _MediaNames) -> dict[str, Any]:
    listed = []
    for medium in json.loads(row["media"] or "[]"):
        path = shas.path(medium.get("kind", "image"), medium["sha256"])
        listed.append(medium if path is None else {**medium, "path": path})
    return {"item_id": row["item_id"], "group_id": row["group_id"], "record_id": row["record_id"],
            "node": row["node"], "attrs": json.loads(row["attrs"] or "{}"),
            "targets": json.loads(row["targets"] or "{}"), "media": listed, "system": row["system"],
            "text": row["text"]}


def _unit_doc(unit: Unit, docs: list[dict[str, Any]]) -> dict[str, Any]:
    """An item unit's doc is the item's (with the reference it was compared with, for a pair:
    the unit's second item); a group unit's lists its items."""
    if unit.kind == "group" or not docs:
        return {"group_id": unit.id, "items": docs}
    return docs[0] if len(docs) == 1 else {**docs[0], "reference": docs[1]}


def _target(row: dict[str, Any], spec: Spec, task: _Task) -> str:
    """The metric's target for the item as text (lm-eval's ``target`` is a string)."""
    from ..score.metrics.base import ScoredItem

    declared = spec.metric[task.metric] if task.metric < len(spec.metric) else None
    path = declared.params.get("target") if declared is not None else None
    item = ScoredItem(row["item_id"], row["group_id"], {}, json.loads(row["targets"] or "{}"), ())
    value = target_value(item, path) if isinstance(path, str) else None
    if value is None:
        return row["targets"] or "{}"
    if isinstance(value, list) and len(value) == 1:
        return str(value[0])
    return _dumps(value)


def _samples(spec: Spec, task: _Task, rows: dict[str, dict[str, Any]], order: dict[str, int],
             answers: dict[str, list[dict[str, Any]]], shas: _MediaNames) -> list[dict[str, Any]]:
    """The task's samples: its units in manifest order, or, for a metric that keeps no unit
    values, every item that has an answer at the task's stage (values null)."""
    units = task.units if task.has_units else [
        Unit(0, "item", i, (i,), {}) for i in sorted(answers, key=lambda i: order.get(i, len(order))) if i in rows]
    units = sorted(units, key=lambda u: (order.get(u.items[0], len(order)) if u.items else len(order), u.id))
    filt = task.filter
    out = []
    for doc_id, unit in enumerate(units):
        members = [rows[i] for i in unit.items if i in rows]
        docs = [_doc(r, shas) for r in members]
        prompts = [r["prompt"] or "" for r in members]
        raw = [[a["text"] for a in answers.get(r["item_id"], []) if a["kind"] != "missing"] for r in members]
        read = [[extract(a["text"] or "", task.rule, p) for a in answers.get(r["item_id"], [])]
                for r, p in zip(members, prompts)]
        doc = _unit_doc(unit, docs)
        target = _target(members[0], spec, task) if members else ""
        values = {m: unit.values.get(m) for m in task.metrics}
        out.append({"doc_id": doc_id, "doc": doc, "target": target,
                    "arguments": {f"gen_args_{k}": {"arg_0": p, "arg_1": _generation(spec)}
                                  for k, p in enumerate(prompts)},
                    "resps": raw, "filtered_resps": [r[0] if len(r) == 1 else r for r in read],
                    "filter": filt, "metrics": sorted(values), "stage": task.stage,
                    "missing": sum(a["kind"] == "missing" for r in members for a in answers.get(r["item_id"], [])),
                    "doc_hash": hash_string(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)),
                    "prompt_hash": hash_string("\n\n".join(prompts)), "target_hash": hash_string(target),
                    **values})
    return out

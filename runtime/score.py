"""``benchc score``: a run's responses + the manifest -> metric results (scores.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from benchc.compiler.atomic import write_text_atomic
from benchc.compiler.errors import BenchcError, Problem
from benchc.compiler.manifest import read_manifest
from benchc.compiler.metrics import METRIC_SCHEMAS
from benchc.compiler.spec.models import Spec

from .embed import load_embedder
from .metrics import METRICS, MetricInput, MetricResult
from .metrics.base import ScoredItem
from .run import RESPONSES_FILE, RUN_FILE

SCORES_FILE = "scores.json"


def _items_with_responses(items: pl.DataFrame, responses: pl.DataFrame, stage: str) -> list[ScoredItem]:
    answers = (responses.filter(pl.col("stage") == stage).sort("item_id", "sample")
               .group_by("item_id", maintain_order=True).agg(pl.col("text")))
    by_item = {row["item_id"]: tuple(t or "" for t in row["text"]) for row in answers.iter_rows(named=True)}
    out = []
    for row in items.select("item_id", "group_id", "attrs", "targets").iter_rows(named=True):
        if row["item_id"] not in by_item:
            raise BenchcError(Problem(f"item {row['item_id']!r} has no {stage!r} response in this run",
                                      hint="rerun `benchc run`; it resumes where it stopped"))
        out.append(ScoredItem(row["item_id"], row["group_id"], json.loads(row["attrs"]),
                              json.loads(row["targets"]), by_item[row["item_id"]]))
    return out


def score_run(run_dir: Path, manifest_dir: Path | None = None) -> dict[str, Any]:
    run_dir = Path(run_dir)
    try:
        record = json.loads((run_dir / RUN_FILE).read_text())
    except FileNotFoundError:
        raise BenchcError(Problem(f"{run_dir} is not a run folder (no {RUN_FILE})",
                                  hint="run `benchc run MANIFEST -o RUN_DIR` first")) from None
    manifest = read_manifest(Path(manifest_dir or record["manifest"]))
    if manifest.lock["manifest_digest"] != record["manifest_digest"]:
        raise BenchcError(Problem("the manifest changed since this run", hint="rerun `benchc run`"))
    spec = Spec.model_validate(manifest.spec)
    items, responses = manifest.items(), pl.read_parquet(run_dir / RESPONSES_FILE)
    results = []
    for metric in spec.metric:
        params = METRIC_SCHEMAS.get(metric.name).model_validate(metric.params)
        stage = params.stage or spec.stage[-1].id
        stage_backend = next(s["backend"] for s in record["stages"] if s["stage"] == stage)
        data = MetricInput(_items_with_responses(items, responses, stage), load_embedder(params.embedder),
                           stage_backend)
        results.append(METRICS.get(metric.name).score(params, data))
    scores = {"benchmark": manifest.lock["benchmark"], "manifest_digest": manifest.lock["manifest_digest"],
              "model": record.get("model"), "items": items.height,
              "metrics": [_result_json(r) for r in results]}
    write_text_atomic(run_dir / SCORES_FILE, json.dumps(scores, indent=2, sort_keys=True) + "\n")
    return scores


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def _result_json(result: MetricResult) -> dict[str, Any]:
    return {"name": result.name, "columns": result.columns,
            "rows": [{k: _round(v) for k, v in row.items()} for row in result.rows],
            "details": result.details, "notes": result.notes}

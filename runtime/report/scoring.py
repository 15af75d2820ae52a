"""Scores for reports, recomputed by ``runtime.score.score_run`` itself, never re-implemented.

``rescore`` scores a run again from its ``responses.parquet`` and manifest in a scratch copy of
the run folder (the run folder, and its scores.json, are left as they are). It can replace the
metrics' ``by`` (the attributes their rows are split by), which is how a report shows MM-R3's
per-colour, per-line and per-shape tables (Tables 9-11) of a spec that scores all items at once.

``group_scores`` gives each group's own scores for the item browser with one call of the same
function: the scratch manifest keeps only the groups shown, each item's attributes gain the
group's id under ``GROUP_ATTR``, and every metric is split by it as well.

Either way the run's manifest is read and checked against its lock once (``run_manifest_of``),
and the manifest scored is derived from it in memory (``score_run(derived=...)``): the same
lock (and digest), only its spec's metric parameters, or its items and their attributes, differ.
No edited copy is written to disk, where it would rightly be refused as modified.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from benchc.compiler.manifest import Manifest

from ..artifacts import RunRecord
from ..run.runfolder import RESPONSES_FILE, RUN_FILE, manifest_items, read_responses, read_run_record
from ..score.core import run_manifest_of, score_run

GROUP_ATTR = "__group__"
Media = tuple[Path | None, Path | None]  # the run's compile cache and response store


def run_manifest(run_dir: Path, manifest_dir: Path | None = None) -> tuple[RunRecord, Manifest, Any]:
    """(run record, manifest, spec) of a run; the manifest is checked against the record's
    digest and the responses against the record's sha256, so that errors name the run's own
    files rather than the scratch copies scored later."""
    record = read_run_record(Path(run_dir))
    manifest, spec = run_manifest_of(Path(run_dir), record, Path(manifest_dir) if manifest_dir else None)
    read_responses(Path(run_dir), record)
    return record, manifest, spec


def _score(run_dir: Path, manifest: Manifest, media: Media) -> dict[str, Any]:
    """``score_run`` of ``manifest`` (derived from the run's checked one) with the run's compile
    cache and store, when given (metrics that look at media read them; without them score_run's
    defaults apply)."""
    cache_dir, store_dir = media
    folders = {k: v for k, v in (("cache_dir", cache_dir), ("store_dir", store_dir)) if v is not None}
    return score_run(run_dir, derived=manifest, **folders)


def rescore(run_dir: Path, manifest_dir: Path | None = None, *, by: Sequence[str] | None = None,
            metric: str | None = None, media: Media = (None, None),
            params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The run's scores, recomputed. ``by`` replaces the split attributes, and ``params`` other
    parameters, of the metrics named ``metric`` (of every metric when None); ``media`` is the
    run's (cache, store). The metrics check the parameters as they do a spec's."""
    _, manifest, _ = run_manifest(run_dir, manifest_dir)
    with tempfile.TemporaryDirectory(prefix="benchc-rescore-") as scratch:
        root = Path(scratch)
        run_copy = _copy_run(Path(run_dir), root / "run")
        if by is None and not params:
            return _score(run_copy, manifest, media)
        changes = {**(params or {}), **({"by": list(by)} if by is not None else {})}

        def edit(entry: dict[str, Any]) -> dict[str, Any]:
            return {**entry, **changes} if metric is None or entry.get("name") == metric else entry

        return _score(run_copy, _derived(manifest, edit), media)


def group_scores(run_dir: Path, manifest_dir: Path | None, groups: Sequence[str],
                 media: Media = (None, None)) -> dict[str, list[dict[str, Any]]]:
    """group id -> [{name, columns, rows}] per metric, each group scored on its own."""
    if not groups:
        return {}
    _, manifest, _ = run_manifest(run_dir, manifest_dir)
    wanted = set(groups)
    with tempfile.TemporaryDirectory(prefix="benchc-groups-") as scratch:
        root = Path(scratch)
        run_copy = _copy_run(Path(run_dir), root / "run")
        items = manifest_items(manifest).filter(pl.col("group_id").is_in(sorted(wanted)))
        items = items.with_columns(pl.Series("attrs", [
            json.dumps({**json.loads(a), GROUP_ATTR: g}, sort_keys=True)
            for a, g in zip(items["attrs"], items["group_id"])], dtype=pl.String))

        def edit(entry: dict[str, Any]) -> dict[str, Any]:
            return {**entry, "by": [*entry.get("by", []), GROUP_ATTR]}

        scores = _score(run_copy, _derived(manifest, edit, items), media)
    out: dict[str, list[dict[str, Any]]] = {g: [] for g in groups}
    for metric in scores["metrics"]:
        columns = [c for c in metric["columns"] if c != GROUP_ATTR]
        per: dict[str, list[dict[str, Any]]] = {}
        for row in metric["rows"]:
            per.setdefault(str(row.get(GROUP_ATTR)), []).append({k: v for k, v in row.items() if k != GROUP_ATTR})
        for group in groups:
            out[group].append({"name": metric["name"], "columns": columns, "rows": per.get(group, [])})
    return out


def _copy_run(run_dir: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for name in (RUN_FILE, RESPONSES_FILE):
        shutil.copyfile(run_dir / name, target / name)
    return target


def _derived(manifest: Manifest, edit_metric: Any, items: pl.DataFrame | None = None) -> Manifest:
    """``manifest`` with each metric entry of its spec passed through ``edit_metric`` and, when
    given, other items: in memory, with the lock of the manifest it came from."""
    spec = {**manifest.spec, "metric": [edit_metric(dict(entry)) for entry in manifest.spec.get("metric", [])]}
    return dataclasses.replace(manifest, spec=spec, frame=items if items is not None else manifest_items(manifest))


def metric_splits(spec: Any) -> list[list[str]]:
    """The ``by`` of each metric of a spec (a ``Spec`` or its JSON), in order."""
    if isinstance(spec, dict):
        entries = spec.get("metric", [])
    else:
        entries = [{"by": m.params.get("by", [])} for m in spec.metric]
    return [list(entry.get("by") or []) for entry in entries]

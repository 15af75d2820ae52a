"""Report breakdowns by perturbation strength: ``--by ssim_bin`` splits each metric by the SSIM of
each item's image against its record's original (runtime/score/measures.py), so that consistency and
accuracy can be read as a function of how strong the perturbation was.

The attribute is added at report time, from the stored images, to the items of a manifest derived
in memory (``runtime.report.scoring``'s way of rescoring): the run's manifest, its lock and its
digest are unchanged, and the measure enters no digest. Items without an image, or whose original
cannot be found (the source does not reload from the manifest's folder and the group has no
``image.original`` item), are in the bin ``n/a``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from benchc.compiler.cas import ContentStore
from benchc.compiler.manifest import Manifest

from ...defaults import DEFAULT_CACHE
from ..run.runfolder import RESPONSES_FILE, RUN_FILE, manifest_items
from ..score.core import score_run
from .scoring import Media, run_manifest

SSIM_BIN = "ssim_bin"
STRENGTH_ATTRS = (SSIM_BIN,)
"""Attributes a report can split by that no manifest holds: measured when the report is made."""
SSIM_EDGES = (0.5, 0.7, 0.8, 0.9, 0.95)
"""Upper edges of the SSIM bins (each bin holds its lower edge): 0.00-0.50, ..., 0.95-1.00."""
NO_BIN = "n/a"
NOTE = ("ssim_bin: the SSIM of each item's image against its record's original (runtime/score/measures.py), "
        "measured from the compile cache when the report was made; never in a digest. n/a: no image or no "
        "original found")


def ssim_bin(value: float | None) -> str:
    """The bin label of an SSIM value (``0.80-0.90``), or ``n/a`` for None."""
    if value is None:
        return NO_BIN
    edges = (0.0, *SSIM_EDGES, 1.0)
    for low, high in zip(edges, edges[1:]):
        if value < high or high == 1.0:
            return f"{low:.2f}-{high:.2f}"
    raise AssertionError("unreachable")


def strength_attrs(manifest: Manifest, cache_dir: Path, roots: list[Path]) -> dict[str, dict[str, str]]:
    """Item id -> {ssim_bin} for every item of the manifest."""
    from benchc.calibrate import originals
    from benchc.preview import item_kind, manifest_rows, media_image

    from ..score.measures import measure

    rows = manifest_rows(manifest)
    images = [r for r in rows if item_kind(r) == "image"]
    store = ContentStore(Path(cache_dir))
    try:
        found = originals(manifest, images, store, roots)
        values: dict[str, float] = {}
        for row in images:
            original = found.get(row["item_id"])
            if original is None:
                continue
            with media_image(store, original) as reference, media_image(store, row["media"][0]["sha256"]) as image:
                values[row["item_id"]] = measure(reference, image).ssim
    finally:
        store.close()
    return {r["item_id"]: {SSIM_BIN: ssim_bin(values.get(r["item_id"]))} for r in rows}


def with_attrs(items: pl.DataFrame, extra: dict[str, dict[str, str]]) -> pl.DataFrame:
    """``items`` with each item's attributes (a JSON column) gaining its ``extra`` ones."""
    attrs = [json.dumps({**json.loads(a or "{}"), **extra.get(i, {})}, sort_keys=True)
             for a, i in zip(items["attrs"], items["item_id"])]
    return items.with_columns(pl.Series("attrs", attrs, dtype=pl.String))


def rescore_by_strength(run_dir: Path, manifest_dir: Path | None, attribute: str,
                        media: Media = (None, None)) -> dict[str, Any]:
    """The run's scores with every metric split by ``attribute`` (one of STRENGTH_ATTRS), measured
    from the run's compile cache (``media[0]``) on a manifest derived in memory."""
    _, manifest, _ = run_manifest(Path(run_dir), manifest_dir)
    root = Path(manifest.root)
    cache_dir, store_dir = media
    items = with_attrs(manifest_items(manifest), strength_attrs(manifest, cache_dir or DEFAULT_CACHE,
                                                               [root, root.parent]))
    spec = {**manifest.spec, "metric": [{**entry, "by": [attribute]} for entry in manifest.spec.get("metric", [])]}
    derived = dataclasses.replace(manifest, spec=spec, frame=items)  # same lock and digest, in memory only
    folders = {k: v for k, v in (("cache_dir", cache_dir), ("store_dir", store_dir)) if v is not None}
    with tempfile.TemporaryDirectory(prefix="benchc-strength-") as scratch:
        run_copy = Path(scratch) / "run"  # score_run writes scores.json: into a copy, never the run
        run_copy.mkdir()
        for name in (RUN_FILE, RESPONSES_FILE):
            shutil.copyfile(Path(run_dir) / name, run_copy / name)
        scores = score_run(run_copy, derived=derived, **folders)
    for metric in scores["metrics"]:
        metric["notes"] = [*metric.get("notes", []), NOTE]
    return scores

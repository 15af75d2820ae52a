"""The manifest: an items table (Parquet, through polars) plus a lock file and the spec.

A manifest folder holds ``items.parquet``, ``lock.json`` and ``spec.json``. It is written into a
staging folder and renamed into place, so a reader never sees half of one. The manifest digest
is computed over the canonical JSON of the rows, not the Parquet bytes, so it does not change
with the Parquet writer's version.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from .atomic import make_staging_dir, publish_dir_if_absent, replace_dir_atomic
from .canonical import canonical_json, digest

MANIFEST_SCHEMA_VERSION = 2
"""Bump when a column is added, removed or changes meaning; golden tests pin it. v2: item ids
name each variant by its node and grid values (``#rotated[angle=90]``), never by its position in
the grid, and every variant has the attribute ``perturbation`` (the id of the node that made it)."""
LOCK_VERSION = 3
"""Bump when a lock field is added, removed or changes meaning. v2: ``dropped`` (variants that
validator ops dropped, per node and reason). v3: ``model_steps`` (node id -> the backends a
model-backed node may use: backend string, generation settings and the backend's fingerprint)."""

ITEM_SCHEMA: dict[str, Any] = {
    "item_id": pl.String,        # "<record id>#<variant path>", e.g. "r1#rotated[angle=90]"
    "group_id": pl.String,       # items a consistency metric compares (the source record)
    "record_id": pl.String,
    "record_digest": pl.String,
    "node": pl.String,           # sink node that made the item ("" when the spec has no nodes)
    "attrs": pl.String,          # canonical JSON: perturbation attributes (corruption, color...)
    "system": pl.String,         # rendered system prompt, or null
    "prompt": pl.String,         # rendered prompt
    "text": pl.String,           # the item's text value (e.g. the text to speak), or null
    "media": pl.String,          # canonical JSON list of {name, kind, sha256}
    "targets": pl.String,        # canonical JSON {field path: [answers]}
    "lineage": pl.String,        # canonical JSON list of {node, op, version, key}
}

ITEMS_FILE, LOCK_FILE, SPEC_FILE = "items.parquet", "lock.json", "spec.json"


def manifest_digest(rows: list[dict[str, Any]]) -> str:
    return digest({"manifest_schema": MANIFEST_SCHEMA_VERSION,
                   "rows": [digest(row) for row in rows]})


def items_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=ITEM_SCHEMA, orient="row") if rows else pl.DataFrame(schema=ITEM_SCHEMA)


def is_manifest_dir(path: Path) -> bool:
    return (path / LOCK_FILE).is_file() and (path / ITEMS_FILE).is_file()


def check_output_dir(out_dir: Path) -> None:
    """Refuse to replace a folder that holds anything but a manifest: ``-o ~/data`` must not
    delete the user's files."""
    if out_dir.exists() and (not out_dir.is_dir() or (any(out_dir.iterdir()) and not is_manifest_dir(out_dir))):
        from .errors import BenchcError, Problem

        raise BenchcError(Problem(f"{out_dir} exists and is not a benchc manifest; refusing to replace it",
                                  hint="choose a new or empty folder for -o/--out"))


def write_manifest(out_dir: Path, rows: list[dict[str, Any]], lock: dict[str, Any],
                   spec_json: dict[str, Any], *, replace: bool = True) -> None:
    """Write the three files into a staging folder, then swap it in as ``out_dir`` (``replace``)
    or publish it only if ``out_dir`` does not exist yet (the content-addressed memo)."""
    out_dir = Path(out_dir)
    if replace:
        check_output_dir(out_dir)
    staging = make_staging_dir(out_dir)
    try:
        items_frame(rows).write_parquet(staging / ITEMS_FILE, compression="zstd", statistics=False)
        (staging / LOCK_FILE).write_text(lock_text(lock), encoding="utf-8")
        (staging / SPEC_FILE).write_text(canonical_json(spec_json) + "\n", encoding="utf-8")
        if replace:
            replace_dir_atomic(staging, out_dir)
        else:
            publish_dir_if_absent(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def lock_text(lock: dict[str, Any]) -> str:
    """Locks are committed to git: pretty-printed, but with sorted keys so the bytes are stable."""
    return json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Manifest:
    root: Path
    lock: dict[str, Any]
    spec: dict[str, Any]

    @property
    def items_path(self) -> Path:
        return self.root / ITEMS_FILE

    def items(self) -> pl.DataFrame:
        return pl.read_parquet(self.items_path)


def read_manifest(root: Path) -> Manifest:
    from .errors import BenchcError, Problem

    root = Path(root)
    try:
        lock = json.loads((root / LOCK_FILE).read_text(encoding="utf-8"))
        spec = json.loads((root / SPEC_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchcError(Problem(f"{root} is not a compiled manifest (no {LOCK_FILE}/{SPEC_FILE})",
                                  hint="run `benchc compile SPEC -o DIR` first")) from None
    if lock.get("manifest_schema") != MANIFEST_SCHEMA_VERSION:
        raise BenchcError(Problem(f"{root}: manifest schema {lock.get('manifest_schema')} is not "
                                  f"{MANIFEST_SCHEMA_VERSION}", hint="recompile the spec"))
    return Manifest(root, lock, spec)

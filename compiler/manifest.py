"""The manifest: an items table (Parquet, through polars) plus a lock file and the spec.

A manifest folder holds ``items.parquet``, ``lock.json`` and ``spec.json``. It is written into a
staging folder and renamed into place, so a reader never sees half of one. The manifest digest
is computed over the canonical JSON of the rows, not the Parquet bytes, so it does not change
with the Parquet writer's version.

A manifest is checked against its lock whenever it is opened (``read_manifest``, ``verify=True``,
for run, score, show, preview, diff and a compile's memo): the digest of the rows read back must
be the lock's ``manifest_digest`` (and their count its ``item_count``), spec.json must hash to the
lock's ``spec_digest`` and name the lock's benchmark, and both JSON files must be in the form
benchc writes. A hand-edited prompt, a deleted row or an edited spec is a
``ManifestModifiedError``, never a run under the original digest. The items read for the check
are the ones the caller gets (``Manifest.items()``), so nothing is read twice.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field, replace
from functools import cached_property
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ValidationError

from .artifacts import Lock
from .atomic import make_staging_dir, publish_dir_if_absent, replace_dir_atomic
from .canonical import HASH_RECIPE_VERSION, canonical_json, digest
from .cas import IntegrityError
from .errors import BenchcError, Problem

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


def lock_text(lock: Lock | dict[str, Any]) -> str:
    """Locks are committed to git: pretty-printed, but with sorted keys so the bytes are stable."""
    value = lock.to_json() if isinstance(lock, Lock) else lock
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


class ManifestModifiedError(IntegrityError):
    """A manifest folder whose files no longer match its lock (edited or damaged after compile)."""


RECOMPILE = "recompile the spec (`benchc compile SPEC -o DIR`)"


@dataclass(frozen=True)
class Manifest:
    root: Path
    lock: dict[str, Any]
    """lock.json's JSON value, as read (what ``lock_text`` writes back byte for byte); readers
    use ``locked``, its typed model."""
    spec: dict[str, Any]
    frame: pl.DataFrame | None = field(default=None, compare=False, repr=False)
    """The items table as read and checked against the lock (``verify_manifest``), or None."""

    @cached_property
    def locked(self) -> Lock:
        """The lock as its typed model (``compiler.artifacts.Lock``); a lock that does not fit it
        is a ``ManifestModifiedError`` (``verify_manifest`` checks it too)."""
        return _lock_model(self)

    @property
    def items_path(self) -> Path:
        return self.root / ITEMS_FILE

    def items(self) -> pl.DataFrame:
        if self.frame is not None:
            return self.frame.clone()  # cheap (shared buffers); callers cannot alter ours
        return pl.read_parquet(self.items_path)


def read_manifest(root: Path, *, verify: bool = True) -> Manifest:
    """The manifest at ``root``; ``verify`` (the default) checks it against its lock
    (``verify_manifest``), which reads its items once. Unreadable files are BenchcErrors
    ("cannot read the manifest")."""
    root = Path(root)
    try:
        lock = json.loads((root / LOCK_FILE).read_text(encoding="utf-8"))
        spec = json.loads((root / SPEC_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):  # NotADirectoryError: a file given as the folder
        raise BenchcError(Problem(f"{root} is not a compiled manifest (no {LOCK_FILE}/{SPEC_FILE})",
                                  hint="run `benchc compile SPEC -o DIR` first, and give its folder")) from None
    except OSError as exc:  # a FIFO, no permission, a device
        raise _unreadable(root, exc.strerror or str(exc)) from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _unreadable(root, _first_line(exc)) from None
    if not isinstance(lock, dict) or not isinstance(spec, dict):
        raise _unreadable(root, f"{LOCK_FILE} and {SPEC_FILE} must each hold a JSON object")
    if lock.get("manifest_schema") != MANIFEST_SCHEMA_VERSION:
        raise BenchcError(Problem(f"{root}: manifest schema {lock.get('manifest_schema')} is not "
                                  f"{MANIFEST_SCHEMA_VERSION}", hint="recompile the spec"))
    manifest = Manifest(root, lock, spec)
    return verify_manifest(manifest) if verify else manifest


def verify_manifest(manifest: Manifest, frame: pl.DataFrame | None = None) -> Manifest:
    """``manifest`` holding its items (``frame``, read here if not given), once they and its
    files are checked against its lock (see the module docstring): a ``ManifestModifiedError``
    names the first thing that does not match."""
    root, lock, spec = manifest.root, manifest.lock, manifest.spec
    wanted = lock.get("manifest_digest")
    if not isinstance(wanted, str):
        raise _modified(manifest, f"its {LOCK_FILE} has no manifest_digest")
    if frame is None:
        try:
            frame = pl.read_parquet(manifest.items_path)
        except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as exc:  # a damaged file
            raise _unreadable(root, f"{ITEMS_FILE}: {_first_line(exc)}") from None
    found = items_digest(frame)
    if found != wanted:
        raise _modified(manifest, f"items digest {found[:16]} != lock's {wanted[:16]}")
    if lock.get("item_count", frame.height) != frame.height:
        raise _modified(manifest, f"{frame.height} items != lock's item_count {lock.get('item_count')}")
    recorded = lock.get("spec_digest")
    if recorded is not None:
        actual = spec_digest_of(spec)
        if actual != recorded:
            raise _modified(manifest, f"spec digest {actual[:16]} != lock's {str(recorded)[:16]}")
    bench, locked = spec.get("benchmark"), lock.get("benchmark")
    if isinstance(locked, dict):
        differ = sorted(k for k in locked if not isinstance(bench, dict) or bench.get(k) != locked[k])
        if differ:
            raise _modified(manifest, f"{SPEC_FILE}'s benchmark {', '.join(differ)} != lock's")
    # The exact bytes benchc writes: an edit that leaves every digest alone (spaces, key order)
    # still shows. (An edit of the spec's description, which no digest holds, does not.)
    try:
        lock_raw = (root / LOCK_FILE).read_text(encoding="utf-8")
        spec_raw = (root / SPEC_FILE).read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise _unreadable(root, _first_line(exc)) from None
    if lock_raw != lock_text(lock):
        raise _modified(manifest, f"{LOCK_FILE} is not the file compile wrote (not in benchc's form)")
    if spec_raw != canonical_json(spec) + "\n":
        raise _modified(manifest, f"{SPEC_FILE} is not the file compile wrote (not canonical JSON)")
    checked = replace(manifest, frame=frame)
    checked.locked  # noqa: B018 -- a lock that does not fit the Lock model is refused here
    return checked


def _lock_model(manifest: Manifest) -> Lock:
    try:
        return Lock.model_validate(manifest.lock)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(top)"
        raise _modified(manifest, f"its {LOCK_FILE} does not fit the lock schema: {where}: {error['msg']}") from None


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _unreadable(root: Path, reason: str) -> ManifestModifiedError:
    return ManifestModifiedError(Problem(f"cannot read the manifest: {reason} (modified or damaged after compile)",
                                         file=str(root), hint="recompile it with `benchc compile SPEC -o DIR`"))


def _modified(manifest: Manifest, what: str) -> ManifestModifiedError:
    return ManifestModifiedError(Problem(f"manifest {manifest.root} was modified after compile: {what}",
                                         hint=RECOMPILE))


def spec_digest_of(spec_doc: dict[str, Any]) -> str:
    """The lock's ``spec_digest`` of a manifest's spec.json (``compile.spec_digest``: the
    document without the benchmark's description and version)."""
    doc = dict(spec_doc)
    bench = doc.get("benchmark")
    if isinstance(bench, dict):
        doc["benchmark"] = {k: v for k, v in bench.items() if k not in ("description", "version")}
    return digest({"kind": "spec", "spec": doc})


def items_digest(frame: pl.DataFrame) -> str:
    """``manifest_digest`` of the rows of ``frame``, the same value at about half its cost
    (0.3 s of CPU for 50,000 rows): when every column is a string column (an items table's
    are), a row's canonical JSON is its sorted keys and ``json``'s escaping of each string
    (what ``canonical_json`` writes for such a row), built here column-wise without the
    per-value walk of ``canonical_json``. A test pins the equality on rows with every escape."""
    if not all(dtype == pl.String for dtype in frame.schema.values()):
        return manifest_digest(frame.to_dicts())
    prefix = f"benchc-hash-v{HASH_RECIPE_VERSION}\n".encode()
    columns = sorted(frame.columns)
    keys = [encode_basestring(c) + ":" for c in columns]
    sha256 = hashlib.sha256
    rows = []
    for values in zip(*(frame.get_column(c).to_list() for c in columns)):
        text = ",".join([k + ("null" if v is None else encode_basestring(v)) for k, v in zip(keys, values)])
        rows.append(sha256(prefix + ("{" + text + "}").encode()).hexdigest())
    return digest({"manifest_schema": MANIFEST_SCHEMA_VERSION, "rows": rows})

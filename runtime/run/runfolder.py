"""A run folder and the files around it, read and written so that no half state is ever read.

A run folder holds ``responses.parquet`` and ``run.json`` (the run record), later ``scores.json``
and ``report.md``. A run writes its two files into a staging folder beside the run folder, the
record last, and swaps the staging folder in with one rename (``compiler/atomic``). The record
names the manifest (absolute path and digest) and the sha256 of ``responses.parquet``, so a
reader can check that the files belong together. An interrupted run therefore leaves the
previous complete folder, or none, never new answers beside an old record; the previous run's
scores and report go with the swap, since they describe other answers.

Every read here turns a missing, unreadable or malformed file into one ``RunError`` naming the
file, with a hint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ValidationError

from benchc.compiler.atomic import make_staging_dir, replace_dir_atomic, write_text_atomic, write_with_atomic
from benchc.compiler.canonical import digest_file
from benchc.compiler.errors import Problem, RunError
from benchc.compiler.manifest import Manifest, read_manifest, verify_manifest
from benchc.compiler.spec.models import Spec

from ..artifacts import RunRecord

RESPONSES_FILE, RUN_FILE = "responses.parquet", "run.json"
RECORD_KEYS = ("manifest", "manifest_digest", "responses_sha256", "stages")
RERUN = "rerun `benchc run MANIFEST -o RUN_DIR` (answers are cached, so nothing is asked twice)"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def read_json(path: Path, what: str, hint: str) -> Any:
    """A JSON file's value; a missing, unreadable or malformed file is a RunError."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(Problem(f"no {what}", file=str(path), hint=hint)) from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise RunError(Problem(f"cannot read the {what}: {_reason(exc)}", file=str(path), hint=hint)) from None


def read_parquet(path: Path, what: str, hint: str) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except FileNotFoundError:
        raise RunError(Problem(f"no {what}", file=str(path), hint=hint)) from None
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as exc:  # polars panics on some damage
        raise RunError(Problem(f"cannot read the {what}: {_reason(exc)}", file=str(path), hint=hint)) from None


def write_text(path: Path, text: str, what: str) -> None:
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise RunError(Problem(f"cannot write the {what}: {_reason(exc)}", file=str(path))) from None


# manifests ---------------------------------------------------------------------------------

def open_manifest(root: Path, hint: str = "recompile it with `benchc compile SPEC -o DIR`") -> tuple[Manifest, Spec]:
    """The manifest at ``root`` with its spec, checked against its lock (``verify_manifest``):
    a file edited or damaged after compile is a ManifestModifiedError, an unreadable one a
    RunError or (unreadable JSON) a ManifestModifiedError saying "cannot read the manifest".
    The manifest holds the items it was checked with (``manifest_items``)."""
    try:
        manifest = read_manifest(Path(root), verify=False)
        spec = Spec.model_validate(manifest.spec)
    except (OSError, ValueError) as exc:  # also pydantic's ValidationError
        raise RunError(Problem(f"cannot read the manifest: {_reason(exc)}", file=str(root), hint=hint)) from None
    recorded = isinstance(manifest.lock.get("manifest_digest"), str)  # raw: else refused before items are read
    return verify_manifest(manifest, _read_items(manifest) if recorded else None), spec


def _read_items(manifest: Manifest) -> pl.DataFrame:
    return read_parquet(manifest.items_path, "items table", "recompile the manifest with `benchc compile`")


def manifest_items(manifest: Manifest) -> pl.DataFrame:
    """The items of ``manifest``: those it was checked with, when ``open_manifest`` opened it."""
    return manifest.items() if manifest.frame is not None else _read_items(manifest)


# run folders --------------------------------------------------------------------------------

def is_run_dir(path: Path) -> bool:
    return (path / RUN_FILE).is_file() or (path / RESPONSES_FILE).is_file()


def check_run_dir(run_dir: Path) -> None:
    """Refuse, before any request, an output folder a run must not replace: a file, or a folder
    that holds anything but an earlier run (``-o ~/data`` must not delete the user's files)."""
    if not run_dir.exists():
        return
    if not run_dir.is_dir() or (any(run_dir.iterdir()) and not is_run_dir(run_dir)):
        raise RunError(Problem(f"{run_dir} exists and is not a benchc run folder; refusing to replace it",
                               file=str(run_dir), hint="choose a new or empty folder for -o/--out"))


def write_run_folder(run_dir: Path, responses: pl.DataFrame, record: dict[str, Any]) -> None:
    """Publish ``responses`` and ``record`` (a ``RunRecord`` but its ``responses_sha256``, which
    is added here) together (see the module docstring)."""
    try:
        staging = make_staging_dir(run_dir)
    except OSError as exc:
        raise RunError(Problem(f"cannot create the run folder: {_reason(exc)}", file=str(run_dir),
                               hint="-o/--out must be a folder benchc can write")) from None
    try:
        write_with_atomic(staging / RESPONSES_FILE, lambda p: responses.write_parquet(p, statistics=False))
        checked = RunRecord.model_validate({**record, "responses_sha256": digest_file(staging / RESPONSES_FILE)})
        write_text_atomic(staging / RUN_FILE, json.dumps(checked.to_json(), indent=2, sort_keys=True) + "\n")
        replace_dir_atomic(staging, run_dir)
    except OSError as exc:
        raise RunError(Problem(f"cannot write the run folder: {_reason(exc)}", file=str(run_dir),
                               hint="-o/--out must be a folder benchc can write")) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def read_run_record(run_dir: Path) -> RunRecord:
    """run.json of a complete run folder, checked for the keys a reader needs and read into its
    model (a record that does not fit it is a RunError naming the key)."""
    run_dir = Path(run_dir)
    if not (run_dir / RUN_FILE).is_file():
        raise RunError(Problem(f"{run_dir} is not a run folder (no {RUN_FILE})", file=str(run_dir),
                               hint=f"run `benchc run MANIFEST -o {run_dir}` first"))
    record = read_json(run_dir / RUN_FILE, "run record", RERUN)
    missing = [k for k in RECORD_KEYS if not isinstance(record, dict) or k not in record]
    if missing:
        raise RunError(Problem(f"the run record lacks {', '.join(missing)} (an older benchc or a damaged folder)",
                               file=str(run_dir / RUN_FILE), hint=RERUN))
    try:
        return RunRecord.model_validate(record)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise RunError(Problem(f"the run record is not valid: {where}: {error['msg']} (an older benchc or a "
                               "damaged folder)", file=str(run_dir / RUN_FILE), hint=RERUN)) from None


def read_responses(run_dir: Path, record: RunRecord) -> pl.DataFrame:
    """responses.parquet, refused unless it is the file the run record was written with."""
    path = Path(run_dir) / RESPONSES_FILE
    try:
        actual = digest_file(path)
    except OSError as exc:
        raise RunError(Problem(f"cannot read the responses: {_reason(exc)}", file=str(path), hint=RERUN)) from None
    if actual != record.responses_sha256:
        raise RunError(Problem(f"{RESPONSES_FILE} is not the file this run recorded in {RUN_FILE}",
                               file=str(path), hint=RERUN))
    return read_parquet(path, "responses", RERUN)

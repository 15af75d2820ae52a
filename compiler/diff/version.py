"""Version discipline: a bundled spec whose content moved away from its committed lock must bump
its version.

A spec under a ``specs/`` folder has its committed lock at ``generated/<same path>.lock.json``
beside that folder (``benchc lock`` writes it). Compiling such a spec without ``--set``
overrides, at the version the lock records, must give the lock's spec digest (checked before
any work) and source digest (checked after loading): otherwise the compile fails and asks for a
bump, naming what changed. Scratch work is not refused: a spec with no committed lock (outside
``specs/``, or new) is not checked, ``--set`` makes a variant that is not the committed spec,
and ``BENCHC_NO_VERSION_CHECK=1`` (or ``check_version=False`` in ``benchc.api.compile``) skips it.

What changed is found by diffing the spec document now against the spec at the commit that
last wrote the lock (found with git, and used only if its digest is the lock's), plus the lock
fields that moved.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..errors import BenchcError, Problem

SKIP_ENV = "BENCHC_NO_VERSION_CHECK"
BUMP_RULE = ("major when existing items or what scores mean change, minor when items are only added, "
             "patch otherwise (see docs/guarantees.md, Versioning benchmarks)")
IDENTITY = ("spec_digest", "source.digest", "source.files", "source.records", "item_count", "manifest_digest",
            "hash_recipe", "manifest_schema", "ops")
"""Lock fields whose change is shown in a version-check message (libraries and model
fingerprints are records of the machine, not of the benchmark)."""


class VersionNotBumped(BenchcError):
    """A bundled spec changed content at the version its committed lock records."""


def committed_lock_path(spec_path: Path | str) -> Path | None:
    """``.../specs/<rel>.toml`` -> ``.../generated/<rel>.lock.json`` (the nearest ``specs``
    folder above the spec); None for a spec under no ``specs`` folder."""
    resolved = Path(spec_path).resolve()
    for parent in resolved.parents:
        if parent.name == "specs":
            return parent.parent / "generated" / resolved.relative_to(parent).with_suffix(".lock.json")
    return None


def _committed_lock(spec_path: Path) -> tuple[Path, dict[str, Any]] | None:
    path = committed_lock_path(spec_path)
    if path is None or not path.is_file():
        return None
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # `benchc lock --check` reports an unreadable lock; a compile is not the place
    return (path, lock) if isinstance(lock, dict) and isinstance(lock.get("benchmark"), dict) else None


def skipped(overrides: list[str] | None) -> bool:
    return bool(overrides) or os.environ.get(SKIP_ENV, "") not in ("", "0")


def _checked_lock(spec_path: Path | str, overrides: list[str] | None) -> tuple[Path, dict[str, Any]] | None:
    """The committed lock a bundled spec's version is checked against; None when there is none
    or the check is skipped (``--set`` overrides)."""
    return None if skipped(overrides) else _committed_lock(Path(spec_path))


def check_spec_version(spec_path: Path | str, overrides: list[str] | None = None) -> None:
    """Before a compile: refuse a bundled spec whose spec digest moved at the same version
    because the spec was edited. When the spec (resolved with this benchc) is the same as at
    the lock's commit, the digest moved with benchc's code (a new default): the compile goes
    on, and ``benchc lock --check`` reports the lock as out of date."""
    found = _checked_lock(spec_path, overrides)
    if found is None:
        return
    from ..compile import spec_digest, spec_document
    from ..resolve import resolve
    from ..spec.parse import load_spec

    lock_file, committed = found
    resolved = resolve(load_spec(spec_path))
    bench = resolved.loaded.spec.benchmark
    if (committed["benchmark"].get("name"), committed["benchmark"].get("version")) != (bench.name, bench.version):
        return
    if spec_digest(resolved) == committed.get("spec_digest"):
        return
    lines = spec_change_lines(Path(spec_path), lock_file, committed, spec_document(resolved))
    if lines == []:
        return
    lines = lines or ["spec digest moved (git cannot show the spec the lock was written from)"]
    raise VersionNotBumped(resolved.loaded.problem("benchmark.version", _message(bench.version, lock_file, lines),
                                                   _hint(spec_path, lock_file)))


def check_source_version(spec_path: Path | str, lock: dict[str, Any], overrides: list[str] | None = None) -> None:
    """After a compile: refuse a bundled spec whose source data moved at the same version."""
    found = _checked_lock(spec_path, overrides)
    if found is None:
        return
    lock_file, committed = found
    if (committed["benchmark"] != lock["benchmark"]
            or committed.get("source", {}).get("digest") == lock["source"]["digest"]):
        return
    lines = lock_change_lines(committed, lock, ("source.digest", "source.files", "source.records"))
    raise VersionNotBumped(Problem(_message(lock["benchmark"]["version"], lock_file, lines, "source data"),
                                   file=str(spec_path), key="benchmark.version", hint=_hint(spec_path, lock_file)))


def _message(version: str, lock_file: Path, lines: list[str], what: str = "content") -> str:
    text = (f"the spec's {what} changed but its version is still {version}, the version of the committed "
            f"lock {lock_file}")
    return text + "".join(f"\n    {line}" for line in lines)


def _hint(spec_path: Path | str, lock_file: Path) -> str:
    return (f"bump [benchmark].version ({BUMP_RULE}) and run `benchc lock {spec_path}`; "
            f"for a scratch copy set {SKIP_ENV}=1")


def lock_change_lines(committed: dict[str, Any], fresh: dict[str, Any],
                      prefixes: tuple[str, ...] = IDENTITY) -> list[str]:
    """``path: before -> after`` for the identity fields of two locks that differ."""
    from .core import lock_changes
    from .render import change_line

    return [change_line(c) for c in lock_changes(committed, fresh) if c.path.startswith(prefixes)]


def spec_change_lines(spec_path: Path, lock_file: Path, committed: dict[str, Any],
                      now: dict[str, Any] | None = None) -> list[str] | None:
    """``path: before -> after`` for each spec key that differs from the spec at the commit
    that last wrote the lock, both resolved with this benchc (so only edits of the spec show);
    [] when there are none; None when git cannot give that spec (outside git, never committed)."""
    from ..compile import spec_document
    from ..resolve import resolve
    from ..spec.parse import load_spec
    from .core import spec_changes
    from .render import change_line

    before = committed_spec_document(spec_path, lock_file)
    if before is None:
        return None
    now = now if now is not None else spec_document(resolve(load_spec(spec_path)))
    return [change_line(c) for c in spec_changes(before[1], now)]


def spec_drift_lines(spec_path: Path, lock_file: Path, committed: dict[str, Any]) -> tuple[list[str], str | None]:
    """What moved a spec digest, for ``benchc lock --check``: the spec's edits since the
    lock's commit, or why there are none to show; and that commit (None when git has no
    spec there)."""
    lines = spec_change_lines(spec_path, lock_file, committed)
    if lines is None:
        return [("spec digest moved (git cannot show the spec the lock was written from; "
                 "`benchc diff SPEC@REV SPEC` shows what changed since REV)")], None
    rev = lock_revision(lock_file) or "HEAD"
    if not lines:
        return [(f"the spec is as it was at {rev[:12]}: its document (defaults made explicit) moved with "
                 "benchc's code (a new or changed default of a source, op or metric)")], rev
    return lines, rev


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=60,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def lock_revision(lock_file: Path) -> str | None:
    """The last commit that wrote ``lock_file`` (None outside git or when never committed)."""
    return _git(lock_file.parent, "log", "-1", "--format=%H", "--", lock_file.name) or None


def committed_spec_document(spec_path: Path, lock_file: Path) -> tuple[str, dict[str, Any]] | None:
    """(revision, spec document) of the spec at the commit that last wrote its lock (or HEAD
    when the lock was never committed), resolved with this benchc; None when git has no such
    spec."""
    from ..compile import spec_document
    from ..resolve import resolve
    from ..spec.parse import load_spec
    from .inputs import Ref, materialise

    rev = lock_revision(lock_file) or "HEAD"
    with tempfile.TemporaryDirectory(prefix="benchc-version-") as scratch:
        try:
            copy = materialise(Ref(f"{spec_path}@{rev}", Path(spec_path), rev), Path(scratch))
            return rev, spec_document(resolve(load_spec(copy)))
        except BenchcError:
            return None

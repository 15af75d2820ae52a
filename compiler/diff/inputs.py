"""The two sides of ``benchc diff``: a spec, a compiled manifest or a lock file, each from the
working tree or from a git revision (``path@REV``).

A spec at a revision is read with ``git show REV:path`` into a scratch folder (with the base
specs it ``extends``, read at the same revision), and compiled with the spec's folder in the
working tree as a data root: its relative data paths mean the working tree's files, as the
README's *Versioning benchmarks* section says. Errors about the scratch copy name ``path@REV``.

Compiling is injected (``Compiler``) so this module stays inside the compiler package (which
never imports the runtime); ``benchc.api.diff`` passes a compile that can answer model steps.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import BenchcError, Problem
from ..manifest import ITEM_SCHEMA, ITEMS_FILE, LOCK_FILE, is_manifest_dir, read_manifest

Compiler = Callable[[Path, Path, list[Path]], Path]
"""(spec file, manifest folder to write, extra data roots) -> the manifest folder."""
KINDS = "a spec (.toml), a compiled manifest folder or a lock file (.lock.json / lock.json)"


class DiffError(BenchcError):
    """An input of ``benchc diff`` / ``diff-runs`` that cannot be read."""


@dataclass(frozen=True)
class Ref:
    """A path in the working tree, optionally at a git revision."""

    text: str
    path: Path
    rev: str | None = None


@dataclass
class Side:
    label: str
    kind: str  # "spec" | "manifest" | "lock"
    doc: dict[str, Any] | None = None
    lock: dict[str, Any] | None = None
    items: pl.DataFrame | None = None


def parse_ref(text: str) -> Ref:
    """``path`` or ``path@REV``; a path that exists as written wins over the ``@`` split (file
    names may hold an ``@``). A revision is never an option: one that starts with ``-`` is refused
    here, and git is always told where its options end (see ``verify_revision``)."""
    path = Path(text)
    if path.exists() or "@" not in text:
        return Ref(text, path)
    name, _, rev = text.rpartition("@")
    if not name or not rev:
        raise DiffError(Problem(f"{text!r} is not PATH or PATH@REVISION", hint="e.g. specs/x.toml@HEAD~1"))
    _check_revision_text(rev, text)
    return Ref(text, Path(name), rev)


def _check_revision_text(rev: str, label: str) -> None:
    """No git revision starts with ``-`` (git refuses such ref names), nor holds a control character."""
    if rev.startswith("-") or any(ord(c) < 32 or c == "\x7f" for c in rev):
        raise DiffError(Problem(f"{rev!r} is not a git revision", file=label,
                                hint="give a commit, tag or branch (e.g. HEAD~1); a revision cannot start with '-'"))


def _git(folder: Path, args: list[str], label: str) -> subprocess.CompletedProcess[str]:
    """``git -C folder ARGS``; every caller puts ``--end-of-options`` before user text."""
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=60,
                              check=False)
    except FileNotFoundError:
        raise DiffError(Problem("git is not installed", file=label, hint="install git, or diff files")) from None
    except subprocess.TimeoutExpired:
        raise DiffError(Problem(f"git {args[0]} did not answer within 60 s", file=label)) from None


def _reason(done: subprocess.CompletedProcess[str], default: str) -> str:
    return (done.stderr.strip().splitlines() or [default])[-1].removeprefix("fatal: ")


def verify_revision(folder: Path, rev: str, label: str, what: str) -> str:
    """The commit hash ``rev`` names in the repository of ``folder``, checked with
    ``git rev-parse --verify --end-of-options REV^{commit}`` before ``rev`` reaches any other
    git command; a DiffError (exit 2) when it names no commit."""
    _check_revision_text(rev, label)
    done = _git(folder, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], label)
    commit = done.stdout.strip()
    if done.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", commit):
        reason = _reason(done, "no such commit")
        raise DiffError(Problem(f"cannot read {what} at revision {rev!r}: {reason}", file=label,
                                hint="check the revision (`git log -- PATH`): a commit, tag or branch"))
    return commit


def git_show(path: Path, rev: str, label: str) -> str:
    """The text of ``path`` at ``rev``, asked of the repository that holds ``path``'s folder
    (or its nearest existing ancestor: the file may be gone from the working tree)."""
    folder = path.absolute().parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    relative = path.absolute().relative_to(folder)
    commit = verify_revision(folder, rev, label, relative.as_posix())
    done = _git(folder, ["show", "--no-textconv", "--end-of-options", f"{commit}:./{relative.as_posix()}"], label)
    if done.returncode != 0:
        raise DiffError(Problem(f"cannot read {relative.as_posix()} at revision {rev!r}: "
                                f"{_reason(done, 'git show failed')}", file=label,
                                hint="check the revision (`git log -- PATH`) and that the path is tracked there"))
    return done.stdout


def materialise(ref: Ref, scratch: Path, depth: int = 0) -> Path:
    """Write the spec at ``ref.rev`` (and the bases it extends, at the same revision) into
    ``scratch`` under its own name; returns the scratch spec file."""
    target = scratch / ref.path.name
    text = git_show(ref.path, ref.rev or "HEAD", ref.text)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    try:
        base = tomllib.loads(text).get("extends")
    except tomllib.TOMLDecodeError:
        return target  # load_spec reports it, naming the file
    if isinstance(base, str) and depth < 16 and not Path(base).is_absolute() and ".." not in Path(base).parts:
        base_ref = Ref(f"{base}@{ref.rev}", ref.path.parent / base, ref.rev)
        materialise(base_ref, (scratch / base).parent, depth + 1)
    return target


def _relabelled(exc: BenchcError, scratch: Path, label: str) -> BenchcError:
    """The same error, naming ``label`` (path@REV) instead of a scratch copy."""
    root = str(scratch.resolve())

    def name(file: str | None) -> str | None:
        return label if file and str(Path(file).resolve()).startswith(root) else file

    problems = [replace(p, file=name(p.file)) for p in exc.problems]
    return type(exc)(problems)


def _read_lock_file(path: Path, text: str, label: str) -> dict[str, Any]:
    try:
        lock = json.loads(text)
    except ValueError as exc:
        raise DiffError(Problem(f"not a JSON lock file: {exc}", file=label, hint=f"give {KINDS}")) from None
    if not isinstance(lock, dict) or "spec_digest" not in lock or "lock_version" not in lock:
        raise DiffError(Problem("not a benchc lock file (no lock_version/spec_digest)", file=label,
                                hint=f"give {KINDS}"))
    return lock


def kind_of(ref: Ref) -> str:
    """"spec", "manifest" or "lock" from the path; an unknown kind is a DiffError."""
    path = ref.path
    if ref.rev is None and not path.exists():
        raise DiffError(Problem("no such file or folder", file=ref.text, hint=f"give {KINDS}, or PATH@REVISION"))
    if ref.rev is None and path.is_dir():
        if is_manifest_dir(path):
            return "manifest"
        if (path / LOCK_FILE).is_file():
            return "lock"
        raise DiffError(Problem(f"folder is not a compiled manifest (no {LOCK_FILE} + {ITEMS_FILE})",
                                file=ref.text, hint=f"give {KINDS}"))
    if ref.rev is not None and path.is_dir():
        raise DiffError(Problem("a folder cannot be read at a git revision", file=ref.text,
                                hint="give a spec or lock file at a revision, or a manifest folder without @REV"))
    if path.name.endswith((".toml", ".toml.example")):
        return "spec"
    if path.name.endswith(".json"):
        return "lock"
    raise DiffError(Problem("cannot tell what this file is from its name", file=ref.text, hint=f"give {KINDS}"))


def read_side(ref: Ref, scratch: Path, overrides: list[str], compiler: Compiler | None) -> Side:
    """One side of a diff. A spec is resolved (its document) and, with a ``compiler``,
    compiled into ``scratch`` (its items and lock); a manifest is read; a lock file is read."""
    kind = kind_of(ref)
    if kind == "lock":
        path = ref.path / LOCK_FILE if ref.rev is None and ref.path.is_dir() else ref.path
        try:
            text = git_show(path, ref.rev, ref.text) if ref.rev else path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DiffError(Problem(f"cannot read the lock file: {exc}", file=ref.text, hint=f"give {KINDS}")) from None
        return Side(ref.text, "lock", lock=_read_lock_file(path, text, ref.text))
    if kind == "manifest":
        return _manifest_side(ref)
    return _spec_side(ref, scratch, overrides, compiler)


def _manifest_side(ref: Ref) -> Side:
    """A compiled manifest folder; an unreadable or foreign one is a DiffError."""
    hint = "recompile it with `benchc compile SPEC -o DIR`"
    try:
        manifest = read_manifest(ref.path)
        items = manifest.items()
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DiffError(Problem(f"cannot read the manifest: {reason}", file=ref.text, hint=hint)) from None
    missing = [c for c in ITEM_SCHEMA if c not in items.columns]
    if missing:
        raise DiffError(Problem(f"the items table lacks {', '.join(missing)}", file=ref.text, hint=hint))
    return Side(ref.text, "manifest", doc=manifest.spec, lock=manifest.lock, items=items)


def _spec_side(ref: Ref, scratch: Path, overrides: list[str], compiler: Compiler | None) -> Side:
    from ..compile import spec_document
    from ..resolve import resolve
    from ..spec.parse import load_spec

    spec_dir = scratch / "spec"
    path = materialise(ref, spec_dir) if ref.rev else ref.path
    roots = [ref.path.parent.resolve()] if ref.rev else []
    try:
        doc = spec_document(resolve(load_spec(path, overrides)))
        if compiler is None:
            return Side(ref.text, "spec", doc=doc)
        manifest = read_manifest(compiler(path, scratch / "manifest", roots))
    except BenchcError as exc:
        raise _relabelled(exc, spec_dir, ref.text) if ref.rev else exc from None
    return Side(ref.text, "spec", doc=doc, lock=manifest.lock, items=manifest.items())

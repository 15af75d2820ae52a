"""Spec paths: resolved against a set of data roots, never allowed to escape them."""

from __future__ import annotations

from pathlib import Path

from .errors import Problem, SourceError


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_in_roots(relative: str, roots: list[Path] | tuple[Path, ...], key: str,
                     spec_file: str | None = None) -> Path:
    """The first existing ``root/relative`` that stays inside its root; a clear error otherwise."""
    escapes = True
    for root in roots:
        root = root.resolve()
        candidate = (root / relative).resolve()
        if not inside(candidate, root):
            continue
        escapes = False
        if candidate.exists():
            return candidate
    if escapes:
        raise SourceError(Problem(f"path {relative!r} escapes the data roots", file=spec_file, key=key,
                                  hint="keep data under the spec's folder or pass --data-root"))
    raise SourceError(Problem(f"file {relative!r} not found", file=spec_file, key=key,
                              hint=f"looked in: {', '.join(map(str, roots))}"))


def relative_to_roots(path: Path, roots: list[Path] | tuple[Path, ...]) -> str:
    """A root-relative POSIX path: no absolute path ever enters a lock or a key."""
    for root in roots:
        if inside(path, root.resolve()):
            return path.relative_to(root.resolve()).as_posix()
    return path.name

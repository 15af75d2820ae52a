"""Spec paths: resolved against a set of data roots, never allowed to escape them.

"Inside the data roots" is judged on the real path, with every symlink followed
(``Path.resolve()``): a link inside a data folder that points elsewhere on the machine is
refused like a ``../`` path, while a link from one data root into another is fine.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import Problem, SourceError

ESCAPE_HINT = "keep data under the spec's folder or pass --data-root"


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _real(path: Path) -> Path | None:
    """``path`` with every symlink followed; None for a symlink loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def within_roots(path: Path, roots: list[Path] | tuple[Path, ...]) -> bool:
    """Whether ``path``, with every symlink followed, lies inside one of ``roots``."""
    real = _real(path)
    return real is not None and any(inside(real, root.resolve()) for root in roots)


def resolve_in_roots(relative: str, roots: list[Path] | tuple[Path, ...], key: str,
                     spec_file: str | None = None) -> Path:
    """The first existing ``root/relative`` whose real path (symlinks followed) stays inside the
    data roots; a clear error otherwise."""
    real_roots = [root.resolve() for root in roots]
    escapes, linked_out = True, False
    for root in real_roots:
        candidate = _real(root / relative)
        if candidate is None or not any(inside(candidate, r) for r in real_roots):
            # inside its root as written, outside once links are followed: a symlink leads out
            linked_out |= inside(Path(os.path.normpath(root / relative)), root) and (
                candidate is None or candidate.exists())
            continue
        escapes = False
        if candidate.exists():
            return candidate
    if escapes or linked_out:
        how = " through a symlink" if linked_out else ""
        raise SourceError(Problem(f"path {relative!r} escapes the data roots{how}", file=spec_file, key=key,
                                  hint=ESCAPE_HINT))
    raise SourceError(Problem(f"file {relative!r} not found", file=spec_file, key=key,
                              hint=f"looked in: {', '.join(map(str, roots))}"))


def check_within_roots(path: Path, roots: list[Path] | tuple[Path, ...], key: str, name: str,
                       spec_file: str | None = None) -> Path:
    """``path`` (a file a loader found or was told about), refused when it is a symlink (or lies
    under one) that leads outside the data roots; reading it would read another part of the
    machine."""
    if not within_roots(path, roots):
        target = _real(path)
        where = f"to {target}" if target is not None else "in a loop"
        raise SourceError(Problem(f"file {name!r} is a symlink {where}, outside the data roots",
                                  file=spec_file, key=key,
                                  hint=f"copy the file into the data folder, or {ESCAPE_HINT}"))
    return path


def relative_to_roots(path: Path, roots: list[Path] | tuple[Path, ...]) -> str:
    """A root-relative POSIX path: no absolute path ever enters a lock or a key."""
    for root in roots:
        if inside(path, root.resolve()):
            return path.relative_to(root.resolve()).as_posix()
    return path.name

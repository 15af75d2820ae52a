"""One recipe per identity concept that enters keys and fingerprints (a leaf module):

- ``folder_digest``: a model or weights folder (or file), the ``sha256sum`` recipe: sha256 of
  the lines ``<sha256 of file>  <path relative to the folder>\\n`` over every file below it
  (POSIX paths, sorted by path bytes, links followed); for a file, the sha256 of its bytes.
  ``(cd DIR && find -L . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum) |
  sha256sum`` gives the same digest.
- ``installed_version``: an installed distribution's version, ``NOT_INSTALLED`` when absent.
- ``plugin_distributions``: the distributions that provide a plugin's code (none for benchc's
  own): a plugin op's version of its package enters its node keys and the lock.
- ``request_seed``: a sampling seed from a request's content by the seed recipe
  (``seeds.seed_from``), never from its batch or its position.

tests/test_identity.py pins each one; a change that moves a value is a new recipe, said in the
README's format table.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from .canonical import digest_file
from .seeds import seed_from

NOT_INSTALLED = "not installed"


def folder_digest(path: Path) -> str:
    """The ``sha256sum`` recipe above. Each file is hashed once per (path, inode, size, times)
    in a process, and again whenever it is rewritten."""
    if path.is_file():
        return _file_digest(str(path), *_stamp(path))
    files = sorted((p for p in path.rglob("*") if p.is_file()), key=lambda p: p.relative_to(path).as_posix().encode())
    listing = "".join(f"{_file_digest(str(p), *_stamp(p))}  {p.relative_to(path).as_posix()}\n" for p in files)
    return hashlib.sha256(listing.encode()).hexdigest()


def _stamp(path: Path) -> tuple[int, int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


@functools.lru_cache(maxsize=4096)
def _file_digest(path: str, inode: int, size: int, mtime_ns: int, ctime_ns: int) -> str:
    return digest_file(path)


@functools.cache
def installed_version(distribution: str) -> str:
    """The installed version of a distribution (package metadata), ``NOT_INSTALLED`` if absent."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def plugin_distributions(cls: type) -> tuple[str, ...]:
    """The installed distributions providing ``cls``'s top-level package, unless it is benchc's
    own (whose version every lock records); () for a module that is not installed
    (``--plugin`` from the working folder)."""
    top = cls.__module__.partition(".")[0]
    return () if top == "benchc" else _providers(top)


@functools.cache
def _providers(top_level: str) -> tuple[str, ...]:
    return tuple(sorted(set(metadata.packages_distributions().get(top_level, []))))


def request_seed(kind: str, seed: int, prompt: str, system: str | None, media: Sequence[Sequence[str]],
                 sample: int, bits: int = 63) -> int:
    """A ``bits``-bit sampling seed from what a request asks (``kind`` names the backend family,
    so two families never share seeds by construction)."""
    return seed_from([kind, seed, prompt, system, [list(m) for m in media], sample]) & ((1 << bits) - 1)

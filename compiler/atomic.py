"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator


def write_bytes_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.
    ``durable=False`` leaves out the fsync before the rename, for a caller that syncs a whole
    batch of files at once before it records them anywhere (see ``ContentStore.sync``)."""
    with _temp_beside(path, durable) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_with_atomic(path: Path, writer: Callable[[Path], None]) -> None:
    """Let ``writer`` fill a temporary path, then move it over ``path``."""
    with _temp_beside(path) as tmp:
        writer(tmp)


@contextmanager
def _temp_beside(path: Path, durable: bool = True) -> Iterator[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if durable:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


STAGING = re.compile(r"\.(?P<target>.+)\.staging-(?P<host>.+)-(?P<pid>\d+)-[a-z0-9_]+")
"""A staging folder's name: ``.<target>.staging-<host>-<pid>-<random>`` (mkdtemp's random part
has no ``-``), so a later run can tell whose it is."""
HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def make_staging_dir(target: Path) -> Path:
    """A fresh folder beside ``target`` to fill before it is renamed into place, named with this
    host and process so that ``remove_stale_staging`` can clear it if this process dies first
    (SIGKILL, a crash). mkdtemp makes it 0700; a published folder gets the usual 0755."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(target.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-{HOST}-{os.getpid()}-", dir=target.parent))
    staging.chmod(0o755)
    return staging


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove the staging folders in ``folder`` that processes of this host left when they died
    (a folder of another host, or of a live process, is left alone). Returns those removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        found = STAGING.fullmatch(entry.name)
        if found is None or found["host"] != HOST or _alive(int(found["pid"])):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process, or not a pid: keep its folder
        return True
    return True


def publish_dir_if_absent(staging: Path, target: Path) -> bool:
    """Rename ``staging`` to ``target`` unless ``target`` already exists (another process
    published the same content first); never replaces. Returns whether ours was published."""
    try:
        os.rename(staging, target)  # on POSIX, fails if target is a non-empty folder
        return True
    except OSError:
        if not target.exists():
            raise
        shutil.rmtree(staging, ignore_errors=True)
        return False


def replace_dir_atomic(staging: Path, target: Path) -> None:
    """Swap a fully written staging folder into place (rename; the old one is removed after)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)

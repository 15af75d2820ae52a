"""benchc's own folders: a compile cache (``--cache``) or a response store (``--store``) is
written and cleaned only where benchc made it (issue 28 item 6: ``--cache /`` wrote ``objects/``,
``compiled/`` and ``nodes.sqlite`` into ``/``, and ``compile --repair`` deleted files under
``objects/??/`` of any folder it was pointed at).

A folder is benchc's when it carries the marker file of its kind, written when benchc first uses
it. A folder without the marker is taken (and marked) only when it is new, empty, or holds nothing
but what benchc writes there (a cache or store made before markers existed); anything else is
refused before a byte is written or deleted, and so are the filesystem's root, the home folder
and a path that is a file.
"""

from __future__ import annotations

from pathlib import Path

from .errors import Problem, RunError

MARKERS = {"cache": ".benchc-cache", "store": ".benchc-store"}
OWN_ENTRIES = {
    "cache": frozenset({"objects", "compiled", "nodes.sqlite", "nodes.sqlite-wal", "nodes.sqlite-shm",
                        "nodes.sqlite-journal"}),
    "store": frozenset({"blobs", "responses.sqlite", "responses.sqlite-wal", "responses.sqlite-shm",
                        "responses.sqlite-journal"}),
}
"""What benchc writes at the top of each kind of folder."""
WHAT = {"cache": "compile cache", "store": "response store"}


def own_folder(path: Path | str, kind: str, key: str) -> Path:
    """``path`` as benchc's ``kind`` folder ("cache" or "store"), made and marked if new; a
    ``RunError`` naming ``key`` (the option) when benchc must not write there."""
    path = Path(path)
    marker = path / MARKERS[kind]
    if path.exists() and not path.is_dir():
        raise _refused(path, key, kind, "is a file, not a folder")
    real = path.resolve()
    if real == Path(real.anchor):
        raise _refused(path, key, kind, "is the filesystem's root")
    if real == Path.home().resolve():
        raise _refused(path, key, kind, "is your home folder")
    if marker.is_file():
        return path
    if path.is_dir():
        foreign = sorted(entry.name for entry in path.iterdir() if entry.name not in OWN_ENTRIES[kind]
                         and entry.name not in MARKERS.values())
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise _refused(path, key, kind, f"holds files benchc did not write ({shown})")
    try:
        path.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"a benchc {WHAT[kind]}: benchc writes and deletes files here\n")
    except OSError as exc:
        raise RunError(Problem(f"cannot make the {WHAT[kind]}: {exc.strerror or exc}", file=str(path), key=key,
                               hint=f"{key} must be a folder benchc can write")) from None
    return path


def _refused(path: Path, key: str, kind: str, why: str) -> RunError:
    return RunError(Problem(f"{path} {why}: benchc writes and deletes files in its {WHAT[kind]}, so it takes only "
                            "a new or empty folder, or one it made", file=str(path), key=key,
                            hint=f"pass {key} a new folder (e.g. {key} .benchc/{kind})"))

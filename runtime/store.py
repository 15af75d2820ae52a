"""The response store: every model answer, keyed by the content hash of its request.

SQLite (WAL) is the embedded default. A response is committed as soon as its batch finishes, so
a run that is killed loses at most the batch in flight, and a rerun asks only for what is missing.
The key is the request's digest (backend fingerprint, task, generation settings, rendered
prompt, media hashes, sample index): a changed setting can never be served a stale answer.
Binary outputs (speech) live in a content-addressed folder beside the database.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import Problem, RunError

STORE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class StoredResponse:
    key: str
    kind: str  # "text" | "audio"
    text: str | None
    blob: str | None  # sha256 of the bytes in the blob store


class ResponseStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        try:
            self._open()
        except (OSError, sqlite3.Error) as exc:
            raise self._failed("open", exc) from None

    def _failed(self, doing: str, exc: OSError | sqlite3.Error) -> RunError:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return RunError(Problem(f"cannot {doing} the response store: {reason}", file=str(self.root), key="--store",
                                hint="--store must be a folder benchc can write (it holds responses.sqlite "
                                     "and blobs/), on a disk with room, or a new path"))

    def _open(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.blobs = ContentStore(self.root / "blobs")
        self.db = sqlite3.connect(self.root / "responses.sqlite", timeout=120)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL,"
            " kind TEXT NOT NULL, text TEXT, blob TEXT)"
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(STORE_SCHEMA_VERSION),))
        self.db.commit()

    def missing(self, keys: Iterable[str]) -> list[str]:
        keys = list(dict.fromkeys(keys))
        have = set(self.get_many(keys))
        return [k for k in keys if k not in have]

    def get_many(self, keys: Iterable[str]) -> dict[str, StoredResponse]:
        keys = list(keys)
        out: dict[str, StoredResponse] = {}
        for start in range(0, len(keys), 900):
            chunk = keys[start : start + 900]
            marks = ",".join("?" * len(chunk))
            for key, kind, text, blob in self.db.execute(
                f"SELECT key, kind, text, blob FROM responses WHERE key IN ({marks})", chunk
            ):
                out[key] = StoredResponse(key, kind, text, blob)
        return out

    def put_many(self, backend: str, entries: list[tuple[str, str, str | None, bytes | None]]) -> None:
        """Store (key, kind, text, data) tuples in one transaction; blobs are written first."""
        try:
            rows = []
            for key, kind, text, data in entries:
                blob = self.blobs.put(data, "audio").sha256 if data is not None else None
                rows.append((key, backend, kind, text, blob))
            with self.db:
                self.db.executemany(
                    "INSERT OR IGNORE INTO responses (key, backend, kind, text, blob) VALUES (?,?,?,?,?)",
                    rows,
                )
        except (OSError, sqlite3.Error) as exc:  # a full disk, a lock held past the timeout
            raise self._failed("write to", exc) from None

    def blob(self, sha256: str) -> bytes:
        return self.blobs.get(sha256)

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.db.close()

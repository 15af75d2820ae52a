"""The content-addressed cache: media bytes by sha256, op outputs by node key.

Layout under the cache root::

    objects/ab/cdef...    media bytes, named by their sha256
    nodes.sqlite          node key -> output value (JSON) and attributes

Writes are atomic (temporary file + rename; SQLite transactions), so an interrupted compile
leaves only complete entries. A store opened with ``durable=False`` (the compile's op workers)
skips the fsync of each media file; the compile calls ``sync()`` once per batch before it commits
the node rows that point at those files, so a crash never leaves a row whose file was lost.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .atomic import write_bytes_atomic
from .canonical import digest_bytes
from .values import Kind, MediaRef


class ContentStore:
    def __init__(self, root: Path, durable: bool = True) -> None:
        self.root = Path(root)
        self.durable_writes = durable
        self.objects = self.root / "objects"
        self.objects.mkdir(parents=True, exist_ok=True)
        self._db: sqlite3.Connection | None = None

    # media -------------------------------------------------------------------------------
    def path_of(self, sha256: str) -> Path:
        return self.objects / sha256[:2] / sha256[2:]

    def put(self, data: bytes, kind: Kind) -> MediaRef:
        sha = digest_bytes(data)
        path = self.path_of(sha)
        if not path.exists():
            write_bytes_atomic(path, data, durable=self.durable_writes)
        return MediaRef(kind, sha)

    @staticmethod
    def sync() -> None:
        """Flush files written with ``durable=False`` (by this or any process) to disk: one
        sync(2) for a batch instead of one fsync per file."""
        os.sync()

    def get(self, ref: MediaRef | str) -> bytes:
        sha = ref if isinstance(ref, str) else ref.sha256
        return self.path_of(sha).read_bytes()

    def has(self, sha256: str) -> bool:
        return self.path_of(sha256).exists()

    # node outputs ------------------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect(self.root / "nodes.sqlite", timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS nodes (key TEXT PRIMARY KEY, output TEXT NOT NULL)"
            )
        return self._db

    def lookup_nodes(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Batch lookup of cached node outputs (one query per 900 keys)."""
        keys = list(keys)
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), 900):
            chunk = keys[start : start + 900]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(f"SELECT key, output FROM nodes WHERE key IN ({marks})", chunk)
            found.update((k, json.loads(v)) for k, v in rows)
        return found

    def store_nodes(self, entries: dict[str, dict[str, Any]]) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO nodes (key, output) VALUES (?, ?)",
                [(k, json.dumps(v, sort_keys=True)) for k, v in entries.items()],
            )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

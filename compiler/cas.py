"""The content-addressed cache: media bytes by sha256, op outputs by node key.

Layout under the cache root::

    objects/ab/cdef...    media bytes, named by their sha256 (images: by their pixel identity)
    nodes.sqlite          node key -> output value (JSON), with a digest of the row

Writes are atomic (temporary file + rename; SQLite transactions), so an interrupted compile
leaves only complete entries. A store opened with ``durable=False`` (the compile's op workers)
skips the fsync of each media file; the compile calls ``sync()`` once per batch before it commits
the node rows that point at those files, so a crash never leaves a row whose file was lost.

Every read is checked against the key it was stored under, so a flipped byte or an edited file
is never used in silence. ``get`` hashes the bytes (sha256, cheap); an image, whose key is the
identity of its decoded pixels (``compiler/pixels.py``), is decoded and its identity compared
(once per file and process: a later read of the same bytes needs only their sha256);
``load_image`` checks the identity of what it decodes anyway. A mismatch is a
``CorruptObjectError`` naming the object and its file. A node row carries the sha256 of its key
and output JSON; a row that does not match it (edited, damaged, or written before rows had one)
is a miss, recomputed (ops are pure), as is a row whose media file is gone: deleting a damaged
object and compiling again (``--no-memo``) makes it anew.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .atomic import write_bytes_atomic
from .canonical import digest_bytes
from .errors import BenchcError, Problem
from .values import Kind, MediaRef

if TYPE_CHECKING:
    from PIL import Image

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class IntegrityError(BenchcError):
    """A stored file no longer matches the key or digest it was stored under (a flipped byte, a
    hand edit): refused, never used in silence."""


class CorruptObjectError(IntegrityError):
    """A content-addressed object whose bytes (or decoded pixels) do not match its key."""


class ContentStore:
    def __init__(self, root: Path, durable: bool = True) -> None:
        self.root = Path(root)
        self.durable_writes = durable
        self.objects = self.root / "objects"
        self.objects.mkdir(parents=True, exist_ok=True)
        self._db: sqlite3.Connection | None = None
        self._verified: dict[str, str] = {}
        """key -> sha256 of the bytes whose decoded pixels were checked against the key (images)"""

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
        """The object's bytes, checked against its key (see the module docstring); a missing
        file is a FileNotFoundError, as before."""
        key, kind = (ref, None) if isinstance(ref, str) else (ref.sha256, ref.kind)
        path = self.path_of(key)
        data = path.read_bytes()
        actual = digest_bytes(data)
        if actual == key or self._verified.get(key) == actual:
            return data
        if kind == "image" or (kind is None and data.startswith(PNG_SIGNATURE)):
            self.decode_image(key, data)
            self._verified[key] = actual
            return data
        raise self.corrupt(kind or "object", key, f"the sha256 of its bytes is {actual[:16]}...")

    def decode_image(self, key: str, data: bytes) -> Image.Image:
        """``data`` (the file of object ``key``) decoded as an image; a ``CorruptObjectError``
        unless its pixel identity (or the sha256 of its bytes) is ``key``."""
        from .pixels import PixelMismatch, decode_checked  # Pillow is loaded only once an image is read

        try:
            return decode_checked(key, data)
        except PixelMismatch as exc:
            raise self.corrupt("image", key, exc.reason) from None

    def has(self, sha256: str) -> bool:
        return self.path_of(sha256).exists()

    def object_keys(self) -> list[str]:
        """Every object's key, from the file names (sorted: a scan is reproducible)."""
        return sorted(f"{sub.name}{f.name}" for sub in self.objects.iterdir() if sub.is_dir() and len(sub.name) == 2
                      for f in sub.iterdir() if f.is_file() and not f.name.startswith("."))

    def remove_damaged(self) -> list[str]:
        """Check every object against its key (as ``get`` does) and delete the ones that do not
        match; their keys. In a compile cache each is recomputed by the next compile (a source's
        media stored again from the source, an op's output by the op); node rows that point at
        a deleted file are misses already."""
        removed = []
        for key in self.object_keys():
            try:
                self.get(key)
            except CorruptObjectError:
                self.path_of(key).unlink(missing_ok=True)
                removed.append(key)
        return removed

    def corrupt(self, kind: str, key: str, reason: str) -> CorruptObjectError:
        """The error for object ``key`` that does not match its key (``reason`` says how)."""
        path = self.path_of(key)
        if (self.root.parent / "responses.sqlite").exists():  # a response store's blobs/
            hint = ("delete the file and rerun `benchc run` with a new --store: the answer is asked again "
                    "(this store still holds the answer that points at the file)")
        else:
            hint = ("delete the file and rerun: it is recomputed (`benchc compile --no-memo`; "
                    "a source's media is stored again from the source); `benchc compile --repair` finds "
                    "and deletes every damaged object of the cache and recomputes them")
        return CorruptObjectError(Problem(
            f"{kind} {key[:16]}... in the content store does not match its key ({reason}): the file was "
            f"modified or damaged after it was stored", file=str(path), hint=hint))

    # node outputs ------------------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self._db = self._open_db()
            except sqlite3.DatabaseError as exc:
                self._refuse_damaged_db(exc)
        return self._db

    def _open_db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.root / "nodes.sqlite", timeout=60)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS nodes (key TEXT PRIMARY KEY, output TEXT NOT NULL, digest TEXT)")
        columns = {row[1] for row in db.execute("PRAGMA table_info(nodes)")}
        if "digest" not in columns:  # a cache written before rows carried a digest
            try:
                with db:
                    db.execute("ALTER TABLE nodes ADD COLUMN digest TEXT")
            except sqlite3.OperationalError:  # another process added it first
                if "digest" not in {row[1] for row in db.execute("PRAGMA table_info(nodes)")}:
                    raise
        return db

    def _refuse_damaged_db(self, exc: sqlite3.DatabaseError) -> NoReturn:
        """Raise a damaged nodes.sqlite as one clear error; a lock held past the timeout, as itself."""
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
            raise exc
        raise IntegrityError(Problem(f"the node cache is damaged, it cannot be read: {exc}",
                                     file=str(self.root / "nodes.sqlite"),
                                     hint="delete the file and rerun: every node output is recomputed "
                                          "(`benchc compile --no-memo`)")) from None

    @staticmethod
    def row_digest(key: str, output: str) -> str:
        """What a node row's ``digest`` column holds: the sha256 of its key and output JSON."""
        return digest_bytes(f"{key}\n{output}".encode())

    def lookup_nodes(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Batch lookup of cached node outputs (one query per 900 keys). A row that does not
        match its digest (or has none: an older benchc wrote it), or whose output's media file
        is gone, is left out (a miss: the op runs again); stderr says how many were edited or
        damaged, and how many had no digest."""
        keys = list(keys)
        found: dict[str, dict[str, Any]] = {}
        rejected: list[str] = []
        legacy = 0
        try:
            for start in range(0, len(keys), 900):
                chunk = keys[start : start + 900]
                marks = ",".join("?" * len(chunk))
                rows = self.db.execute(f"SELECT key, output, digest FROM nodes WHERE key IN ({marks})", chunk)
                for key, text, stored in rows:
                    if stored is None:  # written before rows carried a digest: recomputed once
                        legacy += 1
                        continue
                    output = self._checked_output(key, text, stored)
                    if output is None:
                        rejected.append(key)
                    elif self._media_present(output):
                        found[key] = output
        except sqlite3.DatabaseError as exc:
            self._refuse_damaged_db(exc)
        if rejected:
            print(f"warning: {len(rejected)} node output(s) in {self.root / 'nodes.sqlite'} do not match their "
                  f"digest (edited or damaged, e.g. node {rejected[0][:16]}...); recomputing them",
                  file=sys.stderr)
        if legacy:
            print(f"note: {legacy} node output(s) in {self.root / 'nodes.sqlite'} were stored before node rows "
                  "carried a digest; recomputing them once", file=sys.stderr)
        return found

    def _checked_output(self, key: str, text: Any, stored: Any) -> dict[str, Any] | None:
        if not isinstance(text, str) or not isinstance(key, str) or stored != self.row_digest(key, text):
            return None
        try:
            output = json.loads(text)
        except ValueError:
            return None
        return output if isinstance(output, dict) else None

    def _media_present(self, output: dict[str, Any]) -> bool:
        value = output.get("value")
        sha = value.get("sha256") if isinstance(value, dict) else None
        return not isinstance(sha, str) or self.has(sha)

    def store_nodes(self, entries: dict[str, dict[str, Any]]) -> None:
        rows = []
        for key, value in entries.items():
            text = json.dumps(value, sort_keys=True)
            rows.append((key, text, self.row_digest(key, text)))
        try:
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO nodes (key, output, digest) VALUES (?, ?, ?)", rows)
        except sqlite3.DatabaseError as exc:
            self._refuse_damaged_db(exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

"""The response store: every model answer, keyed by the content hash of its request.

SQLite (WAL) is the embedded default. A response is committed as soon as its batch finishes, so
a run that is killed loses at most the batch in flight, and a rerun asks only for what is missing.
The key is the request's digest (backend fingerprint, task, generation settings, rendered
prompt, media hashes, sample index): a changed setting can never be served a stale answer.
Binary outputs (speech) live in a content-addressed folder beside the database.

Claims: several runs may share a store (two ``benchc run``s, a run and a compile's model steps).
So that they never ask a model the same request at the same time, a run claims a request's key in
the ``claims`` table before sending it (``Claims.take``, one transaction per batch, which also
drops keys answered meanwhile) and a claim by another live run is left to it: the run waits for
that answer instead (``Claims.settle`` polls). A claim is a lease: it lapses ``lease`` seconds
after its owner last renewed it (a thread renews all of a run's claims every ``lease / 4``), and
at once when its owner is a process of this machine that no longer exists (a killed run), so a
dead run's claims never block the next one for long. A claim on an answered key means nothing
(the answer is looked for first); a run drops the claims of what it stored at its next ``take``,
those of requests it failed at once, and all that remain when it ends.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from benchc.compiler.canonical import digest
from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import Problem, RunError
from benchc.compiler.folders import own_folder

STORE_SCHEMA_VERSION = 2
"""The response store's format (``meta.schema``). A store of a newer version is refused on open
(``StoreTooNewError``): this benchc may not read it right, and must not write to it. 2: every
answer carries a digest (``row_digest``), checked on every read; a version-1 store is upgraded on
open (its rows' digests taken as found), and benchc of version 1 refuses it from then on, so no
row without a digest is written."""
CLAIM_LEASE = 60.0
"""Seconds a claim lives without renewal (a run on another machine that died holds its requests
this long at most; one on this machine, not at all)."""
HOST = socket.gethostname()

log = logging.getLogger(__name__)


class StoreTooNewError(RunError):
    """A response store written by a newer benchc (its schema version is above ours)."""


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
        own_folder(self.root, "store", "--store")
        self.blobs = ContentStore(self.root / "blobs")
        self.db = sqlite3.connect(self.root / "responses.sqlite", timeout=120)
        try:
            self._check_schema()
        except BaseException:
            self.db.close()
            raise
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL,"
            " kind TEXT NOT NULL, text TEXT, blob TEXT)"
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        self.db.execute("CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL,"
                        " expires REAL NOT NULL)")
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(STORE_SCHEMA_VERSION),))
        self._add_digests()
        self.db.commit()

    def _add_digests(self) -> None:
        """Every answer carries the digest of what was stored (``row_digest``), checked on every
        read: a flipped byte or an edited text is an error, never a score. A version-1 store gets
        the column and the digests of its rows as found, once, and becomes version 2."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(responses)")}
        if "digest" in columns:
            return
        self.db.execute("ALTER TABLE responses ADD COLUMN digest TEXT")
        rows = self.db.execute("SELECT key, kind, text, blob FROM responses").fetchall()
        self.db.executemany("UPDATE responses SET digest = ? WHERE key = ?",
                            [(row_digest(*row), row[0]) for row in rows])
        self.db.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (str(STORE_SCHEMA_VERSION),))

    def _check_schema(self) -> None:
        """Refuse, before anything is written, a store whose schema version is newer than
        ``STORE_SCHEMA_VERSION`` (or not a version at all). A new store has none yet."""
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
            return
        row = self.db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if row is None:
            return
        try:
            found = int(row[0])
        except (TypeError, ValueError):
            found = None
        if found is not None and found <= STORE_SCHEMA_VERSION:
            return
        what = f"schema version {found}" if found is not None else f"an unreadable schema version {row[0]!r}"
        raise StoreTooNewError(Problem(
            f"the response store {self.root} has {what}; this benchc supports schema version "
            f"{STORE_SCHEMA_VERSION} at most", file=str(self.root), key="--store",
            hint="a newer benchc wrote this store: upgrade benchc (pip install -U benchc) to use it, "
                 "or pass --store a new folder"))

    def missing(self, keys: Iterable[str]) -> list[str]:
        keys = list(dict.fromkeys(keys))
        have = set(self.get_many(keys))
        return [k for k in keys if k not in have]

    def get_many(self, keys: Iterable[str]) -> dict[str, StoredResponse]:
        try:
            return self._get_many(list(keys))
        except sqlite3.OperationalError as exc:  # a text that is not UTF-8 (an edit behind benchc's back)
            if "decode" not in str(exc):
                raise
            raise RunError(Problem(f"a stored answer is not UTF-8 text ({exc}): the response store was edited or "
                                   "damaged", file=str(self.root / "responses.sqlite"), key="--store",
                                   hint="restore the store from a copy, or pass --store a new folder (answers "
                                        "are asked again)")) from None

    def _get_many(self, keys: list[str]) -> dict[str, StoredResponse]:
        out: dict[str, StoredResponse] = {}
        for start in range(0, len(keys), 900):
            chunk = keys[start : start + 900]
            marks = ",".join("?" * len(chunk))
            for key, kind, text, blob, found in self.db.execute(
                f"SELECT key, kind, text, blob, digest FROM responses WHERE key IN ({marks})", chunk
            ):
                if found != row_digest(key, kind, text, blob):
                    raise self._damaged(key)
                out[key] = StoredResponse(key, kind, text, blob)
        return out

    def _damaged(self, key: str) -> RunError:
        return RunError(Problem(
            f"the stored answer of request {key[:16]} does not match its digest: the response store was "
            "edited or damaged, and its answers cannot be trusted", file=str(self.root / "responses.sqlite"),
            key="--store", hint=f"delete that row (DELETE FROM responses WHERE key = '{key}'; the next run asks "
                                "again), restore the store from a copy, or pass --store a new folder"))

    def put_many(self, backend: str, entries: list[tuple[str, str, str | None, bytes | None]]) -> None:
        """Store (key, kind, text, data) tuples in one transaction; blobs are written first."""
        try:
            rows = []
            for key, kind, text, data in entries:
                blob = self.blobs.put(data, "audio").sha256 if data is not None else None
                rows.append((key, backend, kind, text, blob, row_digest(key, kind, text, blob)))
            with self.db:
                self.db.executemany(
                    "INSERT OR IGNORE INTO responses (key, backend, kind, text, blob, digest) VALUES (?,?,?,?,?,?)",
                    rows,
                )
        except (OSError, sqlite3.Error) as exc:  # a full disk, a lock held past the timeout
            raise self._failed("write to", exc) from None

    def put_verify(self, backend: str, entries: list[tuple[str, str, str | None, bytes | None]]) -> list[str | None]:
        """Answers asked again (``run --verify``) as (key, kind, text, data), into the ``verify``
        table: beside the stored answers, never replacing them (one row per asking, with its
        time). Returns each entry's blob sha256 (None for text)."""
        try:
            blobs = [self.blobs.put(data, "audio").sha256 if data is not None else None for _, _, _, data in entries]
            with self.db:
                self.db.execute("CREATE TABLE IF NOT EXISTS verify (key TEXT NOT NULL, backend TEXT NOT NULL,"
                                " kind TEXT NOT NULL, text TEXT, blob TEXT, asked REAL NOT NULL)")
                self.db.executemany("INSERT INTO verify (key, backend, kind, text, blob, asked) VALUES (?,?,?,?,?,?)",
                                    [(key, backend, kind, text, blob, time.time())
                                     for (key, kind, text, _), blob in zip(entries, blobs)])
        except (OSError, sqlite3.Error) as exc:
            raise self._failed("write to", exc) from None
        return blobs

    def claims(self, lease: float = CLAIM_LEASE) -> Claims:
        """A new claimant on this store (one per run; see the module docstring)."""
        return Claims(self, lease)

    def blob(self, sha256: str) -> bytes:
        return self.blobs.get(sha256)

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.db.close()


def row_digest(key: str, kind: str, text: str | None, blob: str | None) -> str:
    """The digest of a stored answer: its request key, kind, text and blob hash together (a text
    moved to another key fails too)."""
    return digest({"key": key, "kind": kind, "text": text, "blob": blob})


def _owner_alive(owner: str) -> bool:
    """False only when ``owner`` ("host:pid:token") is a process of this machine that is gone."""
    try:
        host, pid_text, _ = owner.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return True
    if host != HOST:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or no permission to ask: alive
        return True
    return True


class Claims:
    """One run's claims on request keys in a store. ``take`` before sending a batch, ``settle`` to
    follow the requests another run holds, ``release`` for keys it will not answer, ``close``
    at the end (drops what it still holds). Not for use from several threads."""

    def __init__(self, store: ResponseStore, lease: float = CLAIM_LEASE) -> None:
        self.store = store
        self.lease = lease
        self.owner = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def take(self, keys: list[str], stored: Iterable[str] = ()) -> tuple[list[str], list[str], list[str]]:
        """Claims those of ``keys`` that are neither answered nor held by another live run, in one
        transaction (which also drops this run's claims on the keys it has ``stored`` since);
        returns (claimed, already answered, held elsewhere)."""
        db, now = self.store.db, time.time()
        try:
            db.execute("BEGIN IMMEDIATE")  # one claimant at a time: no two runs claim one key
            try:
                db.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in stored])
                answered = self._answered(keys)
                held = {k: (o, e) for k, o, e in _select(db, "SELECT key, owner, expires FROM claims", keys)}
                mine, elsewhere = [], []
                for key in keys:
                    if key in answered:
                        continue
                    claim = held.get(key)
                    if claim and claim[0] != self.owner and self._live(*claim, now):
                        elsewhere.append(key)
                    else:
                        mine.append(key)
                db.executemany("INSERT OR REPLACE INTO claims (key, owner, expires) VALUES (?,?,?)",
                               [(k, self.owner, now + self.lease) for k in mine])
                db.commit()
            except BaseException:
                db.rollback()
                raise
        except sqlite3.Error as exc:
            raise self.store._failed("write to", exc) from None
        if mine and self._renewer is None:
            self._renewer = threading.Thread(target=self._renew, name="benchc-claims", daemon=True)
            self._renewer.start()
        return mine, [k for k in keys if k in answered], elsewhere

    def settle(self, keys: list[str]) -> tuple[list[str], list[str]]:
        """Of ``keys`` (held elsewhere when last seen): those now answered, and those no live run
        holds any more (its owner died, or released it unanswered), which may be taken."""
        now = time.time()
        try:
            answered = self._answered(keys)
            held = {k: (o, e) for k, o, e in _select(self.store.db, "SELECT key, owner, expires FROM claims", keys)}
        except sqlite3.Error as exc:
            raise self.store._failed("read", exc) from None
        free = [k for k in keys if k not in answered and not (k in held and self._live(*held[k], now))]
        return [k for k in keys if k in answered], free

    def release(self, keys: Iterable[str]) -> None:
        """Drops this run's claims on ``keys`` (requests it failed or will not send)."""
        rows = [(k, self.owner) for k in keys]
        if rows:
            try:
                with self.store.db:
                    self.store.db.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", rows)
            except sqlite3.Error as exc:
                raise self.store._failed("write to", exc) from None

    def close(self) -> None:
        """Stops renewing and drops every claim this run still holds."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            try:
                with self.store.db:
                    self.store.db.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            except sqlite3.Error as exc:  # they lapse on their own
                log.warning("could not release this run's claims in the response store: %s", exc)

    def _live(self, owner: str, expires: float, now: float) -> bool:
        return expires > now and _owner_alive(owner)

    def _answered(self, keys: list[str]) -> set[str]:
        return {k for (k,) in _select(self.store.db, "SELECT key FROM responses", keys)}

    def _renew(self) -> None:
        """Extends this run's claims every lease / 4 seconds, on a connection of its own."""
        db = None
        try:
            while not self._stop.wait(self.lease / 4):
                try:
                    db = db or sqlite3.connect(self.store.root / "responses.sqlite", timeout=self.lease / 4)
                    with db:
                        db.execute("UPDATE claims SET expires = ? WHERE owner = ?",
                                   (time.time() + self.lease, self.owner))
                except sqlite3.Error as exc:  # a busy store: the next round tries again
                    log.debug("renewing claims failed: %s", exc)
        finally:
            if db is not None:
                db.close()


def _select(db: sqlite3.Connection, query: str, keys: list[str]) -> list[tuple]:
    """``query`` + ``WHERE key IN (keys)``, in chunks under SQLite's parameter limit."""
    rows: list[tuple] = []
    for start in range(0, len(keys), 900):
        chunk = keys[start : start + 900]
        rows += db.execute(f"{query} WHERE key IN ({','.join('?' * len(chunk))})", chunk).fetchall()
    return rows

"""``benchc run --verify N``: how deterministic is the model, measured rather than assumed.

After a run, N of its answered requests (a seeded choice: the same requests for the same N and
the same run) are asked again, straight through their backend (no store lookup), and each new
answer is compared with the stored one. The new answers go to the response store's ``verify``
table, beside the stored answers, never replacing them: the run's answers stay those it scored.
A server can answer the same request otherwise at temperature 0 (llama.cpp reuses the previous
request's cached prefix, so at concurrency 8 two stores differed on 2 of 141 answers): the count
goes into run.json (``verify``), the report, and a warning when it is not 0.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable

from ..artifacts import VerifyRecord
from ..backends import Backend, Request, Response
from ..backends.base import BatchFailures, MediaLoader
from .store import ResponseStore, StoredResponse

log = logging.getLogger(__name__)


def chosen(keys: Iterable[str], n: int) -> list[str]:
    """``n`` of ``keys``: those first in the order of sha256("benchc-verify:" + key). A seeded
    choice without an RNG: the same keys give the same choice, and a larger ``n`` keeps a
    smaller one's requests."""
    return sorted(set(keys), key=lambda k: hashlib.sha256(f"benchc-verify:{k}".encode()).hexdigest())[:max(0, n)]


def verify_answers(asked: dict[str, tuple[Backend, Request]], store: ResponseStore, media: MediaLoader,
                   n: int) -> VerifyRecord:
    """Asks ``n`` of ``asked`` (request key -> the backend that answered it, the request) again
    and counts the answers that differ from the stored ones."""
    keys = chosen(asked, n)
    stored = store.get_many(keys)
    keys = [k for k in keys if k in stored]
    groups: dict[int, tuple[Backend, list[Request]]] = {}
    for key in keys:
        backend, request = asked[key]
        groups.setdefault(id(backend), (backend, []))[1].append(request)
    fresh: dict[str, str | None] = {}  # key -> the new answer's text, or its blob's sha256
    for backend, requests in groups.values():
        fresh.update(_ask_again(backend, requests, store, media))
    differ = [k for k in keys if k in fresh and fresh[k] != _stored_value(stored[k])]
    record = VerifyRecord(requested=n, asked=len(keys), failed=len(keys) - len(fresh), differ=len(differ),
                          keys=differ)
    if differ:
        log.warning("run --verify: %s", record.summary())
    return record


def _ask_again(backend: Backend, requests: list[Request], store: ResponseStore,
               media: MediaLoader) -> dict[str, str | None]:
    """The new answers of ``requests`` (key -> text, or blob sha256), stored in ``verify``; a
    request the backend fails this time is left out."""
    backend.before_requests()
    out: dict[str, str | None] = {}
    for batch in backend.plan_batches(requests, media):
        answers = _answers(backend, batch, media)
        entries = [(r.key, a.kind, a.text, a.data) for r, a in zip(batch, answers) if a is not None]
        blobs = store.put_verify(backend.name, entries)
        for (key, _kind, text, _data), blob in zip(entries, blobs):
            out[key] = blob if blob is not None else text
    return out


def _answers(backend: Backend, batch: list[Request], media: MediaLoader) -> list[Response | None]:
    try:
        return list(backend.run_batch(batch, media))
    except BatchFailures as failed:
        return failed.answers


def _stored_value(answer: StoredResponse) -> str | None:
    return answer.blob if answer.blob is not None else answer.text

"""The commit step every executor strategy shares, and the strategy contract.

A ``Strategy`` decides where batches are answered (this process, a process pool, Ray actors); the
``Ledger`` decides what becomes of them: it claims each batch in the store before it is sent
(``claim``), commits each finished batch's answers to the response store in one transaction
(``commit``), counts failures, waits for requests another run is answering, and words the run's
one error. Every strategy sends only what ``claim`` returns and hands every batch that came back
to ``commit``, so all of them store the same answers under the same keys and resume the same way.

Every answer a backend returned is kept: a batch in which some requests failed (``run_batch``
raises ``BatchFailures``) commits its answers, its failures are counted, and the run goes on with
the next batches (unless the backend stopped: a refused key, a server that answers nothing).
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import ClassVar

from benchc.compiler.errors import BackendError, Problem

from ..backends import Backend, Request, Response
from ..backends.base import BatchFailures, RequestFailure, count_kinds, first_of_each_kind
from .media import MediaSource
from .store import Claims, ResponseStore

log = logging.getLogger(__name__)

RESUME_HINT = "rerun the same command to resume: the answers already stored are not asked again"
WAIT_POLL = 0.5
"""Seconds between looks at the store while another run answers requests this one needs."""
CLAIM_AHEAD = 64
"""Keys claimed per store transaction at least: small batches are claimed several at a time, so
that claiming costs a single-process run next to nothing."""

Advance = Callable[[int], None]
"""Moves the progress bar by a number of answered requests."""
Outcome = list[Response] | BatchFailures
"""What running one batch gave: its answers, or the ``BatchFailures`` of a batch that failed in part."""


class Ledger:
    """One ``execute``'s book: claims each batch before it is sent, commits what came back (every
    answer, also those of a batch in which some requests failed), counts failures, and keeps the
    requests another run was answering to wait for them."""

    def __init__(self, store: ResponseStore, backend_name: str, advance: Advance,
                 claims: Claims | None = None) -> None:
        self.store = store
        self.name = backend_name
        self.advance = advance
        self.claims = claims
        self.failures: list[RequestFailure] = []
        self.stored = 0
        """Answers this run committed."""
        self.elsewhere_answered = 0
        """Requests another run on the store answered while this one needed them."""
        self.elsewhere: list[Request] = []
        """Requests another run was answering when this one came to them."""
        self.stopped = False
        """A backend gave up on its batch: send no further batches."""
        self._batches: list[list[Request]] = []
        self._position: dict[int, int] = {}
        self._status: dict[str, str] = {}  # key -> "mine" | "answered" | "elsewhere", once claimed
        self._claimed_at: dict[str, float] = {}  # key -> time.monotonic() of its claim
        self._stored: list[str] = []  # keys stored since the last claim (their claims go with the next)

    def schedule(self, batches: list[list[Request]]) -> None:
        """The batches about to be sent, in order: ``claim`` claims a few ahead at once."""
        self._batches = batches
        self._position = {id(b): i for i, b in enumerate(batches)}
        self._status = {}
        self._claimed_at = {}

    def claim(self, batch: list[Request]) -> list[Request]:
        """The part of ``batch`` this run should send: not answered yet, not claimed elsewhere."""
        if self.claims is None:
            return batch
        self._forget_stale(self.claims, batch)
        if any(r.key not in self._status for r in batch):
            self._claim_ahead(self.claims, batch)
        statuses = [self._status[r.key] for r in batch]
        if all(s == "mine" for s in statuses):
            return batch
        answered_here = statuses.count("answered")
        if answered_here:
            self.elsewhere_answered += answered_here
            self.advance(answered_here)
        self.elsewhere += [r for r, s in zip(batch, statuses) if s == "elsewhere"]
        return [r for r, s in zip(batch, statuses) if s == "mine"]

    def claimed(self, batches: Iterable[list[Request]]) -> Iterator[list[Request]]:
        """Each batch's part this run should send (``claim``), skipping empty ones, in order,
        until a backend stopped."""
        for batch in batches:
            if self.stopped:
                return
            mine = self.claim(batch)
            if mine:
                yield mine

    def _forget_stale(self, claims: Claims, batch: list[Request]) -> None:
        """Claims made ahead more than half a lease ago are claimed again before their batch is
        sent: a run that stalled (SIGSTOP, a swapped-out machine) past its lease may have lost
        them to another run, which answered them meanwhile (issue 28: 56 of 90 sent twice)."""
        now = time.monotonic()
        for request in batch:
            if self._status.get(request.key) == "mine" and now - self._claimed_at[request.key] > claims.lease / 2:
                del self._status[request.key]

    def _claim_ahead(self, claims: Claims, batch: list[Request]) -> None:
        """Claims ``batch`` and the scheduled batches after it, CLAIM_AHEAD keys at least, in one
        transaction (which also drops the claims of what was stored since the last one)."""
        at = self._position.get(id(batch))
        keys: dict[str, None] = {}
        for upcoming in [batch] if at is None else self._batches[at:]:
            keys.update((r.key, None) for r in upcoming if r.key not in self._status)
            if len(keys) >= CLAIM_AHEAD:
                break
        mine, answered, elsewhere = claims.take(list(keys), self._stored)
        self._stored = []
        for status, group in (("mine", mine), ("answered", answered), ("elsewhere", elsewhere)):
            self._status.update(dict.fromkeys(group, status))
        self._claimed_at.update(dict.fromkeys(mine, time.monotonic()))

    def commit(self, batch: list[Request], result: Outcome) -> None:
        """The commit step: one finished batch, one transaction, its answers stored together or
        not at all. A batch that failed in part (``BatchFailures``) stores the answers it has."""
        if isinstance(result, BatchFailures):
            answers: list[Response | None] = result.answers
            failures = [result.failures[i] for i in sorted(result.failures)]
            self.stopped = self.stopped or result.stopped
        else:
            answers, failures = list(result), []
        if len(answers) != len(batch):
            raise RuntimeError(f"backend {self.name} returned {len(answers)} answers for {len(batch)} requests")
        entries = [(r.key, a.kind, a.text, a.data) for r, a in zip(batch, answers) if a is not None]
        self.store.put_many(self.name, entries)
        self.stored += len(entries)
        if self.claims is not None:
            self._stored += [key for key, *_ in entries]
        for failure in failures:
            log.info("%s", failure.message)
        self.failures += failures
        if self.claims is not None and len(entries) < len(batch):
            self.claims.release(r.key for r, a in zip(batch, answers) if a is None)
        self.advance(len(batch))

    def wait_for_others(self) -> list[Request]:
        """Waits while other runs answer the requests set aside; returns those that came free
        unanswered (their run died, failed them or stopped), which this run then asks itself;
        [] once every one is answered."""
        waiting = {r.key: r for r in self.elsewhere}
        self.elsewhere = []
        if waiting and self.claims is not None:
            log.info("%d request(s) are being answered by another run on this store; waiting for them",
                     len(waiting))
        while waiting and self.claims is not None:
            answered, free = self.claims.settle(list(waiting))
            for key in answered:
                del waiting[key]
            if answered:
                self.elsewhere_answered += len(answered)
                self.advance(len(answered))
            if free:
                runnable = [waiting.pop(key) for key in free]
                self.elsewhere = list(waiting.values())
                return runnable
            if waiting:
                time.sleep(WAIT_POLL)
        return []

    def error(self, backend: Backend, label: str, asked: int) -> BackendError | None:
        """The run's one message when requests failed: how many, by class, an example of each,
        and that a rerun resumes."""
        if not self.failures:
            return None
        unsent = asked - self.stored - self.elsewhere_answered - len(self.failures)
        summary = (f"{label}: {len(self.failures)} of {asked} requests failed: {count_kinds(self.failures)}; "
                   f"the {self.stored} answers that came back are stored"
                   + (f", {unsent} request(s) were not sent" if unsent > 0 else ""))
        examples = first_of_each_kind(self.failures)
        lines = [summary, *(f"  {f.kind}, e.g. {f.message}" for f in examples[:6])]
        hints = [backend.failure_hint(self.failures, self.stored + self.elsewhere_answered),
                 *(f.hint for f in examples[:6]), RESUME_HINT]
        # one hint line each (Problem renders the first "hint:" prefix)
        hint = "\n  hint: ".join(dict.fromkeys(h for h in hints if h))
        return BackendError(Problem("\n".join(lines), hint=hint))


class Strategy(ABC):
    """One way of answering a stage's planned batches on ``workers`` workers.

    ``run`` sends, in order, the part of each batch that ``ledger.claim`` returns (nothing once
    ``ledger.stopped``), and hands every batch that came back to ``ledger.commit`` the moment it
    finishes, so a kill loses only the batches in flight. On Ctrl-C or an error it cancels what is
    queued, lets the running batches finish, commits those that answered (wholly or in part), and
    re-raises. ``execute`` looks strategies up by ``--executor`` name (``executor.STRATEGIES``)."""

    takes_address: ClassVar[bool] = False
    """Whether it runs somewhere that ``--ray-address`` names (only Ray does)."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        self.workers = workers
        self.address = address

    @classmethod
    def check(cls) -> None:
        """Fails (a ``RunError``) when this strategy cannot run here, e.g. an optional dependency
        is missing; called when the choice is made, before anything is compiled or run. Most
        strategies need nothing beyond benchc's own dependencies."""
        return None

    @abstractmethod
    def run(self, backend: Backend, batches: list[list[Request]], ledger: Ledger, media: MediaSource) -> None:
        """Answer ``batches`` (already ``ledger.schedule``d) and commit each through ``ledger``."""

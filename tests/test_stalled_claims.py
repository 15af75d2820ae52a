"""A run that stalls past its claims' lease sends none of the requests another run answered
meanwhile (issue 28 item 3: a SIGSTOPped run re-sent up to 64 keys it had claimed ahead, 56 of 90
answered twice). The stall is made by stopping the run's lease renewal, as SIGSTOP does."""

from __future__ import annotations

import time
from pathlib import Path

from benchc.runtime.backends import Request
from benchc.runtime.run.ledger import Ledger
from benchc.runtime.run.store import ResponseStore

LEASE = 0.4


def _batches(n: int, size: int) -> list[list[Request]]:
    return [[Request(f"{b:02d}{i:062d}", "generate", f"q{b}.{i}") for i in range(size)] for b in range(n)]


def test_a_stalled_run_claims_again_before_sending_what_it_claimed_ahead(tmp_path: Path) -> None:
    store, other = ResponseStore(tmp_path / "store"), ResponseStore(tmp_path / "store")
    try:
        stalled = store.claims(lease=LEASE)
        ledger = Ledger(store, "echo", lambda n: None, stalled)
        batches = _batches(4, 3)
        ledger.schedule(batches)
        assert ledger.claim(batches[0]) == batches[0]  # claims every batch ahead (12 keys < CLAIM_AHEAD)
        stalled._stop.set()  # stopped: its claims are no longer renewed
        time.sleep(LEASE * 1.5)
        rival = other.claims(lease=60)
        later = [r.key for batch in batches[1:] for r in batch]
        assert rival.take(later)[0] == later  # the lapsed claims are free: the other run takes them
        other.put_many("echo", [(key, "text", "answered elsewhere", None) for key in later[:6]])
        sent = [ledger.claim(batch) for batch in batches[1:]]
        assert sent == [[], [], []]  # two batches answered elsewhere, one held by the live rival
        assert ledger.elsewhere_answered == 6 and [r.key for r in ledger.elsewhere] == later[6:]
        rival.close()
    finally:
        store.close()
        other.close()


def test_a_run_that_keeps_its_lease_sends_what_it_claimed(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "store")
    try:
        claims = store.claims(lease=60)
        ledger = Ledger(store, "echo", lambda n: None, claims)
        batches = _batches(3, 2)
        ledger.schedule(batches)
        assert [ledger.claim(b) for b in batches] == batches
        claims.close()
    finally:
        store.close()

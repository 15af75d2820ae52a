"""Every answer a server returned is kept (issue 13): against a local fault-injecting imitation of
an OpenAI-compatible server (http.server on 127.0.0.1, the pattern of test_openai_backend.py).

* a batch in which one request fails stores the others; the run ends with one message counting
  the failures by class, and the rerun asks only the failed request;
* a 200 whose body is cut short (or is not JSON) is retried like a 5xx;
* 30% seeded faults (429, 500, timeouts, truncated JSON, dropped connections) on 40 requests:
  at most three reruns store every answer, and every answer the server sent is in the store (the
  server counts what it sent);
* two ``benchc run``s on one store send each request once (claims in the store), and a dead
  run's claims do not hold anyone up;
* an answer that holds the API key is refused: not stored, counted, and never printed.

The server's ``sent`` counter counts complete 200 answers only: a stalled request gets no answer
(the client has given up by then), so "sent" is exactly what a client could have stored.
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchc import api
from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Request, make_backend
from benchc.runtime.backends import openai_compat
from benchc.runtime.run.executor import execute
from benchc.runtime.run.store import ResponseStore
from conftest import ROOT
from specfiles import TABLE, text_table_spec, write_mini
from support.local_server import LocalServer, QuietHandler

KEY_ENV = "BENCHC_TEST_PAID_KEY"
KEY = "sk-paid-" + secrets.token_hex(16)
MODEL = "paid-model"
SEED = 1
"""Picked so that every kind of fault is met, two requests meet a fault on all three attempts of
the first run (so it fails them, and keeps the rest), and the first rerun finishes. (The draws
read each request's sampling seed: identity recipes 2 moved them, so the seed was picked again.)"""


# -- the imitation server -----------------------------------------------------------------------

Decide = Callable[[str, int], str]
"""(request identity, attempt number from 0) -> an action: ok, 429, 500, timeout, truncated, drop,
echo-key."""


class FaultServer(LocalServer):
    """Answers ``/v1/models`` and ``/v1/chat/completions``; ``decide`` picks each chat's action.
    A request's identity is its prompt and seed (distinct for every request key here)."""

    def __init__(self, decide: Decide | None = None, latency: float = 0.0, stall: float = 2.5) -> None:
        self.decide: Decide = decide or (lambda ident, attempt: "ok")
        self.latency = latency
        self.stall = stall
        self.asked: Counter[str] = Counter()  # attempts per identity
        self.sent: Counter[str] = Counter()  # complete answers per identity
        self.actions: Counter[str] = Counter()
        self.lock = threading.Lock()
        super().__init__(_Handler)


class _Handler(QuietHandler):
    def _send(self, status: int, body: bytes) -> bool:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            return True
        except OSError:
            return False

    def _drop(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def do_GET(self) -> None:
        models = [{"id": MODEL, "object": "model", "root": "/weights/paid"}]
        self._send(200, json.dumps({"object": "list", "data": models}).encode())

    def do_POST(self) -> None:
        fake = self.server.fake
        payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        content = payload["messages"][-1]["content"]
        ident = f"{content}|{payload.get('seed')}"
        with fake.lock:
            attempt = fake.asked[ident]
            fake.asked[ident] += 1
        action = fake.decide(ident, attempt)
        with fake.lock:
            fake.actions[action] += 1
        if fake.latency:
            time.sleep(fake.latency)
        if action == "drop":
            return self._drop()
        if action == "timeout":  # longer than the client waits; then no answer at all
            fake.release.wait(fake.stall)
            return self._drop()
        if action in ("429", "500"):
            return self._send(int(action), json.dumps({"error": {"message": f"injected {action}"}}).encode())
        text = f"echo {content}"
        if action == "echo-key":
            text = f"your key is {self.headers.get('Authorization', '').removeprefix('Bearer ')}"
        body = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": MODEL,
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}]}).encode()
        if action == "truncated":
            self._send(200, body[: len(body) // 2])
            return
        if action == "html":
            self._send(200, b"<html>502 Bad Gateway</html>")
            return
        if self._send(200, body) and action == "ok":
            with fake.lock:
                fake.sent[ident] += 1


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backoff of milliseconds, for backends that a run builds itself."""
    monkeypatch.setattr(openai_compat, "BACKOFF_BASE", 0.001)


def model(server: FaultServer, options: str = "") -> str:
    return f"openai:{MODEL},base_url={server.url},api_key_env={KEY_ENV}" + (f",{options}" if options else "")


def backend(server: FaultServer, options: str = "") -> Any:
    built = make_backend(model(server, options), Generation(), "generate")
    built.sleep = lambda seconds, stop: None  # retries do not wait
    return built


def requests(n: int) -> list[Request]:
    return [Request(f"{i:064x}", "generate", f"hello {i}") for i in range(n)]


def no_media(kind: str, sha: str) -> bytes:
    raise AssertionError("no media expected")


# -- a manifest of 40 requests ------------------------------------------------------------------

SPEC = text_table_spec("paid", '["clean", "leet_letters"]', n=20, rest="""\
[prompt]
template = "Repeat: {{{{ text }}}}"

[generation]
max_new_tokens = 16
n = 1
seed = 7

[[stage]]
id = "answer"
task = "generate"
backend = "model"
""")
ITEMS = 40


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paid")
    spec = write_mini(root, text=SPEC.format(table=TABLE))
    return api.compile(spec, root / "m", cache_dir=root / "c", store_dir=root / "cs", progress=False).manifest_dir


def stored_texts(store: Path) -> dict[str, str]:
    with sqlite3.connect(store / "responses.sqlite") as con:
        return dict(con.execute("SELECT key, text FROM responses").fetchall())


# -- 1. a batch that fails in part keeps its answers --------------------------------------------


def test_a_batch_with_one_failing_request_stores_the_others(tmp_path: Path, key_env: None) -> None:
    broken = {"hello 3"}
    server = FaultServer(lambda ident, attempt: "500" if ident.split("|")[0] in broken else "ok")
    store = ResponseStore(tmp_path / "store")
    try:
        oa = backend(server, "concurrency=3,batch_size=8,max_retries=1")
        asked = requests(8)
        with pytest.raises(BackendError) as caught:
            execute(oa, asked, store, no_media, 1, "answer", False)  # type: ignore[arg-type]
        message = caught.value.render()
        assert "answer: 1 of 8 requests failed: 1 x HTTP 500; the 7 answers that came back are stored" in message
        assert "HTTP 500, e.g. openai: request key 000000000000" in message  # names the request
        assert "rerun the same command to resume" in message and "base_url" not in message
        assert len(caught.value.problems) == 1
        keys = [r.key for r in asked]
        assert sorted(store.get_many(keys)) == [k for i, k in enumerate(keys) if i != 3]
        assert sum(server.sent.values()) == 7 and store.count() == 7  # nothing the server sent was lost

        broken.clear()  # the rerun asks only what is missing
        missing = store.missing(keys)
        assert missing == [keys[3]]
        assert execute(oa, [r for r in asked if r.key in missing], store, no_media, 1, "answer", False) == 1
        assert store.count() == 8 and sum(server.sent.values()) == 8
        assert store.get_many([keys[3]])[keys[3]].text == "echo hello 3"
    finally:
        store.close()
        server.close()


def test_a_server_that_answers_nothing_stops_the_run_and_only_then_the_hint_names_base_url(
        tmp_path: Path, key_env: None) -> None:
    server = FaultServer(lambda ident, attempt: "ok")
    store = ResponseStore(tmp_path / "store")
    try:
        oa = backend(server, "concurrency=2,batch_size=4,max_retries=1")
        server.decide = lambda ident, attempt: "drop"
        with pytest.raises(BackendError) as caught:
            execute(oa, requests(12), store, no_media, 1, "answer", False)  # type: ignore[arg-type]
        message = caught.value.render()
        # three failures in a row and nothing got through: the run stops, and the hint names base_url
        # (the first batch's fourth request may be in flight when the third fails)
        assert re.search(r"answer: ([34]) of 12 requests failed: \1 x connection failed; the 0 answers that came "
                         r"back are stored, \d request\(s\) were not sent", message), message
        assert f"is the server at {server.url} up" in message
        assert len(server.asked) <= 4 and store.count() == 0  # the first batch only

        server.decide = lambda ident, attempt: "drop" if ident.startswith("hello 1|") else "ok"
        oa = backend(server, "concurrency=2,batch_size=4,max_retries=1")
        with pytest.raises(BackendError) as caught:
            execute(oa, requests(12), store, no_media, 1, "answer", False)  # type: ignore[arg-type]
        assert "1 x connection failed" in caught.value.render() and "base_url" not in caught.value.render()
        assert store.count() == 11
    finally:
        store.close()
        server.close()


# -- 2. a cut or non-JSON 200 is retried --------------------------------------------------------


def test_truncated_and_non_json_bodies_are_retried(key_env: None) -> None:
    server = FaultServer(lambda ident, attempt: ("truncated", "html", "ok")[min(attempt, 2)])
    try:
        oa = backend(server, "concurrency=4,max_retries=2")
        answers = oa.run_batch(requests(6), no_media)
        assert [a.text for a in answers] == [f"echo hello {i}" for i in range(6)]
        assert set(server.asked.values()) == {3} and server.actions["truncated"] == 6

        # within the retry budget only: then it is a failure of class "truncated body"
        server.decide = lambda ident, attempt: "truncated"
        with pytest.raises(BackendError, match=r"no answer after 2 attempt\(s\); last: the server's answer "
                                               r"is cut short or not JSON") as caught:
            backend(server, "max_retries=1").run_batch(requests(1), no_media)
        assert "1 x truncated body" in str(caught.value) and "base_url" not in str(caught.value)
    finally:
        server.close()


# -- 3. 30% faults: every answer the server sent ends in the store ------------------------------

FAULTS = ("429", "500", "timeout", "truncated", "drop")


def seeded_faults(rate: float) -> Decide:
    """A fault for ``rate`` of all attempts, drawn from (seed, request, attempt): the same
    request meets the same faults in every session, whatever order the threads ask in."""

    def decide(ident: str, attempt: int) -> str:
        rng = random.Random(f"{SEED}|{ident}|{attempt}")
        return rng.choice(FAULTS) if rng.random() < rate else "ok"

    return decide


def test_thirty_percent_faults_lose_no_answer_and_three_reruns_finish(manifest: Path, tmp_path: Path,
                                                                      key_env: None, fast_backoff: None) -> None:
    server = FaultServer(seeded_faults(0.3), stall=2.0)
    store = tmp_path / "store"
    options = "concurrency=8,batch_size=16,max_retries=2,timeout=1"
    failures: list[str] = []
    try:
        for attempt in range(4):  # the first run and at most three reruns
            try:
                [outcome] = api.run(manifest, tmp_path / f"run{attempt}", model=model(server, options),
                                    cache_dir=manifest.parent / "c", store_dir=store, progress=False)
                break
            except BackendError as exc:
                failures.append(exc.render())
                # whatever failed, every answer the server sent is stored
                assert sum(server.sent.values()) == len(stored_texts(store))
        else:
            pytest.fail(f"not done after 3 reruns: {failures}")
        assert outcome.requests == ITEMS
        texts = stored_texts(store)
        sent = sum(server.sent.values())
        assert len(texts) == ITEMS and sent == ITEMS, (sent, len(texts), failures)  # none sent twice or lost
        assert set(server.sent.values()) == {1}
        assert all(t.startswith("echo Repeat: ") for t in texts.values())
        assert all(server.actions[f] > 0 for f in FAULTS), server.actions  # every kind of fault was met
        faulty = sum(server.actions[f] for f in FAULTS) / sum(server.actions.values())
        assert 0.2 < faulty < 0.4
        # the seed makes the first run fail some requests: its message counts them by class
        assert len(failures) == 1, failures  # the seed's doing (see SEED)
        assert f"answer (openai:{MODEL}," in failures[0] and f"2 of {ITEMS} requests failed: " in failures[0]
        assert "the 38 answers that came back are stored" in failures[0]
        assert "rerun the same command to resume" in failures[0]
        assert "base_url" not in failures[0].split("hint:", 1)[1]  # (the label names the backend's base_url)
        rows = pl.read_parquet(tmp_path / f"run{len(failures)}" / "responses.parquet")
        assert rows.height == ITEMS and rows["text"].null_count() == 0
    finally:
        server.close()


# -- 4. two runs on one store ask each request once ---------------------------------------------


def _env() -> dict[str, str]:
    tests = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))
    return {**os.environ, KEY_ENV: KEY, "PYTHONPATH": path}


def _run_command(manifest: Path, out: Path, store: Path, server: FaultServer, options: str) -> list[str]:
    """`benchc run` of the manifest into ``out`` on ``store``, asking ``server``."""
    return [sys.executable, "-m", "benchc.cli", "run", str(manifest), "-o", str(out), "--cache",
            str(manifest.parent / "c"), "--store", str(store), "--model", model(server, options)]


def test_two_runs_on_one_store_send_each_request_once(manifest: Path, tmp_path: Path) -> None:
    server = FaultServer(latency=0.1)  # a run alone would take ~2 s: the two overlap
    store = tmp_path / "store"
    try:
        def start(name: str) -> subprocess.Popen[str]:
            command = _run_command(manifest, tmp_path / name, store, server, "concurrency=2,batch_size=4")
            return subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)

        runs = [start("a"), start("b")]
        outputs = [run.communicate(timeout=300) for run in runs]
        assert [run.returncode for run in runs] == [0, 0], outputs
        assert len(server.asked) == ITEMS and set(server.asked.values()) == {1}, server.asked.most_common(3)
        assert sum(server.sent.values()) == ITEMS
        a, b = (pl.read_parquet(tmp_path / n / "responses.parquet").sort("item_id") for n in "ab")
        assert a.height == b.height == ITEMS and a["text"].to_list() == b["text"].to_list()
        ran = [int(re.search(r"\((\d+) cached, (\d+) run\)", out)[2]) for out, _ in outputs]
        assert sum(ran) == ITEMS  # the two shared the work, each says how much it asked
        with sqlite3.connect(store / "responses.sqlite") as con:
            assert con.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0  # nothing left held
    finally:
        server.close()


def test_claims_lapse_when_their_run_is_gone_or_its_lease_ends(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "store")
    other = ResponseStore(tmp_path / "store")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    try:
        mine, theirs = store.claims(lease=60), other.claims(lease=60)
        assert theirs.take(["k1", "k2"]) == (["k1", "k2"], [], [])
        assert mine.take(["k1", "k2", "k3"]) == (["k3"], [], ["k1", "k2"])  # a live run's claims are left to it
        other.put_many("x", [("k1", "text", "one", None)])
        theirs.release(["k2"])  # it failed k2
        assert mine.settle(["k1", "k2"]) == (["k1"], ["k2"])
        assert mine.take(["k1", "k2"]) == (["k2"], ["k1"], [])
        with sqlite3.connect(tmp_path / "store" / "responses.sqlite") as con:
            gone = f"{socket.gethostname()}:{dead.stdout.strip()}:x"  # this machine, a process that has ended
            con.execute("INSERT INTO claims VALUES ('k4', ?, ?)", (gone, time.time() + 60))
            con.execute("INSERT INTO claims VALUES ('k5', 'elsewhere:1:x', ?)", (time.time() - 1,))
            con.execute("INSERT INTO claims VALUES ('k6', 'elsewhere:1:x', ?)", (time.time() + 60,))
        # a killed process of this machine holds nothing; an expired lease neither; a live one does
        assert mine.take(["k4", "k5", "k6"]) == (["k4", "k5"], [], ["k6"])
        mine.close()
        theirs.close()
        with sqlite3.connect(tmp_path / "store" / "responses.sqlite") as con:
            assert con.execute("SELECT key FROM claims").fetchall() == [("k6",)]
    finally:
        store.close()
        other.close()


def test_claims_are_renewed_while_their_run_lives(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "store")
    try:
        claims = store.claims(lease=0.4)
        claims.take(["k"])
        time.sleep(1.0)  # two and a half leases: renewed every 0.1 s
        [(expires,)] = store.db.execute("SELECT expires FROM claims").fetchall()
        assert expires > time.time()
        claims.close()
        assert store.db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0
    finally:
        store.close()


# -- 5. an answer holding the key is refused ----------------------------------------------------


def test_an_echoed_key_is_not_stored_and_is_reported_without_the_key(manifest: Path, tmp_path: Path) -> None:
    echoing = [True]  # the first request to arrive, whichever it is, and no other
    lock = threading.Lock()

    def decide(ident: str, attempt: int) -> str:
        with lock:
            if echoing:
                echoing.clear()
                return "echo-key"
        return "ok"

    server = FaultServer(decide)
    store = tmp_path / "store"
    try:
        def run(name: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(_run_command(manifest, tmp_path / name, store, server, "concurrency=4"),
                                  cwd=ROOT, env={**_env(), "OPENAI_LOG": "debug"}, capture_output=True, text=True,
                                  timeout=300)

        failed = run("first")
        assert failed.returncode == 2, failed.stderr
        assert f"1 of {ITEMS} requests failed: 1 x echoed API key" in failed.stderr
        assert "the server echoed the API key" in failed.stderr and "Traceback" not in failed.stderr
        assert len(stored_texts(store)) == ITEMS - 1
        done = run("second")  # the server no longer echoes: the rerun asks the one request again
        assert done.returncode == 0, done.stderr
        assert f"({ITEMS - 1} cached, 1 run)" in done.stdout
        texts = stored_texts(store)
        assert len(texts) == ITEMS and all(t.startswith("echo Repeat: ") for t in texts.values())
        pieces = (KEY, KEY[:16], KEY[-16:])
        outputs = [failed.stdout, failed.stderr, done.stdout, done.stderr]
        assert not [text for text in outputs if any(piece in text for piece in pieces)]
        assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []
    finally:
        server.close()


def test_a_short_key_is_not_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key under 8 characters would match answers by chance: only longer ones are refused."""
    monkeypatch.setenv(KEY_ENV, "abc")
    server = FaultServer(lambda ident, attempt: "echo-key")
    try:
        [answer] = backend(server).run_batch(requests(1), no_media)
        assert answer.text == "your key is abc"
    finally:
        server.close()


def test_a_partial_batch_crosses_processes_as_itself() -> None:
    """BatchFailures travels from a pool worker or a Ray actor (pickled) with its answers."""
    import pickle

    from benchc.runtime.backends.base import BatchFailures, RequestFailure, Response

    failed = BatchFailures([Response("text", text="a"), None, None],
                           {1: RequestFailure("HTTP 500", "m", "h")}, stopped=True)
    back = pickle.loads(pickle.dumps(failed))
    assert isinstance(back, BackendError) and back.answers == failed.answers and back.failures == failed.failures
    assert back.stopped and str(back) == str(failed)
    assert str(failed).startswith("1 of 3 requests failed (1 x HTTP 500); 1 answered")

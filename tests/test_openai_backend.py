"""The ``openai`` backend against a local imitation of an OpenAI-compatible server.

The server (http.server in a thread, on 127.0.0.1) answers ``/v1/models`` and
``/v1/chat/completions``, records every request, and can be scripted to answer 429/500, stall,
drop the connection or send malformed JSON. Retries never really sleep: the backend's ``sleep``
is replaced by a recorder, and the rate limiter is checked on its own schedule with a frozen
clock, so no assertion depends on wall-clock timing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import random
import secrets
import socket
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Request, make_backend
from benchc.runtime.backends.openai_compat import RateLimiter, parse_rate, request_seed, retry_after
from conftest import cli
from specfiles import TABLE, text_table_spec, write_mini
from support.local_server import LocalServer, QuietHandler

KEY_ENV = "BENCHC_TEST_OPENAI_KEY"
KEY = "sk-test-" + secrets.token_hex(16)
MODEL = "test-model"


# -- the imitation server -----------------------------------------------------------------------


class FakeServer(LocalServer):
    """Scripted answers: ``plan`` is consumed one action per chat request, then ``default``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.plan: list[tuple] = []
        self.models_action: tuple | None = None
        self.props: dict[str, Any] | None = None  # llama.cpp's GET /props, when set
        self.random = False  # answers end with a random number (a server that is not deterministic)
        self.cond = threading.Condition()
        self.in_flight = self.max_in_flight = self.arrived = 0
        self.gate: tuple[int, int] | None = None  # (hold until this many in flight, or all of this many arrived)
        super().__init__(_Handler)

    def chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def completions(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/v1/completions")]

    def gets(self) -> list[str]:
        return [r["path"] for r in self.requests if r["payload"] is None]

    def next_action(self) -> tuple:
        with self.cond:
            return self.plan.pop(0) if self.plan else ("echo",)


class _Handler(QuietHandler):
    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def _record(self, payload: Any) -> None:
        fake = self.server.fake
        with fake.cond:
            fake.requests.append({"path": self.path, "payload": payload, "auth": self.headers.get("Authorization")})

    def do_GET(self) -> None:
        fake = self.server.fake
        self._record(None)
        if self.path.endswith("/props"):
            return self._send(200 if fake.props else 404, json.dumps(fake.props or {"error": "not found"}).encode())
        if fake.models_action is not None:
            _, status, body = fake.models_action
            return self._send(status, json.dumps(body).encode())
        # `created` changes on every call, as vLLM's does: it must not reach the fingerprint.
        models = [{"id": MODEL, "object": "model", "root": "/weights/test-model", "owned_by": "vllm",
                   "created": len(fake.requests)},
                  {"id": "other-model", "object": "model"}]
        self._send(200, json.dumps({"object": "list", "data": models}).encode())

    def do_POST(self) -> None:
        fake = self.server.fake
        payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self._record(payload)
        with fake.cond:
            fake.in_flight += 1
            fake.arrived += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            fake.cond.notify_all()
            if fake.gate:
                width, total = fake.gate
                fake.cond.wait_for(lambda: fake.in_flight >= width or fake.arrived >= total, timeout=5)
            # Leave before answering: a client thread sends its next request only after this answer.
            fake.in_flight -= 1
        action = fake.next_action()
        kind = action[0]
        if kind == "drop":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if kind == "stall":
            fake.release.wait(action[1])
            kind = "echo"
        if kind == "status":
            _, status, body, headers = action
            return self._send(status, body if isinstance(body, bytes) else json.dumps(body).encode(), headers)
        if kind == "raw":
            return self._send(200, action[1])
        text = _echo(payload) + (f" {random.random()}" if fake.random else "")
        if self.path.endswith("/v1/completions"):  # the answer of endpoint=completions
            choice = {"index": 0, "finish_reason": "stop", "text": action[1] if kind == "text" else f"  {text}\n"}
            return self._send(200, json.dumps({"object": "text_completion", "choices": [choice]}).encode())
        message = action[1] if kind == "message" else {"role": "assistant", "content": f"  {text}\n"}
        finish = action[2] if kind == "message" else "stop"
        body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model-2026-01",
                "choices": [{"index": 0, "finish_reason": finish, "message": message}]}
        self._send(200, json.dumps(body).encode())


def _echo(payload: dict[str, Any]) -> str:
    if "prompt" in payload:
        return f"echo {payload['prompt']}"
    content = payload["messages"][-1]["content"]
    if isinstance(content, str):
        return f"echo {content}"
    texts = [p["text"] for p in content if p["type"] == "text"]
    images = sum(p["type"] == "image_url" for p in content)
    return f"echo {' '.join(texts)} [{images} image(s)]"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def backend(server: FakeServer, options: str = "", generation: Generation | None = None) -> Any:
    spec = f"openai:{MODEL},base_url={server.url},api_key_env={KEY_ENV}" + (f",{options}" if options else "")
    built = make_backend(spec, generation or Generation(), "generate")
    # A fake clock: waits are recorded and move the limiter's clock instead of sleeping.
    now = [0.0]
    interval = built.limiter.interval
    built.limiter = RateLimiter(1 / interval if interval else None, clock=lambda: now[0])
    built.delays = []

    def sleep(seconds: float, stop: threading.Event) -> None:
        built.delays.append(round(seconds, 6))
        now[0] += seconds

    built.sleep = sleep
    return built


def no_media(kind: str, sha: str) -> bytes:
    raise AssertionError("no media expected")


PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/"
                       "iZk9HQAAAABJRU5ErkJggg==")


def requests(n: int, prompt: str = "hello") -> list[Request]:
    return [Request(f"{i:064x}", "generate", f"{prompt} {i}") for i in range(n)]


# -- requests and answers -----------------------------------------------------------------------


def test_answers_and_payloads(server: FakeServer, key_env: None) -> None:
    generation = Generation(temperature=0.7, max_new_tokens=17, top_p=0.9, seed=5)
    oa = backend(server, generation=generation)
    text_only = Request("a" * 64, "generate", "What is shown?", system="Be brief.")
    with_image = Request("b" * 64, "generate", "Describe it.", media=(("image", "c" * 64),), sample=0)
    second_sample = Request("d" * 64, "generate", "Describe it.", media=(("image", "c" * 64),), sample=1)
    loads: list[tuple[str, str]] = []

    def load(kind: str, sha: str) -> bytes:
        loads.append((kind, sha))
        return PNG

    answers = oa.run_batch([text_only, with_image, second_sample], load)
    assert [a.text for a in answers] == ["echo What is shown?", "echo Describe it. [1 image(s)]",
                                         "echo Describe it. [1 image(s)]"]
    assert all(a.kind == "text" for a in answers)
    assert loads == [("image", "c" * 64)]  # read once for both samples
    chats = server.chats()
    assert len(chats) == 3
    first = next(r["payload"] for r in chats if r["payload"]["messages"][0]["role"] == "system")
    assert first["messages"] == [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "What is shown?"}]
    assert first["model"] == MODEL and first["temperature"] == 0.7 and first["max_tokens"] == 17
    assert first["top_p"] == 0.9 and first["seed"] == request_seed(text_only, 5)
    images = [r["payload"] for r in chats if isinstance(r["payload"]["messages"][-1]["content"], list)]
    for payload in images:
        image, text = payload["messages"][-1]["content"]
        assert image["type"] == "image_url" and text == {"type": "text", "text": "Describe it."}
        prefix = "data:image/png;base64,"
        assert image["image_url"]["url"].startswith(prefix)
        assert base64.b64decode(image["image_url"]["url"][len(prefix):]) == PNG
        assert "detail" not in image["image_url"]
    # n samples are separate requests with their own (deterministic) seeds
    assert {p["seed"] for p in images} == {request_seed(with_image, 5), request_seed(second_sample, 5)}
    assert request_seed(with_image, 5) != request_seed(second_sample, 5)
    assert all(r["auth"] == f"Bearer {KEY}" for r in server.requests)


def test_a_requests_own_seed_replaces_the_base() -> None:
    plain = Request("k" * 64, "generate", "x")
    assert request_seed(plain, 1) != request_seed(plain, 2) and request_seed(plain, None) == request_seed(plain, 0)
    if "seed" in Request.__dataclass_fields__:  # compile-time model steps give requests their own seed
        own = Request("k" * 64, "generate", "x", seed=9)
        assert request_seed(own, 1) == request_seed(own, 2) == request_seed(plain, 9)
    assert all(0 <= request_seed(Request("k", "generate", str(i)), 0) < 2 ** 31 for i in range(50))


def test_payload_options(server: FakeServer, key_env: None) -> None:
    oa = backend(server, "send_seed=false,max_tokens_field=max_completion_tokens,image_detail=low")
    oa.run_batch([Request("k" * 64, "generate", "x", media=(("image", "s" * 64),))], lambda kind, sha: PNG)
    [payload] = [r["payload"] for r in server.chats()]
    assert "seed" not in payload and "max_tokens" not in payload and "top_p" not in payload
    assert payload["max_completion_tokens"] == 64 and payload["temperature"] == 0.0
    assert payload["messages"][-1]["content"][0]["image_url"]["detail"] == "low"


def test_the_fingerprint_needs_no_server_and_holds_settings_never_the_key(server: FakeServer,
                                                                           key_env: None) -> None:
    oa = backend(server)
    fp = oa.fingerprint()
    assert fp["base_url"] == server.url and fp["model"] == MODEL and fp["revision"] is None
    assert fp["api"] == "chat.completions" and "served_model" not in fp
    assert fp["generation"]["temperature"] == 0.0 and fp["generation"]["max_new_tokens"] == 64
    assert KEY not in json.dumps(fp) and KEY_ENV not in json.dumps(fp)
    assert backend(server, "concurrency=2,rate=5/s,timeout=3,max_retries=1").fingerprint() == fp
    assert backend(server, "check_model=false").fingerprint() == fp  # the check never moves a key
    assert backend(server, generation=Generation(temperature=0.5)).fingerprint() != fp
    assert backend(server, "send_seed=false").fingerprint() != fp
    assert backend(server, "revision=sha256-abc").fingerprint() == {**fp, "revision": "sha256-abc"}
    assert backend(server, "endpoint=completions").fingerprint() == {**fp, "api": "completions"}
    assert server.requests == []  # building a backend and its fingerprint ask the server nothing


def test_the_server_is_asked_about_its_model_once_when_a_request_is_sent(
        server: FakeServer, key_env: None, caplog: pytest.LogCaptureFixture) -> None:
    from benchc.runtime.run.settings import backend_for

    oa = backend(server)
    assert oa.served() is None
    oa.run_batch(requests(2), no_media)
    backend_for(oa, Generation(temperature=0.5)).run_batch(requests(1), no_media)  # a setting's copy shares it
    assert server.gets() == ["/v1/models"]
    # every stable field of the /models record (vLLM's `created` changes on every call)
    assert oa.served() == {"model": {"id": MODEL, "object": "model", "root": "/weights/test-model",
                                     "owned_by": "vllm"}}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # root names the weights


def test_an_alias_without_a_revision_is_warned_about_once(server: FakeServer, key_env: None,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """llama-cpp-python's server says only {"id": "gemma", "owned_by": "me"}: nothing names the weights."""
    alias = {"id": MODEL, "object": "model", "owned_by": "me", "permissions": []}
    server.models_action = ("status", 200, {"object": "list", "data": [alias]})
    oa = backend(server, "concurrency=1")
    with caplog.at_level(logging.WARNING):
        oa.run_batch(requests(2), no_media)
        oa.run_batch(requests(2), no_media)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"answers are keyed by base_url and the alias '{MODEL}'" in warnings[0]
    assert "declare revision=SHA256-or-tag" in warnings[0]
    assert oa.served() == {"model": {"id": MODEL, "object": "model", "owned_by": "me"}}
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        backend(server, "revision=v1").run_batch(requests(1), no_media)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_llama_cpp_servers_props_are_recorded(server: FakeServer, key_env: None) -> None:
    server.models_action = ("status", 200, {"object": "list", "data": [
        {"id": MODEL, "object": "model", "created": 1, "owned_by": "llamacpp", "meta": {"n_params": 268098176}}]})
    server.props = {"model_path": "/models/gemma-3-270m.gguf", "build_info": "b6000-abc", "total_slots": 1,
                    "default_generation_settings": {"n_ctx": 4096, "temperature": 0.8},
                    "chat_template": "{{ messages }}"}
    oa = backend(server)
    oa.run_batch(requests(1), no_media)
    assert server.gets() == ["/v1/models", "/props"]
    assert oa.served() == {
        "model": {"id": MODEL, "object": "model", "owned_by": "llamacpp", "meta": {"n_params": 268098176}},
        "props": {"model_path": "/models/gemma-3-270m.gguf", "build_info": "b6000-abc", "total_slots": 1,
                  "n_ctx": 4096, "chat_template_sha256": hashlib.sha256(b"{{ messages }}").hexdigest()}}


def test_empty_filtered_and_refused_answers_are_recorded_empty(server: FakeServer, key_env: None,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    server.plan = [("message", {"role": "assistant", "content": None}, "content_filter"),
                   ("message", {"role": "assistant", "content": None, "refusal": "I can't."}, "stop"),
                   ("message", {"role": "assistant", "content": "   "}, "stop"),
                   ("message", {"role": "assistant", "content": [{"type": "text", "text": "two "},
                                                                 {"type": "text", "text": "parts"}]}, "length")]
    oa = backend(server, "concurrency=1")
    with caplog.at_level(logging.WARNING):
        answers = oa.run_batch(requests(4), no_media)
    assert [a.text for a in answers] == ["", "", "", "two parts"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert "content_filter" in warnings[0] and "refusal: \"I can't.\"" in warnings[1] and "no text" in warnings[2]
    assert all("recorded as an empty answer" in w and "key 000000000000" in w for w in warnings)


# -- failing before any request -----------------------------------------------------------------


def test_missing_key_fails_before_any_request(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(BackendError) as caught:
        backend(server)
    assert len(caught.value.problems) == 1
    assert KEY_ENV in str(caught.value) and "api_key_env" in str(caught.value)
    assert server.requests == []


def test_keyless_local_server(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    oa = make_backend(f"openai:{MODEL},base_url={server.url},api_key_env=none", Generation(), "generate")
    assert oa.run_batch(requests(1), no_media)[0].text == "echo hello 0"


@pytest.mark.parametrize("options,fragment", [
    ("", "no model given"),
    ("openai:m,base_url=ftp://x", "base_url"),
    ("openai:m,base_url=http://user:pw@localhost/v1", "must not hold credentials"),
    ("openai:m,rate=fast", "N/s or N/min"),
    ("openai:m,concurrency=0", "concurrency"),
    ("openai:m,timeout=-1", "timeout"),
    ("openai:m,image_detail=huge", "image_detail"),
    ("openai:m,api_key=sk-oops", "unknown option"),
    ("openai:m,api_key_env=sk-proj-AbC123", "must name an environment variable"),
    ("openai:m,base_url=http://localhost/v1?key=s3cret", "must not hold credentials"),
])
def test_bad_options_fail_before_any_request(options: str, fragment: str, key_env: None) -> None:
    with pytest.raises(BackendError, match=fragment) as caught:
        make_backend(options or "openai", Generation(), "generate")
    assert "sk-" not in str(caught.value) and "s3cret" not in str(caught.value) and "pw" not in str(caught.value)


def test_unknown_model_and_refused_key_fail_before_the_first_request(server: FakeServer, key_env: None) -> None:
    unknown = make_backend(f"openai:test-modle,base_url={server.url},api_key_env={KEY_ENV}", Generation())
    with pytest.raises(BackendError, match="does not serve model 'test-modle'; did you mean 'test-model'"):
        unknown.run_batch(requests(1), no_media)
    server.models_action = ("status", 401, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
    with pytest.raises(BackendError) as caught:
        backend(server).before_requests()
    assert "HTTP 401" in str(caught.value) and KEY_ENV in str(caught.value)
    assert "Incorrect API key provided" in str(caught.value) and KEY not in str(caught.value)
    server.models_action = ("status", 404, {"error": "no such endpoint"})
    accepted = backend(server)
    accepted.before_requests()
    assert accepted.served() == {"model": None}
    assert server.chats() == []


# -- concurrency, retries, timeouts, malformed answers ------------------------------------------


def test_concurrency_is_bounded(server: FakeServer, key_env: None) -> None:
    server.gate = (3, 9)  # hold each request until 3 are in flight (or all 9 have arrived)
    oa = backend(server, "concurrency=3")
    answers = oa.run_batch(requests(9), no_media)
    assert [a.text for a in answers] == [f"echo hello {i}" for i in range(9)]
    assert server.max_in_flight == 3


def test_retries_429_with_retry_after_and_500(server: FakeServer, key_env: None) -> None:
    server.plan = [("status", 429, {"error": {"message": "slow down"}}, {"Retry-After": "7"}),
                   ("status", 500, {"error": {"message": "boom"}}, {}),
                   ("status", 503, b"unavailable", {"retry-after-ms": "250"})]
    oa = backend(server)
    [answer] = oa.run_batch(requests(1), no_media)
    assert answer.text == "echo hello 0" and len(server.chats()) == 4
    retry_after_wait, backoff, retry_after_ms = oa.delays  # Retry-After waits happen in the limiter
    assert retry_after_wait == 7.0 and retry_after_ms == 0.25
    assert 1.0 <= backoff <= 2.0  # second retry: 2 s, half of it jittered
    assert oa.limiter.reserved == 5  # every attempt passed the rate limiter, as did the /models check


def test_retries_are_bounded_and_the_error_names_the_request(server: FakeServer, key_env: None) -> None:
    server.plan = [("status", 502, {"error": {"message": "bad gateway"}}, {})] * 3
    oa = backend(server, "max_retries=2")
    with pytest.raises(BackendError, match=r"key 000000000000, sample 0 .*no answer after 3 attempt\(s\); "
                                           r"last: HTTP 502: bad gateway"):
        oa.run_batch(requests(1), no_media)
    assert len(server.chats()) == 3


def test_client_errors_are_not_retried(server: FakeServer, key_env: None) -> None:
    server.plan = [("status", 400, {"error": {"message": "Unrecognized request argument: seed"}}, {})]
    oa = backend(server)
    with pytest.raises(BackendError, match="HTTP 400: Unrecognized request argument: seed") as caught:
        oa.run_batch(requests(1), no_media)
    assert "send_seed=false" in str(caught.value) and len(server.chats()) == 1 and oa.delays == []


def test_a_slow_answer_times_out_and_is_retried(server: FakeServer, key_env: None) -> None:
    server.plan = [("stall", 5.0)]
    oa = backend(server, "timeout=0.3")
    [answer] = oa.run_batch(requests(1), no_media)
    assert answer.text == "echo hello 0" and len(server.chats()) == 2 and len(oa.delays) == 1


def test_a_dropped_connection_is_retried(server: FakeServer, key_env: None) -> None:
    server.plan = [("drop",)]
    oa = backend(server)
    [answer] = oa.run_batch(requests(1), no_media)
    assert answer.text == "echo hello 0" and len(server.chats()) == 2
    server.plan = [("drop",)] * 2
    with pytest.raises(BackendError, match="connection failed"):
        backend(server, "max_retries=1").run_batch(requests(1), no_media)


@pytest.mark.parametrize("body,fragment", [
    (b'{"choices": [ {"message"', "not JSON"),
    (b'{"id": "x", "object": "chat.completion"}', "it has no choices"),
    (b'{"error": {"message": "model crashed"}}', "reports an error: model crashed"),
    (b'{"choices": [{"index": 0}]}', "its choice has no message"),
    (b'[1, 2]', "not a JSON object"),
])
def test_malformed_answers_fail_clearly(server: FakeServer, key_env: None, body: bytes, fragment: str) -> None:
    server.plan = [("raw", body)]
    oa = backend(server, "max_retries=0")  # a cut body is retried otherwise
    with pytest.raises(BackendError, match=fragment) as caught:
        oa.run_batch(requests(3, "question"), no_media)
    assert "sample 0 (prompt 'question " in str(caught.value)  # names the request
    assert KEY not in str(caught.value)


def test_one_failure_stops_the_batch(server: FakeServer, key_env: None) -> None:
    server.plan = [("status", 401, {"error": {"message": "nope"}}, {})]
    oa = backend(server, "concurrency=1")
    with pytest.raises(BackendError, match="HTTP 401"):
        oa.run_batch(requests(20), no_media)
    assert len(server.chats()) == 1  # queued requests never started


# -- the rate limiter ---------------------------------------------------------------------------


def test_rate_parsing() -> None:
    assert parse_rate("5/s") == 5.0 and parse_rate("120/min") == 2.0 and parse_rate("0.5/s") == 0.5
    for bad in ("5", "5/h", "0/s", "-1/min", "x/s", "nan/s"):
        with pytest.raises(ValueError):
            parse_rate(bad)


def test_retry_after_headers() -> None:
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None


def test_rate_limiter_schedule_with_a_fake_clock() -> None:
    now = [0.0]
    limiter = RateLimiter(2.0, clock=lambda: now[0])
    assert [limiter.reserve() for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]
    now[0] = 10.0
    assert limiter.reserve() == 0.0  # an idle spell earns no burst
    assert limiter.reserve() == 0.5
    limiter.pause(3.0)  # a Retry-After holds everyone
    assert limiter.reserve() == 3.0 and limiter.reserve() == 3.5
    unlimited = RateLimiter(None, clock=lambda: now[0])
    assert [unlimited.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]


def test_the_backend_spaces_its_requests(server: FakeServer, key_env: None) -> None:
    oa = backend(server, "rate=120/min,concurrency=4")
    assert oa.limiter.interval == 0.5
    oa.before_requests()  # the /models check, on the limiter replaced next
    oa.limiter = RateLimiter(2.0, clock=lambda: 0.0)  # frozen: each start waits behind those before it
    answers = oa.run_batch(requests(6), no_media)
    assert len(answers) == 6 and len(server.chats()) == 6
    assert sorted(oa.delays) == [0.5, 1.0, 1.5, 2.0, 2.5]


# -- the key never leaks ------------------------------------------------------------------------


OPENAI_SPEC = text_table_spec("openai", '["clean", "leet_letters"]', n=1, rest="""\
[prompt]
system = "Answer briefly."
template = "Repeat: {{{{ text }}}}"

[generation]
max_new_tokens = 16
temperature = 0.5
n = 2
seed = 7

[[stage]]
id = "answer"
task = "generate"
backend = "model"
""")


def test_the_key_is_in_no_file_log_or_message(tmp_path: Path, server: FakeServer,
                                              caplog: pytest.LogCaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    spec = write_mini(tmp_path, text=OPENAI_SPEC.format(table=TABLE))
    outputs: list[str] = []
    env = {KEY_ENV: KEY, "OPENAI_LOG": "debug"}  # the openai package logs its requests to stderr

    def run(name: str, options: str = "") -> Any:
        model = f"openai:{MODEL},base_url={server.url},api_key_env={KEY_ENV},concurrency=2{options}"
        done = cli("run", tmp_path / "m", "-o", tmp_path / name, "--cache", tmp_path / "c",
                   "--store", tmp_path / f"store-{name}", "--model", model, env=env)
        outputs.extend([done.stdout, done.stderr])
        return done

    outputs.append(cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True).stdout)
    done = run("ok")
    assert done.returncode == 0, done.stderr
    assert "DEBUG" in done.stderr  # the openai package's own request log is among what is searched
    assert "answer: 4 requests" in done.stdout and "(0 cached, 4 run)" in done.stdout
    rows = pl.read_parquet(tmp_path / "ok" / "responses.parquet")
    assert rows.height == 4 and all(t.startswith("echo Repeat: ") for t in rows["text"])
    assert len({r["payload"]["seed"] for r in server.chats()}) == 4
    assert all(r["auth"] == f"Bearer {KEY}" for r in server.requests)  # it was sent: the grep means something
    record = json.loads((tmp_path / "ok" / "run.json").read_text())
    assert record["served"]["answer"]["model"]["root"] == "/weights/test-model"

    # Servers that echo the key back, in every way a run can fail.
    echo = f"Incorrect API key provided: {KEY}"
    server.plan = [("status", 500, {"error": {"message": echo}}, {})]
    failed = run("server-error", ",max_retries=0")
    assert failed.returncode == 2 and "HTTP 500: Incorrect API key provided: [API key]" in failed.stderr
    server.plan = [("raw", f"<html>{'x' * 60} {KEY}</html>".encode())]  # the key straddles the excerpt's end
    failed = run("malformed", ",max_retries=0")
    assert failed.returncode == 2 and "not JSON" in failed.stderr
    server.models_action = ("status", 401, {"error": {"message": echo}})
    failed = run("refused")
    assert failed.returncode == 2 and "HTTP 401" in failed.stderr and KEY_ENV in failed.stderr
    assert all("Traceback" not in text for text in outputs)

    # In-process too, with every logger at DEBUG, through retries and errors.
    monkeypatch.setenv(KEY_ENV, KEY)
    server.models_action = None
    server.plan = [("status", 429, {"error": {"message": echo}}, {"Retry-After": "0"}), ("drop",),
                   ("status", 403, {"error": {"message": echo}}, {})]
    errors: list[str] = []
    with caplog.at_level(logging.DEBUG):
        oa = backend(server, "concurrency=1")
        with pytest.raises(BackendError) as caught:
            oa.run_batch(requests(2), no_media)
        errors.append(str(caught.value))
        errors.append(repr(caught.value.problems))
    assert "HTTP 403" in errors[0]
    outputs += errors + [caplog.text, json.dumps(oa.fingerprint()), str(oa.spec)]

    pieces = (KEY, KEY[:16], KEY[-16:])  # nor any long piece of it
    assert not [i for i, text in enumerate(outputs) if any(piece in text for piece in pieces)]
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert (tmp_path / "store-ok" / "responses.sqlite").is_file()  # the store was among the files read


def test_stop_sequences_are_sent_and_answers_cut_at_them(server: FakeServer, key_env: None) -> None:
    """[generation].stop reaches the server, enters the fingerprint only when set, and an
    answer is cut at the first stop sequence even when the server ignored it (this one does)."""
    stopped = backend(server, generation=Generation(stop=["\n\n", "Question:"]))
    server.plan = [("message", {"role": "assistant", "content": "Paris.\n\nQuestion: What is 2+2?"}, "stop")]
    [answer] = stopped.run_batch(requests(1), no_media)
    assert answer.text == "Paris."
    [payload] = [r["payload"] for r in server.chats()]
    assert payload["stop"] == ["\n\n", "Question:"]
    assert stopped.fingerprint()["generation"]["stop"] == ["\n\n", "Question:"]
    assert "stop" not in backend(server).fingerprint()["generation"]
    assert "stop" not in backend(server).payload(requests(1)[0], no_media)


def test_a_backend_that_cannot_stop_refuses_a_spec_with_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every built-in text backend takes stop; one that cannot (a plugin's) is refused before any request."""
    from benchc.runtime.backends.base import BACKENDS, cut_at_stop, make_backend
    from benchc.runtime.backends.echo import Echo

    built_in = [BACKENDS.get(n) for n in BACKENDS.names()
                if BACKENDS.get(n).__module__.startswith("benchc.runtime.backends.")]  # not the tests' own
    assert {b.__name__ for b in built_in if "generate" in b.tasks and not b.takes_stop} == set()
    monkeypatch.setattr(Echo, "takes_stop", False)
    with pytest.raises(BackendError, match=r"'echo' cannot end its answers at \[generation\]\.stop"):
        make_backend("echo", Generation(stop=["\n"]), "generate")
    make_backend("echo", Generation(), "generate")  # without stop it answers
    assert cut_at_stop("a\nb Question: c", ["Question:", "\n"]) == "a"
    assert cut_at_stop("abc", ["x"]) == "abc" and cut_at_stop("abc", []) == "abc"


# -- servers benchc can identify (issue 26) -----------------------------------------------------


def test_answers_are_keyed_by_revision_and_a_cached_rerun_needs_no_server(tmp_path: Path) -> None:
    """Through the CLI: another declared revision asks everything again, the same one answers
    from the store (with or without the model check), and a rerun whose answers are all stored
    exits 0 with the server stopped."""
    server = FakeServer()
    spec = write_mini(tmp_path, text=OPENAI_SPEC.format(table=TABLE))
    cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)

    def run(name: str, options: str) -> Any:
        model = f"openai:{MODEL},base_url={server.url},api_key_env=none,concurrency=2,{options}"
        return cli("run", tmp_path / "m", "-o", tmp_path / name, "--cache", tmp_path / "c",
                   "--store", tmp_path / "store", "--model", model)

    try:
        first = run("first", "revision=sha256-aaa")
        assert first.returncode == 0, first.stderr
        assert "(0 cached, 4 run)" in first.stdout
        record = json.loads((tmp_path / "first" / "run.json").read_text())
        assert record["served"]["answer"]["model"]["root"] == "/weights/test-model"
        assert record["backends"]["answer"]["revision"] == "sha256-aaa"
        same = run("same", "revision=sha256-aaa,check_model=false")
        assert "(4 cached, 0 run)" in same.stdout, same.stderr
        assert "served" not in json.loads((tmp_path / "same" / "run.json").read_text())  # nothing was asked
        other = run("other", "revision=sha256-bbb")
        assert "(0 cached, 4 run)" in other.stdout, other.stderr
        asked = len(server.chats())
    finally:
        server.close()
    assert asked == 8
    down = run("down", "revision=sha256-bbb")
    assert down.returncode == 0, down.stderr
    assert "(4 cached, 0 run)" in down.stdout


# -- endpoint = "completions" (issue 26) --------------------------------------------------------


def test_the_completions_endpoint_sends_the_prompt_as_text(server: FakeServer, key_env: None) -> None:
    generation = Generation(temperature=0.3, max_new_tokens=9, stop=["\n\n"], seed=4)
    oa = backend(server, "endpoint=completions", generation)
    request = Request("a" * 64, "generate", "Question: What is the capital of France?\nAnswer:",
                      system="Answer briefly.\n\n")
    server.plan = [("text", " Paris\n\nQuestion: and Italy?")]
    [answer] = oa.run_batch([request], no_media)
    assert answer.text == "Paris"  # choices[0].text, cut at the stop sequence and stripped
    [sent] = [r["payload"] for r in server.completions()]
    assert "messages" not in sent and server.chats() == []
    assert sent == {"model": MODEL, "prompt": "Answer briefly.\n\nQuestion: What is the capital of France?\nAnswer:",
                    "max_tokens": 9, "temperature": 0.3, "stop": ["\n\n"], "seed": request_seed(request, 4)}
    [echoed] = oa.run_batch(requests(1), no_media)
    assert echoed.text == "echo hello 0"


def test_the_completions_endpoint_refuses_media_before_sending(server: FakeServer, key_env: None) -> None:
    oa = backend(server, "endpoint=completions")
    with_image = Request("b" * 64, "generate", "Describe it.", media=(("image", "c" * 64),))
    with pytest.raises(BackendError, match=r"endpoint=completions sends the prompt as text only, and 1 request\(s\) "
                                           r"carry image") as caught:
        oa.run_batch([*requests(2), with_image], no_media)
    assert "endpoint=chat" in str(caught.value) and len(caught.value.problems) == 1
    assert server.completions() == []


def test_a_completion_without_text_is_malformed(server: FakeServer, key_env: None) -> None:
    server.plan = [("raw", b'{"choices": [{"index": 0, "message": {"content": "x"}}]}')]
    with pytest.raises(BackendError, match="its choice has no text"):
        backend(server, "endpoint=completions,max_retries=0").run_batch(requests(1), no_media)


# -- run --verify N (issue 26) ------------------------------------------------------------------


VERIFY_ROWS = [{"id": f"q{i}", "question": f"Question {i}?", "answer": "Paris"} for i in range(6)]
VERIFY_REST = """
[generation]
max_new_tokens = 16

[[metric]]
name = "general.accuracy"
target = "answer"
correct = "exact"
"""


@pytest.mark.parametrize("random_answers", [False, True], ids=["deterministic", "random"])
def test_verify_asks_again_and_counts_the_answers_that_differ(tmp_path: Path, server: FakeServer,
                                                              caplog: pytest.LogCaptureFixture,
                                                              random_answers: bool) -> None:
    from benchc.runtime.run.store import ResponseStore
    from specfiles import QUESTION_NODE, write_rows_spec

    spec = write_rows_spec(tmp_path / "spec", "verify", VERIFY_ROWS, QUESTION_NODE)
    spec.write_text(spec.read_text() + VERIFY_REST)
    server.random = random_answers
    model = f"openai:{MODEL},base_url={server.url},api_key_env=none,concurrency=2"
    with caplog.at_level(logging.WARNING):
        done = cli("eval", spec, "-o", tmp_path / "out", "--model", model, "--store", tmp_path / "store",
                   "--cache", tmp_path / "cache", "--verify", "4")
    assert done.returncode == 0, done.stderr
    assert len(server.chats()) == 6 + 4
    record = json.loads((tmp_path / "out" / "run" / "run.json").read_text())
    differ = 4 if random_answers else 0
    assert {k: v for k, v in record["verify"].items() if k != "keys"} == {"requested": 4, "asked": 4, "failed": 0,
                                                                          "differ": differ}
    assert len(record["verify"]["keys"]) == differ
    report = (tmp_path / "out" / "run" / "report.md").read_text()
    assert f"run --verify 4): {differ} of 4 re-asked request(s) answered otherwise than stored" in report
    assert ("WARNING: Determinism" in report) == random_answers
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "verify" in r.getMessage()]
    assert len(warnings) == (1 if random_answers else 0)
    store = ResponseStore(tmp_path / "store")  # the new answers sit beside the stored ones
    try:
        assert store.db.execute("SELECT COUNT(*) FROM verify").fetchone()[0] == 4
        assert store.count() == 6
    finally:
        store.close()
    again = cli("run", tmp_path / "out" / "manifest", "-o", tmp_path / "again", "--model", model,
                "--store", tmp_path / "store", "--cache", tmp_path / "cache", "--verify", "4")
    assert f"verify: {differ} of 4 re-asked" in again.stdout and "(6 cached, 0 run)" in again.stdout
    assert json.loads((tmp_path / "again" / "run.json").read_text())["verify"]["keys"] == record["verify"]["keys"]


def test_verify_chooses_the_same_requests_for_the_same_n() -> None:
    from benchc.runtime.run.verify import chosen

    keys = [f"{i:064x}" for i in range(50)]
    assert chosen(keys, 5) == chosen(list(reversed(keys)), 5) and len(chosen(keys, 5)) == 5
    assert chosen(keys, 10)[:5] == chosen(keys, 5) and chosen(keys, 80) == chosen(keys, 50)


def test_a_ctrl_c_keeps_the_answers_the_server_sent(server: FakeServer, key_env: None, tmp_path: Path) -> None:
    """Issue 28 item 11: an interrupt lost the answers of the batch in flight (8 of 40 the server
    had sent); they are stored, and only the requests still unanswered are asked again."""
    import _thread

    from benchc.runtime.run.executor import execute
    from benchc.runtime.run.media import MediaSource
    from benchc.runtime.run.store import ResponseStore

    oa = backend(server, "concurrency=4")
    server.plan = [("echo",), ("echo",), ("stall", 30.0), ("stall", 30.0)]
    store = ResponseStore(tmp_path / "store")
    # interrupt_main does nothing where SIGINT is not Python's handler (an earlier test in this
    # worker, or a library, may have set SIG_IGN or SIG_DFL): the test sets it for itself
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            execute(oa, requests(4), store, MediaSource(tmp_path / "cache", tmp_path / "store"), 1, "answer", False)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        server.release.set()  # the stalled requests end at once
    assert store.count() == 2  # the two answers that came back are kept
    store.close()

"""Any OpenAI-compatible server: OpenAI, Gemini's compatible endpoint, vLLM, SGLang, Ollama, llama.cpp.

``openai:MODEL[,option=value,...]`` sends each request to ``POST {base_url}/chat/completions``
(or, with ``endpoint=completions``, to ``POST {base_url}/completions``)::

    export OPENAI_API_KEY=...
    benchc run out/m -o out/r --model openai:gpt-4o-mini,concurrency=8,rate=500/min
    benchc run out/m -o out/r --model openai:Qwen/Qwen2-VL-7B-Instruct,base_url=http://localhost:8000/v1,api_key_env=none
    benchc run out/m -o out/r --model openai:gemini-2.0-flash,base_url=https://generativelanguage.googleapis.com/v1beta/openai,api_key_env=GEMINI_API_KEY

Options (all optional; MODEL, the target, is required):

==================  ==========================  ===============================================
option              default                     meaning
==================  ==========================  ===============================================
base_url            https://api.openai.com/v1   the server's OpenAI API root (``.../v1``);
                                                no user:password@ and no ?query (put secrets in
                                                the key's environment variable)
api_key_env         OPENAI_API_KEY              NAME of the environment variable holding the
                                                key (upper-case, never the key itself: a value
                                                that is not such a name is refused unechoed);
                                                ``none`` for a local server without keys
concurrency         8                           requests in flight at once
rate                unlimited                   client-side limit on request starts:
                                                ``N/s`` or ``N/min`` (``N`` may be fractional);
                                                retries count too
timeout             120                         seconds to wait for one answer
max_retries         6                           retries of one request after the first try
batch_size          4 x concurrency             requests per executor batch (the unit that is
                                                committed to the store; a kill loses at most one)
send_seed           true                        send a per-request ``seed`` (``false`` for a
                                                server that refuses the parameter)
max_tokens_field    max_tokens                  ``max_completion_tokens`` for OpenAI models that
                                                refuse ``max_tokens`` (o-series, gpt-5)
image_detail        (not sent)                  ``low``, ``high`` or ``auto``: OpenAI's image
                                                ``detail`` (it changes what the model sees)
check_model         true                        ask ``GET {base_url}/models`` before the first
                                                request (see *The server's model*); ``false``
                                                for a server without that endpoint
revision            (none)                      what the served weights are: their sha256, a
                                                deployment tag; it enters the fingerprint (see
                                                *The server's model*)
endpoint            chat                        ``chat``: ``/chat/completions``;
                                                ``completions``: ``/completions``, the prompt
                                                as raw text, for base models (see *Requests*)
==================  ==========================  ===============================================

**Requests.** One chat completion per request: the spec's ``system`` prompt as a system message,
then one user message: the prompt as a plain string, or, when the item has media, every image as
an ``image_url`` part holding a base64 data URL (``data:image/png;base64,...``; audio as an
``input_audio`` part), then the prompt as a text part. Generation settings map to
``temperature``, ``max_tokens`` (``max_new_tokens``), ``top_p`` (sent only when below 1), ``stop``
(sent when set; answers are also cut at the first stop sequence here, for servers that ignore it). The spec's
``n`` samples arrive as ``n`` requests (sample index 0..n-1); each carries its own ``seed``,
derived from the request's content, its sample index and ``generation.seed`` (or the request's
own seed, when a compile-time model step sets one), so the samples
differ and a rerun asks for the same draws. Whether a server honours seeds, and how
deterministic its answers are, is the server's business (``benchc run --verify N`` measures
it). Answers are stripped of surrounding whitespace (as the ``hf`` backend does).

With ``endpoint=completions`` (base models, which only echo through a chat template) the request
is one ``/completions`` call: ``prompt`` is the rendered prompt as raw text, the ``system``
prompt, if any, prepended as it is (lm-eval's ``local-completions`` does the same: see
``completion_prompt``), with ``max_tokens``, ``temperature``, ``top_p``, ``stop`` and ``seed``
as above; the answer is ``choices[0].text``. Such a server reads text only: a request with
media is refused before anything is sent.

**Fingerprint** (part of every request key), computed without the server: base_url, model,
``revision``, the endpoint, the generation settings, ``send_seed``, ``max_tokens_field``,
``image_detail`` and the request format's version. Never the key, nor its variable's name, nor
concurrency, rate, timeouts, retries or ``check_model`` (they do not change an answer). So a run
whose requests are all stored needs no server, and turning the model check off keeps every key.

**Before any request** (when the backend is built): a missing key variable fails with one
``BackendError``; so do malformed options. Nothing is sent yet.

**The server's model.** When a request must be sent (never for a run answered from the store),
the backend first lists ``/models`` (with ``check_model``): an unknown model (with suggestions),
a refused key (401) or an unreachable server fail there, before the first request; a server
without the endpoint (403/404/405/501) is accepted. What the server says about the model is
kept for run.json (``served``): the model's ``/models`` record but its volatile fields
(``created``, ``permission``), so vLLM's ``root`` (the weights path) and ``max_model_len``,
llama.cpp's ``owned_by`` and ``meta``; and for llama.cpp's server (``owned_by`` ``llamacpp``)
its ``/props``: ``model_path``, ``build_info``, the context size and the chat template's
sha256. None of it enters the fingerprint: a server may be asked only when something is missing.
When the server names the model only by an alias (nothing in what it says is a weights path or
digest) and no ``revision`` is declared, the backend warns once: answers are keyed by base_url
and the alias, so a server restarted with other weights or another prompt format would be
served the earlier answers. Declaring ``revision=`` (the weights' sha256, a deployment tag)
keys them by it: another revision asks everything again, the same one answers from the store.

**Concurrency, retries, rate.** ``run_batch`` answers its requests from ``concurrency`` worker
threads over one shared HTTP client (daemon threads, so a Ctrl-C ends the run at once rather
than after the requests in flight). 429, 408, 409, 5xx, timeouts, dropped connections and a 200
whose body is cut short or not JSON are retried up to ``max_retries`` times with exponential
backoff (1 s, 2 s, 4 s, ... capped at 60 s, each halved and topped up with jitter from a seeded
RNG). A ``Retry-After`` (or ``retry-after-ms``) header is honoured exactly (capped at 300 s) and
pauses every thread, not only the one that got it. The ``rate`` limiter spaces request starts at
least ``1/rate`` apart (no bursts). Other statuses fail at once (400: a parameter or input the
server refuses; 401/403: the key; 404: the model or base_url), as does a malformed answer (JSON
without ``choices`` or ``message``).

**Failures keep the answers.** A request that fails (retries spent, a refused status, a malformed
answer) fails alone: the batch goes on, and ``run_batch`` raises ``BatchFailures`` with every
answer it got, which the executor stores, and why each other request failed (its class: ``HTTP
500``, ``timeout``, ``truncated body``, ...); the run ends with one message counting them, and a
rerun asks only what is missing. The batch stops early (no further request starts, and the
executor sends no further batches) on 401/403/404, which no other request would escape, and when
``max(3, concurrency)`` requests in a row failed with no answer between them (a server that is
down, or refuses every request: a parameter it does not know).

**Empty answers.** A choice with ``finish_reason = "content_filter"``, a ``refusal`` or no text is
recorded as an empty answer (``""``), not an error: refusing is the model's behaviour under test,
and a consistency metric should see it. Each one is logged as a WARNING naming the request and
the reason (the response store has no field for such a flag).

**The key** is read from the environment when the backend is built and only ever placed in the
``Authorization`` header. It is not in the fingerprint, the store, the run folder or any message:
every message built from a server's reply or an HTTP error passes through a filter that blanks
the key, in case a server echoes it back. An answer that contains the key (one of 8 characters or
more) is refused: not stored, and counted as a failure ("the server echoed the API key").

Built on the official ``openai`` package (``OpenAI`` client, ``with_raw_response``), wrapped
narrowly: the package builds the HTTP requests (URL, headers, timeouts, connection pool) and
classifies failures; its own retries are off (``max_retries=0``) so that backoff, Retry-After,
jitter and the rate limit are this module's, one policy for every server and testable with an
injected clock; answers are parsed from the raw JSON here, so a malformed reply is a clear error
rather than a half-validated object. Note that the package also reads ``OPENAI_ORG_ID``,
``OPENAI_PROJECT_ID`` and ``OPENAI_CUSTOM_HEADERS`` from the environment and sends them as headers.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from benchc.compiler.identity import request_seed as identity_seed
from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.registry import did_you_mean

from .base import (BACKENDS, Backend, BackendOptions, BackendSpec, BatchFailures, Flag, MediaLoader, Request,
                   RequestFailure, Response, cut_at_stop, keep_answers)
from .key_echo import echoes_key

log = logging.getLogger(__name__)

REQUEST_FORMAT = 1
"""Version of how a request becomes a payload: bump it when that changes (it splits the cache)."""

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BACKOFF_BASE = 1.0
BACKOFF_MAX = 60.0
RETRY_AFTER_MAX = 300.0
RETRY_STATUSES = frozenset({408, 409, 429})
NO_MODELS_ENDPOINT = frozenset({403, 404, 405, 501})
STOP_STATUSES = frozenset({401, 403, 404})
"""Refusals no other request of the run would escape (the key, the model, the endpoint)."""
RETRY_HINT = "raise timeout= or max_retries=, or lower concurrency= / rate= if the server is overloaded"
NO_KEY = "none"
API_NAMES = {"chat": "chat.completions", "completions": "completions"}
"""``endpoint`` -> the API it names in the fingerprint (``chat.completions``, as before the option)."""
VOLATILE_MODEL_FIELDS = frozenset({"created", "permission", "permissions"})
IDENTIFYING_FIELDS = ("root", "parent", "path", "model_path", "digest", "sha256")
"""Fields of what a server says about its model that name its weights, not only an alias."""
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")


def request_seed(request: Request, base: int | None) -> int:
    """A per-request seed from the request's content and sample index (31 bits: every server
    accepts it); a request's own seed (a compile-time model step's variant) replaces the base."""
    own = getattr(request, "seed", None)
    return identity_seed("openai-sample-seed", own if own is not None else (base or 0), request.prompt,
                         request.system, request.media, request.sample, bits=31)


def completion_prompt(request: Request) -> str:
    """The raw text ``endpoint=completions`` sends: the system prompt, if any, then the prompt,
    joined as they are. This follows lm-eval 0.4.13's ``local-completions``: without a chat
    template, ``ConfigurableTask.fewshot_context`` renders the system instruction as a message
    with no delimiter and joins every message's text (``"".join(m.to_text() ...)``), so a
    system prompt that wants a blank line after it ends with one."""
    return (request.system or "") + request.prompt


def parse_rate(text: str) -> float:
    """``"10/s"`` or ``"600/min"`` -> requests per second; ValueError otherwise."""
    count, sep, unit = text.partition("/")
    seconds = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0}.get(unit.strip())
    value = float(count)
    if not sep or seconds is None or not math.isfinite(value) or value <= 0:
        raise ValueError(text)
    return value / seconds


def retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), if any."""
    if headers is None:
        return None
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def identifies_weights(record: dict[str, Any]) -> bool:
    """Whether what the server said (``_ask_server``) names the weights (a path, a digest)
    rather than only an alias."""
    parts = [record.get("model") or {}, record.get("props") or {}]
    return any(isinstance(part.get(name), str) and part[name] for part in parts for name in IDENTIFYING_FIELDS)


def llamacpp_props(props: dict[str, Any]) -> dict[str, Any]:
    """The stable facts of llama.cpp's ``/props``: a long chat template is kept as its sha256."""
    out: dict[str, Any] = {k: props[k] for k in ("model_path", "build_info", "total_slots") if k in props}
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and "n_ctx" in settings:
        out["n_ctx"] = settings["n_ctx"]
    if isinstance(props.get("chat_template"), str):
        out["chat_template_sha256"] = hashlib.sha256(props["chat_template"].encode("utf-8")).hexdigest()
    return out


@dataclass(frozen=True)
class _Parsed:
    """A body the openai package parsed (``cast_to=object``), in the shape ``_with_retries``
    reads (``.http_response``)."""

    value: Any

    @property
    def http_response(self) -> _Parsed:
        return self


class _ServerRecord:
    """What a backend learnt from its server, asked once (``before_requests``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked = False
        self.record: dict[str, Any] | None = None


class RateLimiter:
    """Spaces request starts at least ``1/per_second`` apart, across threads, and holds every
    thread during a server-requested pause. ``reserve`` books the next start and returns how long
    its caller must wait; the caller does the waiting (so a stop can interrupt it)."""

    def __init__(self, per_second: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = 1.0 / per_second if per_second else 0.0
        self.clock = clock
        self.reserved = 0
        self._next = -math.inf
        self._paused_until = -math.inf
        self._lock = threading.Lock()

    def reserve(self) -> float:
        with self._lock:
            now = self.clock()
            start = max(now, self._next, self._paused_until)
            self._next = start + self.interval
            self.reserved += 1
            return start - now

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + seconds)


class _Cancelled(Exception):
    """The batch failed or was interrupted elsewhere: stop without sending more."""


class _Failed(BackendError):
    """One request failed: ``failure`` says why; ``stops``: no other request would escape it
    (a refused key, model or endpoint), so its batch sends no more."""

    def __init__(self, failure: RequestFailure, stops: bool = False) -> None:
        super().__init__(Problem(failure.message, hint=failure.hint))
        self.failure = failure
        self.stops = stops

    def error(self) -> BackendError:
        return BackendError(self.problems)


class _Refused(Exception):
    """An HTTP status that retrying cannot fix."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(status)
        self.status = status
        self.detail = detail


def _describe(request: Request) -> str:
    """Names a request in messages: its item when the request carries one, its key, sample and
    the start of its prompt."""
    item = getattr(request, "item_id", None)
    prompt = request.prompt if len(request.prompt) <= 40 else request.prompt[:37] + "..."
    head = f"item {item!r}, " if item else ""
    return f"request {head}key {request.key[:12]}, sample {request.sample} (prompt {prompt!r})"


def _mime(kind: str, data: bytes) -> str | None:
    if kind == "image":
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            return "image/png"
        if data.startswith(b"\xff\xd8\xff"):
            return "image/jpeg"
        if data.startswith((b"GIF87a", b"GIF89a")):
            return "image/gif"
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return "image/webp"
    if kind == "audio":
        if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
            return "wav"
        if data.startswith(b"ID3") or data[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
            return "mp3"
    return None


class OpenAIOptions(BackendOptions):
    """The ``openai`` backend's options (the table in the module docstring). ``base_url`` and
    ``api_key_env`` are checked when the backend is built, by messages that never echo them (a
    URL may hold credentials, and a "variable name" may be the key itself, pasted)."""

    base_url: str = Field(DEFAULT_BASE_URL, description="the server's OpenAI API root (.../v1); no user:password@ "
                                                        "and no ?query")
    api_key_env: str = Field("OPENAI_API_KEY", description="NAME of the environment variable holding the key "
                                                           "(never the key itself); none for a server without keys")
    concurrency: int = Field(8, ge=1, description="requests in flight at once")
    rate: str | None = Field(None, description="client-side limit on request starts, retries included: N/s or "
                                               "N/min (default unlimited)")
    timeout: float = Field(120.0, gt=0.0, description="seconds to wait for one answer")
    max_retries: int = Field(6, ge=0, description="retries of one request after the first try")
    batch_size: int | None = Field(None, ge=1, description="requests per executor batch, the unit committed to the "
                                                           "store (default 4 x concurrency)")
    send_seed: Flag = Field(True, description="send a per-request seed (false for a server that refuses it)")
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens", description="the request's field for the answer's length: max_completion_tokens for OpenAI "
                                  "models that refuse max_tokens (o-series, gpt-5)")
    image_detail: Literal["auto", "low", "high"] | None = Field(
        None, description="OpenAI's image detail (it changes what the model sees) (default: not sent)")
    check_model: Flag = Field(True, description="ask GET {base_url}/models before the first request sent (false for "
                                                "a server without that endpoint); never changes the fingerprint")
    revision: str | None = Field(None, description="what the served weights are (their sha256, a deployment tag): "
                                                   "it enters the fingerprint, so another revision is asked anew "
                                                   "(default: none)")
    endpoint: Literal["chat", "completions"] = Field(
        "chat", description="chat: POST /chat/completions; completions: POST /completions with the prompt as raw "
                            "text (base models; text only)")

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_rate(value)
            except ValueError:
                raise ValueError("a number of requests per second or minute: N/s or N/min with N > 0, "
                                 "e.g. rate=10/s") from None
        return value


@BACKENDS.add("openai")
class OpenAICompat(Backend):
    """Any OpenAI-compatible chat server."""

    tasks = frozenset({"generate"})
    takes_stop = True
    target_help = "MODEL (required, e.g. gpt-4o-mini)"
    Options = OpenAIOptions
    opts: OpenAIOptions

    def __init__(self, spec: BackendSpec, generation: Any) -> None:
        super().__init__(spec, generation)
        if not spec.target:
            raise BackendError(Problem("openai: no model given",
                                       hint="openai:MODEL[,base_url=...,api_key_env=...], e.g. openai:gpt-4o-mini"))
        opts = self.opts
        self.model = spec.target
        self.base_url = self._base_url(opts.base_url)
        self.concurrency = opts.concurrency
        self.batch_size = opts.batch_size if opts.batch_size is not None else 4 * self.concurrency
        self.max_retries = opts.max_retries
        self.timeout = opts.timeout
        self.send_seed = opts.send_seed
        self.max_tokens_field = opts.max_tokens_field
        self.image_detail = opts.image_detail
        self.endpoint = opts.endpoint
        per_second = parse_rate(opts.rate) if opts.rate is not None else None
        self.limiter = RateLimiter(per_second)
        # Test seams: how retries wait (interruptible by the batch's stop event) and the jitter RNG.
        self.sleep: Callable[[float, threading.Event], None] = _interruptible_sleep
        self._rng = random.Random(0)
        self._rng_lock = threading.Lock()
        self._streak = 0  # requests failed in a row, across batches, with no answer between them
        self._key = self._read_key()  # before any request
        self._client = self._make_client()
        self._server = _ServerRecord()  # shared with the copies ``settings.backend_for`` makes

    # -- options -------------------------------------------------------------------------------

    def _base_url(self, text: str) -> str:
        parts = urlsplit(text)
        if parts.username or parts.password or parts.query or parts.fragment:  # not echoed: it may hold a secret
            raise BackendError(Problem("openai: base_url must not hold credentials, a query or a fragment",
                                       hint="scheme://host[:port]/path; put the key in the variable "
                                            "named by api_key_env"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise self.bad_option("base_url", text, "an http:// or https:// URL such as http://localhost:8000/v1")
        return text.rstrip("/")

    def _read_key(self) -> str | None:
        variable = self.opts.api_key_env
        if variable.lower() == NO_KEY:
            return None
        if not ENV_NAME.fullmatch(variable):  # most likely the key itself, pasted: never echo it
            raise BackendError(Problem("openai: api_key_env must name an environment variable (upper-case "
                                       "letters, digits and _), not hold the key itself",
                                       hint="export MY_KEY=... and pass api_key_env=MY_KEY"))
        key = os.environ.get(variable, "").strip()
        if not key:
            raise BackendError(Problem(f"openai: the environment variable {variable} (api_key_env) is not set "
                                       "or empty, so there is no API key to send",
                                       hint=f"export {variable}=... before the run, name another variable with "
                                            "api_key_env=NAME, or api_key_env=none for a server without keys"))
        return key

    def _make_client(self) -> Any:
        try:
            import openai
        except ImportError as exc:
            raise BackendError(Problem(f"the openai backend needs the openai package: {exc}",
                                       hint="pip install openai (it is in requirements.lock)")) from None
        self._openai = openai
        # max_retries=0: retries are this module's (see the module docstring). A server without
        # keys still gets a placeholder bearer token (vLLM's and Ollama's convention).
        return openai.OpenAI(api_key=self._key or "no-key", base_url=self.base_url, max_retries=0,
                             timeout=self.timeout)

    # -- the identity of the answers -----------------------------------------------------------

    def fingerprint(self) -> dict[str, Any]:
        """Made from the options alone (no server is asked: see the module docstring)."""
        g = self.generation
        return {"backend": self.name, "api": API_NAMES[self.endpoint], "format": REQUEST_FORMAT,
                "base_url": self.base_url, "model": self.model, "revision": self.opts.revision,
                "generation": {"max_new_tokens": g.max_new_tokens, "temperature": g.temperature,
                               "top_p": g.top_p, "seed": g.seed, **({"stop": g.stop} if g.stop else {})},
                "send_seed": self.send_seed, "max_tokens_field": self.max_tokens_field,
                "image_detail": self.image_detail}

    def before_requests(self) -> None:
        """The model check, once per backend (and its setting copies), when a request must be
        sent; a check that failed raises and is tried again by the next caller."""
        state = self._server
        with state.lock:
            if state.asked:
                return
            record = self._ask_server() if self.opts.check_model else None
            state.record, state.asked = record, True
        if record is not None and not self.opts.revision and not identifies_weights(record):
            log.warning("openai: the server at %s names its model only by an alias: answers are keyed by base_url "
                        "and the alias %r: a server restarted with other weights or another prompt format would "
                        "be served these answers; declare revision=SHA256-or-tag", self.base_url, self.model)

    def served(self) -> dict[str, Any] | None:
        return self._server.record

    def _ask_server(self) -> dict[str, Any]:
        """What the server says about the model: ``model`` (its /models record, or None for a
        server without that endpoint) and, from llama.cpp's server, ``props``."""
        entry = self._served_model()
        record: dict[str, Any] = {"model": entry}
        if entry is not None and entry.get("owned_by") == "llamacpp":
            props = self._llamacpp_props()
            if props:
                record["props"] = props
        return record

    def _served_model(self) -> dict[str, Any] | None:
        """The server's record of the model, volatile fields left out (vLLM's ``created`` is its
        start time, its ``permission`` ids are drawn per call), or None when the server has no
        ``/models``."""
        what = f"GET {self.base_url}/models"
        try:
            raw = self._with_retries(what, self._client.models.with_raw_response.list, threading.Event())
        except _Refused as refused:
            if refused.status in NO_MODELS_ENDPOINT:
                return None
            raise self._refused(what, refused).error() from None
        except _Failed as failed:  # the first request there is did not get through
            hint = failed.failure.hint
            if failed.failure.kind in ("connection failed", "timeout"):
                hint = f"is the server at {self.base_url} up? {hint}"
            raise self._error(failed.failure.message, hint) from None
        try:
            entries = json.loads(raw.text)["data"]
            models = {e["id"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}
        except (ValueError, KeyError, TypeError):
            raise self._error(f"openai: {what} did not answer with a model list",
                              "use check_model=false for a server whose /models is not OpenAI's") from None
        entry = models.get(self.model) or models.get(f"models/{self.model}")  # Gemini lists "models/NAME"
        if entry is None:
            names = sorted(models)
            suggestion = did_you_mean(self.model, names)
            shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
            raise self._error(f"openai: the server at {self.base_url} does not serve model {self.model!r}"
                              + (f"; {suggestion}" if suggestion else ""),
                              f"it serves: {shown or 'nothing'} (check_model=false skips this check)")
        return {k: v for k, v in entry.items() if k not in VOLATILE_MODEL_FIELDS}

    def _llamacpp_props(self) -> dict[str, Any] | None:
        """llama.cpp's ``GET /props`` (beside ``/v1``): the weights' path, the build, the context
        size and the chat template's sha256; None when it does not answer."""
        root = self.base_url.removesuffix("/v1")
        try:
            props = self._with_retries(f"GET {root}/props", lambda: _Parsed(self._client.get(
                f"{root}/props", cast_to=object)), threading.Event()).value
        except (_Refused, _Failed):
            return None
        return llamacpp_props(props) if isinstance(props, dict) else None

    # -- running -------------------------------------------------------------------------------

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        """Answers ``requests`` from ``concurrency`` threads, in order. A request that fails
        fails alone: the rest go on, and ``BatchFailures`` then carries every answer and why the
        others failed. A refused key, model or endpoint, or ``max(3, concurrency)`` failures in
        a row, stop the batch: threads waiting to retry leave, and no further request starts
        (those requests are neither answered nor failed: a rerun asks them)."""
        self.before_requests()
        self._refuse_media(requests)
        parts: dict[tuple[str, str], dict[str, Any]] = {}  # the samples of an item share its media
        answers: list[Response | None] = [None] * len(requests)
        failures: dict[int, RequestFailure] = {}
        payloads: list[dict[str, Any] | None] = []
        for index, request in enumerate(requests):  # media read here, in one thread
            try:
                payloads.append(self.payload(request, load_media, parts))
            except _Failed as failed:
                payloads.append(None)
                failures[index] = failed.failure
        errors: list[BaseException] = []
        stop = threading.Event()
        queue = iter(i for i in range(len(requests)) if payloads[i] is not None)
        lock = threading.Lock()
        streak_limit = max(3, self.concurrency)

        def work() -> None:
            while not stop.is_set():
                with lock:
                    index = next(queue, None)
                if index is None:
                    return
                try:
                    answer = self._complete(requests[index], payloads[index], stop)  # type: ignore[arg-type]
                except _Cancelled:
                    return
                except _Failed as failed:
                    with lock:
                        failures[index] = failed.failure
                        self._streak += 1
                        if failed.stops or self._streak >= streak_limit:
                            stop.set()
                    continue
                except BaseException as exc:  # noqa: BLE001 (handed to the calling thread)
                    with lock:
                        errors.append(exc)
                    stop.set()
                    return
                with lock:  # kept even when the batch stopped meanwhile: the server answered it
                    answers[index] = answer
                    self._streak = 0

        # Daemon threads: after a Ctrl-C the process exits without waiting out the requests in
        # flight (up to `timeout` each); nothing they hold needs saving.
        threads = [threading.Thread(target=work, name=f"benchc-openai-{i}", daemon=True)
                   for i in range(min(self.concurrency, len(requests) - len(failures)))]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)  # short waits: a Ctrl-C that lands on a worker is seen here
        except BaseException as interrupted:  # a Ctrl-C: the answers that came back go with it, to be stored
            stop.set()
            with lock:
                keep_answers(interrupted, answers)
            raise
        if errors:
            raise errors[0]
        if failures or stop.is_set():
            raise BatchFailures(answers, failures, stopped=stop.is_set())
        return answers  # type: ignore[return-value]

    def _refuse_media(self, requests: list[Request]) -> None:
        """``endpoint=completions`` sends text only: a batch with media fails before any request."""
        if self.endpoint != "completions":
            return
        with_media = [r for r in requests if r.media]
        if with_media:
            kinds = sorted({kind for r in with_media for kind, _ in r.media})
            raise BackendError(Problem(
                f"openai: endpoint=completions sends the prompt as text only, and {len(with_media)} request(s) "
                f"carry {' and '.join(kinds)} (first: {_describe(with_media[0])})",
                hint="use endpoint=chat with a model that takes media, or run with --text-only"))

    def payload(self, request: Request, load_media: MediaLoader,
                parts: dict[tuple[str, str], dict[str, Any]] | None = None) -> dict[str, Any]:
        """The request's body: a chat completion's, or with ``endpoint=completions`` a
        completion's (``parts`` caches encoded media by hash)."""
        if self.endpoint == "completions":
            return self._settings({"model": self.model, "prompt": completion_prompt(request),
                                   "max_tokens": self.generation.max_new_tokens}, request)
        parts = {} if parts is None else parts
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        if request.media:
            for kind, sha in request.media:
                if (kind, sha) not in parts:
                    parts[kind, sha] = self._media_part(request, kind, sha, load_media(kind, sha))
            media = [parts[m] for m in request.media]
            messages.append({"role": "user", "content": [*media, {"type": "text", "text": request.prompt}]})
        else:
            messages.append({"role": "user", "content": request.prompt})
        return self._settings({"model": self.model, "messages": messages,
                               self.max_tokens_field: self.generation.max_new_tokens}, request)

    def _settings(self, body: dict[str, Any], request: Request) -> dict[str, Any]:
        """``body`` with the generation settings both endpoints send."""
        g = self.generation
        body["temperature"] = g.temperature
        if g.top_p < 1.0:
            body["top_p"] = g.top_p
        if g.stop:
            body["stop"] = list(g.stop)
        if self.send_seed:
            body["seed"] = request_seed(request, g.seed)
        return body

    def _media_part(self, request: Request, kind: str, sha: str, data: bytes) -> dict[str, Any]:
        mime = _mime(kind, data)
        if mime is None:
            raise _Failed(RequestFailure("unsendable media", f"openai: {_describe(request)}: {kind} {sha[:12]} is in "
                                         "a format this backend cannot send",
                                         hint="images: PNG, JPEG, GIF or WebP; audio: WAV or MP3"))
        encoded = base64.b64encode(data).decode("ascii")
        if kind == "audio":
            return {"type": "input_audio", "input_audio": {"data": encoded, "format": mime}}
        image: dict[str, Any] = {"url": f"data:{mime};base64,{encoded}"}
        if self.image_detail:
            image["detail"] = self.image_detail
        return {"type": "image_url", "image_url": image}

    def _complete(self, request: Request, payload: dict[str, Any], stop: threading.Event) -> Response:
        """One request's answer; raises _Failed (or _Cancelled when its batch stopped)."""
        what = _describe(request)
        api = self._client.completions if self.endpoint == "completions" else self._client.chat.completions
        try:
            body = self._with_retries(what, lambda: api.with_raw_response.create(**payload), stop, parse=True)
        except _Refused as refused:
            raise self._refused(what, refused) from None
        return self._answer(what, body)

    def _with_retries(self, what: str, send: Callable[[], Any], stop: threading.Event, parse: bool = False) -> Any:
        """``send()`` until it answers 2xx; returns the raw ``httpx`` response, or with ``parse``
        its body's JSON (a body that is cut short or not JSON is retried). Raises _Refused for a
        status that retrying cannot fix and _Failed once the retries are spent."""
        openai = self._openai
        for attempt in range(self.max_retries + 1):
            if stop.is_set():
                raise _Cancelled()
            hold = self.limiter.reserve()
            if hold > 0:
                self.sleep(hold, stop)
            pause = None
            try:
                response = send().http_response
                if not parse:
                    return response
                text = response.text
                try:
                    return json.loads(text)
                except ValueError:
                    text = self._redact(text)  # before cutting, so that no piece of the key survives
                    excerpt = text[:80] + ("..." if len(text) > 80 else "")
                    kind, failure = "truncated body", f"the server's answer is cut short or not JSON: {excerpt!r}"
            except openai.APIStatusError as exc:
                detail = self._detail(exc)
                if exc.status_code not in RETRY_STATUSES and exc.status_code < 500:
                    raise _Refused(exc.status_code, detail) from None
                kind, failure = f"HTTP {exc.status_code}", f"HTTP {exc.status_code}{': ' + detail if detail else ''}"
                pause = retry_after(getattr(exc.response, "headers", None))
            except openai.APITimeoutError:
                kind, failure = "timeout", f"no answer within {self.timeout:g} s (timeout)"
            except openai.APIConnectionError as exc:
                cause = type(exc.__cause__).__name__ if exc.__cause__ else "no detail"
                kind, failure = "connection failed", f"connection failed ({cause})"
            except openai.APIError as exc:  # anything else the package raises: not retried
                raise self._failed(type(exc).__name__, f"openai: {what}: {type(exc).__name__}: {exc}",
                                   "the server's reply is not an OpenAI completion") from None
            if attempt == self.max_retries:
                raise self._failed(kind, f"openai: {what}: no answer after {attempt + 1} attempt(s); last: {failure}",
                                   RETRY_HINT)
            if pause is not None:  # every thread holds off, not only this one: the limiter waits
                delay = min(pause, RETRY_AFTER_MAX)
                self.limiter.pause(delay)
            else:
                delay = self._backoff(attempt)
            log.info("openai: %s: %s; retry %d of %d in %.2f s", what, self._redact(failure), attempt + 1,
                     self.max_retries, delay)
            if pause is None:
                self.sleep(delay, stop)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff, capped, with "equal jitter": half fixed, half drawn."""
        ceiling = min(BACKOFF_MAX, BACKOFF_BASE * 2 ** attempt)
        with self._rng_lock:
            return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def _answer(self, what: str, body: Any) -> Response:
        """The first choice's text; a malformed body, or one that holds the key, is a _Failed
        naming the request."""
        if not isinstance(body, dict):
            raise self._failed("malformed answer", f"openai: {what}: the server's answer is not a JSON object", None)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            error = body.get("error")
            reason = (f"it reports an error: {error.get('message') if isinstance(error, dict) else error}"
                      if error else "it has no choices")
            raise self._failed("malformed answer", f"openai: {what}: the server's answer is malformed: {reason}", None)
        choice = choices[0] if isinstance(choices[0], dict) else {}
        answer, refusal = self._choice_text(what, choice)
        if echoes_key(answer, self._key):
            raise self._failed("echoed API key", f"openai: {what}: the server echoed the API key in its answer; "
                               "the answer is refused (not stored)",
                               "a server (or a proxy before it) that repeats the request's Authorization header "
                               "is not answering as a model; rotate the key if that server is not yours")
        answer = cut_at_stop(answer, self.generation.stop).strip()
        finish = choice.get("finish_reason")
        reason = ("the server's content filter stopped it (finish_reason 'content_filter')"
                  if finish == "content_filter" else f"a refusal: {refusal!r}" if refusal
                  else f"no text (finish_reason {finish!r})" if not answer else None)
        if reason:
            log.warning("openai: %s: %s; recorded as an empty answer", what, self._redact(reason))
            answer = ""
        return Response("text", text=answer)

    def _choice_text(self, what: str, choice: dict[str, Any]) -> tuple[str, Any]:
        """(the choice's text, its refusal): ``text`` of a completion, ``message.content`` of a
        chat completion (a string or text parts)."""
        if self.endpoint == "completions":
            text = choice.get("text")
            if not isinstance(text, str):
                raise self._failed("malformed answer",
                                   f"openai: {what}: the server's answer is malformed: its choice has no text", None)
            return text, None
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self._failed("malformed answer",
                               f"openai: {what}: the server's answer is malformed: its choice has no message", None)
        content = message.get("content")
        if isinstance(content, list):  # some servers answer with content parts
            return "".join(p.get("text", "") for p in content
                           if isinstance(p, dict) and isinstance(p.get("text"), str)), message.get("refusal")
        if isinstance(content, str) or content is None:
            return content or "", message.get("refusal")
        raise self._failed("malformed answer", f"openai: {what}: the server's answer is malformed: content is "
                           f"{type(content).__name__}", None)

    def failure_hint(self, failures: list[RequestFailure], answered: int) -> str | None:
        if failures and not answered and all(f.kind == "connection failed" for f in failures):
            return f"no request reached the server: is the server at {self.base_url} up, and is base_url right?"
        return None

    # -- errors without the key ----------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[API key]") if self._key else text

    def _error(self, message: str, hint: str | None) -> BackendError:
        return BackendError(Problem(self._redact(message), hint=self._redact(hint) if hint else None))

    def _failed(self, kind: str, message: str, hint: str | None, stops: bool = False) -> _Failed:
        return _Failed(RequestFailure(kind, self._redact(message), self._redact(hint) if hint else None), stops)

    def _detail(self, exc: Any) -> str:
        """The server's own error message, shortened (redacted by the caller's _error)."""
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
        else:
            message = body
        text = self._redact(" ".join(str(message or "").split()))  # before cutting (see _with_retries)
        return text[:300] + ("..." if len(text) > 300 else "")

    def _refused(self, what: str, refused: _Refused) -> _Failed:
        hints = {
            400: "the server refused the request's parameters or input: if it names seed, try send_seed=false; "
                 "max_tokens, try max_tokens_field=max_completion_tokens; images, the model may not take them",
            401: f"the server refused the API key: check the variable named by api_key_env "
                 f"({self.opts.api_key_env})",
            403: "the key may not use this model or endpoint",
            404: f"no such model or endpoint: check the model name and base_url ({self.base_url})",
        }
        detail = f": {refused.detail}" if refused.detail else ""
        return self._failed(f"HTTP {refused.status}", f"openai: {what}: HTTP {refused.status}{detail}",
                            hints.get(refused.status, "the server refused the request; retrying would not help"),
                            stops=refused.status in STOP_STATUSES)


def _interruptible_sleep(seconds: float, stop: threading.Event) -> None:
    if stop.wait(seconds):
        raise _Cancelled()


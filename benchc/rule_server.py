r"""A rule-based, OpenAI-compatible chat server, for trying benchc offline and for tests.

**This is not a model.** It answers every chat request from a small table of regular
expressions, the same way every time, so that ``benchc eval ... --model openai:rules,...`` can be
tried end to end (compile, run, score, report) on a machine with no model, no GPU and no network,
and so that tests can know every answer in advance. Scores against it say nothing about any
model; they only show what the metrics do with answers you chose.

Run it (it binds 127.0.0.1 only; ``python -m benchc.rule_server`` is an alias of the command)::

    benchc serve-rules --rules rules.toml --port-file port.txt &
    benchc eval spec.toml -o out --model "openai:rules,base_url=http://127.0.0.1:$(cat port.txt)/v1,api_key_env=none"

``--port`` (default 8011; ``0`` picks a free port) and ``--port-file FILE`` (the port, written
once the server listens, so a script can wait for the file; removed again on a clean exit).
``--model NAME`` renames the one model ``/v1/models`` lists (default: the rules file's ``model``,
else ``rules``). SIGTERM and SIGINT (Ctrl-C) stop it cleanly (exit 0). ``--verbose`` logs each
request to stderr.

The rules file (TOML)::

    model = "rules"                 # optional: the model id /v1/models lists
    default = "I do not know."      # optional: the answer when no rule matches (this is the default)

    [[rule]]
    pattern = 'capital of (\w+)'     # a Python regex, searched case-insensitively
    answer = 'The capital of \1.'    # an re.expand template: \1, \g<name> are the pattern's groups

(TOML literal strings, in single quotes, keep backslashes as written; in basic strings, in double
quotes, write ``\\1``. A literal backslash in an answer is ``\\``, as for ``re.expand``.)

The text a rule is matched against is the last ``user`` message's text: its string content, or
its ``text`` parts joined by newlines (images and audio parts are ignored: the server never looks
at media). The first rule whose pattern matches (``re.search``) answers; no match gives
``default``.

Endpoints:

* ``GET /v1/models``: ``{"object": "list", "data": [{"id": MODEL, "object": "model", ...}]}``
  (``/v1/models/MODEL`` too).
* ``POST /v1/chat/completions``: a standard ``chat.completion`` object (``id`` derived from the
  request body, ``created`` 0, ``model`` as requested, ``choices[i].message.content``,
  ``finish_reason`` ``"stop"``, ``usage`` in whitespace-separated words rather than tokens).
  ``n`` gives n identical choices. Any model name is answered; ``temperature``, ``seed``,
  ``max_tokens`` and the other sampling fields are accepted and ignored (answers are never cut);
  ``stream`` is refused (400). The ``Authorization`` header is ignored.

From Python (tests)::

    from benchc.rule_server import serve
    server, thread = serve({"default": "no", "rule": [{"pattern": "cat", "answer": "yes"}]})
    ...  # server.url is "http://127.0.0.1:PORT/v1"; server.completions counts the answers sent
    server.stop()
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import sys
import threading
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .compiler.errors import BenchcError, Problem

HOST = "127.0.0.1"
DEFAULT_MODEL = "rules"
DEFAULT_ANSWER = "I do not know."
MAX_N = 128
MAX_BODY = 64 * 1024 * 1024  # a request with a few large images


class RulesError(BenchcError):
    """The rules file is wrong (exit 2, one message per problem, no traceback)."""


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    answer: str

    def apply(self, text: str) -> str | None:
        found = self.pattern.search(text)
        return None if found is None else found.expand(self.answer)


@dataclass(frozen=True)
class Rules:
    """The answer table: the first matching rule answers, else ``default``."""

    rules: tuple[Rule, ...] = ()
    default: str = DEFAULT_ANSWER
    model: str = DEFAULT_MODEL

    def answer(self, text: str) -> str:
        for rule in self.rules:
            answer = rule.apply(text)
            if answer is not None:
                return answer
        return self.default


def parse_rules(doc: Mapping[str, Any], source: str = "<rules>") -> Rules:
    """Rules from a parsed rules document; every problem of it is reported at once."""
    problems: list[Problem] = []

    def bad(message: str, key: str, hint: str | None = None) -> None:
        problems.append(Problem(message, file=source, key=key, hint=hint))

    for key in doc:
        if key not in ("default", "model", "rule"):
            bad(f"unknown key {key!r}", key, "the rules file has: default, model and [[rule]] tables")
    default = doc.get("default", DEFAULT_ANSWER)
    if not isinstance(default, str):
        bad("must be a string", "default")
    model = doc.get("model", DEFAULT_MODEL)
    if not isinstance(model, str) or not model.strip():
        bad("must be a non-empty string", "model")
    entries = doc.get("rule", [])
    if not isinstance(entries, list):
        bad("must be an array of tables ([[rule]])", "rule")
        entries = []
    rules = []
    for index, entry in enumerate(entries):
        where = f"rule[{index}]"
        if not isinstance(entry, Mapping):
            bad("must be a table with pattern and answer", where)
            continue
        for key in entry:
            if key not in ("pattern", "answer"):
                bad(f"unknown key {key!r}", f"{where}.{key}", "a rule has: pattern, answer")
        pattern, answer = entry.get("pattern"), entry.get("answer")
        if not isinstance(pattern, str):
            bad("missing or not a string", f"{where}.pattern", 'e.g. pattern = "capital of (\\\\w+)"')
        if not isinstance(answer, str):
            bad("missing or not a string", f"{where}.answer", 'e.g. answer = "Paris"')
        if not isinstance(pattern, str) or not isinstance(answer, str):
            continue
        try:
            compiled = re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            bad(f"not a valid regular expression: {exc}", f"{where}.pattern")
            continue
        problem = _template_problem(compiled, answer)
        if problem:
            bad(f"not a valid re.expand template: {problem}", f"{where}.answer",
                "\\1 (in TOML: \"\\\\1\" or '\\1') is the first group; a literal backslash is \\\\")
            continue
        rules.append(Rule(compiled, answer))
    if problems:
        raise RulesError(problems)
    return Rules(tuple(rules), default, model)


def _template_problem(pattern: re.Pattern[str], template: str) -> str | None:
    """Why ``template`` cannot be expanded for ``pattern`` (a bad escape, a missing group)."""
    try:
        from re import _parser  # type: ignore[attr-defined]  # Python 3.11's template parser
    except ImportError:  # pragma: no cover - another Python: found on first use instead
        return None
    try:
        _parser.parse_template(template, pattern)
    except (re.error, IndexError) as exc:
        return str(exc)
    return None


def load_rules(path: str | Path) -> Rules:
    """Rules from a TOML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(Problem(f"cannot read the rules file: {exc.strerror or exc}", file=str(path))) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(Problem(f"not valid TOML: {exc}", file=str(path))) from None
    return parse_rules(doc, str(path))


def as_rules(rules: Rules | Mapping[str, Any] | str | Path) -> Rules:
    """A Rules object from itself, a parsed document, or a path to a rules file."""
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, Mapping):
        return parse_rules(rules)
    return load_rules(rules)


# -- requests ----------------------------------------------------------------------------------


class BadRequest(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


def _content_text(content: Any) -> str:
    """A message content's text: the string, or its text parts joined by newlines."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if isinstance(part, Mapping)
                         and part.get("type") == "text" and isinstance(part.get("text"), str))
    raise BadRequest(400, "a message's content must be a string or an array of parts", "messages")


def message_text(messages: Any) -> str:
    """The text of the last ``user`` message (its text parts joined by newlines)."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest(400, "'messages' must be a non-empty array", "messages")
    if not all(isinstance(message, Mapping) for message in messages):
        raise BadRequest(400, "each message must be an object", "messages")
    for message in reversed(messages):
        if message.get("role") == "user":
            return _content_text(message.get("content"))
    raise BadRequest(400, "no message with role 'user'", "messages")


def _words(text: str) -> int:
    return len(text.split())


def completion(body: Any, rules: Rules) -> dict[str, Any]:
    """The chat.completion answer to a request body."""
    if not isinstance(body, Mapping):
        raise BadRequest(400, "the request body must be a JSON object")
    if body.get("stream"):
        raise BadRequest(400, "stream is not supported by the rule server", "stream")
    n = body.get("n", 1)
    if n is None:
        n = 1
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N:
        raise BadRequest(400, f"'n' must be an integer from 1 to {MAX_N}", "n")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest(400, "'model' must be a string", "model")
    text = message_text(body.get("messages"))
    answer = rules.answer(text)
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    prompt_words = sum(_words(_content_text(m.get("content"))) for m in body["messages"])
    completion_words = n * _words(answer)
    return {
        "id": "chatcmpl-rules-" + hashlib.sha256(canonical.encode()).hexdigest()[:24],
        "object": "chat.completion",
        "created": 0,
        "model": model or rules.model,
        "system_fingerprint": "benchc-rule-server",
        "choices": [{"index": i, "message": {"role": "assistant", "content": answer},
                     "logprobs": None, "finish_reason": "stop"} for i in range(n)],
        "usage": {"prompt_tokens": prompt_words, "completion_tokens": completion_words,
                  "total_tokens": prompt_words + completion_words},
    }


def _model_entry(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": "benchc-rule-server"}


# -- the server --------------------------------------------------------------------------------


class RuleServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer on 127.0.0.1 that answers from ``rules``."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, rules: Rules, port: int = 0, verbose: bool = False) -> None:
        self.rules = rules
        self.verbose = verbose
        self.completions = 0
        """Chat completions answered so far (tests count what a cache spared)."""
        self._count = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__((HOST, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The OpenAI API root, as benchc's ``base_url`` takes it."""
        return f"http://{HOST}:{self.port}/v1"

    def stop(self) -> None:
        """Stop serving and close the socket (safe to call twice)."""
        if self._thread is not None and self._thread.is_alive():
            self.shutdown()
            self._thread.join(timeout=10)
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if self.verbose:
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RuleServer
    server_version = "benchc-rule-server"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.verbose:
            sys.stderr.write(f"rule server: {self.address_string()} {format % args}\n")

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:  # the client went away
            pass

    def _fail(self, error: BadRequest) -> None:
        self._send(error.status, error.body())

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path, model = self._path(), self.server.rules.model
        if path == "/v1/models":
            return self._send(200, {"object": "list", "data": [_model_entry(model)]})
        if path.startswith("/v1/models/"):
            name = path[len("/v1/models/"):]
            if name == model:
                return self._send(200, _model_entry(model))
            return self._fail(BadRequest(404, f"The model {name!r} does not exist; this server lists {model!r}",
                                         "model", "model_not_found"))
        self._fail(BadRequest(404, f"no such endpoint: GET {path or '/'}", code="not_found"))

    def do_POST(self) -> None:  # noqa: N802
        path = self._path()
        try:
            body = self._read_json()
            if path != "/v1/chat/completions":
                raise BadRequest(404, f"no such endpoint: POST {path or '/'}", code="not_found")
            answer = completion(body, self.server.rules)
            with self.server._count:
                self.server.completions += 1
            self._send(200, answer)
        except BadRequest as error:
            self._fail(error)

    def _read_json(self) -> Any:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise BadRequest(411, "send the body with a Content-Length (chunked bodies are not read)")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise BadRequest(400, "bad Content-Length") from None
        if length > MAX_BODY:
            self.close_connection = True
            raise BadRequest(413, f"the body is over {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError):
            raise BadRequest(400, "the request body is not valid JSON") from None


def serve(rules: Rules | Mapping[str, Any] | str | Path, port: int = 0,
          *, verbose: bool = False) -> tuple[RuleServer, threading.Thread]:
    """Start a rule server on 127.0.0.1 (``port`` 0: a free one) in a daemon thread.

    ``rules``: a Rules object, a parsed rules document (``{"default": ..., "rule": [...]}``) or
    the path of a rules file. Stop it with ``server.stop()``."""
    server = RuleServer(as_rules(rules), port, verbose)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name=f"rule-server-{server.port}", daemon=True)
    server._thread = thread
    thread.start()
    return server, thread


@contextlib.contextmanager
def served(rules: Rules | Mapping[str, Any] | str | Path, port: int = 0,
           *, verbose: bool = False) -> Iterator[RuleServer]:
    """``with served(rules) as server:`` a rule server (``serve``) for the block's duration."""
    server, _ = serve(rules, port, verbose=verbose)
    try:
        yield server
    finally:
        server.stop()


def _write_port_file(path: Path, port: int) -> None:
    """Written whole (a temporary file renamed), so a script polling for it never reads half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(f"{port}\n")
    os.replace(partial, path)


def _remove_port_file(path: Path, port: int) -> None:
    try:
        if path.read_text().strip() == str(port):
            path.unlink()
    except OSError:
        pass


def run(rules_file: Path, port: int, port_file: Path | None = None, model: str | None = None,
        verbose: bool = False) -> None:
    """Serve ``rules_file`` on 127.0.0.1 until SIGTERM or SIGINT (what ``benchc serve-rules`` and
    ``python -m benchc.rule_server`` do); ``model`` renames the model it lists. A bad rules file,
    a port in use or a port file that cannot be written is a ``BenchcError``, raised before any
    request is answered."""
    rules = load_rules(rules_file)
    if model:
        rules = Rules(rules.rules, rules.default, model)

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            server, _ = serve(rules, port, verbose=verbose)
        except OSError as exc:
            raise BenchcError(Problem(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
                                      hint="another server holds the port; use --port 0 --port-file FILE for a "
                                           "free one")) from None
        try:
            if port_file:
                try:
                    _write_port_file(port_file, server.port)
                except OSError as exc:
                    raise BenchcError(f"cannot write the port file {port_file}: {exc.strerror or exc}") from None
            print(f"rule server: {len(rules.rules)} rule(s), model {rules.model!r}, at {server.url} "
                  "(not a model: answers come from the rules file)", file=sys.stderr, flush=True)
            while not stop.wait(0.5):
                pass
        finally:
            server.stop()
            if port_file:
                _remove_port_file(port_file, server.port)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("rule server: stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":  # `python -m benchc.rule_server`, kept as an alias of `benchc serve-rules`
    from benchc.cli import main

    sys.exit(main(["serve-rules", *sys.argv[1:]]))

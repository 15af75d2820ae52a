"""Scaffolding of a local imitation of an HTTP server: http.server in a daemon thread on 127.0.0.1.

A test's server subclasses ``LocalServer`` (its state) and ``QuietHandler`` (its answers); the
handler reaches the server's state as ``self.server.fake``.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: Any

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client that gave up
        pass


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: QuietServer

    def log_message(self, *args: Any) -> None:
        pass


class LocalServer:
    """Serves ``handler`` until ``close``; ``release`` is set at ``close`` (it ends stalls).
    A subclass sets its own state before calling ``__init__``: requests may come at once."""

    def __init__(self, handler: type[QuietHandler]) -> None:
        self.release = threading.Event()
        self.httpd = QuietServer(("127.0.0.1", 0), handler)
        self.httpd.fake = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

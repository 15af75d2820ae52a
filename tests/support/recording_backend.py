"""``recording``: a fast, deterministic test backend that logs every request it answers.

Why: the response store shows what was committed; only the backend can tell what was *answered*,
which is what "no request is answered twice" is about (tests/test_kill_resume.py). Each answered
request appends one line ``BATCH SIZE KEY`` to the file named by ``$BENCHC_RECORD_LOG`` (one
``O_APPEND`` write per line, so lines from several worker processes never interleave, and a line
is on disk before the answer can be committed). ``BATCH`` identifies the ``run_batch`` call, so
a test can tell which requests were committed together.

It speaks (``text-to-speech``: the prompt's bytes behind a marker, not a WAV) and transcribes
(``speech-to-text``: those bytes back, lower-cased), ``$BENCHC_RECORD_DELAY`` seconds per request
(default 0.02), so a run lasts long enough to be killed at a random moment.

benchc has no plugin entry point for backends (they register on import, see
``runtime/backends/__init__.py``), so a process gets this one by importing this module:
``support.recording_cli`` does that before calling the real CLI.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from benchc.runtime.backends import BACKENDS, Backend, Request, Response
from benchc.runtime.backends.base import MediaLoader

LOG_ENV, DELAY_ENV = "BENCHC_RECORD_LOG", "BENCHC_RECORD_DELAY"
MARK = b"SPOKEN:"


@BACKENDS.add("recording")
class Recording(Backend):
    tasks = frozenset({"text-to-speech", "speech-to-text"})
    batch_size = 2
    process_parallel = True

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "version": 1}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        batch, delay = uuid.uuid4().hex[:12], float(os.environ.get(DELAY_ENV, "0.02"))
        out = []
        for request in requests:
            time.sleep(delay)
            out.append(self._answer(request, load_media))
            _record(f"{batch} {len(requests)} {request.key}\n")
        return out

    @staticmethod
    def _answer(request: Request, load_media: MediaLoader) -> Response:
        if request.task == "text-to-speech":
            return Response("audio", data=MARK + request.prompt.encode())
        [(kind, sha)] = request.media
        return Response("text", text=load_media(kind, sha).removeprefix(MARK).decode().lower())


def _record(line: str) -> None:
    path = os.environ.get(LOG_ENV)
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


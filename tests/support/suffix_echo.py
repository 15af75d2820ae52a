"""``test-echo``: answers a prompt with the prompt (and ``suffix=`` if given): fast and
deterministic. Registered on import, by the test modules that use it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from benchc.runtime.backends import BACKENDS, Backend, Request, Response
from benchc.runtime.backends.base import BackendOptions, MediaLoader


class SuffixOptions(BackendOptions):
    suffix: str = Field("", description="text appended to every answer")


@BACKENDS.add("test-echo")
class SuffixEcho(Backend):
    """Answers a prompt with the prompt (and ``suffix=`` if given)."""

    tasks = frozenset({"generate"})
    batch_size = 4
    Options = SuffixOptions
    opts: SuffixOptions

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "suffix": self.opts.suffix}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        suffix = self.opts.suffix
        return [Response("text", text=f"{r.prompt} {suffix}".strip()) for r in requests]

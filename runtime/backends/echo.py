"""``echo``: a backend that needs nothing: it answers each prompt with the prompt itself, or
with a fixed ``answer=``. For tutorials, smoke tests of a new spec (every stage answers, every
metric scores) and tests; its numbers are a spec's floor, not a model's."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import BACKENDS, Backend, BackendOptions, BackendSpec, MediaLoader, Request, Response, cut_at_stop


class EchoOptions(BackendOptions):
    answer: str | None = Field(None, description="a fixed answer for every request (default: the prompt)")


@BACKENDS.add("echo")
class Echo(Backend):
    """Answers each prompt with the prompt itself, or a fixed answer: needs nothing (tutorials, smoke tests of a spec).

    Its numbers are a spec's floor, not a model's."""

    tasks = frozenset({"generate"})
    takes_stop = True
    batch_size = 64
    Options = EchoOptions
    opts: EchoOptions

    def __init__(self, spec: BackendSpec, generation: Any) -> None:
        super().__init__(spec, generation)
        self.answer = self.opts.answer

    def fingerprint(self) -> dict[str, Any]:
        stop = self.generation.stop
        return {"backend": self.name, "answer": self.answer, **({"stop": stop} if stop else {})}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        return [Response("text", text=cut_at_stop(r.prompt if self.answer is None else self.answer,
                                                  self.generation.stop)) for r in requests]

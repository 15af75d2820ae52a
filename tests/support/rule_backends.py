"""Rule-based test backends: a named backend whose answer is a pure function of its options and
the prompt, registered on import by the test modules that use them. Fast, deterministic, and
fingerprinted by their options, so changing an option re-asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from benchc.runtime.backends import BACKENDS, Backend, Request, Response
from benchc.runtime.backends.base import BackendOptions, MediaLoader

Rule = Callable[[Any, str], str]
"""(the backend's options, a prompt) -> its answer."""


def rule_backend(name: str, options: type[BackendOptions], rule: Rule, batch_size: int = 8) -> type[Backend]:
    """Register (once) and return a generate backend ``name`` answering with ``rule``."""
    if name in BACKENDS:
        return BACKENDS.get(name)

    class RuleBackend(Backend):
        __doc__ = f"Test backend {name}: answers by a rule of its options and the prompt."
        tasks = frozenset({"generate"})
        Options = options

        def fingerprint(self) -> dict[str, Any]:
            return {"backend": self.name, **self.opts.model_dump()}

        def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
            return [Response("text", text=rule(self.opts, r.prompt)) for r in requests]

    RuleBackend.batch_size = batch_size
    return BACKENDS.add(name)(RuleBackend)


class SuffixOptions(BackendOptions):
    suffix: str = Field("", description="text appended to every answer")


SuffixEcho = rule_backend("test-echo", SuffixOptions, lambda opts, prompt: f"{prompt} {opts.suffix}".strip(),
                          batch_size=4)
"""``test-echo``: answers a prompt with the prompt (and ``suffix=`` if given)."""

CANNED = {"idk": "I do not know.", "yes": "Yes, there is.", "no": "No.", "hedge": "yes and no"}


class ConstantOptions(BackendOptions):
    answer: Literal["idk", "yes", "no", "hedge"] = Field("idk", description="which canned text to answer with")


Constant = rule_backend("test-constant", ConstantOptions, lambda opts, prompt: CANNED[opts.answer])
"""``test-constant``: answers every prompt with one canned text (``answer=idk|yes|no|hedge``)."""

"""Model steps at compile time: ops that ask a model (an LLM's rephrasing, a VLM's check).

The compiler never imports the runtime. A model-backed op (``ModelOp`` in ``ops/base.py``)
splits its work in two pure halves, ``prompts`` (input -> the prompts to ask) and ``finish``
(input + answers -> output); between them, the compiler hands every prompt of a node to a
:class:`ModelClient` in one call, so the client can batch them on a GPU and answer repeats from
its cache. ``benchc.api.compile`` passes the runtime's client (``runtime/score/model_client.py``): it
builds backends from the same backend strings as ``benchc run`` and keeps every answer in the
response store by request hash, so a recompile asks no model again and a killed compile resumes.

What makes an answer is pinned twice. The client's ``fingerprint`` of a backend (its weights'
digest, library versions, device, generation settings) enters the node key of every task of a
model node, so other weights or settings never get a cached output, and the compile memo key
and the lock (``model_steps``) record it too.

What a step and a client exchange (``ModelPrompt``, ``ModelBackendRef``, the ``ModelClient``
protocol) is in ``model_requests.py``; model answers are free text, which each op parses with
the helpers of ``model_answers.py`` (both re-exported here). An op that cannot use an answer
drops the variant with a short, fixed reason (counted per node and reason in the lock) or, with
``on_bad_answer = "fail"``, fails the compile.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .canonical import canonical_json
from .errors import BenchcError, Problem, SpecError
from .model_answers import answer_items, clean_item, first_answer_line, is_refusal, yes_no
from .model_requests import GENERATION_PARAMS, ModelBackendRef, ModelClient, ModelPrompt, StepGeneration

if TYPE_CHECKING:  # resolve imports every op and its libraries (a second); the runtime imports this module
    from .resolve import ResolvedNode

__all__ = ["GENERATION_PARAMS", "NO_CLIENT_HINT", "Asker", "ModelBackendRef", "ModelClient", "ModelPrompt",
           "ModelSteps", "StepGeneration", "answer_items", "clean_item", "first_answer_line", "is_refusal",
           "yes_no"]
"""This module's API, with the vocabulary and answer helpers it re-exports (the runtime and the
tests import them from here)."""

_T = TypeVar("_T")


NO_CLIENT_HINT = ("compile with `benchc compile` or `benchc.api.compile`, which answer model steps "
                  "through the runtime's backends and response store, or pass "
                  "CompileOptions(model_client=...)")


class ModelSteps:
    """The compiler's side of model steps for one compile: the client, the data roots, and
    each backend's fingerprint, asked once per (backend, settings)."""

    def __init__(self, client: ModelClient | None, roots: Sequence[Path],
                 locate: Callable[[str, str, str | None], Problem]) -> None:
        self.client = client
        self.roots = tuple(roots)
        self._locate = locate  # (key, message, hint) -> Problem with the spec's file and line
        self._fingerprints: dict[ModelBackendRef, dict[str, Any]] = {}
        self.prompts_asked = 0

    def ref(self, params: Any) -> ModelBackendRef:
        """The backend a task's validated params (a ``ModelStepParams``) name."""
        values = params.model_dump(mode="json")
        return ModelBackendRef(values["backend"], StepGeneration.of(values), self.roots)

    def pin(self, nodes: Sequence[ResolvedNode]) -> dict[str, list[dict[str, Any]]]:
        """Fingerprint every backend each model node may use (all values of swept backend and
        generation params), before any work: a missing client or model fails fast, and the
        result enters the compile memo key and the lock."""
        pins: dict[str, list[dict[str, Any]]] = {}
        for node in nodes:
            if not getattr(node.op, "model_backed", False):
                continue
            entries = {canonical_json(e): e for e in
                       ({**ref.as_json(), "fingerprint": self.fingerprint(node, ref)}
                        for ref in self.possible_refs(node))}
            pins[node.id] = [entries[k] for k in sorted(entries)]
        return pins

    def possible_refs(self, node: ResolvedNode) -> list[ModelBackendRef]:
        """Every (backend, generation) combination the node's fixed, grid and choice params
        allow: grid points are full products and choices are drawn per param, so the product
        of each param's values is exactly the set of combinations."""
        fields = node.op.Params.model_fields
        names = ("backend", *GENERATION_PARAMS)
        axes = []
        for name in names:
            if name in node.sweep.grid or name in node.sweep.choice:
                axes.append(node.sweep.grid.get(name) or node.sweep.choice[name])
            else:
                axes.append([node.sweep.fixed.get(name, fields[name].default)])
        refs = []
        for combo in itertools.product(*axes):
            values = dict(zip(names, combo))
            refs.append(ModelBackendRef(str(values["backend"]), StepGeneration.of(values), self.roots))
        return refs

    def fingerprint(self, node: ResolvedNode, ref: ModelBackendRef) -> dict[str, Any]:
        return self.model_fingerprint(Asker.of(node), ref)

    def generate(self, node: ResolvedNode, ref: ModelBackendRef, prompts: list[ModelPrompt]) -> list[str]:
        return self.model_answers(Asker.of(node), ref, prompts)

    def model_fingerprint(self, asker: Asker, ref: ModelBackendRef) -> dict[str, Any]:
        if ref not in self._fingerprints:
            client = self._require_client(asker)
            self._fingerprints[ref] = self._asking(asker, lambda: client.fingerprint(ref))
        return self._fingerprints[ref]

    def model_answers(self, asker: Asker, ref: ModelBackendRef, prompts: list[ModelPrompt]) -> list[str]:
        client = self._require_client(asker)
        answers = self._asking(asker, lambda: client.generate(ref, prompts))
        if len(answers) != len(prompts):
            raise RuntimeError(f"model client returned {len(answers)} answers for {len(prompts)} prompts")
        self.prompts_asked += len(prompts)
        return answers

    def embedder_fingerprint(self, asker: Asker, name: str) -> dict[str, Any]:
        client = self._require_client(asker)
        return self._asking(asker, lambda: client.embedder_fingerprint(name))

    def embed(self, asker: Asker, name: str, texts: list[str]) -> Any:
        client = self._require_client(asker)
        return self._asking(asker, lambda: client.embed(name, texts))

    def _require_client(self, asker: Asker) -> ModelClient:
        if self.client is None:
            raise SpecError(self._locate(asker.key, f"{asker.who} asks a model at compile time, and this "
                                         "compile has no model client", NO_CLIENT_HINT))
        return self.client

    def _asking(self, asker: Asker, call: Callable[[], _T]) -> _T:
        """Run a client call; its errors get the asker's key path, file and line."""
        try:
            return call()
        except BenchcError as exc:
            located = [self._locate(asker.key, f"{asker.label}: {p.message}", p.hint) if not p.key
                       else replace(p, message=f"{asker.label}: {p.message}") for p in exc.problems]
            raise type(exc)(located) from None


@dataclass(frozen=True)
class Asker:
    """Who asks a model, for messages: its spec key path, and how it is named."""

    key: str  # "node[2].params.backend", "select.models[0]"
    label: str  # "node 'rephrased'", "select"
    who: str  # "node 'rephrased' (op 'text.rephrase')"

    @staticmethod
    def of(node: ResolvedNode) -> Asker:
        return Asker(f"{node.where}.params.backend", f"node {node.id!r}",
                      f"node {node.id!r} (op {node.op.name!r})")

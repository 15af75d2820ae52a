"""Model steps at compile time: ops that ask a model (an LLM's rephrasing, a VLM's check).

The compiler never imports the runtime. A model-backed op (``ModelOp`` in ``ops/base.py``)
splits its work in two pure halves, ``prompts`` (input -> the prompts to ask) and ``finish``
(input + answers -> output); between them, the compiler hands every prompt of a node to a
:class:`ModelClient` in one call, so the client can batch them on a GPU and answer repeats from
its cache. ``benchc.api.compile`` passes the runtime's client (``runtime/model_client.py``): it
builds backends from the same backend strings as ``benchc run`` and keeps every answer in the
response store by request hash, so a recompile asks no model again and a killed compile resumes.

What makes an answer is pinned twice. The client's ``fingerprint`` of a backend (its weights'
digest, library versions, device, generation settings) enters the node key of every task of a
model node, so other weights or settings never get a cached output, and the compile memo key
and the lock (``model_steps``) record it too.

Model answers are free text, so each op parses them with the helpers below, which are kept
small and documented because what they accept decides what a benchmark contains:

* :func:`first_answer_line`: strip, skip a preamble line that ends with ":" ("Here is the
  translation:"), take the first non-empty line, drop a short leading label ("Translation: ")
  and matching quotes around the whole answer.
* :func:`is_refusal`: the answer starts like a refusal ("I'm sorry", "I cannot", "As an AI").
* :func:`answer_items`: a list answer (numbered, bulleted or one per line; one line of several
  questions is split after each "?"), each item cleaned as above.
* :func:`yes_no`: "yes" or "no" when the answer's first word is one of them, else None.

An op that cannot use an answer drops the variant with a short, fixed reason (counted per node
and reason in the lock) or, with ``on_bad_answer = "fail"``, fails the compile.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .canonical import canonical_json
from .errors import BenchcError, Problem, SpecError
from .values import MediaRef

if TYPE_CHECKING:
    from .resolve import ResolvedNode

GENERATION_PARAMS = ("max_new_tokens", "temperature", "top_p")

_T = TypeVar("_T")


@dataclass(frozen=True)
class StepGeneration:
    """The generation settings of a model step (a node's params, not the spec's [generation],
    which belongs to the model under test)."""

    max_new_tokens: int
    temperature: float
    top_p: float

    @staticmethod
    def of(values: dict[str, Any]) -> StepGeneration:
        return StepGeneration(int(values["max_new_tokens"]), float(values["temperature"]),
                              float(values["top_p"]))

    def as_json(self) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "top_p": self.top_p}


@dataclass(frozen=True)
class ModelBackendRef:
    """Which model answers a step and how: a backend string as ``benchc run`` takes it
    (``hf:models/llm,batch_size=8``), the generation settings, and the folders a relative model
    path is looked up in (the spec's folder, then each --data-root)."""

    backend: str
    generation: StepGeneration
    roots: tuple[Path, ...] = ()
    task: str = "generate"
    """``generate``, or ``speech-to-text`` (the baseline ASR models of a ``[select]``)."""

    def as_json(self) -> dict[str, Any]:
        """What the lock names (never the roots: no absolute path enters a lock)."""
        out = {"backend": self.backend, "generation": self.generation.as_json()}
        return out if self.task == "generate" else {**out, "task": self.task}


@dataclass(frozen=True)
class ModelPrompt:
    """One request of a model step. ``seed`` is set only for sampled steps (temperature > 0),
    so that greedy requests with the same text are one request; ``sample`` tells repeated
    samples of the same prompt apart."""

    text: str
    system: str | None = None
    media: tuple[MediaRef, ...] = ()
    seed: int | None = None
    sample: int = 0


class ModelClient(Protocol):
    """What the compiler needs from whoever runs models (the runtime, or a test's fake)."""

    def fingerprint(self, ref: ModelBackendRef) -> dict[str, Any]:
        """Everything that shapes this backend's answers: weights digest, library versions,
        device, generation settings. Raises BenchcError when the backend cannot be built."""
        ...

    def generate(self, ref: ModelBackendRef, prompts: Sequence[ModelPrompt]) -> list[str]:
        """One answer per prompt, in order (the client batches, deduplicates and caches)."""
        ...

    def embedder_fingerprint(self, name: str) -> dict[str, Any]:
        """What shapes a sentence embedder's vectors (``[select]``'s similarity)."""
        ...

    def embed(self, name: str, texts: Sequence[str]) -> Any:
        """Unit-normalised embeddings of ``texts`` (a float32 array, one row per text), each
        text's vector independent of the others in the call."""
        ...


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


# --- parsing answers -------------------------------------------------------------------------

LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z \-]{0,38}):\s+(?=\S)")
"""A short leading label ("Translation: ", "Rephrased question: "); at most five words."""
QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "`": "`", "\u00ab": "\u00bb"}
REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry\b|i apologi[sz]e|i can(?:no|')t|i can not|i am unable|"
    r"i'?m unable|i am not able|i'?m not able|i won'?t|as an ai\b)", re.IGNORECASE)
LIST_MARK = re.compile(r"^\s*(?:[-*\u2022]|\(?\d{1,2}[.):]|\(?[a-c][.)])\s+")
YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def _strip_label(line: str) -> str:
    match = LABEL.match(line)
    if match and len(match.group(1).split()) <= 5:
        return line[match.end():]
    return line


def _strip_quotes(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and QUOTES.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


def clean_item(text: str) -> str:
    """One line of an answer without its list mark, leading label and enclosing quotes."""
    return _strip_quotes(_strip_label(LIST_MARK.sub("", text, count=1)))


def _content_lines(answer: str) -> list[str]:
    """The answer's non-empty lines, without preamble lines that end with ":" when more follow."""
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    while len(lines) > 1 and lines[0].endswith(":"):
        lines = lines[1:]
    return lines


def first_answer_line(answer: str) -> str:
    """The answer's first content line, cleaned (see the module docstring); "" if none."""
    lines = _content_lines(answer)
    return clean_item(lines[0]) if lines else ""


def is_refusal(answer: str) -> bool:
    return bool(REFUSAL.match(answer.strip()))


def answer_items(answer: str) -> list[str]:
    """A list answer's items: one per line (list marks, labels and quotes removed); a single
    line holding several questions is split after each "?"."""
    items = [clean_item(line) for line in _content_lines(answer)]
    items = [item for item in items if item]
    if len(items) == 1 and items[0].count("?") > 1:
        items = [clean_item(q) for q in re.findall(r"[^?]*\?", items[0]) if q.strip(" ?")]
    return items


def yes_no(answer: str) -> str | None:
    """"yes" or "no" when the answer's first word is one of them (case and leading punctuation
    ignored); None for anything else, refusals included."""
    match = YES_NO.match(answer)
    return match.group(1).lower() if match else None

"""The backend protocol: a named model that answers batches of requests for some tasks.

A backend is named in a spec or on the command line as ``NAME`` or ``NAME:OPTIONS``, e.g.
``espeak:voice=en-us,speed=160`` or ``hf:/models/llava-1.5-7b``. Its ``fingerprint`` covers
everything that shapes its answers (weights digest, processor config, engine version, options,
generation settings) and enters every request key.

A backend that answers the requests of a batch one by one (``openai``) can fail some and answer
the others: ``run_batch`` then raises ``BatchFailures``, which carries the answers it got (the
executor stores them) and a ``RequestFailure`` for each request it could not answer (the executor
counts them by ``kind`` and ends the run with one message). Any other exception fails the whole
batch.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.registry import Registry, did_you_mean, literal_hint
from benchc.compiler.spec.models import Generation


@dataclass(frozen=True)
class Request:
    key: str
    task: str
    prompt: str
    system: str | None = None
    media: tuple[tuple[str, str], ...] = ()  # (kind, sha256)
    sample: int = 0
    seed: int | None = None
    """A sampling seed of the request's own (compile-time model steps set one per variant);
    None: the backend derives one from the request's content and ``generation.seed``."""


@dataclass(frozen=True)
class Response:
    kind: str  # "text" | "audio"
    text: str | None = None
    data: bytes | None = None


@dataclass(frozen=True)
class RequestFailure:
    """Why a backend could not answer one request. Picklable: it crosses worker processes and Ray."""

    kind: str
    """The class it is counted under: ``HTTP 500``, ``timeout``, ``truncated body``, ..."""
    message: str
    """One line naming the request; never a secret."""
    hint: str | None = None


def _by_count(failures: list[RequestFailure]) -> list[tuple[str, int]]:
    counts = Counter(f.kind for f in failures)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def count_kinds(failures: Iterable[RequestFailure]) -> str:
    """``"3 x HTTP 500, 2 x timeout"``: most frequent first, then by name."""
    return ", ".join(f"{n} x {kind}" for kind, n in _by_count(list(failures)))


def first_of_each_kind(failures: Iterable[RequestFailure]) -> list[RequestFailure]:
    """One example of each kind, in ``count_kinds``'s order."""
    failures = list(failures)
    seen: dict[str, RequestFailure] = {}
    for failure in failures:
        seen.setdefault(failure.kind, failure)
    return [seen[kind] for kind, _ in _by_count(failures)]


class BatchFailures(BackendError):
    """Raised by ``run_batch`` when some of its requests failed. ``answers[i]`` is the i-th
    request's answer, or None; ``failures`` maps the index of each failed request to why; an index
    in neither was not sent. ``stopped``: the backend gave up on the rest of its batch (a refused
    key, a server that answers nothing), and the executor should send no further batches."""

    def __init__(self, answers: list[Response | None], failures: dict[int, RequestFailure],
                 stopped: bool = False) -> None:
        self.answers = list(answers)
        self.failures = dict(failures)
        self.stopped = stopped
        answered = sum(a is not None for a in self.answers)
        summary = Problem(f"{len(self.failures)} of {len(self.answers)} requests failed "
                          f"({count_kinds(self.failures.values())}); {answered} answered")
        super().__init__([summary, *(Problem(f.message, hint=f.hint)
                                     for f in first_of_each_kind(self.failures.values()))])

    def __reduce__(self) -> tuple[Any, ...]:  # the default would call __init__ with the message
        return (type(self), (self.answers, self.failures, self.stopped))


MediaLoader = Callable[[str, str], bytes]
"""(kind, sha256) -> bytes: reads item media from the compile cache or audio from the store."""


@dataclass(frozen=True)
class BackendSpec:
    """A parsed backend string: picklable, so worker processes can build their own backend."""

    name: str
    target: str = ""  # e.g. a model path for hf
    options: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def parse(text: str) -> BackendSpec:
        name, _, rest = text.partition(":")
        target, options = "", []
        for part in filter(None, rest.split(",")):
            if "=" in part:
                k, _, v = part.partition("=")
                options.append((k.strip(), v.strip()))
            elif not target:
                target = part
            else:
                raise BackendError(Problem(f"backend {text!r}: more than one target",
                                           hint="NAME:TARGET,key=value,..."))
        return BackendSpec(name.strip(), target, tuple(sorted(options)))

    def __str__(self) -> str:
        parts = ([self.target] if self.target else []) + [f"{k}={v}" for k, v in self.options]
        return self.name + (":" + ",".join(parts) if parts else "")


class BackendOptions(BaseModel):
    """A backend's options (``NAME:TARGET,option=value,...``) as typed, documented fields.

    A backend declares ``Options``, a subclass whose fields have defaults, ranges and a
    ``Field(description=...)``: the values (written as text) are converted and checked before any
    request, a misspelt name gets a did-you-mean, and `benchc backends` and docs/reference.md
    list them from the model. A field left at None means "not given" where the default depends
    on something else (another option, the machine)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def parse_options(backend: str, schema: type[BackendOptions], given: dict[str, str]) -> BackendOptions:
    """``given`` (option -> text) checked against ``schema``: one message for all that is wrong."""
    unknown = sorted(set(given) - set(schema.model_fields))
    if unknown:
        known = sorted(schema.model_fields)
        close = [hint for name in unknown if (hint := did_you_mean(name, known))]
        listed = f"known options: {', '.join(known) or 'none'}"
        raise BackendError(Problem(f"backend {backend!r}: unknown option(s) {', '.join(unknown)}",
                                   hint="; ".join([*close, listed])))
    try:
        return schema.model_validate(given)
    except ValidationError as exc:
        raise BackendError([_option_problem(backend, error, given) for error in exc.errors()]) from None


def _option_problem(backend: str, error: Any, given: dict[str, str]) -> Problem:
    name = str(error["loc"][0]) if error.get("loc") else ""
    expected = literal_hint(error) or str(error.get("msg", "")).removeprefix("Value error, ")
    return Problem(f"backend {backend!r}: option {name}={given.get(name, '')!r} is not valid",
                   hint=f"{name}: {expected[:1].lower()}{expected[1:]}")


def _declared(cls: type) -> set[str]:
    return {name for klass in cls.__mro__ if klass.__name__ != "Backend" for name in vars(klass)}


class Backend(ABC):
    name: ClassVar[str]
    Options: ClassVar[type[BackendOptions]] = BackendOptions
    """The backend's options; the default takes none."""
    target_help: ClassVar[str] = "none"
    """What TARGET is in ``NAME:TARGET`` (``/path/to/model``), or ``none`` for a backend that
    takes none (docs/reference.md and `benchc backends` say so)."""
    tasks: ClassVar[frozenset[str]]
    batch_size: ClassVar[int] = 1
    process_parallel: ClassVar[bool] = False
    """True when several worker processes may each load this backend (CPU engines)."""
    target_is_path: ClassVar[bool] = False
    """True when the target names a file or folder (``hf:/models/llava``): model steps at compile
    time look a relative one up in the spec's data roots."""

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        self.spec = spec
        self.generation = generation
        self.options: dict[str, str] = dict(spec.options)
        """The options as written (text): what fingerprints record."""
        self.opts = parse_options(self.name, self.Options, self.options) if "Options" in _declared(type(self)) \
            else BackendOptions()  # TODO(issue 15): every backend declares Options
        """The options checked and typed by ``Options``."""

    @abstractmethod
    def fingerprint(self) -> dict[str, Any]: ...

    @abstractmethod
    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]: ...

    def batch_order(self, requests: list[Request], load_media: MediaLoader) -> list[Request]:
        """The order in which the executor cuts ``requests`` into batches of ``batch_size``. This
        default keeps the manifest's; a backend that pads a batch to its longest request puts
        requests of like length together (``hf``, see ``hf_batching``)."""
        return requests

    def failure_hint(self, failures: list[RequestFailure], answered: int) -> str | None:
        """A hint for a run whose requests failed like this while ``answered`` others succeeded
        (e.g. "is the server up?" when nothing got through); None: nothing to add."""
        return None

    def prepare(self) -> None:  # noqa: B027  (an optional hook: by default there is nothing to load)
        """Load what answering needs (weights), so that a broken model fails before the first
        request; backends that load lazily (so a fingerprint costs no weights load) override it."""

    def option(self, name: str, default: str) -> str:
        return self.options.get(name, default)

    def int_option(self, name: str, default: int, minimum: int | None = None) -> int:
        """An integer option; a malformed or too small value fails before any request."""
        text = self.options.get(name)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            raise self.bad_option(name, text, "an integer") from None
        if minimum is not None and value < minimum:
            raise self.bad_option(name, text, f"an integer >= {minimum}")
        return value

    def float_option(self, name: str, default: float, valid: Callable[[float], bool], expected: str) -> float:
        """A number option; a malformed, non-finite or invalid (``valid`` false) value fails
        before any request, saying it must be ``expected``."""
        text = self.options.get(name)
        if text is None:
            return default
        try:
            value = float(text)
        except ValueError:
            raise self.bad_option(name, text, expected) from None
        if not math.isfinite(value) or not valid(value):
            raise self.bad_option(name, text, expected)
        return value

    def choice_option(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        """An option that must be one of ``choices``."""
        value = self.options.get(name, default)
        if value not in choices:
            raise self.bad_option(name, value, "one of " + ", ".join(choices))
        return value

    def bad_option(self, name: str, value: str, expected: str) -> BackendError:
        return BackendError(Problem(f"backend {self.name!r}: option {name}={value!r} is not valid",
                                    hint=f"{name} must be {expected}"))

    def check_options(self, known: set[str]) -> None:
        unknown = sorted(set(self.options) - known)
        if unknown:
            close = [hint for name in unknown if (hint := did_you_mean(name, sorted(known)))]
            listed = f"known options: {', '.join(sorted(known)) or 'none'}"
            raise BackendError(Problem(f"backend {self.name!r}: unknown option(s) {', '.join(unknown)}",
                                       hint="; ".join([*close, listed])))


BACKENDS: Registry[type[Backend]] = Registry("backend", group="benchc.backends")


def make_backend(spec: BackendSpec | str, generation: Generation, task: str | None = None) -> Backend:
    """Build a backend, failing before any request with one clear message."""
    spec = BackendSpec.parse(spec) if isinstance(spec, str) else spec
    if spec.name not in BACKENDS:
        raise BackendError(BACKENDS.unknown(spec.name))
    cls = BACKENDS.get(spec.name)
    if task is not None and task not in cls.tasks:
        raise BackendError(Problem(f"backend {spec.name!r} cannot do {task!r}",
                                   hint=f"it does: {', '.join(sorted(cls.tasks))}"))
    return cls(spec, generation)

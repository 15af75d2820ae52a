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

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.registry import Registry, closest_choices, did_you_mean, literal_choices
from benchc.compiler.spec.models import Generation


@dataclass(frozen=True)
class Choices:
    """What a ``choice-loglik`` request asks: score each of ``texts`` as the continuation
    ``delimiter + text`` of the prompt, and answer with the best by ``choose_by`` (``loglik``: the
    sum of the continuation's token log-probabilities, lm-eval's acc; ``loglik_per_char``: that sum
    over the choice's length in characters, its acc_norm)."""

    texts: tuple[str, ...]
    delimiter: str = " "
    choose_by: str = "loglik"

    def to_json(self) -> dict[str, Any]:
        return {"texts": list(self.texts), "delimiter": self.delimiter, "choose_by": self.choose_by}


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
    choices: Choices | None = None
    """A ``choice-loglik`` request's choices; None for every other task."""


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


ANSWERS_ATTR = "benchc_answers"
"""The attribute ``keep_answers`` puts on an exception that interrupted a batch."""


def keep_answers(exc: BaseException, answers: list[Response | None]) -> None:
    """Attach the answers a batch got before ``exc`` (a Ctrl-C) stopped it, for the executor to
    store before the exception goes on: no answer a server sent is thrown away."""
    try:
        setattr(exc, ANSWERS_ATTR, list(answers))
    except (AttributeError, TypeError):  # an exception type that takes no attributes
        pass


def kept_answers(exc: BaseException) -> list[Response | None] | None:
    return getattr(exc, ANSWERS_ATTR, None)


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
    on something else (another option, the model); its description then ends with what that
    default is, ``(default: the model's)``. Numbers must be finite (``inf`` and ``nan`` are
    refused). Text options keep the text as written (BackendSpec.parse strips the spaces around
    it), so a fingerprint that records one records the same text as ``self.options``.

    A value that only the backend can judge once it knows more (a voice the engine lacks, a CUDA
    device this machine lacks, a length beyond the model's) is refused by ``Backend.bad_option``
    in the same words."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, allow_inf_nan=False)


def _true_or_false(value: Any) -> Any:
    if isinstance(value, str) and value not in ("true", "false"):
        raise ValueError("true or false")
    return value


Flag = Annotated[bool, BeforeValidator(_true_or_false)]
"""A yes/no option written ``true`` or ``false`` (a plain ``bool`` field would also take yes, on,
1 and the like)."""


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
        raise BackendError([_option_problem(backend, schema, error, given) for error in exc.errors()]) from None


def option_error(backend: str, name: str, value: str, expected: str) -> BackendError:
    """An option whose value is refused: ``expected`` says what it must be (``an integer >= 1``)."""
    return BackendError(Problem(f"backend {backend!r}: option {name}={value!r} is not valid",
                                hint=f"{name} must be {expected}"))


def _option_problem(backend: str, schema: type[BackendOptions], error: Any, given: dict[str, str]) -> Problem:
    name = str(error["loc"][0]) if error.get("loc") else ""
    field = schema.model_fields.get(name)
    return option_error(backend, name, given.get(name, ""), _expected(error, field)).problems[0]


def _expected(error: Any, field: FieldInfo | None) -> str:
    """What a refused value must be, in words: ``an integer >= 1``, ``a number in (0.0, 1.0]``,
    ``one of: 'a', 'b' (did you mean 'a'?)``, ``true or false``, or a validator's own words."""
    kind = error.get("type", "")
    if kind == "literal_error":
        choices = literal_choices(error)
        allowed = "one of: " + ", ".join(repr(c) for c in choices)
        close = closest_choices(str(error.get("input")), choices)
        return f"{allowed} (did you mean {' or '.join(repr(c) for c in close)}?)" \
            if close and len(close) < len(choices) else allowed
    if kind == "bool_parsing":
        return "true or false"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"an integer {_bounds(field)}".rstrip()
    if kind in ("float_parsing", "float_type"):
        return f"a number {_bounds(field)}".rstrip()
    if kind in ("finite_number", "greater_than", "greater_than_equal", "less_than", "less_than_equal",
                "multiple_of"):
        finite = "a finite number" if kind == "finite_number" else _number_kind(field)
        return f"{finite} {_bounds(field)}".rstrip()
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    return message[:1].lower() + message[1:]


def _number_kind(field: FieldInfo | None) -> str:
    types = {field.annotation, *get_args(field.annotation)} if field is not None else set()
    return "an integer" if int in types else "a number"


def _bounds(field: FieldInfo | None) -> str:
    """``>= 1``, ``in (0.0, 1.0]``, ``>= 8, a multiple of 8``: a number field's constraints, or ""."""
    found = {name: getattr(m, name) for m in (field.metadata if field is not None else ())
             for name in ("ge", "gt", "le", "lt", "multiple_of") if getattr(m, name, None) is not None}
    low = ("[", found["ge"]) if "ge" in found else ("(", found["gt"]) if "gt" in found else None
    high = ("]", found["le"]) if "le" in found else (")", found["lt"]) if "lt" in found else None
    parts = []
    if low and high:
        parts.append(f"in {low[0]}{low[1]}, {high[1]}{high[0]}")
    elif low:
        parts.append(f"{'>=' if low[0] == '[' else '>'} {low[1]}")
    elif high:
        parts.append(f"{'<=' if high[0] == ']' else '<'} {high[1]}")
    if "multiple_of" in found:
        parts.append(f"a multiple of {found['multiple_of']}")
    return ", ".join(parts)


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
    encodes_ahead: ClassVar[bool] = False
    """True when ``encode_batch`` does work worth a helper thread (the in-process executor then
    encodes the next batch while this one runs)."""
    takes_stop: ClassVar[bool] = False
    """True when the backend ends its text answers at ``[generation].stop`` (``cut_at_stop``);
    a spec with stop sequences is refused by the backends that cannot."""
    target_is_path: ClassVar[bool] = False
    """True when the target names a file or folder (``hf:/models/llava``): model steps at compile
    time look a relative one up in the spec's data roots."""

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        self.spec = spec
        self.generation = generation
        self.options: dict[str, str] = dict(spec.options)
        """The options as written (text)."""
        self.opts = parse_options(self.name, self.Options, self.options)
        """The options checked and typed by ``Options``."""

    @abstractmethod
    def fingerprint(self) -> dict[str, Any]: ...

    @abstractmethod
    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]: ...

    def encode_batch(self, requests: list[Request], load_media: MediaLoader) -> Any:
        """The CPU work of a batch that can be done ahead (decoding its media, tokenizing, image
        processing), or None where there is none. The in-process executor calls it on a helper
        thread for the next batch while this one generates, and hands the result to
        ``run_encoded`` (``encodes_ahead`` backends only): a GPU, or the torch thread on a CPU,
        then never waits for a PNG decoder or an image processor."""
        return None

    def run_encoded(self, requests: list[Request], encoded: Any, load_media: MediaLoader) -> list[Response]:
        """``run_batch`` given ``encode_batch``'s result for the same requests; the answers must
        be exactly ``run_batch``'s."""
        return self.run_batch(requests, load_media)

    def plan_batches(self, requests: list[Request], load_media: MediaLoader) -> list[list[Request]]:
        """The batches the executor sends: ``batch_order``'s order cut every ``batch_size``
        requests. A backend whose requests gain from meeting in one batch (``hf`` with
        ``share_prefix``: a group's prompts about one image) cuts otherwise."""
        ordered, size = self.batch_order(requests, load_media), max(1, self.batch_size)
        return [ordered[start:start + size] for start in range(0, len(ordered), size)]

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

    def before_requests(self) -> None:  # noqa: B027  (an optional hook)
        """Called in the running process once some request must really be sent (never for a run
        answered from the store), before the first batch: a check against a server (``openai``
        lists its models) belongs here, not in ``__init__``, so that a cached rerun needs no
        server and the fingerprint never depends on one."""

    def served(self) -> dict[str, Any] | None:
        """What the backend learnt from its server in ``before_requests`` (run.json's ``served``),
        or None: nothing asked."""
        return None

    def bad_option(self, name: str, value: str, expected: str) -> BackendError:
        """An option that ``Options`` accepted but this backend refuses once it knows more (a voice
        the engine lacks, a device this machine lacks, a length beyond the model's): ``expected``
        says what it must be."""
        return option_error(self.name, name, value, expected)


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
    if generation.stop and task in (None, "generate") and "generate" in cls.tasks and not cls.takes_stop:
        takers = sorted(n for n in BACKENDS.names() if BACKENDS.get(n).takes_stop)
        raise BackendError(Problem(f"backend {spec.name!r} cannot end its answers at [generation].stop "
                                   f"({', '.join(map(repr, generation.stop))})",
                                   hint=f"remove `stop`, or answer with a backend that takes it: {', '.join(takers)}"))
    return cls(spec, generation)


def cut_at_stop(text: str, stop: Iterable[str]) -> str:
    """``text`` up to the first place where any stop sequence starts (the sequence left out, as
    the OpenAI API and lm-eval's ``until`` do). Applied to every answer of a backend that takes
    ``stop``, also where the server was sent them: a server that ignores ``stop`` must not make
    the answers differ."""
    ends = [found for s in stop if (found := text.find(s)) >= 0]
    return text[:min(ends)] if ends else text

"""Pydantic models of a benchmark spec. Unknown keys are refused and every model is frozen.

Stage 1 of the compiler (parse) produces these; op, source and metric parameters are
checked against their registered schemas in stage 2 (resolve).

The spec's own keys are strict: no value is coerced from another type (``n = "4"`` is an error,
not 4; an integer is accepted where a float is meant), integers fit in 64 bits, floats are finite
and identifiers and versions match their whole text (a trailing newline is refused). The
checks that apply to every value of a spec, parameters included (NUL bytes, non-finite numbers,
integers beyond 64 bits), are in ``parse.py``.
"""

from __future__ import annotations

import json

import re
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, SerializerFunctionWrapHandler, Tag, field_validator,
                      model_serializer, model_validator)
from pydantic import Strict as PydanticStrict

from .split_checks import split_problems

SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?")
"""Matched with ``fullmatch``: ``$`` would also match before a trailing newline."""
IDENT = re.compile(r"[a-z][a-z0-9_]*")
"""Matched with ``fullmatch``."""
Scalar = str | int | float | bool
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""Every integer of a spec fits in a signed 64-bit integer (as TOML's integers do)."""

STRICT_CONFIG = ConfigDict(strict=True, allow_inf_nan=False)
"""No coercion between types (an int is still a valid float) and no inf/nan."""


class SpecKeyError(ValueError):
    """Problems a whole-spec check finds, each at its own key path (``node[2].id``), so that the
    parser can point at their lines: pydantic gives a model validator's error the model's
    location, not the key's."""

    def __init__(self, problems: list[tuple[str, str]], hints: dict[str, str] | None = None) -> None:
        self.problems = problems
        self.hints = hints or {}
        """key path -> a hint for the problem at that key"""
        super().__init__("; ".join(f"{key}: {message}" for key, message in problems))


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, **STRICT_CONFIG)


class Benchmark(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-/.]*$", description="e.g. 'mm-r3/context-reasoning'")
    version: str = Field(description="semantic version, e.g. '1.0.0'")
    seed: int = Field(0, ge=0, le=INT64_MAX, description="root of every derived seed")
    description: str = ""

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not SEMVER.fullmatch(value):
            raise ValueError(f"{value!r} is not a semantic version such as '1.0.0'")
        return value


class Source(BaseModel):
    """``loader`` names a registered source; its other keys are the loader's parameters."""

    model_config = ConfigDict(extra="allow", frozen=True, **STRICT_CONFIG)
    loader: str
    pin: str | None = Field(None, pattern=r"^[0-9a-f]{64}$", description="expected source digest")
    on_error: Literal["fail", "skip"] = "fail"

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Filter(Strict):
    """Keep records whose field ``where`` satisfies exactly one condition."""

    where: str
    between: tuple[Annotated[float, PydanticStrict()], Annotated[float, PydanticStrict()]] | None = Field(
        None, strict=False)  # a TOML array (a list) becomes the tuple; its numbers stay strict
    equals: Scalar | None = None
    one_of: list[Scalar] | None = Field(None, alias="in")
    not_in: list[Scalar] | None = None
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> Filter:
        given = [k for k in ("between", "equals", "one_of", "not_in") if getattr(self, k) is not None]
        if self.min is not None or self.max is not None:
            given.append("min/max")
        if len(given) != 1:
            raise ValueError("a filter needs exactly one of: between, equals, in, not_in, min/max")
        return self


class Sample(Strict):
    """Deterministic, order-independent selection: records are ranked by a seeded hash of their id."""

    n: int | None = Field(None, gt=0, le=INT64_MAX, description="keep this many records (all if unset)")
    per: str | None = Field(None, description="keep at most one record per value of this field")
    stratify: str | None = Field(None, description="keep n records per value of this field")


class Node(Strict):
    """One node of the perturbation graph."""

    id: str
    op: str
    input: str | None = Field(None, description="a node id, or a record field/media name")
    params: dict[str, Any] = Field(default_factory=dict)
    repeat: int = Field(1, ge=1, le=1000)

    @field_validator("id")
    @classmethod
    def _ident(cls, value: str) -> str:
        if not IDENT.fullmatch(value) or value in RESERVED_INPUTS:
            raise ValueError(f"node id {value!r} must match [a-z][a-z0-9_]* and not be reserved")
        return value


RESERVED_INPUTS = {"record", "prompt"}


class SelectProbe(Strict):
    """What the baseline models are asked about besides each record's own media: a node of one
    op over a record media (its params swept like a node's; each output is one probe)."""

    op: str
    input: str | None = Field(None, description="the record media the op perturbs (default: the op's)")
    params: dict[str, Any] = Field(default_factory=dict)
    repeat: int = Field(1, ge=1, le=1000)


class Select(Strict):
    """Keep the records on which baseline models are least consistent (MMCBench's hard
    selection): each model answers each record's media and each of its probes; a record's
    consistency is the mean cosine similarity of a probe's answer to the clean answer, over its
    probes and the models; the ``keep`` records of lowest consistency are kept."""

    keep: int = Field(gt=0, le=INT64_MAX, description="how many records to keep: those of lowest consistency")
    models: list[str] = Field(min_length=1, description="baseline backends, as `benchc run` names them")
    task: Literal["generate", "speech-to-text"] = Field(
        "generate", description="what the models do: describe an image, or transcribe audio")
    prompt: str = Field("", description="the text sent with each image (generate)")
    max_new_tokens: int = Field(30, gt=0, le=INT64_MAX)
    embedder: str = Field("minilm", description="the sentence embedder of the similarity")
    probe: SelectProbe
    kind: Literal["model"] = Field("model", exclude=True, description="this kind (the default; never in the "
                                                                         "spec document, so digests stay)")


class TextSelectWeights(Strict):
    """The selection score's weights (MMCBench: 6, 1, 1, 1)."""

    inconsistency: float = Field(6.0, ge=0, description="of 1 - mean cosine similarity to the probes")
    readability: float = Field(1.0, ge=0, description="of the min-max normalised readability grade")
    syntax: float = Field(1.0, ge=0, description="of the min-max normalised parse-tree depth")
    description: float = Field(1.0, ge=0, description="of the min-max normalised noun/verb/adjective count")


class TextSelect(Strict):
    """Keep the records whose text is hardest (MMCBench's text-side hard selection): a score of
    the text's inconsistency under its corruptions (the probe) and its readability grade,
    parse-tree depth and count of nouns, verbs and adjectives; the ``keep`` highest are kept
    (``compiler/select_text.py``)."""

    kind: Literal["text"]
    keep: int = Field(gt=0, le=INT64_MAX, description="how many records to keep: those of highest score")
    first_keep: int | None = Field(None, gt=0, le=INT64_MAX,
                                   description="first keep this many of highest score, then `keep` of them by a "
                                               "seeded hash of the record id (stand-in for MMCBench's "
                                               "aesthetic stage)")
    field: str = Field("text", description="the dotted record field holding the text")
    embedder: str = Field("minilm", description="the sentence embedder of the similarity")
    weights: TextSelectWeights = Field(default_factory=TextSelectWeights)
    probe: SelectProbe

    @model_validator(mode="after")
    def _stages(self) -> TextSelect:
        if self.first_keep is not None and self.first_keep < self.keep:
            raise SpecKeyError([("first_keep", f"first_keep ({self.first_keep}) is below keep ({self.keep}): the "
                                               "second stage keeps `keep` of the first stage's records")],
                               {"first_keep": f"set first_keep >= {self.keep}, or leave it out"})
        return self


SELECT_KINDS = ("model", "text")
"""``[select].kind``: baseline models' consistency (the default), or the text's own difficulty."""


def _select_kind(value: Any) -> str | None:
    kind = value.get("kind", "model") if isinstance(value, dict) else getattr(value, "kind", None)
    return kind if kind in SELECT_KINDS else None


AnySelect = Annotated[Annotated[Select, Tag("model")] | Annotated[TextSelect, Tag("text")],
                      Discriminator(_select_kind)]


class Split(Strict):
    """Records assigned to named splits by a seeded hash of a key (``compiler/split.py``), and the
    evaluation sets the kept records must stay disjoint from (``compiler/disjoint.py``)."""

    key: str | list[str] | None = Field(
        None, description="record field path(s) hashed to assign a split (a group key such as an image "
                          "id keeps all records of the group together); default: the record id")
    fractions: dict[str, float] | None = Field(
        None, description="split name -> share of the keys, summing to 1, e.g. { train = 0.8, test = 0.2 }")
    keep: list[str] | None = Field(None, min_length=1, description="the splits this spec compiles (default: all)")
    seed: int = Field(0, ge=0, le=INT64_MAX, description="the split's own seed (not [benchmark].seed), so "
                                                          "specs that share a split can differ in seed")
    attribute: str = Field("split", description="the item attribute that holds the split's name")
    disjoint_from: list[str] = Field(
        default_factory=list, description="specs (.toml) or manifest folders whose records and media this "
                                          "spec's items must not share: compile refuses an overlap")

    @field_validator("disjoint_from", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("attribute")
    @classmethod
    def _attribute(cls, value: str) -> str:
        if not IDENT.fullmatch(value):
            raise ValueError(f"attribute {value!r} must match [a-z][a-z0-9_]*")
        return value

    @model_validator(mode="after")
    def _fractions(self) -> Split:
        problems, hints = split_problems(self.key, self.fractions, self.keep)
        if problems:
            raise SpecKeyError(problems, hints)
        return self


TEMPLATE_SWEEP = ("a Jinja2 template, or templates swept by name: { grid = { terse = \"...\", full = \"...\" } } "
                  "or { grid = [...] } (named by index); compiler/settings.py")


class Prompt(Strict):
    template: str | dict[str, Any] = Field(description="Jinja2 template, sandboxed, StrictUndefined; or "
                                                       + TEMPLATE_SWEEP)
    system: str | dict[str, Any] | None = Field(None, description="the system prompt: " + TEMPLATE_SWEEP)


MAX_NEW_TOKENS = 1_000_000
"""The most new tokens an answer may ask for (2**63 - 1 was accepted; no model has such a context)."""

GENERATION_SWEEPABLE = ("max_new_tokens", "temperature", "top_p", "seed")
"""The [generation] keys a spec may sweep (``n`` sets how many answers each item has)."""


class Generation(Strict):
    """``[generation]``. A key written as a sweep (``temperature = { grid = [0.2, 0.7] }``) is
    kept in ``sweeps`` as written (its field keeps its default) and written back in its place
    by ``model_dump``; the compiler checks and expands it (``compiler/settings.py``), and each
    item's own settings are ``for_item(attrs)``. Without sweeps the dump is what it always was."""

    max_new_tokens: int = Field(64, gt=0, le=MAX_NEW_TOKENS,
                                description=f"new tokens per answer, at most {MAX_NEW_TOKENS:,}")
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    n: int = Field(1, ge=1, le=INT64_MAX, description="samples per input")
    seed: int | None = Field(None, ge=INT64_MIN, le=INT64_MAX,
                             description="per-request seed base for sampling backends")
    stop: list[str] = Field(default_factory=list, max_length=16,
                            description="stop sequences: an answer ends before the first of them (sent to the "
                                        "backends that take them: openai, hf, vllm; lm-eval's `until`)")
    sweeps: dict[str, Any] = Field(default_factory=dict, description="the keys written as { grid } or { choice } "
                                                                     "(filled from them; not a key of the spec)")

    @model_validator(mode="before")
    @classmethod
    def _lift_sweeps(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        swept = {k: v for k, v in data.items() if k in cls.model_fields and k != "sweeps" and isinstance(v, dict)}
        if not swept:
            return data
        return {**{k: v for k, v in data.items() if k not in swept}, "sweeps": {**data.get("sweeps", {}), **swept}}

    @model_serializer(mode="wrap")
    def _sweeps_in_place(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        sweeps = out.pop("sweeps", None) or {}
        if not out.get("stop"):  # written only when set: specs without it keep their bytes and request keys
            out.pop("stop", None)
        return {key: sweeps.get(key, value) for key, value in out.items()}

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: list[str]) -> list[str]:
        if any(not s for s in value):
            raise ValueError("a stop sequence is a non-empty string")
        return list(dict.fromkeys(value))  # each once, in the order written

    def __hash__(self) -> int:  # frozen models hash their fields, but ``sweeps`` is a dict
        return hash(json.dumps(self.model_dump(mode="json"), sort_keys=True))

    def for_item(self, attrs: dict[str, Any]) -> Generation:
        """The settings of an item whose attributes hold the swept keys' values (without
        sweeps: these settings)."""
        if not self.sweeps:
            return self
        fixed = self.model_dump(mode="json", exclude={"sweeps"}, round_trip=False)
        values = {key: attrs[key] for key in self.sweeps}
        return Generation.model_validate({**fixed, **values})


CHOICE_KEYS = ("choices", "delimiter", "choose_by")
"""A ``choice-loglik`` stage's own keys: written to the spec's dump only for such a stage, so the
digests of every other spec stay as they were."""


class Stage(Strict):
    """A request stage. ``backend = "model"`` is the model under test, chosen at run time.

    ``task = "choice-loglik"`` asks for no text: the model scores each of the item's choices as a
    continuation of its prompt (the log-likelihood of ``delimiter`` + choice, as lm-eval scores an
    ``output_type: multiple_choice`` task) and answers with the choice it ranks first."""

    id: str
    task: Literal["generate", "text-to-speech", "speech-to-text", "text-to-image", "choice-loglik"] = "generate"
    backend: str = "model"
    input: str = Field("prompt", description="'prompt' (the item) or an earlier stage id")
    template: str | dict[str, Any] | None = Field(
        None, description="a later stage's prompt (or prompts swept by name, as [prompt]'s): Jinja2 over `answer` "
                          "(the input stage's answer), "
                          "`attrs` (the item's attributes) and `prompt` (the item's prompt); filter "
                          "`number` reads the first number of a text, in digits or words. Default: "
                          "the answer itself")
    media: Literal["item", "answer", "none"] | None = Field(
        None, description="what the stage's requests carry: the item's media, the input stage's "
                          "answer (audio), or none. Default: 'item' for the first stage, 'answer' after")
    choices: str | list[str] | None = Field(
        None, description="choice-loglik: the item's choices, as a record field holding a list of texts "
                          "('lm_eval.choices') or the texts themselves (['A', 'B', 'C', 'D'])")
    delimiter: str = Field(" ", description="choice-loglik: the text between the prompt and each choice "
                                            "(lm-eval's target_delimiter)")
    choose_by: Literal["loglik", "loglik_per_char"] = Field(
        "loglik", description="choice-loglik: the answer is the choice of highest log-likelihood (lm-eval's acc), "
                              "or of highest log-likelihood per character of the choice (its acc_norm)")

    @model_serializer(mode="wrap")
    def _choice_keys_when_used(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if self.task != "choice-loglik":
            for key in CHOICE_KEYS:
                out.pop(key, None)
        return out

    @field_validator("id")
    @classmethod
    def _ident(cls, value: str) -> str:
        if not IDENT.fullmatch(value):
            raise ValueError(f"stage id {value!r} must match [a-z][a-z0-9_]*")
        return value

    @model_validator(mode="after")
    def _reads_an_answer(self) -> Stage:
        if self.input == "prompt" and (self.template is not None or self.media == "answer"):
            raise ValueError(f"stage {self.id!r}: template and media = 'answer' need an earlier stage "
                             "as input (the first stage's prompt is [prompt].template)")
        return self

    @model_validator(mode="after")
    def _choices_for_choice_loglik(self) -> Stage:
        given = [key for key in CHOICE_KEYS if key in self.model_fields_set]
        if self.task != "choice-loglik":
            if given:
                raise ValueError(f"stage {self.id!r}: {', '.join(given)} belong to task = \"choice-loglik\"")
            return self
        if self.choices is None or (isinstance(self.choices, list) and len(self.choices) < 2):
            raise ValueError(f"stage {self.id!r}: choice-loglik needs choices: a record field holding the "
                             "item's choices, or a list of at least two texts")
        if isinstance(self.choices, list) and len(set(self.choices)) != len(self.choices):
            raise ValueError(f"stage {self.id!r}: choices repeat a text")
        if self.input != "prompt":
            raise ValueError(f"stage {self.id!r}: choice-loglik scores the item's prompt; it cannot read an "
                             "earlier stage (input = \"prompt\")")
        return self

    @property
    def sends(self) -> str:
        """What the stage's requests carry (``media`` with its default made explicit)."""
        return self.media or ("item" if self.input == "prompt" else "answer")


ExtractStep = Literal["answer_text", "normalize", "first_line", "first_sentence", "yes_no", "number", "option_letter",
                      "regex", "lowercase", "uppercase", "trim"]
EXTRACT_STEPS: tuple[str, ...] = ExtractStep.__args__  # type: ignore[attr-defined]


AnswerKind = Literal["short", "yes_no", "number", "letter"]
KIND_STEPS: dict[str, list[str]] = {"short": [], "yes_no": ["yes_no"], "number": ["number"],
                                    "letter": ["option_letter"]}
"""The steps each answer kind reads with when ``extract`` is not given (short answers are read
by their correctness rule, ``short_answer``, which takes the first sentence itself)."""
KIND_CORRECT: dict[str, str] = {"short": "short_answer", "yes_no": "normalized", "number": "normalized",
                                "letter": "exact"}
"""The ``correct`` rule of every metric that takes one and does not set it, per answer kind:
measured on real answers (tests/fixtures/answers, benchmarks/answer_rules.py)."""


class Answer(Strict):
    """How an answer is read before any metric sees it (``[answer]``): the ``extract`` steps run
    in order on each response; a step that finds nothing leaves no answer (scored wrong, and
    agreeing with nothing). See runtime/score/answers.py for each step."""

    kind: AnswerKind | None = Field(
        None, description="what the answers are: short (a word or phrase), yes_no, number, letter (an option "
                          "letter). Sets the default `extract` (yes_no, number, option_letter; none for short) and "
                          "the `correct` rule of every metric that does not set one (short_answer for short, exact "
                          "for letters, normalized otherwise)")
    strip: bool = Field(True, description="remove the white space around every answer before it is read (benchc's "
                                          "backends store answers stripped; lm-eval compares them as written: false)")
    extract: list[ExtractStep] = Field(
        default_factory=list, description="steps, in order: answer_text (without markdown and labels such as "
                                          "'Answer:'), normalize (lower case, no punctuation or articles, number "
                                          "words as digits), first_line, first_sentence, yes_no, number, "
                                          "option_letter, regex, lowercase, uppercase, trim (the white space "
                                          "around the text: lm-eval's filters lowercase, uppercase, remove_whitespace)")
    pattern: str | None = Field(None, description="regex step: the pattern; its first group that matched (or the "
                                                  "whole match) is the answer")
    group: int | None = Field(None, ge=0, description="regex step: the group to read (0: the whole match)")
    select: Literal["first", "last"] = Field(
        "first", description="regex step: the first match, or the last (lm-eval's flexible-extract)")
    letters: str = Field("ABCDEFGHIJ", min_length=2, description="option_letter: the option letters")
    drop_echo: bool = Field(True, description="with extract steps: leading lines of an answer that repeat a line "
                                              "or sentence of the prompt are dropped; an answer that only repeats "
                                              "it reads as no answer")

    @model_validator(mode="before")
    @classmethod
    def _kind_steps(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("kind") in KIND_STEPS and "extract" not in data:
            return {**data, "extract": list(KIND_STEPS[data["kind"]])}
        return data

    @model_validator(mode="after")
    def _pattern_for_regex(self) -> Answer:
        if ("regex" in self.extract) != (self.pattern is not None):
            raise ValueError("the regex step and `pattern` go together: give both or neither")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern is not a regular expression: {exc}") from None
            groups = re.compile(self.pattern).groups
            if self.group is not None and self.group > groups:
                raise ValueError(f"group {self.group}: the pattern has {groups} group(s)")
        return self


class Metric(BaseModel):
    """``name`` names a registered metric; its other keys are the metric's parameters."""

    model_config = ConfigDict(extra="allow", frozen=True, **STRICT_CONFIG)
    name: str

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Spec(Strict):
    benchmark: Benchmark
    source: Source
    filter: list[Filter] = Field(default_factory=list)
    sample: Sample = Field(default_factory=Sample)
    node: list[Node] = Field(default_factory=list)
    prompt: Prompt
    generation: Generation = Field(default_factory=Generation)
    stage: list[Stage] = Field(default_factory=lambda: [Stage(id="answer")])
    metric: list[Metric] = Field(default_factory=list)
    select: AnySelect | None = Field(None, description="hard-record selection (after [sample]): by baseline "
                                                       "models, or by the text itself (kind = \"text\")")
    answer: Answer | None = Field(None, description="answer extraction applied before every metric")
    answers: dict[str, Answer] = Field(
        default_factory=dict, description="named answer rules ([answers.strict-match]), each an [answer] table: a "
                                          "metric reads with one by `answer = \"strict-match\"` (lm-eval's "
                                          "filter pipelines: one task, several ways to read its answers)")
    split: Split | None = Field(None, description="train/val/test splits by a seeded hash of a key, and the "
                                                  "evaluation sets the items must stay disjoint from")

    @model_validator(mode="before")
    @classmethod
    def _known_select_kind(cls, data: Any) -> Any:
        select = data.get("select") if isinstance(data, dict) else None
        kind = select.get("kind", "model") if isinstance(select, dict) else "model"
        if kind not in SELECT_KINDS:
            from ..registry import did_you_mean

            raise SpecKeyError([("select.kind", f"unknown [select] kind {kind!r}")],
                               {"select.kind": did_you_mean(str(kind), list(SELECT_KINDS))
                                or f"kinds: {', '.join(SELECT_KINDS)}"})
        return data

    @model_validator(mode="after")
    def _references(self) -> Spec:
        problems: list[tuple[str, str]] = []
        seen: dict[str, int] = {}
        for index, node in enumerate(self.node):
            if node.id in seen:
                problems.append((f"node[{index}].id", f"duplicate node id {node.id!r} "
                                                      f"(node[{seen[node.id]}] has it too)"))
            seen.setdefault(node.id, index)
        stage_ids: list[str] = []
        for index, stage in enumerate(self.stage):
            if stage.id in stage_ids:
                problems.append((f"stage[{index}].id", f"duplicate stage id {stage.id!r}"))
            if stage.input != "prompt" and stage.input not in stage_ids:
                problems.append((f"stage[{index}].input",
                                 f"stage {stage.id!r} reads {stage.input!r}, which is not an earlier stage"))
            stage_ids.append(stage.id)
        if problems:
            raise SpecKeyError(problems)
        return self

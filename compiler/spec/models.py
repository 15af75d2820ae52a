"""Pydantic models of a benchmark spec. Unknown keys are refused and every model is frozen.

Stage 1 of the compiler (parse) produces these; op, source and metric parameters are
checked against their registered schemas in stage 2 (resolve).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$")
IDENT = re.compile(r"^[a-z][a-z0-9_]*$")
Scalar = str | int | float | bool


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Benchmark(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-/.]*$", description="e.g. 'mm-r3/context-reasoning'")
    version: str = Field(description="semantic version, e.g. '1.0.0'")
    seed: int = Field(0, ge=0, description="root of every derived seed")
    description: str = ""

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not SEMVER.match(value):
            raise ValueError(f"{value!r} is not a semantic version such as '1.0.0'")
        return value


class Source(BaseModel):
    """``loader`` names a registered source; its other keys are the loader's parameters."""

    model_config = ConfigDict(extra="allow", frozen=True)
    loader: str
    pin: str | None = Field(None, pattern=r"^[0-9a-f]{64}$", description="expected source digest")
    on_error: Literal["fail", "skip"] = "fail"

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Filter(Strict):
    """Keep records whose field ``where`` satisfies exactly one condition."""

    where: str
    between: tuple[float, float] | None = None
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

    n: int | None = Field(None, gt=0, description="keep this many records (all if unset)")
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
        if not IDENT.match(value) or value in RESERVED_INPUTS:
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

    keep: int = Field(gt=0, description="how many records to keep: those of lowest consistency")
    models: list[str] = Field(min_length=1, description="baseline backends, as `benchc run` names them")
    task: Literal["generate", "speech-to-text"] = Field(
        "generate", description="what the models do: describe an image, or transcribe audio")
    prompt: str = Field("", description="the text sent with each image (generate)")
    max_new_tokens: int = Field(30, gt=0)
    embedder: str = Field("minilm", description="the sentence embedder of the similarity")
    probe: SelectProbe


class Prompt(Strict):
    template: str = Field(description="Jinja2 template, sandboxed, StrictUndefined")
    system: str | None = None


class Generation(Strict):
    max_new_tokens: int = Field(64, gt=0)
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    n: int = Field(1, ge=1, description="samples per input")
    seed: int | None = Field(None, description="per-request seed base for sampling backends")


class Stage(Strict):
    """A request stage. ``backend = "model"`` is the model under test, chosen at run time."""

    id: str
    task: Literal["generate", "text-to-speech", "speech-to-text", "text-to-image"] = "generate"
    backend: str = "model"
    input: str = Field("prompt", description="'prompt' (the item) or an earlier stage id")
    template: str | None = Field(
        None, description="a later stage's prompt: Jinja2 over `answer` (the input stage's answer), "
                          "`attrs` (the item's attributes) and `prompt` (the item's prompt); filter "
                          "`number` reads the first number of a text, in digits or words. Default: "
                          "the answer itself")
    media: Literal["item", "answer", "none"] | None = Field(
        None, description="what the stage's requests carry: the item's media, the input stage's "
                          "answer (audio), or none. Default: 'item' for the first stage, 'answer' after")

    @field_validator("id")
    @classmethod
    def _ident(cls, value: str) -> str:
        if not IDENT.match(value):
            raise ValueError(f"stage id {value!r} must match [a-z][a-z0-9_]*")
        return value

    @model_validator(mode="after")
    def _reads_an_answer(self) -> Stage:
        if self.input == "prompt" and (self.template is not None or self.media == "answer"):
            raise ValueError(f"stage {self.id!r}: template and media = 'answer' need an earlier stage "
                             "as input (the first stage's prompt is [prompt].template)")
        return self

    @property
    def sends(self) -> str:
        """What the stage's requests carry (``media`` with its default made explicit)."""
        return self.media or ("item" if self.input == "prompt" else "answer")


ExtractStep = Literal["normalize", "first_line", "first_sentence", "yes_no", "number", "option_letter", "regex"]
EXTRACT_STEPS: tuple[str, ...] = ExtractStep.__args__  # type: ignore[attr-defined]


class Answer(Strict):
    """How an answer is read before any metric sees it (``[answer]``): the ``extract`` steps run
    in order on each response; a step that finds nothing leaves no answer (scored wrong, and
    agreeing with nothing). See runtime/answers.py for each step."""

    extract: list[ExtractStep] = Field(
        default_factory=list, description="steps, in order: normalize (lower case, no punctuation or "
                                          "articles, number words as digits), first_line, first_sentence, "
                                          "yes_no, number, option_letter, regex")
    pattern: str | None = Field(None, description="regex step: the pattern; its first group (or the "
                                                  "whole match) is the answer")
    letters: str = Field("ABCDEFGHIJ", min_length=2, description="option_letter: the option letters")

    @model_validator(mode="after")
    def _pattern_for_regex(self) -> Answer:
        if ("regex" in self.extract) != (self.pattern is not None):
            raise ValueError("the regex step and `pattern` go together: give both or neither")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern is not a regular expression: {exc}") from None
        return self


class Metric(BaseModel):
    """``name`` names a registered metric; its other keys are the metric's parameters."""

    model_config = ConfigDict(extra="allow", frozen=True)
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
    select: Select | None = Field(None, description="hard-record selection by baseline models (after [sample])")
    answer: Answer | None = Field(None, description="answer extraction applied before every metric")

    @model_validator(mode="after")
    def _references(self) -> Spec:
        ids = [n.id for n in self.node]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate node ids: {', '.join(dupes)}")
        stage_ids: list[str] = []
        for stage in self.stage:
            if stage.id in stage_ids:
                raise ValueError(f"duplicate stage id {stage.id!r}")
            if stage.input != "prompt" and stage.input not in stage_ids:
                raise ValueError(
                    f"stage {stage.id!r} reads {stage.input!r}, which is not an earlier stage"
                )
            stage_ids.append(stage.id)
        return self

"""What an op is: a named, versioned, pure function of (input value, record, params, seed).

Model-backed ops (``ModelOp``) are the same, with the model's answers as one more input: see
``compiler/model_steps.py``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from ..cas import ContentStore
from ..errors import OpError, Problem
from ..identity import installed_version, plugin_distributions
from ..model_requests import ModelPrompt
from ..paths import resolve_in_roots
from ..registry import Registry, instance
from ..values import Kind, Record, Value


OPENCV = "opencv-python-headless"
"""The one wheel that provides cv2 (pyproject.toml): the version ops that call OpenCV record."""


def library_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed version of each distribution, "not installed" where it is absent."""
    return {name: installed_version(name) for name in sorted(set(names))}


class OpParams(BaseModel):
    """Base of every op's parameter schema: strict, frozen, defaults made explicit when hashed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    added: ClassVar[frozenset[str]] = frozenset()
    """Parameters added after the op's first release (as ``MetricParams.added``). They are left
    out of the dumped params (the spec document and every node key) while at their default, so
    adding one moves no existing spec's digest, node key or cached output; once set, they are
    hashed like the others."""

    @model_serializer(mode="wrap")
    def _without_added_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.added:
                if name in data and getattr(self, name) == type(self).model_fields[name].get_default(
                        call_default_factory=True):
                    del data[name]
        return data


@dataclass(frozen=True)
class OpOutput:
    value: Value
    attrs: dict[str, Any] = field(default_factory=dict)
    drop: str | None = None
    """A validator's reason to drop this variant and everything built on it (counted per node
    and reason in the lock), e.g. "removed object still detected"."""


@dataclass(frozen=True)
class OpContext:
    """What an op may use besides its input: the record, a private RNG, the content store and
    the data roots (for files an op reads, such as style-transfer weights)."""

    record: Record
    rng: np.random.Generator
    store: ContentStore
    data_roots: tuple[Path, ...] = ()

    def resolve(self, relative: str, key: str) -> Path:
        """A file named in a param, inside the data roots (the spec's folder, --data-root)."""
        return resolve_in_roots(relative, self.data_roots, key)


class Op(ABC):
    name: ClassVar[str]
    version: ClassVar[str]
    """Bump when the output for the same input and params changes; it is part of every node key."""
    Params: ClassVar[type[OpParams]]
    input_kind: ClassVar[Kind | None]
    """Kind of the upstream value, or None when the op reads only the record."""
    output_kind: ClassVar[Kind]
    """Kind of the op's output; by default its input's kind."""
    default_input: ClassVar[str]
    """The node input when a spec names none: by default the record media of the input's kind
    (``"image"``), or ``"record"`` for an op that reads only the record."""
    libraries: ClassVar[tuple[str, ...]] = ()
    """Distributions whose versions shape the output; recorded in the lock and in node keys."""
    reads_record: ClassVar[bool] = True
    """False when the output depends only on the input value, params and seed. Then the record's
    digest stays out of the node key; otherwise an edited annotation (a box, a label) must give a
    new key, or the cache would serve the output made from the old one."""
    model_backed: ClassVar[bool] = False
    """True for ops that ask a model at compile time (subclasses of ``ModelOp``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("input_kind", getattr(cls, "input_kind", None))
        if "output_kind" not in cls.__dict__ and kind is not None and not hasattr(cls, "output_kind"):
            cls.output_kind = kind
        if "default_input" not in cls.__dict__ and not hasattr(cls, "default_input") and "input_kind" in vars(cls):
            cls.default_input = kind or "record"

    def environment(self, params: Any = None) -> dict[str, str]:
        """What outside the params shapes the output under ``params``: the versions of
        ``libraries`` (and, for ops that call an engine, its version). Part of every node key,
        so a library upgrade recomputes instead of serving outputs of the old version. An op
        whose libraries depend on a param (a model detector only when chosen) narrows the set
        for those params; ``params=None`` asks for everything it may use (lock, memo key).
        A plugin op's own distribution counts too."""
        return library_versions([*self.libraries, *plugin_distributions(type(self))])

    @abstractmethod
    def apply(self, value: Value | None, params: Any, ctx: OpContext) -> OpOutput: ...

    def output_warning(self, outputs: list[Value], store: ContentStore) -> str | None:
        """A warning about a node's kept outputs, computed or cached (``audio.tts``: clips that are
        mostly digital silence), logged once per node by ``expand``; None: nothing to say."""
        return None

    def describe(self) -> str:
        return (self.__doc__ or "").strip().splitlines()[0] if self.__doc__ else ""


OPS: Registry[Op] = Registry("op", group="benchc.ops", make=instance)


# --- model-backed ops -------------------------------------------------------------------------


class ModelStepParams(OpParams):
    """Params every model-backed op has: which backend answers, and how it generates."""

    backend: str = Field(description="backend string as `benchc run` takes it, e.g. 'hf:models/llm,"
                                     "batch_size=8'; a relative model path is found in the data roots")
    max_new_tokens: int = Field(128, gt=0, le=4096, description="generation: new tokens per answer")
    temperature: float = Field(0.0, ge=0.0, description="generation: 0 is greedy")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="generation: nucleus sampling mass")
    on_bad_answer: Literal["drop", "fail"] = Field(
        "drop", description="an unusable answer (empty, refusal, wrong form) drops the variant "
                            "(counted in the lock) or fails the compile")
    attrs: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="attributes added to every variant, e.g. "
                                          "{ corruption = \"back_translation\" } for a metric's `over`")

    @field_validator("backend")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.partition(":")[0].strip():
            raise ValueError("a backend string starts with a backend name, e.g. 'hf:models/llm'")
        return value


class ModelOp(Op):
    """An op that asks a model. The compiler calls ``prompts`` for every task of a node, asks
    the model client for all of them at once, then calls ``finish`` with each task's answers;
    both halves are pure, and randomness still comes only from ``ctx.rng``."""

    model_backed = True
    Params: ClassVar[type[ModelStepParams]]

    @abstractmethod
    def prompts(self, value: Value | None, params: Any, ctx: OpContext) -> list[ModelPrompt]: ...

    @abstractmethod
    def finish(self, value: Value | None, params: Any, ctx: OpContext, answers: list[str]) -> OpOutput: ...

    def apply(self, value: Value | None, params: Any, ctx: OpContext) -> OpOutput:
        raise OpError(Problem(f"op {self.name!r} asks a model: the compiler runs it as a model step "
                              "(prompts, one client call per node, finish), never through apply()"))

    def sampling_seed(self, params: ModelStepParams, ctx: OpContext) -> int | None:
        """A per-variant seed for sampled steps; None when greedy, so that identical greedy
        prompts (the same question for three variants) are one request."""
        return int(ctx.rng.integers(2**63)) if params.temperature > 0 else None

    def output(self, text: str, params: ModelStepParams, attrs: dict[str, Any] | None = None) -> OpOutput:
        return OpOutput(Value("text", text=text), {**params.attrs, **(attrs or {})})

    def bad_answer(self, params: ModelStepParams, ctx: OpContext, reason: str, answer: str,
                   value: Value | None = None) -> OpOutput:
        """Drop the variant with a fixed ``reason`` (counted in the lock), or fail the compile
        with the answer quoted when ``on_bad_answer = "fail"``."""
        if params.on_bad_answer == "fail":
            shown = answer if len(answer) <= 200 else answer[:200] + "..."
            raise OpError(Problem(f"record {ctx.record.id!r}: {reason}: {shown!r}", key="params.on_bad_answer",
                                  hint="set on_bad_answer = \"drop\" to drop such variants, or change the "
                                       "model, its prompt or max_new_tokens"))
        return OpOutput(value if value is not None else Value("text", text=""), {}, drop=reason)


def template_variables(source: str) -> set[str]:
    """The variables a Jinja template reads (ValueError on a syntax error)."""
    return set(_template_variables(source))


@lru_cache(maxsize=1024)
def _template_variables(source: str) -> frozenset[str]:
    """Once per template text and process: params are validated per item (7,700 parses of a
    handful of templates in one bundled spec)."""
    from jinja2 import meta

    from ..templates import TemplateProblem, compile_template, make_environment

    try:
        compile_template(source)
    except TemplateProblem as exc:
        raise ValueError(str(exc)) from None
    return frozenset(meta.find_undeclared_variables(make_environment().parse(source)))


def check_template(source: str, allowed: set[str]) -> str:
    """A Jinja prompt template of a model op: valid syntax, and only the op's variables."""
    unknown = sorted(template_variables(source) - allowed)
    if unknown:
        raise ValueError(f"unknown template variable(s) {unknown}: use {', '.join(sorted(allowed))}")
    return source


def render_prompt(source: str, context: dict[str, Any], key: str = "params.template") -> str:
    """Render a model op's template (sandboxed Jinja, StrictUndefined); errors name the param."""
    from ..templates import TemplateProblem, compile_template, render

    try:
        return render(compile_template(source), context)
    except TemplateProblem as exc:
        raise OpError(Problem(str(exc), key=key)) from None

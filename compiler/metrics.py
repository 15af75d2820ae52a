"""Metric parameter schemas. The compiler checks a spec's metrics against these; the runtime
registers one implementation per name (and a test checks that both sides agree)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .errors import Problem
from .registry import Registry
from .spec.models import Spec


class MetricParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    stage: str | None = Field(None, description="stage whose responses are scored (default: last)")
    by: list[str] = Field(default_factory=list, description="item attributes to split results by")
    embedder: str = Field("minilm", description="sentence embedding model for similarities")


class MMR3Params(MetricParams):
    """MM-R3's Acc, S_GT, Con, S_C and O_all over each group of items (benchmarks.md 1.4)."""

    target: str = Field(description="record field with the ground-truth answer(s)")
    threshold: float = Field(0.7, gt=0.0, lt=1.0, description="Con counts pairs with sim > this")
    cleanup: Literal["none", "mmr3_masking_literal", "mmr3_masking_words"] = "none"


class MMCBenchParams(MetricParams):
    """MMCBench's consistency: sum over corruptions of the mean cosine similarity, x100."""

    over: str = Field("corruption", description="attribute that names the perturbation")
    reference: str = Field("clean", description="value of `over` that marks the unperturbed item")
    normalize: Literal["none", "lower_strip"] = "lower_strip"


METRIC_SCHEMAS: Registry[type[MetricParams]] = Registry("metric")
METRIC_SCHEMAS.register("mmr3.all", MMR3Params)
METRIC_SCHEMAS.register("mmcbench.consistency", MMCBenchParams)


STAGE_OUTPUT: dict[str, str] = {"generate": "text", "speech-to-text": "text", "text-to-speech": "audio"}
"""What each stage task answers with. Every metric reads text (it embeds or matches answers)."""


def metric_stage_problems(spec: Spec) -> list[Problem]:
    """One problem per metric that would score a stage whose answers are not text (a
    text-to-speech stage's audio), keyed ``metric[i].stage`` even when the stage is the default
    (the last one). Unknown stage names are left to the resolver."""
    stages = {s.id: s for s in spec.stage}
    text_stages = [s.id for s in spec.stage if STAGE_OUTPUT[s.task] == "text"]
    out = []
    for index, metric in enumerate(spec.metric):
        named = metric.params.get("stage")
        stage_id = named if named is not None else spec.stage[-1].id
        stage = stages.get(stage_id) if isinstance(stage_id, str) else None
        if stage is None or STAGE_OUTPUT[stage.task] == "text":
            continue
        how = "" if named is not None else " (the last stage, scored by default)"
        hint = (f"metrics read text: set stage to one of {', '.join(repr(t) for t in text_stages)}" if text_stages
                else f"metrics read text: add a speech-to-text stage with input = {stage_id!r} and score it")
        out.append(Problem(f"metric {metric.name!r} scores stage {stage_id!r}{how}, a {stage.task} stage "
                           f"whose outputs are {STAGE_OUTPUT[stage.task]}", key=f"metric[{index}].stage", hint=hint))
    return out

"""Metric parameter schemas. The compiler checks a spec's metrics against these; the runtime
registers one implementation per name (and a test checks that both sides agree)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .registry import Registry


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

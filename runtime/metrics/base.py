"""What a metric gets (items with their responses) and what it returns (rows for the report)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from benchc.compiler.registry import Registry

from ..embed import Embedder


@dataclass(frozen=True)
class ScoredItem:
    item_id: str
    group_id: str
    attrs: dict[str, Any]
    targets: dict[str, list[str]]
    responses: tuple[str, ...]  # one per sample, in sample order


@dataclass(frozen=True)
class MetricInput:
    items: list[ScoredItem]
    embedder: Embedder
    stage_backend: str


@dataclass
class MetricResult:
    name: str
    columns: list[str]
    rows: list[dict[str, Any]]
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def split_by(items: list[ScoredItem], by: list[str]) -> dict[tuple[Any, ...], list[ScoredItem]]:
    """Partition items by the values of ``by`` attributes, in sorted order of those values."""
    parts: dict[tuple[Any, ...], list[ScoredItem]] = {}
    for item in items:
        key = tuple(item.attrs.get(b) for b in by)
        parts.setdefault(key, []).append(item)
    return dict(sorted(parts.items(), key=lambda kv: [str(v) for v in kv[0]]))


def groups_of(items: list[ScoredItem]) -> dict[str, list[ScoredItem]]:
    out: dict[str, list[ScoredItem]] = {}
    for item in sorted(items, key=lambda i: i.item_id):
        out.setdefault(item.group_id, []).append(item)
    return dict(sorted(out.items()))


class Metric(ABC):
    name: ClassVar[str]

    @abstractmethod
    def score(self, params: Any, data: MetricInput) -> MetricResult: ...


METRICS: Registry[Metric] = Registry("metric")

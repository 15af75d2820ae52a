"""What a metric gets (items with their responses) and what it returns (rows for the report)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from benchc.compiler.metrics import METRIC_SCHEMAS, MetricParams
from benchc.compiler.registry import Registry, instance

from ..embed import Embedder


@dataclass(frozen=True)
class ScoredItem:
    item_id: str
    group_id: str
    attrs: dict[str, Any]
    targets: dict[str, list[str]]
    responses: tuple[str, ...]  # one per sample, in sample order
    node: str = ""  # the node that made the item ("" when the spec has none)
    prompt: str = ""  # the item's rendered prompt
    media: tuple[tuple[str, str], ...] = ()  # the item's media: (kind, sha256)
    blobs: tuple[str | None, ...] = ()  # per sample: sha256 of a media answer (image, audio)


MediaReader = Callable[[str, str], bytes]
"""(kind, sha256) -> bytes, from the compile cache or the response store."""


@dataclass(frozen=True)
class MetricInput:
    items: list[ScoredItem]
    embedder: Embedder | None  # None for metrics that embed nothing (``Metric.uses_embedder``)
    stage_backend: str
    stages: dict[str, list[ScoredItem]] = field(default_factory=dict)  # params.extra_stages()
    media: MediaReader | None = None
    cross_embedder: Any = None  # embed_images / embed_texts (a CLIP embedder); loaded if None
    models: Any = None  # a ModelClient (compiler/model_steps.py) for judges: asks through the response store


@dataclass(frozen=True)
class Unit:
    """What one row's value is the mean of, one unit at a time: an item (accuracy, flips against
    its reference) or a group (agreement, worst case), with the unit's own values of the row's
    columns as fractions (0-1). Exports that keep a value per sample (``score --format lm-eval``)
    write them; scores.json does not hold them."""

    row: int  # the index of the row in ``MetricResult.rows``
    kind: str  # "item" or "group"
    id: str  # the item id or the group id
    items: tuple[str, ...]  # the ids of the items the unit covers, in item order
    values: dict[str, float | None]


@dataclass
class MetricResult:
    name: str
    columns: list[str]
    rows: list[dict[str, Any]]
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)  # per-sample values, where the metric has them
    answer: str | None = None  # the named answer rule ([answers.NAME]) the answers were read by
    stage: str | None = None  # the choice-loglik stage scored (several may score the same items two ways)


def split_by(items: list[ScoredItem], by: list[str]) -> dict[tuple[Any, ...], list[ScoredItem]]:
    """Partition items by the values of ``by`` attributes, in sorted order of those values:
    numbers by value (224 before 1024), before any text, which sorts as text."""
    parts: dict[tuple[Any, ...], list[ScoredItem]] = {}
    for item in items:
        key = tuple(item.attrs.get(b) for b in by)
        parts.setdefault(key, []).append(item)
    return dict(sorted(parts.items(), key=lambda kv: [_order(v) for v in kv[0]]))


def _order(value: Any) -> tuple[int, float, str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def role_of(item: ScoredItem, attr: str | None) -> str:
    """The item's value of attribute ``attr`` (as a string), or, with no attribute named, the id
    of the node that made it. Metrics use roles to tell, e.g., negated questions apart."""
    if attr is None:
        return item.node
    value = item.attrs.get(attr)
    return "" if value is None else str(value)


def target_value(item: ScoredItem, path: str) -> Any:
    """The item's target ``path`` as the record held it: a list of strings, or, for a field
    that holds a mapping (MERLIM's ``answers``, ``count``, ``objects``), the mapping. The
    compiler writes a target as ``[str(value)]``, so a mapping arrives as its Python repr (or
    JSON) and is parsed back here. A dotted path under a mapping target (``answers.edited``)
    is read from it. None if the item has no such target."""
    if path in item.targets:
        values = item.targets[path]
        if len(values) == 1 and values[0][:1] == "{":
            parsed = _mapping(values[0])
            if parsed is not None:
                return parsed
        return values
    head = path.rpartition(".")[0]
    while head:
        if head in item.targets:
            value = target_value(item, head)
            for part in path[len(head) + 1:].split("."):
                if not isinstance(value, dict) or part not in value:
                    return None
                value = value[part]
            return value
        head = head.rpartition(".")[0]
    return None


def _mapping(text: str) -> dict[str, Any] | None:
    import ast
    import json

    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def groups_of(items: list[ScoredItem]) -> dict[str, list[ScoredItem]]:
    out: dict[str, list[ScoredItem]] = {}
    for item in sorted(items, key=lambda i: i.item_id):
        out.setdefault(item.group_id, []).append(item)
    return dict(sorted(out.items()))


class Metric(ABC):
    name: ClassVar[str]
    Params: ClassVar[type[MetricParams]]
    """The parameter schema (``@metric`` registers it for the compiler too)."""
    uses_embedder: ClassVar[bool] = True
    """False: ``score`` never touches ``data.embedder`` (the runtime then loads none)."""
    percent_columns: ClassVar[frozenset[str]] = frozenset()
    """The columns the metric reports in percent (0-100); exports that want fractions divide them."""

    def in_percent(self, columns: list[str]) -> set[str]:
        """Which of a result's ``columns`` are in percent (a metric with columns named by its
        parameters, such as a judge's labels, says so here)."""
        return {c for c in columns if c in self.percent_columns}

    def needs_embedder(self, params: Any) -> bool:
        """Whether scoring with ``params`` reads ``data.embedder``."""
        return self.uses_embedder

    @abstractmethod
    def score(self, params: Any, data: MetricInput) -> MetricResult: ...


M = TypeVar("M", bound=Metric)

METRICS: Registry[Metric] = Registry("metric implementation", group="benchc.metrics", make=instance)


def metric(name: str, params: type[MetricParams]) -> Callable[[type[M]], type[M]]:
    """Class decorator: ``@metric("mylab.same_answer", SameAnswerParams)`` registers a metric's
    implementation and its parameter schema (which the compiler checks specs against) in one
    declaration. The compiler never imports the runtime, so a built-in metric's schema lives in
    compiler/metrics.py (registered there too, the same class); a plugin's where it likes."""
    def decorate(cls: type[M]) -> type[M]:
        cls.Params = params
        METRIC_SCHEMAS.register(name, params)
        METRICS.add(name)(cls)
        return cls
    return decorate

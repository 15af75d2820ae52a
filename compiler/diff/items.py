"""The item level of ``benchc diff``: two items tables joined on ``item_id``, all in polars.

Only whole-column expressions and joins touch every item (no Python per item), so 100,000
items diff in well under a second (``benchmarks/diff_manifests.py``). The per-node lineage is
decoded only for the items whose lineage changed.

Causes of a changed item (an item may have several; counts are per cause). A change that
follows from an earlier one (a node reading a changed record, a node downstream of a changed
node) is not counted as a cause of its own:

* ``source_row``: its record's digest changed (an edited source row or annotation);
* ``op_version``: an op of its lineage changed version (or a node changed op);
* ``node_params``: a node of its lineage whose spec entry changed (params, op, input, repeat)
  has a new key of its own (not only because an earlier node or the record changed);
* ``seed``: the benchmark seed changed (every node key holds a derived seed);
* ``environment``: a node key changed by itself and nothing above explains it (library or
  engine versions, a model step's fingerprint);
* ``template``: its prompt or system prompt changed and the spec's prompt changed (a changed
  template changes every prompt, so items changed for another reason count here too);
* ``metric_target``: its targets changed and a metric's ``target`` changed;
* ``other``: none of these (for example a loader parameter that changes no record digest).

Items only on one side are "record-level" when their record has no item at all on the other
side (the record was filtered, sampled or removed: causes ``filter``, ``sample``, ``seed``,
``source``) and "variant-level" otherwise (a grid value or node added or removed:
``node_params``; a swept ``[generation]`` value or template name: ``settings``; a validator
dropping other variants: ``environment``/``seed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

COMPARED = ("record_digest", "group_id", "record_id", "node", "attrs", "system", "prompt", "text", "media",
            "targets", "lineage")
SHOWN = ("prompt", "system", "text", "attrs", "targets", "media", "node", "record_digest")
"""Fields an example shows before -> after (the lineage is summarised by its causes)."""
CHANGE_CAUSES = ("source_row", "op_version", "node_params", "seed", "environment", "template",
                 "metric_target", "other")
LINEAGE = pl.List(pl.Struct({"key": pl.String, "node": pl.String, "op": pl.String, "version": pl.String}))
EXAMPLE_CHARS = 160


@dataclass(frozen=True)
class Signals:
    """What the spec and lock changes say about the items, for attributing item changes
    (``core.signals_of`` makes them)."""

    seed: bool = False
    filter: bool = False
    sample: bool = False
    sampling: bool = False  # either side samples (seed then also changes which records are kept)
    source: bool = False
    template: bool = False
    targets: bool = False
    nodes: frozenset[str] = frozenset()
    settings: bool = False  # a [generation] or template sweep changed: adds or removes items
    known: bool = True  # False: no spec on one side, causes beyond the columns are unknown


@dataclass
class ItemDiff:
    """Counts, causes and a few examples of each kind of difference."""

    items_a: int
    items_b: int
    added: int = 0
    removed: int = 0
    changed: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    added_causes: dict[str, int] = field(default_factory=dict)
    removed_causes: dict[str, int] = field(default_factory=dict)
    fields: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return not (self.added or self.removed or self.changed)

    @property
    def unchanged(self) -> int:
        return self.items_a - self.removed - self.changed

    def as_json(self) -> dict[str, Any]:
        return {"items_a": self.items_a, "items_b": self.items_b, "added": self.added, "removed": self.removed,
                "changed": self.changed, "unchanged": self.unchanged, "causes": self.causes,
                "added_causes": self.added_causes, "removed_causes": self.removed_causes,
                "fields": self.fields, "examples": self.examples}


def _side(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
    """The compared columns renamed ``<col>_<suffix>``, with a presence marker."""
    columns = [c for c in COMPARED if c in frame.columns]
    return frame.select(pl.col("item_id"), *(pl.col(c).alias(f"{c}_{suffix}") for c in columns),
                        pl.lit(True).alias(f"in_{suffix}"))


def _differs(column: str) -> pl.Expr:
    return pl.col(f"{column}_a").ne_missing(pl.col(f"{column}_b"))


def item_diff(a: pl.DataFrame, b: pl.DataFrame, signals: Signals, examples: int = 5) -> ItemDiff:
    """Items of ``b`` against items of ``a``: added, removed, changed with causes."""
    joined = _side(a, "a").join(_side(b, "b"), on="item_id", how="full", coalesce=True)
    in_a, in_b = pl.col("in_a").fill_null(False), pl.col("in_b").fill_null(False)
    both = joined.filter(in_a & in_b).with_columns(**{f"d_{c}": _differs(c) for c in COMPARED})
    flags = [f"d_{c}" for c in COMPARED]
    changed = both.filter(pl.any_horizontal(flags)).sort("item_id")
    result = ItemDiff(items_a=a.height, items_b=b.height, changed=changed.height)
    if changed.height:
        changed = _with_causes(changed, signals)
        result.causes = _counts(changed, CHANGE_CAUSES, "cause_")
        result.fields = {c: n for c, n in zip(COMPARED, changed.select(pl.col(flags).sum()).row(0)) if n}
        for cause in result.causes:
            result.examples[cause] = _changed_examples(changed.filter(pl.col(f"cause_{cause}")), examples)
    removed = joined.filter(in_a & ~in_b).sort("item_id")
    added = joined.filter(in_b & ~in_a).sort("item_id")
    result.removed, result.added = removed.height, added.height
    result.removed_causes = _one_sided_causes(removed, "a", b, signals)
    result.added_causes = _one_sided_causes(added, "b", a, signals)
    if removed.height:
        result.examples["removed"] = _one_sided_examples(removed, "a", examples)
    if added.height:
        result.examples["added"] = _one_sided_examples(added, "b", examples)
    return result


def _counts(frame: pl.DataFrame, names: tuple[str, ...], prefix: str) -> dict[str, int]:
    sums = frame.select(pl.col(f"{prefix}{n}").sum() for n in names).row(0)
    return {n: int(s) for n, s in zip(names, sums) if s}


def _lineage_steps(changed: pl.DataFrame, suffix: str) -> pl.DataFrame:
    """One row per (item, lineage position) of one side."""
    return (changed.select("item_id", pl.col(f"lineage_{suffix}").str.json_decode(LINEAGE).alias("step"))
            .explode("step").with_columns(pos=pl.int_range(pl.len()).over("item_id")).unnest("step"))


def _lineage_causes(changed: pl.DataFrame, nodes: frozenset[str], seed: bool) -> pl.DataFrame:
    """Per item whose lineage changed: ``l_version`` (an op's version or op changed), ``l_params``
    (a changed spec node's key moved by itself), ``l_env`` (a key moved by itself and nothing in
    the spec explains it), ``l_key`` (any key moved). A key "moved by itself" when no earlier
    node of the lineage moved and the record is the same: a node downstream of a change, or
    reading a changed record, moves with it and is not a cause of its own."""
    moved = changed.filter(pl.col("d_lineage"))
    schema = {"item_id": pl.String, "l_version": pl.Boolean, "l_params": pl.Boolean, "l_env": pl.Boolean,
              "l_key": pl.Boolean}
    if not moved.height:
        return pl.DataFrame(schema=schema)
    steps = (_lineage_steps(moved, "a").join(_lineage_steps(moved, "b"), on=["item_id", "pos"], how="full",
                                             coalesce=True, suffix="_b")
             .join(moved.select("item_id", "d_record_digest"), on="item_id").sort("item_id", "pos"))
    key_moved = pl.col("key").ne_missing(pl.col("key_b"))
    in_spec = (pl.col("node").is_in(list(nodes)) | pl.col("node_b").is_in(list(nodes))).fill_null(False)
    version_moved = ((pl.col("version").ne_missing(pl.col("version_b")) | pl.col("op").ne_missing(pl.col("op_b")))
                     & pl.col("key").is_not_null() & pl.col("key_b").is_not_null())
    steps = steps.with_columns(moved=key_moved, in_spec=in_spec, version_moved=version_moved).with_columns(
        upstream=(pl.col("moved").cast(pl.Int32).cum_sum().over("item_id") - pl.col("moved").cast(pl.Int32)) > 0)
    own = pl.col("moved") & ~pl.col("upstream") & ~pl.col("d_record_digest")
    return steps.group_by("item_id").agg(
        l_version=pl.col("version_moved").any(),
        l_params=(own & pl.col("in_spec")).any(),
        l_env=(own & ~pl.col("in_spec") & ~pl.col("version_moved")).any() & pl.lit(not seed),
        l_key=pl.col("moved").any())


def _with_causes(changed: pl.DataFrame, signals: Signals) -> pl.DataFrame:
    """Boolean ``cause_<name>`` columns (see the module docstring)."""
    lineage = _lineage_causes(changed, signals.nodes, signals.seed)
    frame = changed.join(lineage, on="item_id", how="left").with_columns(
        pl.col("l_version", "l_params", "l_env", "l_key").fill_null(False))
    frame = frame.with_columns(
        cause_source_row=pl.col("d_record_digest"),
        cause_op_version=pl.col("l_version"),
        cause_node_params=pl.col("l_params"),
        cause_seed=pl.lit(signals.seed) & pl.col("l_key"),
        cause_environment=pl.col("l_env"),
        cause_template=pl.lit(signals.template) & (pl.col("d_prompt") | pl.col("d_system")),
        cause_metric_target=pl.lit(signals.targets) & pl.col("d_targets"),
    )
    named = [pl.col(f"cause_{c}") for c in CHANGE_CAUSES if c != "other"]
    return frame.with_columns(cause_other=~pl.any_horizontal(named))


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > EXAMPLE_CHARS:
        return value[:EXAMPLE_CHARS] + "..."
    return value


def _changed_examples(frame: pl.DataFrame, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` items (by id): the fields that changed, before -> after."""
    out = []
    for row in frame.head(limit).iter_rows(named=True):
        fields = [c for c in COMPARED if row[f"d_{c}"]]
        out.append({"item_id": row["item_id"], "fields": fields,
                    "causes": [c for c in CHANGE_CAUSES if row[f"cause_{c}"]],
                    "before": {c: _short(row[f"{c}_a"]) for c in SHOWN if c in fields},
                    "after": {c: _short(row[f"{c}_b"]) for c in SHOWN if c in fields}})
    return out


def _one_sided_examples(frame: pl.DataFrame, side: str, limit: int) -> list[dict[str, Any]]:
    return [{"item_id": row["item_id"], "prompt": _short(row[f"prompt_{side}"])}
            for row in frame.head(limit).iter_rows(named=True)]


def _one_sided_causes(frame: pl.DataFrame, side: str, other: pl.DataFrame, signals: Signals) -> dict[str, int]:
    """Items on one side only: record-level (the record has no item on the other side) or
    variant-level, each credited to every spec change that can add or remove such items."""
    if not frame.height:
        return {}
    record_level = int(frame.select(~pl.col(f"record_id_{side}").is_in(other["record_id"].unique().implode()))
                       .to_series().sum())
    variant_level = frame.height - record_level
    record_causes = [name for name, on in (("source", signals.source), ("filter", signals.filter),
                                           ("sample", signals.sample), ("seed", signals.seed and signals.sampling))
                     if on] or ["other"]
    variant_signals = (("node_params", bool(signals.nodes)), ("settings", signals.settings), ("seed", signals.seed))
    variant_causes = [name for name, on in variant_signals if on] or ["environment" if signals.known else "other"]
    counts: dict[str, int] = {}
    for causes, n in ((record_causes, record_level), (variant_causes, variant_level)):
        for cause in causes if n else []:
            counts[cause] = counts.get(cause, 0) + n
    return counts

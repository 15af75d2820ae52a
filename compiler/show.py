"""Select items of a manifest for display (``benchc show``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from .errors import BenchcError, Problem
from .manifest import ITEM_SCHEMA, read_manifest
from .registry import did_you_mean

JSON_COLUMNS = ("attrs", "media", "targets", "lineage")


def _parse(condition: str) -> tuple[str, str]:
    key, sep, value = condition.partition("=")
    if not sep:
        raise BenchcError(Problem(f"--where {condition!r} is not KEY=VALUE", hint="e.g. --where color=red"))
    return key.strip(), value.strip()


def select_items(manifest_dir: Path, where: list[str], limit: int) -> list[dict[str, Any]]:
    frame = read_manifest(manifest_dir).items()
    conditions = [_parse(c) for c in where]
    _check_keys(frame, [key for key, _ in conditions])
    out = []
    for row in frame.iter_rows(named=True):
        item = {k: (json.loads(v) if k in JSON_COLUMNS and v is not None else v) for k, v in row.items()}
        if all(_matches(item, k, v) for k, v in conditions):
            out.append(item)
            if len(out) >= limit:
                break
    return out


def _check_keys(frame: pl.DataFrame, keys: list[str]) -> None:
    """A key that is neither a column nor an attribute of any item is a typo, not a filter that
    matches nothing: refuse it with the close names."""
    unknown = [key for key in keys if key not in ITEM_SCHEMA]
    if not unknown:
        return
    attributes: set[str] = set()
    for text in frame["attrs"].drop_nulls().unique().to_list():
        attributes.update(json.loads(text))
    problems = []
    for key in unknown:
        if key in attributes:
            continue
        names = sorted(ITEM_SCHEMA) + sorted(attributes)
        hint = did_you_mean(key, names) or (f"columns: {', '.join(ITEM_SCHEMA)}; attributes: "
                                            f"{', '.join(sorted(attributes)) or 'none'}")
        problems.append(Problem(f"no item has a column or attribute {key!r}",
                                key="--where", hint=hint))
    if problems:
        raise BenchcError(problems)


def _matches(item: dict[str, Any], key: str, value: str) -> bool:
    if key in ITEM_SCHEMA:
        return str(item[key]) == value
    attrs = item["attrs"]
    return key in attrs and str(attrs[key]).lower() == value.lower()

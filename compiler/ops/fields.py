"""An op's reads of the record's fields: errors name the param that points at the field."""

from __future__ import annotations

import json
from typing import Any

from ..errors import OpError, Problem
from .base import OpContext


def fields_hint(ctx: OpContext) -> str:
    """The record's top-level field names, for a hint."""
    return f"its fields: {', '.join(sorted(ctx.record.fields))}"


def field_or_none(ctx: OpContext, path: str) -> Any | None:
    """The record's field at the dotted ``path``, or None when the record does not have it."""
    try:
        return ctx.record.get(path)
    except KeyError:
        return None


def required_field(ctx: OpContext, path: str, key: str, hint: bool = True) -> Any:
    """The record's field at the dotted ``path``; without it, an OpError at ``key`` (the param
    naming the field) with, if ``hint``, the fields the record has."""
    try:
        return ctx.record.get(path)
    except KeyError:
        raise OpError(Problem(f"record {ctx.record.id!r} has no field {path!r}", key=key,
                              hint=fields_hint(ctx) if hint else None)) from None


def text_list(value: Any) -> list[str] | None:
    """A field that should hold a list of texts, as a list: a list of strings as it is, or a
    JSON list of strings written in one text cell (a CSV or TSV cannot hold a list: the
    cell ``["Paris", "Rome"]``); None for anything else."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


LIST_CELL_HINT = 'in a CSV or TSV, write the list as a JSON list in one cell: "[""Paris"", ""Rome""]"'

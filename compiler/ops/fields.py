"""An op's reads of the record's fields: errors name the param that points at the field."""

from __future__ import annotations

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

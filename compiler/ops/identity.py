"""The unperturbed input as a variant of its own: the reference item of a consistency test.

Only the graph's sinks become items, so a spec that perturbs a record's image (or text, or
audio) needs a node that passes the input through to ask the model about the original as well:

    [[node]]
    id = "original"
    op = "image.original"

Every variant carries its node id as the attribute ``perturbation``, so consistency metrics find
the reference with ``over = "perturbation"`` and ``reference = "original"`` (their defaults).
"""

from __future__ import annotations

from typing import ClassVar

from ..values import Kind, Value
from .base import OPS, Op, OpContext, OpOutput, OpParams


class NoParams(OpParams):
    """No parameters."""


class _Original(Op):
    version = "1.0.0"
    Params = NoParams
    reads_record = False
    kind: ClassVar[Kind]

    def apply(self, value: Value | None, params: NoParams, ctx: OpContext) -> OpOutput:
        assert value is not None
        return OpOutput(value)


class ImageOriginal(_Original):
    """The input image unchanged (the reference variant of an invariance test)."""

    name = "image.original"
    input_kind = output_kind = "image"
    default_input = "image"


class TextOriginal(_Original):
    """The input text unchanged (the reference variant of an invariance test)."""

    name = "text.original"
    input_kind = output_kind = "text"
    default_input = "text"


class AudioOriginal(_Original):
    """The input audio unchanged (the reference variant of an invariance test)."""

    name = "audio.original"
    input_kind = output_kind = "audio"
    default_input = "audio"


for _op in (ImageOriginal(), TextOriginal(), AudioOriginal()):
    OPS.register(_op.name, _op)

"""Text taken from a source's table of released versions (e.g. MMCBench's corrupted captions)."""

from __future__ import annotations

from typing import Literal

from ..errors import OpError, Problem
from ..sources.mmcbench_table import MMCBENCH_TEXT_CORRUPTIONS
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams

Corruption = Literal[("clean", *MMCBENCH_TEXT_CORRUPTIONS)]  # type: ignore[valid-type]


class Params(OpParams):
    corruption: Corruption = "clean"  # type: ignore[valid-type]


class ReleasedText(Op):
    """The clean or corrupted text of an MMCBench table row, as released by the authors."""

    name = "mmcbench.released_text"
    version = "1.0.0"
    Params = Params
    input_kind = None
    output_kind = "text"
    default_input = "record"

    def apply(self, value: Value | None, params: Params, ctx: OpContext) -> OpOutput:
        try:
            text = ctx.record.fields["versions"][params.corruption]
        except KeyError:
            raise OpError(Problem(f"record {ctx.record.id!r} has no text for {params.corruption!r}",
                                  hint="this op reads records of the mmcbench.text_table source")) from None
        return OpOutput(Value("text", text=text))


OPS.register(ReleasedText.name, ReleasedText())

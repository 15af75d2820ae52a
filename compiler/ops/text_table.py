"""Text taken from the record as released: a field as is (``text.field``), or one of a source's
table of released versions (MMCBench's corrupted captions)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..errors import OpError, Problem
from ..sources.mmcbench_table import MMCBENCH_TEXT_CORRUPTIONS
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams
from .fields import required_field

Corruption = Literal[("clean", *MMCBENCH_TEXT_CORRUPTIONS)]  # type: ignore[valid-type]


class Params(OpParams):
    corruption: Corruption = "clean"


ReleasedTextParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@OPS.add("mmcbench.released_text")
class ReleasedText(Op):
    """The clean or corrupted text of an MMCBench table row, as released by the authors."""

    version = "1.0.0"
    Params = Params
    input_kind = None
    output_kind = "text"

    def apply(self, value: Value | None, params: ReleasedTextParams, ctx: OpContext) -> OpOutput:
        try:
            text = ctx.record.fields["versions"][params.corruption]
        except KeyError:
            raise OpError(Problem(f"record {ctx.record.id!r} has no text for {params.corruption!r}",
                                  hint="this op reads records of the mmcbench.text_table source")) from None
        return OpOutput(Value("text", text=text))




class FieldParams(OpParams):
    field: str = Field(description="dotted record field holding the text, e.g. question")


@OPS.add("text.field")
class FieldText(Op):
    """A record field as text, unchanged: the unperturbed item of a group, or an op's input."""

    version = "1.0.0"
    Params = FieldParams
    input_kind = None
    output_kind = "text"

    def apply(self, value: Value | None, params: FieldParams, ctx: OpContext) -> OpOutput:
        text = required_field(ctx, params.field, "params.field")
        if not isinstance(text, str):
            raise OpError(Problem(f"record {ctx.record.id!r}: field {params.field!r} is not text "
                                  f"({type(text).__name__})", key="params.field"))
        return OpOutput(Value("text", text=text))




class LiteralParams(OpParams):
    text: str = Field(min_length=1, description="the text; sweep it (grid) to ask several instructions")


@OPS.add("text.literal")
class LiteralText(Op):
    """A given text, the same for every record: an instruction of a prompt set (MERLIM's five
    object-recognition prompts as a grid, for instruction bias)."""

    version = "1.0.0"
    Params = LiteralParams
    input_kind = None
    output_kind = "text"

    def apply(self, value: Value | None, params: LiteralParams, ctx: OpContext) -> OpOutput:
        return OpOutput(Value("text", text=params.text))

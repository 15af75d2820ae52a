"""An op registered by a module outside benchc (as a user's plugin would be): ``test.upper``
upper-cases a text. Worker processes must import this module to run it (compiler/pools.py)."""

from __future__ import annotations

from typing import Any

from benchc.compiler.ops.base import OPS, Op, OpContext, OpOutput, OpParams
from benchc.compiler.values import Value


class Params(OpParams):
    pass


class Upper(Op):
    """Upper-case the text (a test plugin)."""

    name = "test.upper"
    version = "1.0.0"
    Params = Params
    input_kind = "text"
    output_kind = "text"
    default_input = "text"
    reads_record = False

    def apply(self, value: Value | None, params: Any, ctx: OpContext) -> OpOutput:
        assert value is not None and value.text is not None
        return OpOutput(Value("text", text=value.text.upper()))


if Upper.name not in OPS:
    OPS.register(Upper.name, Upper())

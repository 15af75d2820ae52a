"""``text.numbers``: the text's numbers written another way (a number-format perturbation).

Does the answer change when "5 apples" reads "five apples", or "1250" reads "1,250"? The
numbers' values stay; only how they are written changes.

* ``style = "words"``: each whole number written in digits becomes English words, by num2words
  (``lang="en"``, cardinal): "5" -> "five", "21" -> "twenty-one", "1250" -> "one thousand, two
  hundred and fifty".
* ``style = "grouped"``: a whole number of at least ``min_group`` digits (default 4) gets
  thousands separators: "1250" -> "1,250".

A whole number is a run of ASCII digits that is not part of a word ("B2", "3rd"), of a decimal
or grouped number ("3.5", "1,250", ".5"), and not one with a leading zero ("007": a code, not a
quantity). In ``words`` style a number right after a currency sign ("$5") or before "%" ("50%")
stays as written ("$five" and "fifty%" are not how anyone writes). Attribute ``numbers``: how
many numbers were rewritten (0 leaves the text as it was).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams

WHOLE = re.compile(r"(?<![\w.,])([1-9]\d*|0)(?![\w]|[.,]\d)")
"""A whole number in digits, alone (see the module docstring)."""

CURRENCY = "$€£¥₹"


class NumbersParams(OpParams):
    style: Literal["words", "grouped"] = Field(description="words: numbers in English words (num2words); "
                                                           "grouped: thousands separators (1,250)")
    min_group: int = Field(4, ge=4, description="grouped: the fewest digits a number needs to be grouped")


def in_words(number: str) -> str:
    from num2words import num2words

    return str(num2words(int(number), lang="en"))


def rewrite_numbers(text: str, style: str, min_group: int = 4) -> tuple[str, int]:
    """``text`` with its whole numbers rewritten in ``style``, and how many were."""
    count = 0

    def replace(found: re.Match[str]) -> str:
        nonlocal count
        number = found.group(1)
        before = text[found.start() - 1] if found.start() > 0 else ""
        after = text[found.end()] if found.end() < len(text) else ""
        if style == "words":
            if (before and before in CURRENCY) or after == "%":
                return number
            count += 1
            return in_words(number)
        if len(number) < min_group:
            return number
        count += 1
        return f"{int(number):,}"

    return WHOLE.sub(replace, text), count


@OPS.add("text.numbers")
class Numbers(Op):
    """The text's whole numbers written in words ("five") or with thousands separators ("1,250")."""

    version = "1.0.0"
    Params = NumbersParams
    input_kind = output_kind = default_input = "text"
    reads_record = False
    libraries = ("num2words",)

    def apply(self, value: Value | None, params: NumbersParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.text is not None
        text, count = rewrite_numbers(value.text, params.style, params.min_group)
        return OpOutput(Value("text", text=text), attrs={"numbers": count})

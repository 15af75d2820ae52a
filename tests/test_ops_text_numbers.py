"""text.numbers: a number-format perturbation (issue 29's GSM8K example). Checked by hand on
texts that hold what real questions hold: quantities, money, percentages, decimals, codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchc.compiler.ops.text_numbers import rewrite_numbers


@pytest.mark.parametrize(("text", "words", "grouped"), [
    ("Anna has 5 apples. She buys 7 more.", "Anna has five apples. She buys seven more.",
     "Anna has 5 apples. She buys 7 more."),
    ("A farm has 1250 sheep and 21 goats.",
     "A farm has one thousand, two hundred and fifty sheep and twenty-one goats.",
     "A farm has 1,250 sheep and 21 goats."),
    ("Tom ran 10000 m in 12.5 minutes.", "Tom ran ten thousand m in 12.5 minutes.",
     "Tom ran 10,000 m in 12.5 minutes."),
    # money and percentages keep their digits in words; grouped numbers, codes and ordinals stay
    ("It costs $5, or 50% of 1,250, item B2, the 3rd, code 007.",
     "It costs $5, or 50% of 1,250, item B2, the 3rd, code 007.",
     "It costs $5, or 50% of 1,250, item B2, the 3rd, code 007."),
    ("It costs $12000.", "It costs $12000.", "It costs $12,000."),
    ("Zero is 0.", "Zero is zero.", "Zero is 0."),
])
def test_numbers_are_rewritten_and_nothing_else(text: str, words: str, grouped: str) -> None:
    assert rewrite_numbers(text, "words")[0] == words
    assert rewrite_numbers(text, "grouped")[0] == grouped


def test_the_count_says_how_many_numbers_changed() -> None:
    assert rewrite_numbers("5 cats, 6 dogs, $7", "words") == ("five cats, six dogs, $7", 2)
    assert rewrite_numbers("no numbers here", "words") == ("no numbers here", 0)
    assert rewrite_numbers("1250 and 125", "grouped") == ("1,250 and 125", 1)
    assert rewrite_numbers("12500 and 1250", "grouped", min_group=5) == ("12,500 and 1250", 1)


@given(st.integers(min_value=0, max_value=10**9))
def test_grouping_keeps_the_value(number: int) -> None:
    text, _ = rewrite_numbers(f"There are {number} items.", "grouped")
    assert int(text.removeprefix("There are ").removesuffix(" items.").replace(",", "")) == number


def test_the_op_sets_the_numbers_attribute(tmp_path: Path) -> None:
    from benchc.compiler.cas import ContentStore
    from benchc.compiler.ops import OPS, OpContext
    from benchc.compiler.seeds import rng_for
    from benchc.compiler.values import Record, Value

    op = OPS.get("text.numbers")
    record = Record(id="r", fields={})
    ctx = OpContext(record=record, rng=rng_for(0), store=ContentStore(tmp_path))
    out = op.apply(Value("text", text="3 red and 4 blue"), op.Params(style="words"), ctx)
    assert out.value.text == "three red and four blue" and out.attrs == {"numbers": 2}

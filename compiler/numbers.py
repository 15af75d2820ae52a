"""Reading a number out of a model's answer: "3", "There are three cats.", "twenty-one".

Number words go through text2num (``alpha2digit``), with ``threshold=0`` so that small numbers
("one", "two") are read too: counting answers are mostly small numbers. Used by stage templates
(MERLIM's follow-up "Are there {n} {plural}?") and by the counting metrics.
"""

from __future__ import annotations

import re

from text_to_num import alpha2digit

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def first_number(text: str, words: bool = True) -> int | float | None:
    """The first number in ``text`` (digits, or number words when ``words``); None if none."""
    source = alpha2digit(text, "en", threshold=0) if words else text
    match = _NUMBER.search(source)
    if match is None:
        return None
    value = float(match.group())
    return int(value) if value.is_integer() and "." not in match.group() else value


def whole_integer(text: str) -> int | None:
    """MERLIM's published parsing (run_task.py ``parser_fn``): ``int(answer)``, so only an answer
    that is an integer and nothing else is read ("5 books" and "five" are not)."""
    try:
        return int(text)
    except ValueError:
        return None

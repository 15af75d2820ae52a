"""Parsing a model's free-text answers into what a model step's op keeps.

The helpers are kept small and documented because what they accept decides what a benchmark
contains:

* :func:`first_answer_line`: strip, skip a preamble line that ends with ":" ("Here is the
  translation:"), take the first non-empty line, drop a short leading label ("Translation: ")
  and matching quotes around the whole answer.
* :func:`is_refusal`: the answer starts like a refusal ("I'm sorry", "I cannot", "As an AI").
* :func:`answer_items`: a list answer (numbered, bulleted or one per line; one line of several
  questions is split after each "?"), each item cleaned as above.
* :func:`yes_no`: "yes" or "no" when the answer's first word is one of them, else None.
"""

from __future__ import annotations

import re

LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z \-]{0,38}):\s+(?=\S)")
"""A short leading label ("Translation: ", "Rephrased question: "); at most five words."""
QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "`": "`", "\u00ab": "\u00bb"}
REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry\b|i apologi[sz]e|i can(?:no|')t|i can not|i am unable|"
    r"i'?m unable|i am not able|i'?m not able|i won'?t|as an ai\b)", re.IGNORECASE)
LIST_MARK = re.compile(r"^\s*(?:[-*\u2022]|\(?\d{1,2}[.):]|\(?[a-c][.)])\s+")
YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def _strip_label(line: str) -> str:
    match = LABEL.match(line)
    if match and len(match.group(1).split()) <= 5:
        return line[match.end():]
    return line


def _strip_quotes(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and QUOTES.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


def clean_item(text: str) -> str:
    """One line of an answer without its list mark, leading label and enclosing quotes."""
    return _strip_quotes(_strip_label(LIST_MARK.sub("", text, count=1)))


def _content_lines(answer: str) -> list[str]:
    """The answer's non-empty lines, without preamble lines that end with ":" when more follow."""
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    while len(lines) > 1 and lines[0].endswith(":"):
        lines = lines[1:]
    return lines


def first_answer_line(answer: str) -> str:
    """The answer's first content line, cleaned (see the module docstring); "" if none."""
    lines = _content_lines(answer)
    return clean_item(lines[0]) if lines else ""


def is_refusal(answer: str) -> bool:
    return bool(REFUSAL.match(answer.strip()))


def answer_items(answer: str) -> list[str]:
    """A list answer's items: one per line (list marks, labels and quotes removed); a single
    line holding several questions is split after each "?"."""
    items = [clean_item(line) for line in _content_lines(answer)]
    items = [item for item in items if item]
    if len(items) == 1 and items[0].count("?") > 1:
        items = [clean_item(q) for q in re.findall(r"[^?]*\?", items[0]) if q.strip(" ?")]
    return items


def yes_no(answer: str) -> str | None:
    """"yes" or "no" when the answer's first word is one of them (case and leading punctuation
    ignored); None for anything else, refusals included."""
    match = YES_NO.match(answer)
    return match.group(1).lower() if match else None

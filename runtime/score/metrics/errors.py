"""Word and character error rates of the answers against each item's target (``general.wer``,
``general.cer``), as speech recognition and OCR report them.

Each answer is aligned with its item's reference by jiwer (``process_words`` /
``process_characters``, a Levenshtein alignment), which counts substitutions (S), deletions (D),
insertions (I) and hits (H). A split's rate is a corpus rate: (S + D + I) summed over every
answer of the split, over the reference words (characters) summed likewise (N = S + D + H), x100.
It is never a mean of per-item rates, which would weigh a two-word reference like a fifty-word
one. The interval resamples the groups (source records) with their summed counts.

Normalisation (``normalize``, applied to answer and reference alike, and always named in the
report's note):

* ``whisper`` (default): Whisper's English text normaliser (``EnglishTextNormalizer`` with
  Whisper's spelling mapping, offline: ``mmcbench.whisper_normalizer``), as the Whisper paper
  and the Open ASR Leaderboard score: lower case, punctuation and bracketed text removed,
  "Mr." -> "mister", contractions expanded, numbers as digits, British spellings American.
  English only: for other languages use ``lower_strip`` or ``none``.
* ``lower_strip``: ``str.lower``, then every character whose Unicode category is punctuation
  (``P*``, as jiwer's ``RemovePunctuation``) removed without a space ("don't" -> "dont",
  "well-known" -> "wellknown"), then runs of white space made one space and the ends stripped.
  Symbols ("$", "%") and digits are kept. (``mmcbench.consistency``'s ``lower_strip`` only
  lower-cases and strips.)
* ``none``: the texts as they are; jiwer still splits words at white space and strips the
  ends, and CER counts every inner space as a character.

The reference is the item's first target value (an item with several is counted in a note).
An empty answer (none read, or nothing left after normalisation) is every reference word
deleted, and is counted (``empty_answers``). An item whose reference is empty after
normalisation (or that has no target) has no denominator: it is left out and counted in a
``WARNING:`` note (jiwer 4.0 does not raise there: it would count the answer's words as
insertions against zero reference words, a rate with nothing to divide by).

Example::

    [[metric]]
    name = "general.wer"
    target = "transcript"          # or a template: "{{ record.text }}"
    normalize = "whisper"          # the default; "lower_strip" or "none"
    by = ["corruption"]
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import Any, ClassVar

from benchc.compiler.metrics import CerParams, ErrorRateParams, WerParams

from .base import Metric, MetricInput, MetricResult, ScoredItem, split_by, metric
from .general import bootstrap_note, percent_interval, targets_of
from .mmcbench import whisper_normalizer

UNITS = {"wer": "words", "cer": "characters"}
REFERENCE_COLUMN = {"wer": "ref_words", "cer": "ref_chars"}
NORMALIZERS = {"whisper": "Whisper's English text normaliser",
               "lower_strip": "lower case, Unicode punctuation removed, white space collapsed",
               "none": "none (texts as they are)"}


@dataclass(frozen=True)
class Edits:
    """jiwer's counts for one or more aligned answers."""

    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    hits: int = 0

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def reference(self) -> int:
        """Reference words (characters): every one is a hit, a substitution or a deletion."""
        return self.substitutions + self.deletions + self.hits

    def __add__(self, other: Edits) -> Edits:
        return Edits(self.substitutions + other.substitutions, self.deletions + other.deletions,
                     self.insertions + other.insertions, self.hits + other.hits)


def lower_strip(text: str) -> str:
    """Lower case, Unicode punctuation (category P*) removed, white space collapsed and stripped."""
    kept = "".join(c for c in text.lower() if not unicodedata.category(c).startswith("P"))
    return " ".join(kept.split())


@lru_cache(maxsize=65536)
def normalize_text(how: str, text: str) -> str:
    """``text`` under the ``normalize`` setting ``how`` (whisper, lower_strip or none)."""
    if how == "whisper":
        return str(whisper_normalizer()(text))
    if how == "lower_strip":
        return lower_strip(text)
    return text


def edits(reference: str, hypothesis: str, unit: str) -> Edits:
    """jiwer's alignment of one answer with its reference, by words (``wer``) or characters (``cer``)."""
    import jiwer

    if unit == "wer":
        out: Any = jiwer.process_words(reference, hypothesis)
    else:
        out = jiwer.process_characters(reference, hypothesis)
    return Edits(out.substitutions, out.deletions, out.insertions, out.hits)


def reference_text(item: ScoredItem, target: str, how: str) -> str:
    """The item's reference, normalised: its first target value ("" when it has none)."""
    values = targets_of(item, target)
    return normalize_text(how, values[0]).strip() if values else ""


@dataclass
class Tally:
    """Summed edits per group of one split, and what was left out or empty."""

    per_group: dict[str, Edits] = field(default_factory=dict)
    items: int = 0
    answers: int = 0
    empty_answers: int = 0
    empty_references: list[str] = field(default_factory=list)
    several_targets: int = 0

    def add(self, item: ScoredItem, params: ErrorRateParams, unit: str) -> None:
        reference = reference_text(item, params.target, params.normalize)
        if not reference:
            self.empty_references.append(item.item_id)
            return
        self.items += 1
        self.several_targets += len(targets_of(item, params.target)) > 1
        for response in item.responses:
            hypothesis = normalize_text(params.normalize, response).strip()
            self.answers += 1
            self.empty_answers += not hypothesis
            self.per_group[item.group_id] = self.per_group.get(item.group_id, Edits()) + edits(
                reference, hypothesis, unit)

    def total(self) -> Edits:
        return sum(self.per_group.values(), Edits())


def tally(items: list[ScoredItem], params: ErrorRateParams, unit: str) -> Tally:
    out = Tally()
    for item in items:
        out.add(item, params, unit)
    return out


def normalize_note(how: str) -> str:
    return f"normalisation of answers and references: {NORMALIZERS[how]} (normalize = {how!r}; default 'whisper')"


class ErrorRate(Metric):
    """WER or CER (``unit``) per split of ``by``."""

    uses_embedder = False
    unit: ClassVar[str]

    def in_percent(self, columns: list[str]) -> set[str]:
        return {c for c in columns if c in (self.unit, "ci_low", "ci_high")}

    def score(self, params: ErrorRateParams, data: MetricInput) -> MetricResult:
        rows, tallies = [], []
        for key, part in split_by(data.items, params.by).items():
            counts = tally(part, params, self.unit)
            tallies.append(counts)
            rows.append({**dict(zip(params.by, key)), **self._row(counts, params)})
        columns = [*params.by, "items", "answers", "groups", self.unit, "ci_low", "ci_high", "substitutions",
                   "deletions", "insertions", "hits", REFERENCE_COLUMN[self.unit], "empty_answers"]
        left_out = [i for t in tallies for i in t.empty_references]
        return MetricResult(self.name, columns, rows, details={"empty_reference": left_out[:50]},
                            notes=self._notes(params, tallies, left_out))

    def _row(self, counts: Tally, params: ErrorRateParams) -> dict[str, Any]:
        total = counts.total()
        groups = list(counts.per_group.values())
        interval = percent_interval([e.errors for e in groups], [e.reference for e in groups], params)
        return {"items": counts.items, "answers": counts.answers, "groups": len(groups),
                self.unit: 100 * total.errors / total.reference if total.reference else None, **interval,
                "substitutions": total.substitutions, "deletions": total.deletions, "insertions": total.insertions,
                "hits": total.hits, REFERENCE_COLUMN[self.unit]: total.reference,
                "empty_answers": counts.empty_answers}

    def _notes(self, params: ErrorRateParams, tallies: list[Tally], left_out: list[str]) -> list[str]:
        units = UNITS[self.unit]
        notes = []
        if left_out:
            notes.append(f"WARNING: {len(left_out)} items have an empty reference after normalisation (or no "
                         f"{params.target!r}) and are left out: a rate has no reference {units} to divide by "
                         f"(details.empty_reference lists the first 50).")
        notes.append(f"{self.unit.upper()} = (substitutions + deletions + insertions) / reference {units}, summed over "
                     f"every answer of the split (a corpus rate, x100; not a mean of per-item rates), aligned by jiwer "
                     f"{metadata.version('jiwer')}; an empty answer is every reference {units[:-1]} deleted.")
        parts = [normalize_note(params.normalize), f"reference: {params.target!r}"]
        several = sum(t.several_targets for t in tallies)
        if several:
            parts.append(f"{several} items have several target values: the first is the reference")
        if params.bootstrap:
            parts.append(bootstrap_note(params))
        text = "; ".join(parts) + "."
        return [*notes, text[0].upper() + text[1:]]


@metric("general.wer", WerParams)
class WordErrorRate(ErrorRate):
    unit = "wer"


@metric("general.cer", CerParams)
class CharacterErrorRate(ErrorRate):
    unit = "cer"

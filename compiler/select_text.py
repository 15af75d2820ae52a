"""Stage 3b, ``[select]`` of kind ``text``: MMCBench's hard selection of text items (captions
for text-to-image, sentences for text-to-speech) by the text itself, with no model under test.

MMCBench (section 3 and its appendix) scores each caption by four measures: its inconsistency
under the text corruptions (1 - the mean cosine similarity, under sentence-t5-large, of the
caption to each heavily corrupted version), its readability (textstat), its syntactic
complexity (parse-tree depth) and its description (nouns + verbs + adjectives); the last three
are min-max normalised to [0, 1] and the score is ``6 * inconsistency + readability + syntax +
description``. The 10,000 highest are kept, and of them the 1,000 an aesthetic predictor rates
best (of the generated images: not reproducible offline).

Here, after ``[sample]``:

1. The text of ``field`` (node ``select.text``, op ``text.field``) and the probe over it (node
   ``select.probe``, e.g. ``text.corrupt`` at heavy severity over a grid of corruptions) run as
   a two-node graph through the ordinary node machinery: node keys, the node cache, seeds
   derived from the record and the variant path.
2. Every distinct text and probe is embedded alone (``ModelClient.embed``); the measures are in
   ``text_difficulty.py``; each measure and the total are rounded to 6 decimals.
3. The ``keep`` records of highest total are kept (ties by record id). With ``first_keep``, the
   ``first_keep`` highest are shortlisted and ``keep`` of them are kept by a seeded hash of the
   record id: a stand-in for the aesthetic stage, which ranks by what the text score does not see.

Records the probe made nothing for are left out (listed in the lock); ``keep`` (or
``first_keep``) beyond the records there are to score is an error, not a silent keep-all: the
point of the stage is to leave most records out. The lock lists every candidate's measures,
normalised scores, total and kept flag, the weights, the embedder's fingerprint and the text
libraries' versions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .artifacts import TextSelectLock
from .cas import ContentStore
from .errors import OpError, Problem, SpecError
from .expand import expand
from .model_steps import Asker, ModelSteps
from .nlp import READABILITY, library_versions
from .resolve import ResolvedTextSelect
from .seeds import seed_from
from .similarity import IDENTICAL
from .text_difficulty import DECIMALS, Difficulty, difficulty, min_max
from .values import Record

EMBEDDER = Asker("select.embedder", "select", "[select]'s embedder")


def pin(select: ResolvedTextSelect, models: ModelSteps) -> dict[str, Any]:
    """The embedder's fingerprint and the text libraries' versions, before any work; they enter
    the compile memo key and the lock."""
    settings = select.settings
    return {"kind": "text", "embedder": models.embedder_fingerprint(EMBEDDER, settings.embedder),
            "readability": READABILITY, "libraries": library_versions(),
            "weights": settings.weights.model_dump(mode="json")}


@dataclass(frozen=True)
class TextScore:
    record: str
    inconsistency: float
    raw: Difficulty
    readability: float
    syntax: float
    description: float
    total: float

    def as_json(self) -> dict[str, Any]:
        return {"record": self.record, "inconsistency": self.inconsistency,
                "readability_grade": self.raw.readability_grade, "parse_depth": self.raw.parse_depth,
                "description_words": self.raw.description_words, "readability": self.readability,
                "syntax": self.syntax, "description": self.description, "total": self.total}


@dataclass(frozen=True)
class TextSelection:
    kept: list[Record]
    scores: list[TextScore]
    """highest total first, ties by record id"""
    shortlisted: frozenset[str] | None
    unscored: list[str]
    probes: int
    ops_run: int

    def locked(self, pins: dict[str, Any]) -> TextSelectLock:
        kept = {r.id for r in self.kept}
        rows = []
        for score in self.scores:
            row = score.as_json()
            if self.shortlisted is not None:
                row["shortlisted"] = score.record in self.shortlisted
            rows.append({**row, "kept": score.record in kept})
        return TextSelectLock.model_validate({
            **pins, "candidates": len(self.scores) + len(self.unscored), "probes": self.probes,
            "first_keep": None if self.shortlisted is None else len(self.shortlisted), "kept": len(self.kept),
            "unscored": sorted(self.unscored), "scores": rows})


def select_text(select: ResolvedTextSelect, records: list[Record], spec_seed: int, store: ContentStore,
                workers: int, models: ModelSteps) -> TextSelection:
    """The ``keep`` records of highest score, in the order ``records`` had."""
    settings = select.settings
    _check_counts(select, len(records), "candidate records")
    expansion = expand(select.nodes, records, spec_seed, store, workers, models.roots, models)
    clean = {v.record.id: _text(v.value.text) for v in expansion.by_node[select.text.id]}
    probes: dict[str, list[str]] = {}
    for variant in expansion.by_node[select.probe.id]:
        probes.setdefault(variant.record.id, []).append(_text(variant.value.text))
    scored = sorted(rid for rid in clean if probes.get(rid))
    if records and not scored:
        raise OpError(Problem(f"[select]: the probe made no output for any of the {len(records)} candidate "
                              "records, so none can be scored", key="select.probe",
                              hint="check the probe's op and params (a validator may drop every output)"))
    _check_counts(select, len(scored), "records the probe made text for")
    scores = _scores(select, scored, clean, probes, models)
    ranked = [s.record for s in scores]
    shortlisted = None
    chosen = ranked[:settings.keep]
    if settings.first_keep is not None:
        shortlisted = frozenset(ranked[:settings.first_keep])
        chosen = sorted(shortlisted, key=lambda rid: (seed_from(["select.first_keep", spec_seed, rid]), rid))
        chosen = chosen[:settings.keep]
    keep = set(chosen)
    return TextSelection([r for r in records if r.id in keep], scores, shortlisted,
                         [r.id for r in records if r.id not in probes], sum(len(v) for v in probes.values()),
                         expansion.ops_run)


def _text(text: str | None) -> str:
    assert text is not None  # resolve checked that both nodes make text
    return text


def _scores(select: ResolvedTextSelect, scored: list[str], clean: dict[str, str], probes: dict[str, list[str]],
            models: ModelSteps) -> list[TextScore]:
    settings, weights = select.settings, select.settings.weights
    texts = sorted({t for rid in scored for t in [clean[rid], *probes[rid]]})
    vectors = np.asarray(models.embed(EMBEDDER, settings.embedder, texts), dtype=np.float64)
    row = {text: i for i, text in enumerate(texts)}
    measures = difficulty([clean[rid] for rid in scored])
    raw = [measures[clean[rid]] for rid in scored]
    readability = min_max([m.readability_grade for m in raw])
    syntax = min_max([float(m.parse_depth) for m in raw])
    description = min_max([float(m.description_words) for m in raw])
    out = []
    for i, rid in enumerate(scored):
        # the embedder's unit vectors, dotted as before; an unchanged text has similarity exactly 1
        similarity = np.where([t == clean[rid] for t in probes[rid]], IDENTICAL,
                              vectors[[row[t] for t in probes[rid]]] @ vectors[row[clean[rid]]])
        inconsistency = round(1.0 - float(np.mean(similarity)), DECIMALS)
        total = (weights.inconsistency * inconsistency + weights.readability * readability[i]
                 + weights.syntax * syntax[i] + weights.description * description[i])
        out.append(TextScore(rid, inconsistency, raw[i], readability[i], syntax[i], description[i],
                             round(total, DECIMALS)))
    return sorted(out, key=lambda s: (-s.total, s.record))


def _check_counts(select: ResolvedTextSelect, available: int, what: str) -> None:
    """``keep`` and ``first_keep`` must leave records out."""
    settings = select.settings
    for key, wanted in (("keep", settings.keep), ("first_keep", settings.first_keep)):
        if wanted is not None and wanted > available:
            raise SpecError(Problem(f"[select] {key} = {wanted}, but there are only {available} {what}",
                                    key=f"select.{key}",
                                    hint=f"a selection keeps fewer than it scores: lower {key}, or sample "
                                         "more records ([sample].n)"))

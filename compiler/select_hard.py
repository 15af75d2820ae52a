"""Stage 3b: ``[select]``, hard records chosen by the consistency of baseline models (MMCBench).

MMCBench keeps, of a large random sample, the records on which baseline models are least
consistent: for image-to-text, three captioners (vit-gpt2, blip-base, git-base) caption each image
and its 15 ImageNet-C corruptions at severity 3, and the 1,000 images whose corrupted captions are
least similar to the clean caption are kept; for speech-to-text, three ASR models transcribe each
clip and its corruptions (MMCBench section 3 and Appendix; benchmarks.md section 3).

Here, after ``[sample]``:

1. The probe (a node of one op over a record media, params swept as a node's) runs over every
   candidate record through the ordinary node machinery: node keys, the node cache, the
   record's derived seeds (node id ``select_probe``).
2. Each model answers each record's own media and each of its probes, through the model client
   (the runtime's backends and response store: batched, cached, resumable; pinned in the lock).
3. A record's consistency is the cosine similarity of each probe's answer to its clean answer
   under the sentence embedder, averaged over its probes, then over the models.
4. The ``keep`` records of lowest consistency are kept (ties by record id); a record the probe
   made nothing for (a validator dropped every output) cannot be scored and is left out (listed
   in the lock); when no record can be scored the compile fails. A record without the probe's
   input media fails the compile, as it does for a node.

Each answer is embedded alone (``ModelClient.embed``), so its vector does not depend on which
other texts share a padded batch, and scores are rounded to 6 decimals before ranking and in the
lock, so float noise in the last bits cannot move them (barring a score within 5e-7 of a rounding
edge). The lock lists every candidate's score and whether it was kept, so a selection can be
audited and diffed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .artifacts import SelectLock
from .cas import ContentStore
from .errors import OpError, Problem
from .expand import expand
from .model_steps import Asker, ModelBackendRef, ModelPrompt, ModelSteps, StepGeneration
from .resolve import ResolvedSelect
from .similarity import IDENTICAL
from .values import MediaRef, Record

SCORE_DECIMALS = 6


@dataclass(frozen=True)
class Selection:
    kept: list[Record]
    scores: dict[str, float]
    """record id -> consistency (mean cosine similarity), for every scored candidate"""
    unscored: list[str]
    """candidates the probe made nothing for"""
    probes: int
    ops_run: int

    def lock(self, pins: dict[str, Any]) -> dict[str, Any]:
        kept = {r.id for r in self.kept}
        ranked = sorted(self.scores.items(), key=lambda pair: (pair[1], pair[0]))
        return {**pins, "candidates": len(self.scores) + len(self.unscored), "probes": self.probes,
                "kept": len(self.kept), "unscored": sorted(self.unscored),
                "scores": [{"record": rid, "consistency": score, "kept": rid in kept} for rid, score in ranked]}

    def locked(self, pins: dict[str, Any]) -> SelectLock:
        return SelectLock.model_validate(self.lock(pins))


def model_refs(select: ResolvedSelect, roots: tuple[Path, ...]) -> list[ModelBackendRef]:
    settings = select.settings
    generation = StepGeneration(settings.max_new_tokens, 0.0, 1.0)
    return [ModelBackendRef(backend, generation, roots, settings.task) for backend in settings.models]


def model_asker(index: int) -> Asker:
    return Asker(f"select.models[{index}]", "select", f"[select] model {index}")


EMBEDDER = Asker("select.embedder", "select", "[select]'s embedder")


def pin(select: ResolvedSelect, models: ModelSteps) -> dict[str, Any]:
    """Every model's and the embedder's fingerprint, before any work (a missing model fails
    fast); they enter the compile memo key and the lock."""
    refs = model_refs(select, models.roots)
    return {"models": [{**ref.as_json(), "fingerprint": models.model_fingerprint(model_asker(i), ref)}
                       for i, ref in enumerate(refs)],
            "embedder": models.embedder_fingerprint(EMBEDDER, select.settings.embedder)}


def select_hard(select: ResolvedSelect, records: list[Record], spec_seed: int, store: ContentStore,
                workers: int, models: ModelSteps) -> Selection:
    """The ``keep`` records of lowest consistency, in the order ``records`` had."""
    probe = select.probe
    expansion = expand([probe], records, spec_seed, store, workers, models.roots, models)
    probes: dict[str, list[MediaRef]] = {}
    for variant in expansion.by_node[probe.id]:
        assert variant.value.media is not None  # resolve checked the op makes media
        probes.setdefault(variant.record.id, []).append(variant.value.media)
    scored = [r for r in records if probes.get(r.id)]
    if records and not scored:
        raise OpError(Problem(f"[select]: the probe made no output for any of the {len(records)} candidate "
                              "records, so none can be scored", key="select.probe",
                              hint="check the probe's op and params (a validator may drop every output)"))
    per_model = [_consistency(select, i, ref, scored, probes, models)
                 for i, ref in enumerate(model_refs(select, models.roots))]
    scores = {r.id: round(float(np.mean([m[r.id] for m in per_model])), SCORE_DECIMALS) for r in scored}
    ranked = sorted(scores, key=lambda rid: (scores[rid], rid))[:select.settings.keep]
    chosen = set(ranked)
    return Selection([r for r in records if r.id in chosen], scores,
                     [r.id for r in records if not probes.get(r.id)],
                     sum(len(v) for v in probes.values()), expansion.ops_run)


def _consistency(select: ResolvedSelect, index: int, ref: ModelBackendRef, records: list[Record],
                 probes: dict[str, list[MediaRef]], models: ModelSteps) -> dict[str, float]:
    """Per record, one model's mean similarity of each probe's answer to the clean answer."""
    settings = select.settings
    prompts: list[ModelPrompt] = []
    for record in records:
        clean = record.media[select.probe.input]  # present: the probe read it
        prompts += [ModelPrompt(settings.prompt, media=(media,)) for media in [clean, *probes[record.id]]]
    answers = iter(models.model_answers(model_asker(index), ref, prompts))
    texts = {r.id: [next(answers) for _ in range(1 + len(probes[r.id]))] for r in records}
    vectors = models.embed(EMBEDDER, settings.embedder, [t for r in records for t in texts[r.id]])
    out, row = {}, 0
    for record in records:
        block = np.asarray(vectors[row:row + len(texts[record.id])], dtype=np.float64)
        row += len(block)
        answers_of = texts[record.id]
        same = [answer == answers_of[0] for answer in answers_of[1:]]  # identical answers: exactly 1
        out[record.id] = float(np.mean(np.where(same, IDENTICAL, block[1:] @ block[0])))
    return out


"""MMCBench's consistency scores (seed 002, sections 3.1-3.4 and appendix B; benchmarks.md 3.2).

For each corruption c: the mean, over source items, of the cosine similarity between two
embeddings; the score is the sum over corruptions of those means, x100 (so its maximum is 100 x
the number of corruptions: 2300 for the 23 text corruptions, 2900 for the 29 image ones, 1600
for the 16 speech ones). The unperturbed item (``over`` = ``reference``) is the anchor and is not
a corruption. Each item's first sample is scored.

``mmcbench.consistency`` (uni-modal, text): the output for the clean input vs the output for the
input under c, with a sentence embedder: speech-to-text (transcriptions, Table 3), text-to-speech
(transcriptions of the generated speech, Table 4), or image-to-text captions with a sentence
embedder instead of CLIP's text tower. Outputs are normalised first (``normalize``):
``lower_strip`` (default) lower-cases and strips them, as MMCBench's text2speech evaluation does
with wav2vec2 transcriptions; ``whisper`` runs Whisper's English text normaliser, as MMCBench's
speech2text evaluation does (``WhisperTokenizer.from_pretrained("openai/whisper-base")._normalize``,
which is transformers' ``EnglishTextNormalizer`` over the hub's English spelling mapping; benchc
reads that mapping, byte for byte openai-whisper's ``whisper/normalizers/english.json``, from the
``whisper-normalizer`` package, so nothing is downloaded): lower case, no punctuation or
bracketed text, "mr" -> "mister", contractions expanded, numbers as digits, British spellings
American ("colour" -> "color").

``mmcbench.cross_modal`` (CLIP, Tables 1, 2, 6, 7):
  * image2text: cross = clean input image vs the caption of the image under c (Table 2);
    uni = caption of the clean image vs caption of the image under c, CLIP text tower (Table 7).
  * text2image: cross = clean caption (the clean item's prompt) vs the image generated from the
    caption under c (Table 1); uni = image from the clean caption vs image from the caption
    under c, CLIP image tower (Table 6).
  The embedder is anything with ``embed_images(images)`` and ``embed_texts(texts)`` returning
  unit-normalised rows (runtime/score/clip_embed.py's ``ClipEmbedder``, loaded from ``clip``).
  Divergences: MMCBench uses open_clip ViT-L-14 (laion2b_s32b_b82k); benchc loads any
  transformers CLIP folder. MMCBench's text2image evaluate.py stores clean image . corrupted
  image under ``cross_similarity`` and caption . corrupted image under ``uni_similarity``, the
  opposite of the paper's definitions: ``published_keys = true`` reports them that way. Its
  image2text script stops after the first parquet batch (``break``); benchc scores every item.

Both average silently over what is there, so a perturbation with no item in a split (the score
sums fewer means), one missing from some groups (its mean is over the others), or a group with
no single unperturbed item (left out) is named in a ``WARNING:`` note (in scores.json, the report
and paper tables), against every perturbation the metric's items have. A split with nothing to
score has no score (None, shown as n/a), never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol

import numpy as np

from benchc.compiler.errors import BackendError, BenchcError, Problem
from benchc.compiler.metrics import MMCBenchCrossParams, MMCBenchParams

from benchc.compiler.similarity import cosine, fmean
from .base import Metric, MetricInput, MetricResult, ScoredItem, groups_of, split_by, metric

PAPER_JUDGES = {"speech-to-text": "facebook/wav2vec2-base-960h", "embedder": "sentence-t5-large",
                "clip": "open_clip ViT-L-14 laion2b_s32b_b82k"}


class CrossEmbedder(Protocol):
    def embed_images(self, images: Sequence[Any]) -> np.ndarray: ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


def is_value(value: Any, wanted: Any) -> bool:
    """Whether an attribute's value is ``wanted`` as a spec wrote it: numbers compared as numbers
    (``reference = 0`` is the integer attribute 0, and 1.0 is 1), anything else by its text."""
    numbers = (int, float)
    if isinstance(value, numbers) and isinstance(wanted, numbers) and not isinstance(value, bool) \
            and not isinstance(wanted, bool):
        return bool(value == wanted)
    return str(value) == str(wanted)


def without_attribute(items: list[ScoredItem], over: str) -> list[ScoredItem]:
    """The items that have no value of ``over``: neither reference nor perturbed, left out."""
    return [i for i in items if i.attrs.get(over) is None]


def anchored_groups(items: list[ScoredItem], over: str,
                    reference: Any) -> list[tuple[ScoredItem, list[ScoredItem]]]:
    """(the unperturbed item, the others) per group that has exactly one unperturbed item; items
    without a value of ``over`` are neither (``without_attribute`` counts them for a note)."""
    out = []
    for group in groups_of(items).values():
        refs = [i for i in group if is_value(i.attrs.get(over), reference)]
        if len(refs) == 1:
            out.append((refs[0], [i for i in group if i is not refs[0] and i.attrs.get(over) is not None]))
    return out


def left_out_note(items: list[ScoredItem], over: str) -> list[str]:
    """A note naming how many items have no ``over`` (none: no note)."""
    missing = without_attribute(items, over)
    if not missing:
        return []
    return [f"{len(missing)} item(s) have no attribute {over!r} and are left out "
            f"(e.g. {missing[0].item_id}): they are neither the reference nor a perturbation."]


def _sum_of_means(sims: dict[str, list[float]]) -> dict[str, float]:
    return {c: fmean(v) for c, v in sorted(sims.items())}


def _score(per_corruption: dict[str, float]) -> float | None:
    """100 x the sum of the means (``math.fsum``: exact whatever the order); None (n/a) when no
    corruption was scored, never 0."""
    return 100 * math.fsum(per_corruption.values()) if per_corruption else None


def expected_values(items: list[ScoredItem], over: str, reference: Any) -> list[str]:
    """Every perturbation (value of ``over`` other than ``reference``) among the metric's items:
    what each split's score is expected to sum over."""
    return sorted({str(i.attrs.get(over)) for i in items if i.attrs.get(over) is not None
                   and not is_value(i.attrs.get(over), reference)})


def coverage_warnings(label: str, items: list[ScoredItem], over: str, reference: Any,
                      expected: list[str]) -> list[str]:
    """What a split's score leaves out without saying so in its number: perturbations with no
    item in the split (the score sums fewer means: its max drops), perturbations missing from
    some groups (their mean is over the others), and groups without exactly one ``reference``
    item (left out). Named, so that a score over fewer corruptions is never read as a full one."""
    anchored = anchored_groups(items, over, reference)
    groups = len(groups_of(items))
    having: dict[str, set[str]] = {}
    for ref, others in anchored:
        for item in others:
            having.setdefault(str(item.attrs.get(over)), set()).add(ref.group_id)
    where = "" if label == "all" else f"{label}: "
    out = []
    missing = [c for c in expected if c not in having]
    if missing and anchored:
        scored = len(expected) - len(missing)
        out.append(f"WARNING: {where}no {over} {', '.join(missing)} ({len(missing)} of the {len(expected)} in "
                   f"this run): the score sums {scored} means (max {100 * scored}), not {len(expected)}.")
    partial = [f"{c} ({len(anchored) - len(having[c])} of {len(anchored)} groups)" for c in sorted(having)
               if len(having[c]) < len(anchored)]
    if partial:
        out.append(f"WARNING: {where}{over} missing from some groups, so its mean is over the other groups "
                   f"only: {', '.join(partial)}.")
    if len(anchored) < groups:
        out.append(f"WARNING: {where}{groups - len(anchored)} of {groups} groups have no single item with "
                   f"{over} = {reference!r} and are left out.")
    return out


@metric("mmcbench.consistency", MMCBenchParams)
class MMCBenchConsistency(Metric):
    percent_columns = frozenset({"score", "max"})

    def score(self, params: MMCBenchParams, data: MetricInput) -> MetricResult:
        rows, details, warnings = [], {}, []
        expected = expected_values(data.items, params.over, params.reference)
        for key, part in split_by(data.items, params.by).items():
            per_corruption, groups = self._per_corruption(params, part, data)
            label = "/".join(str(k) for k in key) or "all"
            details[label] = {c: round(100 * v, 4) for c, v in per_corruption.items()}
            warnings += coverage_warnings(label, part, params.over, params.reference, expected)
            row: dict[str, Any] = dict(zip(params.by, key))
            row.update({"groups": groups, "corruptions": len(per_corruption),
                        "score": _score(per_corruption), "max": 100 * len(per_corruption)})
            rows.append(row)
        assert data.embedder is not None
        notes = [
            *warnings,
            f"Judge: '{data.stage_backend}' transcribes the speech{judge_wer_note(data.items, params)}; similarity: "
            f"{data.embedder.fingerprint['embedder']}. MMCBench uses {PAPER_JUDGES['speech-to-text']} "
            f"and {PAPER_JUDGES['embedder']}: these are offline stand-ins, so scores are not "
            "comparable with the paper's numbers.",
        ]
        if params.normalize == "whisper":
            notes.append("Outputs normalised with Whisper's English text normaliser (EnglishTextNormalizer), "
                         "as MMCBench's speech2text evaluation does.")
        return MetricResult(self.name, [*params.by, "groups", "corruptions", "score", "max"], rows,
                            details={"per_corruption_x100": details}, notes=notes)

    def _per_corruption(self, params: MMCBenchParams, items: list[ScoredItem],
                        data: MetricInput) -> tuple[dict[str, float], int]:
        assert data.embedder is not None
        anchored = anchored_groups(items, params.over, params.reference)
        texts = [self._norm(params, i.responses[0]) for ref, others in anchored for i in (ref, *others)]
        emb = data.embedder.encode(texts)  # one batched call; the embedder memoises each string
        sims: dict[str, list[float]] = {}
        at = 0
        for _ref, others in anchored:
            for offset, item in enumerate(others, start=1):
                same = texts[at] == texts[at + offset]  # identical outputs: exactly 1, not embedded
                sims.setdefault(str(item.attrs.get(params.over)), []).append(
                    cosine(emb[at], emb[at + offset], same))
            at += 1 + len(others)
        return _sum_of_means(sims), len(anchored)

    @staticmethod
    def _norm(params: MMCBenchParams, text: str) -> str:
        return normalize_output(str(params.normalize), text)


def judge_wer_note(items: list[ScoredItem], params: MMCBenchParams) -> str:
    """`` (word error rate 0.25 on the 8 clean clips against the spoken text, ...)``: how well the
    judge hears, where it can be known: the scored items carry no audio of their own (the speech
    was made from each item's prompt by an earlier stage, text-to-speech), so a clean item's
    prompt is what was spoken. The rate is a corpus rate (errors summed over reference words
    summed, as ``general.wer``), Whisper-normalised. "" elsewhere (speech-to-text, captions)."""
    from .errors import Edits, edits, normalize_text

    clean = [i for i in items if is_value(i.attrs.get(params.over), params.reference)]
    if not clean or any(kind == "audio" for i in clean for kind, _ in i.media):
        return ""
    pairs = [(normalize_text("whisper", i.prompt).strip(), normalize_text("whisper", i.responses[0]))
             for i in clean if i.responses]
    total = sum((edits(ref, hyp, "wer") for ref, hyp in pairs if ref), Edits())
    if not total.reference:
        return ""
    return (f" (word error rate {total.errors / total.reference:.2f} on the {len(pairs)} clean clips against the "
            "spoken text, Whisper-normalised)")


def normalize_output(how: str, text: str) -> str:
    """An output as ``mmcbench.consistency`` compares it: as is (``none``), lower-cased and
    stripped (``lower_strip``), or through Whisper's English normaliser (``whisper``)."""
    if how == "lower_strip":
        return text.lower().strip()
    if how == "whisper":
        return whisper_normalizer()(text)
    return text


@lru_cache(maxsize=1)
def whisper_normalizer() -> Callable[[str], str]:
    """``WhisperTokenizer._normalize`` of openai/whisper-base without the hub: transformers'
    ``EnglishTextNormalizer`` with the English spelling mapping that the hub's normalizer.json
    holds (the same file as openai-whisper's english.json), read from ``whisper-normalizer``."""
    try:
        from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

        mapping = json.loads((resources.files("whisper_normalizer") / "normalizers" / "english.json")
                             .read_text(encoding="utf-8"))
    except (ImportError, FileNotFoundError) as exc:
        raise BackendError(Problem(f"normalize = 'whisper' needs transformers and whisper-normalizer: {exc}",
                                   hint="pip install whisper-normalizer==0.1.15")) from None
    return EnglishTextNormalizer(mapping)


@metric("mmcbench.cross_modal", MMCBenchCrossParams)
class MMCBenchCrossModal(Metric):
    uses_embedder = False
    percent_columns = frozenset({"cross", "uni", "max"})

    def score(self, params: MMCBenchCrossParams, data: MetricInput) -> MetricResult:
        clip = data.cross_embedder if data.cross_embedder is not None else self._load(params)
        rows, details, warnings = [], {"cross_x100": {}, "uni_x100": {}}, []
        expected = expected_values(data.items, params.over, params.reference)
        for key, part in split_by(data.items, params.by).items():
            cross, uni, groups = self._per_corruption(params, part, data, clip)
            if params.task == "text2image" and params.published_keys:
                cross, uni = uni, cross
            label = "/".join(str(k) for k in key) or "all"
            details["cross_x100"][label] = {c: round(100 * v, 4) for c, v in cross.items()}
            details["uni_x100"][label] = {c: round(100 * v, 4) for c, v in uni.items()}
            warnings += coverage_warnings(label, part, params.over, params.reference, expected)
            row: dict[str, Any] = dict(zip(params.by, key))
            row.update({"groups": groups, "corruptions": len(cross), "cross": _score(cross),
                        "uni": _score(uni), "max": 100 * len(cross)})
            rows.append(row)
        fingerprint = clip.fingerprint() if callable(getattr(clip, "fingerprint", None)) else {}
        notes = [*warnings, f"CLIP: {fingerprint.get('model', type(clip).__name__)}; MMCBench uses "
                 f"{PAPER_JUDGES['clip']}, so scores are comparable with the paper's only with that model."]
        if params.task == "text2image" and params.published_keys:
            notes.append("cross and uni are named as MMCBench's evaluate.py names them (swapped "
                         "against the paper's definitions).")
        return MetricResult(self.name, [*params.by, "groups", "corruptions", "cross", "uni", "max"], rows,
                            details=details, notes=notes)

    @staticmethod
    def _load(params: MMCBenchCrossParams) -> CrossEmbedder:
        from ..clip_embed import load_clip

        return load_clip(params.clip, params.device)

    def _per_corruption(self, params: MMCBenchCrossParams, items: list[ScoredItem], data: MetricInput,
                        clip: CrossEmbedder) -> tuple[dict[str, float], dict[str, float], int]:
        anchored = anchored_groups(items, params.over, params.reference)
        cross: dict[str, list[float]] = {}
        uni: dict[str, list[float]] = {}
        if not anchored:
            return {}, {}, 0
        if params.task == "image2text":
            shas = [self._item_image(ref) for ref, _ in anchored]
            clean_images = clip.embed_images([self._read(data, "image", sha) for sha in shas])
            outputs = [i.responses[0] for ref, others in anchored for i in (ref, *others)]
            captions = clip.embed_texts(outputs)
        else:
            shas = [self._answer_image(i) for ref, others in anchored for i in (ref, *others)]
            outputs = shas  # the same image bytes: the same image
            clean_texts = clip.embed_texts([ref.prompt for ref, _ in anchored])
            images = clip.embed_images([self._read(data, "image", sha) for sha in shas])
        at = 0
        for g, (_ref, others) in enumerate(anchored):
            for offset, item in enumerate(others, start=1):
                corruption = str(item.attrs.get(params.over))
                same = outputs[at] == outputs[at + offset]  # identical outputs: uni is exactly 1
                if params.task == "image2text":
                    cross.setdefault(corruption, []).append(cosine(clean_images[g], captions[at + offset]))
                    uni.setdefault(corruption, []).append(cosine(captions[at], captions[at + offset], same))
                else:
                    cross.setdefault(corruption, []).append(cosine(clean_texts[g], images[at + offset]))
                    uni.setdefault(corruption, []).append(cosine(images[at], images[at + offset], same))
            at += 1 + len(others)
        return _sum_of_means(cross), _sum_of_means(uni), len(anchored)

    @staticmethod
    def _item_image(item: ScoredItem) -> str:
        for kind, sha in item.media:
            if kind == "image":
                return sha
        raise BenchcError(Problem(f"mmcbench.cross_modal (image2text): item {item.item_id!r} sends no image",
                                  hint="image2text scores the captions of an image stage's items"))

    @staticmethod
    def _answer_image(item: ScoredItem) -> str:
        sha = item.blobs[0] if item.blobs else None
        if not sha:
            raise BenchcError(Problem(f"mmcbench.cross_modal (text2image): item {item.item_id!r} has no "
                                      "image answer", hint="score the text-to-image stage (metric stage = ...)"))
        return sha

    @staticmethod
    def _read(data: MetricInput, kind: str, sha: str) -> bytes:
        if data.media is None:
            raise BenchcError(Problem("mmcbench.cross_modal needs the run's media (compile cache and "
                                      "response store)"))
        return data.media(kind, sha)

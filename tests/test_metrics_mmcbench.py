"""MMCBench's CLIP consistency (cross-modal and uni-modal) with a stub CLIP embedder whose
vectors are chosen, so every score is computed by hand; and the text consistency batching."""

from __future__ import annotations

import numpy as np
import pytest

from benchc.compiler.errors import BenchcError
from benchc.compiler.metrics import MMCBenchCrossParams, MMCBenchParams
from benchc.runtime.score.embed import Embedder
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem


def unit(*values: float) -> np.ndarray:
    v = np.zeros(4, dtype=np.float32)
    v[:len(values)] = values
    return v / np.linalg.norm(v)


class StubClip:
    """The protocol mmcbench.cross_modal needs: embed_images and embed_texts (unit rows)."""

    def __init__(self, images: dict[bytes, np.ndarray], texts: dict[str, np.ndarray]) -> None:
        self.images, self.texts = images, texts
        self.asked: list[tuple[str, int]] = []

    def embed_images(self, images: list[bytes]) -> np.ndarray:
        self.asked.append(("images", len(images)))
        return np.stack([self.images[i] for i in images])

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        self.asked.append(("texts", len(texts)))
        return np.stack([self.texts[t] for t in texts])


def media(kind: str, sha: str) -> bytes:
    return f"{kind}:{sha}".encode()


def item(group: str, corruption: str, *, caption: str = "", prompt: str = "", image: str | None = None,
         answer_image: str | None = None, severity: str = "heavy") -> ScoredItem:
    return ScoredItem(f"{group}#{corruption}", group, {"corruption": corruption, "severity": severity}, {},
                      (caption,), prompt=prompt, media=(("image", image),) if image else (),
                      blobs=(answer_image,) if answer_image else ())


def cross(params: MMCBenchCrossParams, items: list[ScoredItem], clip: StubClip):
    return METRICS.get("mmcbench.cross_modal").score(params, MetricInput(items, None, "m", media=media,
                                                                         cross_embedder=clip))


def test_image2text_cross_and_uni() -> None:
    """cross: clean image . caption of the corrupted image; uni: clean caption . that caption.
    ocr: cross (1 + 0.5) / 2, uni (0.8 + 0.5) / 2; blur: cross (0.6 + 1) / 2, uni (0.96 + 1) / 2."""
    texts = {"a dog": unit(1), "a cat": unit(0.6, 0.8), "a puppy": unit(0.8, 0.6), "a car": unit(0, 0, 1),
             "a bus": unit(0, 0, 0.5, np.sqrt(0.75))}
    images = {b"image:img1": unit(1), b"image:img2": unit(0, 0, 1)}
    items = [item("g1", "clean", caption="a puppy", image="img1"), item("g1", "ocr", caption="a dog", image="x1"),
             item("g1", "blur", caption="a cat", image="y1"),
             item("g2", "clean", caption="a car", image="img2"), item("g2", "ocr", caption="a bus", image="x2"),
             item("g2", "blur", caption="a car", image="y2")]
    clip = StubClip(images, texts)
    result = cross(MMCBenchCrossParams(task="image2text", clip="unused", by=["severity"]), items, clip)
    [row] = result.rows
    assert row["cross"] == pytest.approx(100 * (0.75 + 0.8), abs=1e-3)
    assert row["uni"] == pytest.approx(100 * (0.65 + 0.98), abs=1e-3)
    assert (row["severity"], row["groups"], row["corruptions"], row["max"]) == ("heavy", 2, 2, 200)
    assert result.details["cross_x100"]["heavy"] == {"blur": pytest.approx(80.0, abs=1e-3),
                                                    "ocr": pytest.approx(75.0, abs=1e-3)}
    assert clip.asked == [("images", 2), ("texts", 6)]  # one batch per modality


def test_text2image_cross_and_uni_and_the_published_keys() -> None:
    """cross: clean caption . image from the corrupted caption = 1; uni: clean image . that image = 0.6."""
    texts = {"a dog": unit(1)}
    images = {b"image:i_clean": unit(0.6, 0.8), b"image:i_ocr": unit(1)}
    items = [item("g", "clean", prompt="a dog", answer_image="i_clean"),
             item("g", "ocr", prompt="a d0g", answer_image="i_ocr")]
    clip = StubClip(images, texts)
    [row] = cross(MMCBenchCrossParams(task="text2image", clip="unused"), items, clip).rows
    assert row["cross"] == pytest.approx(100.0) and row["uni"] == pytest.approx(60.0)
    published = cross(MMCBenchCrossParams(task="text2image", clip="unused", published_keys=True), items, clip)
    assert published.rows[0]["cross"] == pytest.approx(60.0) and published.rows[0]["uni"] == pytest.approx(100.0)
    assert "swapped" in published.notes[1]


def test_groups_without_exactly_one_clean_item_are_skipped() -> None:
    items = [item("g", "ocr", prompt="x", answer_image="a"), item("g", "blur", prompt="x", answer_image="b")]
    [row] = cross(MMCBenchCrossParams(task="text2image", clip="unused"), items, StubClip({}, {})).rows
    assert (row["groups"], row["cross"], row["max"]) == (0, None, 0)  # nothing scored: n/a, not 0


def test_text2image_needs_image_answers() -> None:
    items = [item("g", "clean", prompt="a dog"), item("g", "ocr", prompt="a d0g")]
    with pytest.raises(BenchcError, match="no image answer"):
        cross(MMCBenchCrossParams(task="text2image", clip="unused"), items, StubClip({}, {}))


class CountingModel:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([unit(1) if "dog" in t else unit(0, 1) for t in texts])


def test_text_consistency_embeds_all_outputs_in_one_batch() -> None:
    """Uni-modal (speech-to-text, text-to-speech): clean output . corrupted output; each distinct
    normalised string embedded once, in one call."""
    embedder = Embedder("stub", CountingModel(), {"embedder": "stub"})
    items = [item("g1", "clean", caption="A dog "), item("g1", "ocr", caption="a dog"),
             item("g1", "swap", caption="a cat"), item("g2", "clean", caption="a dog"),
             item("g2", "ocr", caption="a cat"), item("g2", "swap", caption="a dog")]
    [row] = METRICS.get("mmcbench.consistency").score(MMCBenchParams(), MetricInput(items, embedder, "asr")).rows
    assert row["score"] == pytest.approx(100 * (0.5 + 0.5)) and row["max"] == 200
    assert embedder.model.calls == [["a cat", "a dog"]]


def test_whisper_normaliser_is_the_published_one() -> None:
    """MMCBench's speech2text evaluate.py normalises transcriptions with
    WhisperTokenizer._normalize: transformers' EnglishTextNormalizer with the hub's English
    spelling mapping (here from whisper-normalizer: openai-whisper's english.json)."""
    from benchc.runtime.score.metrics.mmcbench import normalize_output

    assert normalize_output("whisper", "Mr. Smith's colour: twenty-one dollars!") == "mister smith is color $21"
    assert normalize_output("whisper", "  I won't go [inaudible] at 3pm.") == "i will not go at 3 pm"
    assert normalize_output("lower_strip", "  Mr. Smith ") == "mr. smith"
    assert normalize_output("none", " A ") == " A "


def test_text_consistency_with_the_whisper_normaliser() -> None:
    """'Twenty-one dogs.' and '21 dogs' are one string after Whisper's normaliser (similarity 1);
    lower/strip leaves them two. The params are built unvalidated while the spec schema lacks the value."""
    embedder = Embedder("stub", CountingModel(), {"embedder": "stub"})
    items = [item("g", "clean", caption="Twenty-one dogs."), item("g", "ocr", caption="21 dogs"),
             item("g", "swap", caption="21 cats")]
    params = MMCBenchParams.model_construct(**{**MMCBenchParams().model_dump(), "normalize": "whisper"})
    result = METRICS.get("mmcbench.consistency").score(params, MetricInput(items, embedder, "asr"))
    assert result.details["per_corruption_x100"]["all"] == {"ocr": pytest.approx(100.0), "swap": pytest.approx(0.0)}
    assert embedder.model.calls == [["21 cats", "21 dogs"]] and "Whisper" in result.notes[-1]

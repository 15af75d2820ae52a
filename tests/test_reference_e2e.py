"""Each bundled reference benchmark end to end through the CLI (`benchc eval`), on its bundled
data and offline models: a tiny random LLaVA built here (text-only items included), espeak and
pocketsphinx for speech, a tiny random diffusers pipeline for text-to-image. The numbers of a
random model mean nothing; what is checked is that every stage answers every item and that each
metric scores them. (MM-R3 context reasoning and MMCBench text-to-speech have their own e2e
tests, as does MERLIM counting on scenes.)"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import SPECS, cli
from support.tiny_clip import build_tiny_clip, build_tiny_sd
from support.tiny_vlm import build_tiny_llava

pytestmark = pytest.mark.slow

VLM_CASES = {  # spec -> (--set overrides, the metrics it must score)
    "mm_r3/context_reasoning_sampling": (["sample.n=2"], ["mmr3.all"]),
    "mm_r3/question_rephrasing": (["sample.n=2"], ["mmr3.all"]),
    "mm_r3/question_rephrasing_sampling": (["sample.n=2"], ["mmr3.all"]),
    "mm_r3/image_restyling": (["sample.n=2"], ["mmr3.all"]),
    "mm_r3/image_restyling_sampling": (["sample.n=1"], ["mmr3.all"]),
    "merlim/object_recognition": (["sample.n=2"], ["merlim.recognition"]),
    "merlim/relationships_curated": (["sample.n=3"], ["merlim.relations"]),
    "merlim/relationships_random": (["sample.n=3"], ["merlim.relations"]),
    "merlim/counting": (["sample.n=3"], ["merlim.counting"]),
    "mmcbench/image2text": (["sample.n=1"], ["mmcbench.cross_modal"]),
    "koala/counterfactual": (["sample.n=3"], ["koala.accuracy"]),
    "koala/parametric": (["sample.n=3"], ["koala.accuracy"]),
    "koala/source_conflict": (["sample.n=3"], ["koala.accuracy"]),
    "koala/negative_samples": (["sample.n=3"], ["koala.accuracy"]),
}


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"), seed=0)


# MMCBench's CLIP specs read their CLIP folder at this path, relative to where benchc runs.
CLIP_FOLDER = "models/CLIP-ViT-L-14-laion2B-s32B-b82K"


def _eval(spec: str, model: str, sets: list[str], tmp_path: Path) -> Path:
    out = tmp_path / "out"
    args = [arg for value in sets for arg in ("--set", value)]
    clip = spec in ("mmcbench/image2text", "mmcbench/text2image")
    if clip:  # a tiny random CLIP stands in for ViT-L-14, where the spec looks for it
        build_tiny_clip(tmp_path / CLIP_FOLDER, seed=0)
    cli("eval", SPECS / f"{spec}.toml", "--model", model, *args, "--set", "generation.max_new_tokens=4",
        "-o", out, "--cache", tmp_path / "cache", "--store", tmp_path / "store",
        cwd=tmp_path if clip else None, check=True)
    return out


def _check_every_item_answered(out: Path) -> tuple[pl.DataFrame, dict]:
    items = pl.read_parquet(out / "manifest" / "items.parquet")
    responses = pl.read_parquet(out / "run" / "responses.parquet")
    record = json.loads((out / "run" / "run.json").read_text())
    for stage in record["stages"]:
        answered = responses.filter(pl.col("stage") == stage["stage"])["item_id"].unique()
        assert sorted(answered) == sorted(items["item_id"]), stage["stage"]
    return responses, json.loads((out / "run" / "scores.json").read_text())


@pytest.mark.parametrize("spec", sorted(VLM_CASES))
def test_reference_spec_end_to_end(spec: str, tiny_llava: Path, tmp_path: Path) -> None:
    sets, metrics = VLM_CASES[spec]
    out = _eval(spec, f"hf:{tiny_llava},batch_size=8", sets, tmp_path)
    responses, scores = _check_every_item_answered(out)
    assert [m["name"] for m in scores["metrics"]] == metrics
    for metric in scores["metrics"]:
        assert metric["rows"], metric["name"]
    assert (out / "run" / "report" / "index.html").is_file()


def test_speech2text_end_to_end(tmp_path: Path) -> None:
    # the narrower first pass of `make demo` (a fifth of the CPU): the test is of the stages, not the beam
    out = _eval("mmcbench/speech2text", "pocketsphinx:beam=1e-30", ["sample.n=1"], tmp_path)
    responses, scores = _check_every_item_answered(out)
    [metric] = scores["metrics"]
    assert metric["name"] == "mmcbench.consistency" and {r["severity"] for r in metric["rows"]} == {"light", "heavy"}
    assert responses.height == 34 and responses["kind"].unique().to_list() == ["text"]


def test_text2image_end_to_end(tmp_path: Path) -> None:
    pipeline = build_tiny_sd(tmp_path / "tiny-sd", seed=0)
    out = _eval("mmcbench/text2image", f"diffusers:{pipeline},steps=2,width=32,height=32",
                ["sample.n=1", "sample.stratify=table"], tmp_path)
    responses, scores = _check_every_item_answered(out)
    assert responses.height == 48 and responses["kind"].unique().to_list() == ["image"]
    assert responses["blob"].null_count() == 0
    [metric] = scores["metrics"]  # CLIP cross (caption . image) and uni (image . image), max 2300
    assert metric["name"] == "mmcbench.cross_modal"
    assert [(r["severity"], r["selection"], r["corruptions"], r["max"]) for r in metric["rows"]] == [
        ("heavy", "hard", 23, 2300), ("light", "hard", 23, 2300)]
    assert all(r["cross"] is not None and r["uni"] is not None for r in metric["rows"])

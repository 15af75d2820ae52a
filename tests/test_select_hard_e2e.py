"""MMCBench's hard selection end to end: specs/mmcbench/image2text_hard.toml.example compiled
through the CLI as written, its three baseline captioners (ViT-GPT2, BLIP, GIT) tiny random
models built here under models/ in a --data-root, the similarity by the real all-MiniLM-L6-v2.
A recompile asks no model again (the response store) and gives the same lock. The same for ASR
baselines (task = "speech-to-text") on clips espeak-ng speaks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from benchc import api
from conftest import SPECS, cli
from support.tiny_captioners import build_blip, build_git, build_vit_gpt2
from support.tiny_speech import build_tiny_whisper

pytestmark = pytest.mark.slow

SPEC = SPECS / "mmcbench" / "image2text_hard.toml.example"
BASELINES = {"vit-gpt2-image-captioning": build_vit_gpt2, "blip-image-captioning-base": build_blip,
             "git-base": build_git}


def test_the_hard_spec_keeps_the_least_consistent_images_and_a_recompile_asks_no_model(tmp_path: Path) -> None:
    for name, build in BASELINES.items():
        build(tmp_path / "models" / name, 0)
    done = cli("compile", SPEC, "-o", tmp_path / "m1", "--cache", tmp_path / "cache", "--store", tmp_path / "store",
               "--data-root", tmp_path, "--set", "select.max_new_tokens=8", check=True)
    assert "select: kept 2 of 4 candidate records, least consistent under 3 model(s) and 60 probes" in done.stdout
    assert "model steps: 192 prompts, 192 distinct requests: 192 answered by a model" in done.stdout
    lock = json.loads((tmp_path / "m1" / "lock.json").read_text())
    select = lock["select"]
    assert (select["candidates"], select["probes"], select["kept"]) == (4, 4 * 15, 2)
    assert [m["backend"].split(",")[0] for m in select["models"]] == [f"hf:models/{n}" for n in BASELINES]
    assert all(m["fingerprint"]["model"] for m in select["models"])  # each folder's digest
    assert select["embedder"]["embedder"] == "all-MiniLM-L6-v2"
    scores = [s["consistency"] for s in select["scores"]]
    assert scores == sorted(scores) and all(-1.0 <= s <= 1.0 for s in scores)
    kept = {s["record"] for s in select["scores"] if s["kept"]}
    items = pl.read_parquet(tmp_path / "m1" / "items.parquet")
    assert set(items["record_id"]) == kept and items.height == 2 * 29 * 2 + 2 * 2  # + a clean item per severity

    again = api.compile(SPEC, tmp_path / "m2", cache_dir=tmp_path / "cache", store_dir=tmp_path / "store",
                        data_roots=[tmp_path], overrides=["select.max_new_tokens=8"], use_memo=False,
                        progress=False)
    assert again.model_calls == 0 and again.model_requests == 3 * 4 * 16  # 3 models x 4 images x (1 + 15)
    assert again.lock == lock


def test_asr_models_select_the_clips_they_transcribe_least_consistently(tmp_path: Path) -> None:
    """task = "speech-to-text" (MMCBench's speech-to-text selection): espeak-ng speaks three
    clips here; pocketsphinx and a tiny Whisper transcribe each clip and its corruptions."""
    clips = tmp_path / "clips"
    clips.mkdir()
    for name, text in (("a", "the cat sat on the mat"), ("b", "open the window please"), ("c", "seven red apples")):
        subprocess.run(["espeak-ng", "-w", str(clips / f"{name}.wav"), text], check=True)
    whisper = build_tiny_whisper(tmp_path / "whisper", 0)
    spec = tmp_path / "asr.toml"
    spec.write_text(f"""\
[benchmark]
name = "test/asr-hard"
version = "1.0.0"

[source]
loader = "audio_folder"
folder = "clips"

[prompt]
template = "transcribe"

[select]
keep = 1
task = "speech-to-text"
models = ["pocketsphinx", "hf-asr:{whisper}"]
max_new_tokens = 8

[select.probe]
op = "audio.corrupt"
input = "audio"
params.severity = "heavy"
params.corruption = {{ grid = ["gaussian_noise", "time_mask"] }}
""")
    result = api.compile(spec, tmp_path / "m", cache_dir=tmp_path / "cache", store_dir=tmp_path / "store",
                         progress=False)
    select = result.lock["select"]
    assert (select["candidates"], select["probes"], select["kept"]) == (3, 6, 1)
    assert [m.get("task") for m in select["models"]] == ["speech-to-text", "speech-to-text"]
    assert result.model_requests == 2 * 3 * 3 and result.lock["item_count"] == 1
    [kept] = [s["record"] for s in select["scores"] if s["kept"]]
    assert kept == select["scores"][0]["record"]


def test_each_answer_is_embedded_alone_so_its_vector_ignores_the_other_texts() -> None:
    from benchc.runtime.score.embed import load_embedder

    embedder = load_embedder("minilm")
    alone = embedder.encode_each(["a cat"])[0]
    beside = embedder.encode_each(["a cat", "a much longer caption that pads every shorter text in its batch"])[0]
    assert np.array_equal(alone, beside)
    assert {"sentence-transformers", "transformers", "torch"} <= set(embedder.fingerprint["libraries"])

"""The four reference benchmarks as bundled specs: every spec the issue lists exists, `extends`
(the Sampling variants), the 'clean' reference items of MMCBench's corruptions, and text.literal
(MERLIM's five instructions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import SpecError
from benchc.compiler.media import load_image, put_image, wav_bytes
from benchc.compiler.ops import OPS, OpContext
from benchc.compiler.ops.audio_corrupt import load_16k
from benchc.compiler.seeds import rng_for
from benchc.compiler.sources.scenes import make_scene
from benchc.compiler.spec.parse import load_spec
from benchc.compiler.values import Record, Value
from conftest import SPECS, cli

REFERENCE = {
    "mm_r3": ["question_rephrasing", "image_restyling", "context_reasoning", "question_rephrasing_sampling",
              "image_restyling_sampling", "context_reasoning_sampling", "rephrasing_validation"],
    "merlim": ["object_recognition", "relationships_random", "relationships_curated", "counting"],
    "mmcbench": ["image2text", "text2image", "text2speech", "speech2text"],
    "koala": ["counterfactual", "parametric", "source_conflict", "negative_samples", "contextualization"],
}


@pytest.mark.parametrize("path", [f"{b}/{s}" for b, specs in REFERENCE.items() for s in specs])
def test_every_reference_spec_is_bundled_with_a_committed_lock(path: str) -> None:
    assert (SPECS / f"{path}.toml").is_file()
    assert (SPECS.parent / "generated" / f"{path}.lock.json").is_file()  # compiled by test_golden


def test_sampling_variant_extends_its_task() -> None:
    base = load_spec(SPECS / "mm_r3" / "context_reasoning.toml").spec
    sampling = load_spec(SPECS / "mm_r3" / "context_reasoning_sampling.toml").spec
    assert sampling.benchmark.name == "mm-r3/context-reasoning-sampling" and sampling.benchmark.seed == 0
    assert (sampling.generation.n, sampling.generation.temperature) == (4, 0.7)
    assert sampling.generation.max_new_tokens == base.generation.max_new_tokens  # merged key by key
    assert sampling.source == base.source and sampling.metric == base.metric and sampling.filter == base.filter
    assert [n.repeat for n in sampling.node] == [1] and [n.repeat for n in base.node] == [3]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_extends_refuses_cycles_escapes_and_missing_bases(tmp_path: Path) -> None:
    cases = {
        "a.toml": ('extends = "b.toml"', "makes a cycle"),
        "escape.toml": ('extends = "../outside.toml"', "leaves the spec's folder"),
        "missing.toml": ('extends = "nope.toml"', "no such spec"),
        "notoml.toml": ("extends = 3", "must name a .toml spec"),
    }
    _write(tmp_path / "specs", "b.toml", 'extends = "a.toml"')
    _write(tmp_path, "outside.toml", "")
    for name, (text, message) in cases.items():
        path = _write(tmp_path / "specs", name, text)
        with pytest.raises(SpecError, match=message) as raised:
            load_spec(path)
        assert raised.value.problems[0].key == "extends"
    done = cli("validate", tmp_path / "specs" / "escape.toml")
    assert done.returncode == 2 and "extends" in done.stderr and "Traceback" not in done.stderr


def test_clean_image_corruption_is_the_image_itself(tmp_path: Path) -> None:
    store = ContentStore(tmp_path / "cache")
    image = make_scene(0, 0, 64).image.convert("RGB")
    op = OPS.get("image.corrupt")
    out = op.apply(Value("image", media=put_image(store, image)), op.Params(corruption="clean"),
                   OpContext(Record("r", {}), rng_for(0), store))
    assert np.array_equal(np.asarray(load_image(store, out.value.media)), np.asarray(image))


def test_clean_audio_corruption_keeps_the_samples(tmp_path: Path) -> None:
    store = ContentStore(tmp_path / "cache")
    tone = (0.3 * np.sin(np.arange(16_000) / 16_000 * 2 * np.pi * 440)).astype(np.float32)
    op = OPS.get("audio.corrupt")
    out = op.apply(Value("audio", media=store.put(wav_bytes(tone, 16_000), "audio")), op.Params(corruption="clean"),
                   OpContext(Record("r", {}), rng_for(0), store))
    assert np.abs(load_16k(store.get(out.value.media)) - tone).max() < 2 / 32768


def test_text_literal_sweeps_the_instructions(tmp_path: Path) -> None:
    op = OPS.get("text.literal")
    ctx = OpContext(Record("r", {}), rng_for(0), ContentStore(tmp_path / "cache"))
    assert op.apply(None, op.Params(text="List the objects."), ctx).value.text == "List the objects."
    spec = load_spec(SPECS / "merlim" / "object_recognition.toml").spec
    assert len(spec.node[0].params["text"]["grid"]) == 5

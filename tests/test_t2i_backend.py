"""The diffusers text-to-image backend: its import guard, a tiny random Stable Diffusion pipeline
built offline (seeded per request, 2 steps, 32x32 px), fingerprints, early failures, and the
response store keeping image answers."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from benchc.compiler.errors import BackendError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Request, make_backend
from benchc.runtime.run.store import ResponseStore
from PIL import Image
from support.refusals import assert_refused

GEN = Generation()
TASK = "text-to-image"


def _requests(*prompts: str, seed: int | None = None) -> list[Request]:
    return [Request(f"k{i}", TASK, p, seed=seed) for i, p in enumerate(prompts)]


def test_without_diffusers_the_backend_fails_when_built_saying_what_to_install(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "diffusers", None)  # `import diffusers` now fails
    for target in (tmp_path, tmp_path / "nowhere"):  # the package is checked before the folder
        with pytest.raises(BackendError, match="needs the Python package 'diffusers'") as caught:
            make_backend(f"diffusers:{target}", GEN, TASK)
        assert "pip install diffusers" in caught.value.render()


def test_the_response_store_keeps_image_answers(tmp_path: Path) -> None:
    png = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 20, 30)).save(png, "PNG")
    store = ResponseStore(tmp_path / "store")
    store.put_many("diffusers", [("key", "image", None, png.getvalue())])
    stored = store.get_many(["key"])["key"]
    assert stored.kind == "image" and store.blob(stored.blob) == png.getvalue()


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("diffusers")
    from support.tiny_clip import build_tiny_sd

    return build_tiny_sd(tmp_path_factory.mktemp("sd") / "pipe", seed=0)


def _backend(path: Path, options: str = "", generation: Generation = GEN):
    return make_backend(f"diffusers:{path},steps=2,width=32,height=32{options}", generation, TASK)


@pytest.mark.slow
def test_images_are_seeded_per_request_and_png_encoded(tiny_sd: Path) -> None:
    backend = _backend(tiny_sd, ",batch_size=2")
    before = torch.random.get_rng_state()
    cat, dog, cat_again = backend.run_batch(_requests("a cat", "a dog", "a cat"), None)
    assert torch.equal(before, torch.random.get_rng_state())
    assert cat.kind == "image" and cat.data == cat_again.data and cat.data != dog.data
    image = Image.open(io.BytesIO(cat.data))
    assert image.format == "PNG" and image.size == (32, 32) and image.mode == "RGB"
    # the same request gives the same image alone, in another batch, from another backend
    assert _backend(tiny_sd, ",batch_size=2").run_batch(_requests("a cat"), None)[0].data == cat.data
    assert backend.run_batch(_requests("a dog", "a cat"), None)[1].data == cat.data
    # the seed: the request's own, or the base in generation.seed
    assert backend.run_batch(_requests("a cat", seed=3), None)[0].data != cat.data
    reseeded = _backend(tiny_sd, ",batch_size=2", Generation(seed=11))
    assert reseeded.run_batch(_requests("a cat"), None)[0].data != cat.data


@pytest.mark.slow
def test_fingerprint_covers_weights_scheduler_and_sampling(tiny_sd: Path, tmp_path: Path) -> None:
    from support.tiny_clip import build_tiny_sd

    base = _backend(tiny_sd).fingerprint()
    assert base["diffusers"] and base["transformers"] and base["device"] == "cpu"
    assert base["sampling"] == {"steps": 2, "guidance": 7.5, "width": 32, "height": 32, "seed": None}
    scheduler = tmp_path / "scheduler-changed"
    shutil.copytree(tiny_sd, scheduler)
    config = scheduler / "scheduler" / "scheduler_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "beta_end": 0.02}))
    others = [_backend(build_tiny_sd(tmp_path / "seed1", seed=1)), _backend(scheduler),
              _backend(tiny_sd, ",guidance=1.5"), _backend(tiny_sd, ",batch_size=1"),
              _backend(tiny_sd, ",dtype=bfloat16"), _backend(tiny_sd, "", Generation(seed=2)),
              make_backend(f"diffusers:{tiny_sd},steps=3,width=32,height=32", GEN, TASK),
              make_backend(f"diffusers:{tiny_sd},steps=2,width=64,height=32", GEN, TASK)]
    prints = [b.fingerprint() for b in others]
    assert all(p != base for p in prints) and len({json.dumps(p, sort_keys=True) for p in prints}) == len(prints)


@pytest.mark.slow
def test_misconfigurations_fail_before_any_request(tiny_sd: Path, tmp_path: Path) -> None:
    refused = {f"diffusers:{tmp_path / 'nowhere'}": "no model folder with model_index.json",
               f"diffusers:{tiny_sd / 'unet'}": "no model folder with model_index.json",  # a component alone
               f"diffusers:{tiny_sd},width=30": "width='30' is not valid",
               f"diffusers:{tiny_sd},guidance=lots": "guidance='lots' is not valid",
               f"diffusers:{tiny_sd},steps=0": "steps='0' is not valid",
               f"diffusers:{tiny_sd},sampler=euler": "unknown option"}
    assert_refused(refused, GEN, TASK)
    with pytest.raises(BackendError, match="cannot do 'generate'"):
        make_backend(f"diffusers:{tiny_sd}", GEN, "generate")
    not_t2i = tmp_path / "unconditional"
    shutil.copytree(tiny_sd, not_t2i)
    index = not_t2i / "model_index.json"
    index.write_text(json.dumps({**json.loads(index.read_text()), "_class_name": "DDPMPipeline"}))
    with pytest.raises(BackendError, match="cannot load"):
        make_backend(f"diffusers:{not_t2i}", GEN, TASK).prepare()

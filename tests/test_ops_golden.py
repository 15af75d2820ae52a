"""Golden outputs of the synthetic scenes and the mask op: a library upgrade that changes pixels
fails here instead of silently changing a benchmark. To change them, bump the op's (or the
source's) version and record the new digest beside the old one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchc.compiler.cas import ContentStore
from benchc.compiler.media import image_identity, load_image, put_image
from benchc.compiler.ops import OPS, OpContext
from benchc.compiler.seeds import rng_for
from benchc.compiler.sources.scenes import ScenesSource, make_scene
from benchc.compiler.values import Record, Value
from conftest import cli

SCENE_3 = "b0098521d8ee6ef258adf7ba9ab3361bcd3d4ea8057709e695ecf472c800b0cb"
MASKS = {  # image.mask_object 1.0.0 on object 2 of scene (0, 3)
    ("rectangle", 3, "red"): "a0013549bdb9225422a639c9c173c25f75fe6623e223973151decd8ef1fe043d",
    ("ellipse", 7, "white"): "11553de541af2be7bc617d97df4136c74f42b7b397d11d00e45bfda829c84c56",
}


def test_scene_pixels_are_pinned() -> None:
    assert ScenesSource.version == "1.0.0"
    assert image_identity(make_scene(0, 3).image) == SCENE_3


def test_scene_is_a_pure_function_of_seed_and_index() -> None:
    assert image_identity(make_scene(0, 7).image) == image_identity(make_scene(0, 7).image)
    assert image_identity(make_scene(0, 7).image) != image_identity(make_scene(1, 7).image)


def test_instance_masks_hold_only_visible_pixels() -> None:
    scene = make_scene(0, 3)
    stacked = np.stack([o.mask for o in scene.objects])
    assert stacked.sum(axis=0).max() == 1  # no pixel belongs to two objects


@pytest.mark.parametrize("params,expected", MASKS.items(), ids=["rectangle", "ellipse"])
def test_mask_op_output_is_pinned(tmp_path: Path, params, expected: str) -> None:
    op = OPS.get("image.mask_object")
    assert op.version == "1.0.0"
    store = ContentStore(tmp_path)
    scene = make_scene(0, 3)
    ys, xs = np.nonzero(scene.objects[2].mask)
    box = [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)]
    shape, lines, color = params
    out = op.apply(Value("image", media=put_image(store, scene.image)),
                   op.Params(shape=shape, lines=lines, color=color),
                   OpContext(Record("r", {"object": {"bbox": box}}), rng_for(1), store))
    assert out.value.media.sha256 == expected
    masked = np.asarray(load_image(store, out.value.media))
    x, y, w, h = box
    centre = masked[y + h // 2 - 2 : y + h // 2 + 2, x + w // 2 - 2 : x + w // 2 + 2]
    assert (centre == {"red": (255, 0, 0), "white": (255, 255, 255)}[color]).all()


def test_ops_command_lists_parameters_and_defaults() -> None:
    out = cli("ops", check=True).stdout
    assert "image.mask_object v1.0.0" in out and "lines: int = 1" in out
    assert "mmcbench.released_text v1.0.0" in out

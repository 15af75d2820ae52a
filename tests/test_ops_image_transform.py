"""The general image transforms (compiler/ops/image_transform.py): golden outputs, semantics and
parameter validation. To change a golden digest, bump the op's version and record the new digest
beside the old one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import OpError
from benchc.compiler.media import load_image, put_image
from benchc.compiler.ops import OPS, OpContext, OpOutput
from benchc.compiler.seeds import rng_for
from benchc.compiler.sources.scenes import make_scene
from benchc.compiler.values import Record, Value

GOLDEN: dict[str, tuple[dict[str, Any], str]] = {  # op 1.0.0 on scene (0, 3), seed 7
    "image.flip": ({"direction": "vertical"},
                   "089baa5284506f4bc9ff4fc08d46900545c6c4c5cbda321e66398b8e3e51a8aa"),
    "image.rotate": ({"angle": 30, "expand": True, "fill": [10, 200, 30], "interpolation": "bicubic"},
                     "a45dff7e9b3242bd72dc0eedb4f42902b3600ef24477d746eafe43b9ea5d45be"),
    "image.crop": ({"fraction": 0.5},
                   "390e29453df1073e4a59518545da0a5bd76536a74c541dd52a7199eae52097a1"),
    "image.pad": ({"pixels": [1, 2, 3, 4], "fill": "gray"},
                  "40498057fb41e9b5dce51198b60284beb465ae260894290a2cffc8a4a5b36b82"),
    "image.jpeg": ({"quality": 30},
                   "0a9f88d69bef095ae6b03a548f700b841ed253a7e6bd54e5987dfbddbb7d8cc2"),
    "image.color_jitter": ({"brightness": 1.2, "contrast": 0.8, "saturation": 1.5, "hue": -0.1},
                           "a318df2e17ab738d43047f2babc0164fc93855696aca7bbee27d57218906bfad"),
    "image.blur": ({"sigma": 2.0},
                   "a20e9de7d890426ed7251466cf80947a0a9678785e16f3bb3a8a8166bfbae0e2"),
    "image.noise": ({"sigma": 20},
                    "69cc3ffe36d2d0db47726e8c7b814e77e5a057520cf5690404e4e09e7f995bb0"),
}


@pytest.fixture
def store(tmp_path: Path) -> ContentStore:
    return ContentStore(tmp_path)


@pytest.fixture
def scene(store: ContentStore) -> Value:
    return Value("image", media=put_image(store, make_scene(0, 3).image))


@pytest.fixture
def gradient(store: ContentStore) -> Value:
    """An 80 x 60 RGB gradient, for exact pixel checks."""
    ys, xs = np.mgrid[0:60, 0:80]
    image = np.stack([xs * 3, ys * 4, (xs + ys) % 256], axis=-1).astype(np.uint8)
    return Value("image", media=put_image(store, Image.fromarray(image, "RGB")))


def run(store: ContentStore, value: Value, name: str, params: dict[str, Any], seed: int = 7) -> OpOutput:
    op = OPS.get(name)
    return op.apply(value, op.Params.model_validate(params), OpContext(Record("r", {}), rng_for(seed), store))


def pixels(store: ContentStore, value: Value) -> np.ndarray:
    assert value.media is not None
    return np.asarray(load_image(store, value.media), dtype=np.int16)


def apply_pixels(store: ContentStore, value: Value, name: str, params: dict[str, Any],
                 seed: int = 7) -> np.ndarray:
    return pixels(store, run(store, value, name, params, seed).value)


@pytest.mark.parametrize("name", GOLDEN)
def test_output_is_pinned(store: ContentStore, scene: Value, name: str) -> None:
    params, expected = GOLDEN[name]
    op = OPS.get(name)
    assert op.version == "1.0.0" and not op.reads_record
    out = run(store, scene, name, params)
    assert out.value.media is not None and out.value.media.sha256 == expected
    assert out.attrs == {} and out.drop is None
    assert load_image(store, out.value.media).mode == "RGB"


def test_flip_twice_gives_the_input_back(store: ContentStore, scene: Value) -> None:
    for direction in ("horizontal", "vertical"):
        once = run(store, scene, "image.flip", {"direction": direction}).value
        assert once.media != scene.media
        assert run(store, once, "image.flip", {"direction": direction}).value.media == scene.media
    original = pixels(store, scene)
    assert (apply_pixels(store, scene, "image.flip", {}) == original[:, ::-1]).all()  # default: horizontal


def test_rotate_90_with_expand_swaps_the_sides(store: ContentStore, gradient: Value) -> None:
    original = pixels(store, gradient)
    rotated = apply_pixels(store, gradient, "image.rotate", {"angle": 90, "expand": True})
    assert rotated.shape == (original.shape[1], original.shape[0], 3)
    assert (rotated == np.rot90(original)).all()  # counter-clockwise
    same = apply_pixels(store, gradient, "image.rotate", {"angle": 90})
    assert same.shape == original.shape


def test_rotate_0_or_360_keeps_the_pixels(store: ContentStore, scene: Value) -> None:
    for angle in (0, 360, -360):
        assert run(store, scene, "image.rotate", {"angle": angle, "expand": True}).value.media == scene.media


def test_rotate_fills_the_uncovered_corners(store: ContentStore, scene: Value) -> None:
    out = apply_pixels(store, scene, "image.rotate", {"angle": 45, "fill": "red", "interpolation": "nearest"})
    assert (out[0, 0] == (255, 0, 0)).all() and (out[-1, -1] == (255, 0, 0)).all()


def test_jpeg_quality_orders_the_error(store: ContentStore, scene: Value) -> None:
    original = pixels(store, scene)
    error = {q: np.abs(apply_pixels(store, scene, "image.jpeg", {"quality": q}) - original).mean()
             for q in (100, 5)}
    assert error[100] < 2 and error[5] > 3 * error[100]


def test_color_jitter_at_identity_leaves_the_pixels(store: ContentStore, scene: Value) -> None:
    identity = {"brightness": 1.0, "contrast": 1.0, "saturation": 1.0, "hue": 0.0}
    assert run(store, scene, "image.color_jitter", identity).value.media == scene.media
    assert run(store, scene, "image.color_jitter", {}).value.media == scene.media


def test_color_jitter_factors_act_as_named(store: ContentStore, scene: Value) -> None:
    original = pixels(store, scene)
    assert (apply_pixels(store, scene, "image.color_jitter", {"brightness": 0}) == 0).all()
    darker = apply_pixels(store, scene, "image.color_jitter", {"brightness": 0.5})
    assert np.abs(darker - original // 2).max() <= 1
    gray = apply_pixels(store, scene, "image.color_jitter", {"saturation": 0})
    assert (gray[..., 0] == gray[..., 1]).all() and (gray[..., 1] == gray[..., 2]).all()
    flat = apply_pixels(store, scene, "image.color_jitter", {"contrast": 0})
    assert len(np.unique(flat)) == 1
    shifted = apply_pixels(store, scene, "image.color_jitter", {"hue": 0.5})
    assert np.abs(shifted - original).mean() > 10


def test_blur_reduces_variance(store: ContentStore, scene: Value) -> None:
    original = pixels(store, scene)
    light = apply_pixels(store, scene, "image.blur", {"sigma": 1})
    heavy = apply_pixels(store, scene, "image.blur", {"sigma": 8})
    assert heavy.shape == original.shape
    assert heavy.var() < light.var() < original.var()


def test_blur_of_a_tiny_image_with_a_wide_kernel(store: ContentStore) -> None:
    tiny = Value("image", media=put_image(store, make_scene(0, 3).image.crop((0, 0, 3, 2))))
    assert apply_pixels(store, tiny, "image.blur", {"sigma": 50}).shape == (2, 3, 3)


def test_noise_is_a_function_of_the_seed(store: ContentStore, scene: Value) -> None:
    first = run(store, scene, "image.noise", {"sigma": 10}, seed=1).value.media
    assert first == run(store, scene, "image.noise", {"sigma": 10}, seed=1).value.media
    assert first != run(store, scene, "image.noise", {"sigma": 10}, seed=2).value.media
    residual = apply_pixels(store, scene, "image.noise", {"sigma": 10}, seed=1) - pixels(store, scene)
    assert 8 < residual.std() < 11 and abs(residual.mean()) < 1


def test_crop_fraction_halves_each_side(store: ContentStore, gradient: Value) -> None:
    original = pixels(store, gradient)
    out = apply_pixels(store, gradient, "image.crop", {"fraction": 0.5})
    assert out.shape == (30, 40, 3)
    assert (out == original[15:45, 20:60]).all()
    assert (apply_pixels(store, gradient, "image.crop", {"fraction": 1}) == original).all()


def test_crop_box_is_x_y_w_h(store: ContentStore, gradient: Value) -> None:
    original = pixels(store, gradient)
    out = apply_pixels(store, gradient, "image.crop", {"box": [5, 10, 20, 7]})
    assert (out == original[10:17, 5:25]).all()
    with pytest.raises(OpError, match="does not fit"):
        run(store, gradient, "image.crop", {"box": [70, 0, 11, 5]})


def test_pad_adds_pixels(store: ContentStore, gradient: Value) -> None:
    original = pixels(store, gradient)
    out = apply_pixels(store, gradient, "image.pad", {"pixels": 3, "fill": [1, 2, 3]})
    assert out.shape == (66, 86, 3)
    assert (out[3:-3, 3:-3] == original).all() and (out[0, 0] == (1, 2, 3)).all()
    sides = apply_pixels(store, gradient, "image.pad", {"pixels": [1, 2, 3, 4]})
    assert sides.shape == (66, 84, 3) and (sides[2:-4, 1:-3] == original).all()
    assert (sides[:2] == 0).all()  # default fill: black


@pytest.mark.parametrize("name,params", [
    ("image.rotate", {"angle": 720}),
    ("image.rotate", {"angle": -361}),
    ("image.rotate", {"angle": 10, "fill": [0, 0, 256]}),
    ("image.rotate", {"angle": 10, "fill": "purple"}),
    ("image.rotate", {"angle": 10, "degrees": 5}),
    ("image.rotate", {}),
    ("image.jpeg", {"quality": 0}),
    ("image.jpeg", {"quality": 101}),
    ("image.jpeg", {"quality": 50, "level": 3}),
    ("image.flip", {"direction": "diagonal"}),
    ("image.crop", {}),
    ("image.crop", {"fraction": 0.5, "box": [0, 0, 4, 4]}),
    ("image.crop", {"fraction": 0}),
    ("image.crop", {"fraction": 1.5}),
    ("image.crop", {"box": [-1, 0, 4, 4]}),
    ("image.crop", {"box": [0, 0, 0, 4]}),
    ("image.pad", {"pixels": -1}),
    ("image.pad", {"pixels": [1, 2, 3]}),
    ("image.color_jitter", {"brightness": -0.1}),
    ("image.color_jitter", {"hue": 0.6}),
    ("image.blur", {"sigma": 0}),
    ("image.noise", {"sigma": 0}),
    ("image.noise", {"sigma": 256}),
])
def test_bad_params_are_refused(name: str, params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        OPS.get(name).Params.model_validate(params)

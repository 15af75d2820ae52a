"""MMCBench's 29 image corruptions at two severities, "light" and "heavy".

MMCBench (sail-sg/MMCBench, image2text/README.md) corrupts images with "29 distinct types of
image corruption, sourced from the imagecorruptions library and imgaug", at a "heavy" and a
"light" degree, but publishes neither the generation code nor the parameters (its issue #1 asks).
Its README lists only 28 names. We take the 29th to be ``elastic_transform``: it is the one
imagecorruptions corruption the list leaves out, and with it the imagecorruptions names number
19 (all of the library's) and the imgaug names 10 (GammaContrast, Cutout, SaltAndPepper,
CoarseDropout, Affine scale/rotate/shear, PiecewiseAffine, Jigsaw, Canny).

Our reading of the two degrees, all in the one table ``LEVELS``:
- imagecorruptions names run the library at ImageNet-C severity 2 (light) and 5 (heavy): 5 is
  its strongest, and 2 sits below the severity 3 MMCBench used to select its hard images.
  (saturate's severity 2 lowers saturation and 5 raises it, as ImageNet-C defines them.)
- imgaug names run maintained ports of those augmenters (imgaug does not install on NumPy 2):
  albumentations, except PiecewiseAffine, which runs on scikit-image as imgaug's does. Each
  degree has one fixed magnitude, chosen to damage the image about as much as the
  imagecorruptions pair does. Where a corruption has a direction (gamma above or below 1, zoom
  in or out, rotate or shear left or right), the direction is drawn from the op's seed, so every
  item is corrupted by exactly its degree's amount.
- Canny uses OpenCV directly (integer Sobel and hysteresis), so its edges do not depend on the
  CPU's floating-point paths; it draws white edges on black and lays them over the image.

Randomness comes only from the op's seed: imagecorruptions draws from numpy's global RNG, so it
runs inside ``seeded_globals`` (with scikit-image's random_noise pointed back at that RNG, see
``_random_noise``); albumentations transforms get their private RNGs seeded from ours.
Outputs are RGB and the input's size. glass_blur is slow: it shuffles pixels in a Python loop
(about 0.4 s light and 1 s heavy at 256 px; every other corruption takes under 0.1 s).
"""

from __future__ import annotations

import functools
import os
import types
import warnings
from collections.abc import Callable
from typing import Any, Literal, get_args

import numpy as np
from PIL import Image
from pydantic import Field

from ..cas import ContentStore
from ..media import load_image, put_image
from ..values import MediaRef, Value
from .base import OPENCV, OPS, Op, OpContext, OpOutput, OpParams
from .rng_guard import seeded_globals

Corruption = Literal[
    # imagecorruptions (ImageNet-C and its validation set)
    "gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise",
    "defocus_blur", "glass_blur", "motion_blur", "zoom_blur", "gaussian_blur",
    "snow", "frost", "fog",
    "brightness", "contrast", "pixelate", "jpeg_compression", "spatter", "saturate",
    "elastic_transform",
    # imgaug augmenters, via albumentations (PiecewiseAffine via scikit-image, Canny via OpenCV)
    "gamma_contrast", "cutout", "salt_and_pepper", "coarse_dropout",
    "scale", "rotate", "shear", "piecewise_affine", "jigsaw", "canny",
]
Severity = Literal["light", "heavy"]
CORRUPTIONS: tuple[str, ...] = get_args(Corruption)
IMAGECORRUPTIONS: tuple[str, ...] = CORRUPTIONS[:19]

LEVELS: dict[str, tuple[Any, Any]] = {  # corruption: (light, heavy)
    **{name: (2, 5) for name in IMAGECORRUPTIONS},  # ImageNet-C severity (1-5)
    "gamma_contrast": (1.5, 2.5),                 # gamma g; g or 1/g, drawn from the seed
    "cutout": ((1, 0.2), (2, 0.35)),              # (holes, side / image side), filled grey 128
    "salt_and_pepper": (0.05, 0.2),               # fraction of pixels set to black or white
    "coarse_dropout": ((10, 0.06), (30, 0.09)),   # (holes, side / image side), filled black
    "scale": (1.25, 1.6),                         # zoom s; in (s) or out (1/s), drawn from the seed
    "rotate": (15, 45),                           # degrees, sign drawn from the seed
    "shear": (15, 40),                            # degrees along x, sign drawn from the seed
    "piecewise_affine": (0.02, 0.05),             # jitter of a 4x4 point grid / image side
    "jigsaw": (3, 6),                             # shuffle an n x n grid of tiles
    "canny": (0.5, 1.0),                          # opacity of the Canny edge map over the image
}

Pixels = np.ndarray  # H x W x 3, uint8, RGB
Corrupter = Callable[[Pixels, Any, np.random.Generator], Pixels]


class Params(OpParams):
    corruption: Corruption | Literal["clean"] = Field(
        description="one of MMCBench's 29 image corruptions, or 'clean': the image unchanged (as RGB), "
                    "the unperturbed reference item of a consistency metric")
    severity: Severity = Field("light", description="MMCBench's degree; values in LEVELS")


ImageCorruptParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@OPS.add("image.corrupt")
class Corrupt(Op):
    """Corrupt an image with one of MMCBench's 29 corruptions, light or heavy (MMCBench)."""

    reads_record = False
    version = "1.1.0"  # 1.1: corruption = "clean"
    Params = Params
    input_kind = "image"
    libraries = ("imagecorruptions", "albumentations", "albucore", OPENCV, "scikit-image", "scipy", "numpy",
                 "pillow")

    def apply(self, value: Value | None, params: ImageCorruptParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        pixels = _input_pixels(ctx.store, value.media)
        if params.corruption == "clean":
            return OpOutput(Value("image", media=put_image(ctx.store, Image.fromarray(pixels, "RGB"))))
        level = LEVELS[params.corruption][0 if params.severity == "light" else 1]
        out = corrupt(pixels, params.corruption, level, ctx.rng)
        return OpOutput(Value("image", media=put_image(ctx.store, Image.fromarray(out, "RGB"))))


ImageNetCName = Literal[IMAGECORRUPTIONS]  # type: ignore[valid-type]


class ImageNetCParams(OpParams):
    corruption: ImageNetCName = Field(description="one of imagecorruptions' 19 corruptions (ImageNet-C's 15 "
                                                  "and its 4 validation ones)")
    severity: int = Field(3, ge=1, le=5, description="ImageNet-C severity, 1 (mildest) to 5")


@OPS.add("image.imagenet_c")
class ImageNetC(Op):
    """Corrupt an image with imagecorruptions at an ImageNet-C severity, 1 to 5.

    MMCBench selects its hard images with the 15 ImageNet-C corruptions at severity 3
    (``[select]``); ``image.corrupt`` has its light (2) and heavy (5) degrees."""

    reads_record = False
    version = "1.0.0"
    Params = ImageNetCParams
    input_kind = "image"
    libraries = ("imagecorruptions", OPENCV, "scikit-image", "scipy", "numpy", "pillow")

    def apply(self, value: Value | None, params: ImageNetCParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        out = corrupt(_input_pixels(ctx.store, value.media), params.corruption, params.severity, ctx.rng)
        return OpOutput(Value("image", media=put_image(ctx.store, Image.fromarray(out, "RGB"))))


_decoded: dict[tuple[str, str], Pixels] = {}
"""The input this process decoded last: a compile runs the variants of one input one after
another in the same worker, so an image's PNG is decoded once, not once per variant (58 times)."""


def _input_pixels(store: ContentStore, ref: MediaRef) -> Pixels:
    """The RGB pixels of ``ref``, read-only (as ``np.asarray`` of a PIL image always was), so
    that no corruption can change the copy the next one gets."""
    key = (str(store.root), ref.sha256)
    pixels = _decoded.get(key)
    if pixels is None:
        pixels = np.asarray(load_image(store, ref).convert("RGB"))
        pixels.setflags(write=False)
        _decoded.clear()
        _decoded[key] = pixels
    return pixels


def corrupt(pixels: Pixels, corruption: str, level: Any, rng: np.random.Generator) -> Pixels:
    """``pixels`` corrupted at ``level``, the same size; draws only from ``rng``."""
    out = CORRUPTERS[corruption](pixels, level, rng)
    assert out.shape == pixels.shape and out.dtype == np.uint8, (corruption, out.shape, out.dtype)
    return out


# --- imagecorruptions -------------------------------------------------------------------------

class _Patched(types.ModuleType):
    """A module seen through a few replaced attributes. imagecorruptions gets these as its own
    ``np`` and ``sk`` globals, so numpy and scikit-image themselves stay unpatched."""

    def __init__(self, module: types.ModuleType, **replaced: Any) -> None:
        super().__init__(module.__name__)
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        self.__dict__[name] = value  # found directly from now on: glass_blur asks for
        return value                 # np.random once per pixel


def _gaussian(image: np.ndarray, sigma: float = 1, multichannel: bool | None = None,
              **kwargs: Any) -> np.ndarray:
    """skimage's gaussian as imagecorruptions 1.1.2 calls it: scikit-image 0.19 replaced
    ``multichannel=True`` by ``channel_axis=-1`` (glass_blur and gaussian_blur pass it)."""
    from skimage.filters import gaussian

    if multichannel:
        kwargs["channel_axis"] = -1
    blurred: np.ndarray = gaussian(image, sigma=sigma, **kwargs)  # type: ignore[no-untyped-call]  # skimage
    return blurred


def _random_noise(image: np.ndarray, **kwargs: Any) -> np.ndarray:
    """skimage's random_noise as imagecorruptions 1.1.2 expects it: scikit-image 0.19 stopped
    drawing from numpy's global RNG and draws from a fresh unseeded generator instead, which made
    impulse_noise differ on every call. Its generator is seeded from the global RNG again."""
    from skimage.util import random_noise

    noisy: np.ndarray = random_noise(  # type: ignore[no-untyped-call]  # untyped in scikit-image
        image, rng=int(np.random.randint(2**32, dtype=np.int64)), **kwargs)
    return noisy


@functools.cache
def _imagecorruptions() -> Callable[..., Pixels]:
    """imagecorruptions' ``corrupt``, with three shims for NumPy 2 and scikit-image 0.26 applied
    to its own module only: ``np.float_`` (fog), ``multichannel`` (glass_blur, gaussian_blur)
    and random_noise's generator (impulse_noise)."""
    with warnings.catch_warnings():  # its imports of pkg_resources and scipy.ndimage.interpolation
        warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
        warnings.simplefilter("ignore", DeprecationWarning)
        import imagecorruptions
        import skimage
        from imagecorruptions import corruptions
    corruptions.np = _Patched(np, float_=np.float64)
    corruptions.sk = _Patched(skimage, util=_Patched(skimage.util, random_noise=_random_noise))
    corruptions.gaussian = _gaussian
    corrupt: Callable[..., Pixels] = imagecorruptions.corrupt  # (the library has no type hints)
    return corrupt


def _imagenet_c(name: str) -> Corrupter:
    def run(pixels: Pixels, severity: int, rng: np.random.Generator) -> Pixels:
        corrupt_fn = _imagecorruptions()
        with seeded_globals(int(rng.integers(2**32))):
            return corrupt_fn(pixels, severity=severity, corruption_name=name)
    return run


# --- imgaug augmenters: albumentations, scikit-image, OpenCV ----------------------------------

def _albumentations() -> types.ModuleType:
    os.environ["NO_ALBUMENTATIONS_UPDATE"] = "1"  # else its import asks pypi.org for a new version
    import albumentations

    module: types.ModuleType = albumentations  # (no type hints: the import is Any)
    return module


def _run(transform: Any, pixels: Pixels, rng: np.random.Generator) -> Pixels:
    """Apply an albumentations transform (built with p=1) with its private RNGs seeded by us."""
    transform.set_random_seed(int(rng.integers(2**32)))
    out: Pixels = transform(image=pixels)["image"]
    return out


def _direction(rng: np.random.Generator) -> int:
    """+1 or -1, even odds: which way a corruption with a direction goes."""
    return 1 if rng.random() < 0.5 else -1


def _gamma_contrast(pixels: Pixels, gamma: float, rng: np.random.Generator) -> Pixels:
    percent = 100 * gamma ** _direction(rng)
    return _run(_albumentations().RandomGamma(gamma_limit=(percent, percent), p=1), pixels, rng)


def _dropout(fill: int) -> Corrupter:
    def run(pixels: Pixels, level: tuple[int, float], rng: np.random.Generator) -> Pixels:
        holes, side = level
        transform = _albumentations().CoarseDropout(
            num_holes_range=(holes, holes), hole_height_range=(side, side),
            hole_width_range=(side, side), fill=fill, p=1)
        return _run(transform, pixels, rng)
    return run


def _salt_and_pepper(pixels: Pixels, amount: float, rng: np.random.Generator) -> Pixels:
    transform = _albumentations().SaltAndPepper(amount=(amount, amount), salt_vs_pepper=(0.5, 0.5),
                                                p=1)
    return _run(transform, pixels, rng)


def _affine(kind: str) -> Corrupter:
    def run(pixels: Pixels, magnitude: float, rng: np.random.Generator) -> Pixels:
        sign = _direction(rng)
        if kind == "scale":
            args: dict[str, Any] = {"scale": (magnitude ** sign,) * 2}
        elif kind == "rotate":
            args = {"rotate": (sign * magnitude,) * 2}
        else:
            args = {"shear": {"x": (sign * magnitude,) * 2, "y": (0, 0)}}
        return _run(_albumentations().Affine(**args, p=1), pixels, rng)
    return run


def _piecewise_affine(pixels: Pixels, scale: float, rng: np.random.Generator) -> Pixels:
    """imgaug's PiecewiseAffine, through the scikit-image transform imgaug itself uses: a 4 x 4
    grid of points, each moved by N(0, scale x image side), and an affine map per triangle.
    (albumentations' PiecewiseAffine interpolates by inverse distance instead, which bends the
    image even where nothing moved, and takes a Python loop per pixel.)"""
    from skimage.transform import PiecewiseAffineTransform, warp

    height, width = pixels.shape[:2]
    rows, cols = np.meshgrid(np.linspace(0, height - 1, 4), np.linspace(0, width - 1, 4),
                             indexing="ij")
    grid = np.column_stack([cols.ravel(), rows.ravel()])
    moved = grid + rng.normal(0, scale, size=grid.shape) * (width, height)
    # (both untyped in scikit-image)
    transform = PiecewiseAffineTransform.from_estimate(grid, moved)  # type: ignore[no-untyped-call]
    warped: np.ndarray = warp(  # type: ignore[no-untyped-call]
        pixels, transform, order=1, mode="constant", cval=0, preserve_range=True)
    return np.round(warped).astype(np.uint8)


def _jigsaw(pixels: Pixels, n: int, rng: np.random.Generator) -> Pixels:
    """Tiles move only among tiles of the same shape, so on a side not divisible by n a few
    tiles of odd size may stay in place."""
    return _run(_albumentations().RandomGridShuffle(grid=(n, n), p=1), pixels, rng)


def _canny(pixels: Pixels, opacity: float, _rng: np.random.Generator) -> Pixels:
    """imgaug's Canny lays a coloured edge map over the image at opacity alpha; ours is white on
    black, with fixed hysteresis thresholds, and draws nothing."""
    import cv2

    edges = cv2.Canny(cv2.cvtColor(pixels, cv2.COLOR_RGB2GRAY), 100, 200)  # 3x3 Sobel, L1 norm
    blended = opacity * edges[..., None].astype(np.float64) + (1 - opacity) * pixels
    return np.round(blended).astype(np.uint8)


CORRUPTERS: dict[str, Corrupter] = {
    **{name: _imagenet_c(name) for name in IMAGECORRUPTIONS},
    "gamma_contrast": _gamma_contrast,
    "cutout": _dropout(fill=128),
    "salt_and_pepper": _salt_and_pepper,
    "coarse_dropout": _dropout(fill=0),
    "scale": _affine("scale"),
    "rotate": _affine("rotate"),
    "shear": _affine("shear"),
    "piecewise_affine": _piecewise_affine,
    "jigsaw": _jigsaw,
    "canny": _canny,
}

"""General image transforms with explicit, user-named parameters.

Every op reads its input as 8-bit RGB (an alpha channel is dropped, a palette or gray image is
expanded) and writes 8-bit RGB. Sizes are (width, height) in pixels; x grows rightwards and y
downwards from the top-left corner.

- ``image.flip``: mirror the image. ``direction = "horizontal"`` swaps left and right (about the
  vertical axis), ``"vertical"`` swaps top and bottom. Exact (a pixel permutation).
- ``image.rotate``: rotate by ``angle`` degrees counter-clockwise (negative: clockwise), in
  [-360, 360], about the image centre (Pillow's ``Image.rotate``). ``expand = true`` grows the
  canvas to the rotated image's bounding box (sides rounded outwards to whole pixels; 90 and 270
  degrees swap width and height exactly); ``false`` keeps the size and crops the corners.
  ``interpolation`` is how a pixel is sampled ("nearest", "bilinear", "bicubic"); pixels no
  source pixel covers get ``fill``. Multiples of 90 degrees are exact pixel permutations.
- ``image.crop``: either ``fraction`` f in (0, 1]: the central crop of round(f x width) by
  round(f x height) pixels (Python's round: ties to even; at least 1 pixel), its top-left corner
  at ((width - w) // 2, (height - h) // 2); or ``box = [x, y, w, h]``: the w x h pixels whose
  top-left pixel is (x, y), which must lie inside the image. Exactly one of the two is given.
- ``image.pad``: add ``pixels`` of ``fill`` colour around the image: one number for all four
  sides, or [left, top, right, bottom].
- ``image.jpeg``: encode as a baseline JPEG at ``quality`` (1 = worst, 100 = best; libjpeg's
  scale) with ``subsampling`` of the chroma planes, decode it back (Pillow's bundled
  libjpeg-turbo, integer DCT), and store the decoded pixels losslessly (PNG).
- ``image.color_jitter``: fixed factors, applied in this order: ``brightness`` b (pixels times b),
  ``contrast`` c (blend with the mean gray level: mean + c x (pixel - mean), the mean of the
  image's ITU-R 601-2 luma rounded to an integer), ``saturation`` s (blend with the pixel's
  luma: luma + s x (pixel - luma)), ``hue`` h (the hue, in Pillow's 8-bit HSV, shifted by
  h x 255 truncated towards zero, of 256 steps round the hue circle, wrapping; h in
  [-0.5, 0.5]). b, c, s are in [0, 10] and 1 leaves the image unchanged; h = 0 too. These are
  torchvision's ColorJitter functions on PIL images (adjust_brightness/contrast/saturation/hue)
  without torchvision, with fixed factors instead of random ones and a fixed order. Each blend
  is Pillow's: single-precision float, clipped to [0, 255], truncated to an integer.
- ``image.blur``: Gaussian blur of standard deviation ``sigma`` pixels (both axes) with a square
  kernel of side 2 x ceil(3 x sigma) + 1 (it covers +-3 sigma), borders mirrored without
  repeating the edge pixel (OpenCV's BORDER_REFLECT_101). OpenCV blurs 8-bit images with
  bit-exact fixed-point arithmetic (within about 1 level of a float blur), so the pixels do not
  depend on the CPU or the thread count.
- ``image.noise``: add Gaussian noise of standard deviation ``sigma`` on the 0..255 scale, drawn
  from the op's seed only (``ctx.rng.normal``, one value per pixel and channel, row by row,
  channels R, G, B), then round half to even and clip to [0, 255].

Colours (``fill``) are a name ("black", "white", "gray" = 128, "red", "green", "blue") or an
[r, g, b] triple of integers 0..255.

The pixel work runs on Pillow's and OpenCV's integer, fixed-point or plain C double paths, not
on torch (kornia): torch's float convolutions and reductions may change in the last bit with
the CPU's vector units or the thread count, which flips rounded 8-bit pixels and so the digests.
"""

from __future__ import annotations

import io
import math
from typing import Annotated, ClassVar, Literal

import cv2
import numpy as np
from PIL import Image, ImageEnhance
from pydantic import AfterValidator, Field, field_validator, model_validator

from ..errors import OpError, Problem
from ..media import load_image, put_image
from ..values import Value
from .base import OPENCV, OPS, Op, OpContext, OpOutput, OpParams

NamedColour = Literal["black", "white", "gray", "red", "green", "blue"]
NAMED_COLOURS: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0), "white": (255, 255, 255), "gray": (128, 128, 128),
    "red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255),
}
RESAMPLING: dict[str, Image.Resampling] = {
    "nearest": Image.Resampling.NEAREST, "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
}
SUBSAMPLING: dict[str, int] = {"4:4:4": 0, "4:2:2": 1, "4:2:0": 2}  # Pillow's codes
MAX_SIDE = 4096


def rgb(colour: NamedColour | tuple[int, int, int]) -> tuple[int, int, int]:
    """The RGB triple of a colour param."""
    return NAMED_COLOURS[colour] if isinstance(colour, str) else colour


def _check_colour(colour: NamedColour | tuple[int, int, int]) -> NamedColour | tuple[int, int, int]:
    if not isinstance(colour, str) and not all(0 <= c <= 255 for c in colour):
        raise ValueError("each of r, g, b is an integer from 0 to 255")
    return colour


Colour = Annotated[NamedColour | tuple[int, int, int], AfterValidator(_check_colour)]


def _rgb_input(value: Value | None, ctx: OpContext) -> Image.Image:
    assert value is not None and value.media is not None
    return load_image(ctx.store, value.media).convert("RGB")


def _output(ctx: OpContext, image: Image.Image) -> OpOutput:
    return OpOutput(Value("image", media=put_image(ctx.store, image)))


class _ImageOp(Op):
    """What every op here shares: an RGB image in, an RGB image out, the record unread."""

    version = "1.0.0"
    input_kind = "image"
    reads_record = False
    libraries: ClassVar[tuple[str, ...]] = ("pillow",)


# --- flip -------------------------------------------------------------------------------------

class FlipParams(OpParams):
    direction: Literal["horizontal", "vertical"] = Field(
        "horizontal", description="horizontal: swap left and right; vertical: swap top and bottom")


class Flip(_ImageOp):
    """Mirror an image left-right or top-bottom."""

    name = "image.flip"
    Params = FlipParams

    def apply(self, value: Value | None, params: FlipParams, ctx: OpContext) -> OpOutput:
        method = (Image.Transpose.FLIP_LEFT_RIGHT if params.direction == "horizontal"
                  else Image.Transpose.FLIP_TOP_BOTTOM)
        return _output(ctx, _rgb_input(value, ctx).transpose(method))


# --- rotate -----------------------------------------------------------------------------------

class RotateParams(OpParams):
    angle: float = Field(ge=-360, le=360,
                         description="degrees, counter-clockwise (negative: clockwise)")
    expand: bool = Field(False, description="true: the canvas grows to hold the whole rotated "
                                            "image; false: the same size, corners cropped")
    fill: Colour = Field("black", description="colour of pixels the rotated image does not "
                                              "cover: a name or [r, g, b] (0-255)")
    interpolation: Literal["nearest", "bilinear", "bicubic"] = Field(
        "bilinear", description="how rotated pixels are sampled")


class Rotate(_ImageOp):
    """Rotate an image about its centre by a given angle (degrees, counter-clockwise)."""

    name = "image.rotate"
    Params = RotateParams

    def apply(self, value: Value | None, params: RotateParams, ctx: OpContext) -> OpOutput:
        rotated = _rgb_input(value, ctx).rotate(
            params.angle, resample=RESAMPLING[params.interpolation], expand=params.expand,
            fillcolor=rgb(params.fill))
        return _output(ctx, rotated)


# --- crop -------------------------------------------------------------------------------------

class CropParams(OpParams):
    fraction: float | None = Field(None, gt=0, le=1, description="central crop keeping this "
                                   "fraction of each side (sides rounded, ties to even)")
    box: tuple[int, int, int, int] | None = Field(
        None, description="[x, y, w, h] in pixels: the w x h pixels from top-left pixel (x, y)")

    @field_validator("box")
    @classmethod
    def _box(cls, box: tuple[int, int, int, int] | None) -> tuple[int, int, int, int] | None:
        if box is not None and (min(box[:2]) < 0 or min(box[2:]) < 1):
            raise ValueError("x and y are >= 0, w and h are >= 1")
        return box

    @model_validator(mode="after")
    def _one(self) -> CropParams:
        if (self.fraction is None) == (self.box is None):
            raise ValueError("give exactly one of fraction and box")
        return self


class Crop(_ImageOp):
    """Crop an image: a central fraction of each side, or a box [x, y, w, h] in pixels."""

    name = "image.crop"
    Params = CropParams

    def apply(self, value: Value | None, params: CropParams, ctx: OpContext) -> OpOutput:
        image = _rgb_input(value, ctx)
        x, y, w, h = crop_box(image.size, params)
        return _output(ctx, image.crop((x, y, x + w, y + h)))


def crop_box(size: tuple[int, int], params: CropParams) -> tuple[int, int, int, int]:
    """(x, y, w, h) of the crop ``params`` asks of an image of ``size`` (OpError when the box
    does not fit)."""
    width, height = size
    if params.box is None:
        assert params.fraction is not None
        w, h = (max(1, round(params.fraction * side)) for side in size)
        return (width - w) // 2, (height - h) // 2, w, h
    x, y, w, h = params.box
    if x + w > width or y + h > height:
        raise OpError(Problem(
            f"crop box {list(params.box)} does not fit in a {width}x{height} image",
            key="params.box", hint="x + w must be <= the width, y + h <= the height"))
    return params.box


# --- pad --------------------------------------------------------------------------------------

class PadParams(OpParams):
    pixels: int | tuple[int, int, int, int] = Field(
        description="pixels added on every side, or [left, top, right, bottom] (each 0-4096)")
    fill: Colour = Field("black",
                         description="colour of the added pixels: a name or [r, g, b] (0-255)")

    @field_validator("pixels")
    @classmethod
    def _pixels(cls, pixels: int | tuple[int, int, int, int]) -> int | tuple[int, int, int, int]:
        sides = (pixels,) if isinstance(pixels, int) else pixels
        if not all(0 <= side <= MAX_SIDE for side in sides):
            raise ValueError(f"each side's padding is an integer from 0 to {MAX_SIDE}")
        return pixels


class Pad(_ImageOp):
    """Pad an image with a border of a fixed colour."""

    name = "image.pad"
    Params = PadParams

    def apply(self, value: Value | None, params: PadParams, ctx: OpContext) -> OpOutput:
        image = _rgb_input(value, ctx)
        sides = params.pixels
        left, top, right, bottom = (sides,) * 4 if isinstance(sides, int) else sides
        size = (image.width + left + right, image.height + top + bottom)
        canvas = Image.new("RGB", size, rgb(params.fill))
        canvas.paste(image, (left, top))
        return _output(ctx, canvas)


# --- jpeg -------------------------------------------------------------------------------------

class JpegParams(OpParams):
    quality: int = Field(ge=1, le=100, description="JPEG quality, 1 (worst) to 100 (best)")
    subsampling: Literal["4:4:4", "4:2:2", "4:2:0"] = Field(
        "4:2:0",
        description="chroma subsampling (4:2:0 is libjpeg's default, 4:4:4 keeps all colour)")


class Jpeg(_ImageOp):
    """Re-encode an image as JPEG at a given quality and decode it back (compression artefacts)."""

    name = "image.jpeg"
    Params = JpegParams

    def apply(self, value: Value | None, params: JpegParams, ctx: OpContext) -> OpOutput:
        buffer = io.BytesIO()
        _rgb_input(value, ctx).save(buffer, format="JPEG", quality=params.quality,
                                    subsampling=SUBSAMPLING[params.subsampling], optimize=False,
                                    progressive=False)
        decoded = Image.open(io.BytesIO(buffer.getvalue()))
        decoded.load()
        return _output(ctx, decoded.convert("RGB"))


# --- color jitter -----------------------------------------------------------------------------

class ColorJitterParams(OpParams):
    brightness: float = Field(
        1.0, ge=0, le=10, description="factor: pixels times it (0 black, 1 unchanged)")
    contrast: float = Field(
        1.0, ge=0, le=10, description="factor: blend with the mean gray (0 flat, 1 unchanged)")
    saturation: float = Field(
        1.0, ge=0, le=10, description="factor: blend with the luma (0 gray, 1 unchanged)")
    hue: float = Field(
        0.0, ge=-0.5, le=0.5, description="shift of the hue, as a fraction of the hue circle "
                                          "(0 unchanged, +-0.5 opposite hues)")


class ColorJitter(_ImageOp):
    """Change brightness, contrast, saturation and hue by fixed factors (torchvision's meaning)."""

    name = "image.color_jitter"
    Params = ColorJitterParams
    libraries = ("pillow", "numpy")

    def apply(self, value: Value | None, params: ColorJitterParams, ctx: OpContext) -> OpOutput:
        image = _rgb_input(value, ctx)
        if params.brightness != 1:
            image = ImageEnhance.Brightness(image).enhance(params.brightness)
        if params.contrast != 1:
            image = ImageEnhance.Contrast(image).enhance(params.contrast)
        if params.saturation != 1:
            image = ImageEnhance.Color(image).enhance(params.saturation)
        if params.hue != 0:
            image = shift_hue(image, params.hue)
        return _output(ctx, image)


def shift_hue(image: Image.Image, hue: float) -> Image.Image:
    """torchvision's adjust_hue on a PIL image: the 8-bit H channel plus hue x 255 (truncated
    towards zero), mod 256."""
    h, s, v = image.convert("HSV").split()
    shifted = (np.asarray(h, dtype=np.int32) + int(hue * 255)) % 256
    h = Image.fromarray(shifted.astype(np.uint8), "L")
    return Image.merge("HSV", (h, s, v)).convert("RGB")


# --- blur -------------------------------------------------------------------------------------

class BlurParams(OpParams):
    sigma: float = Field(gt=0, le=50, description="standard deviation of the Gaussian, in pixels; "
                                                  "kernel side 2 x ceil(3 sigma) + 1")


class Blur(_ImageOp):
    """Blur an image with a Gaussian of a given standard deviation (pixels)."""

    name = "image.blur"
    Params = BlurParams
    libraries = (OPENCV, "numpy", "pillow")

    def apply(self, value: Value | None, params: BlurParams, ctx: OpContext) -> OpOutput:
        pixels = np.ascontiguousarray(np.asarray(_rgb_input(value, ctx)))
        side = kernel_side(params.sigma)
        # ALGO_HINT_ACCURATE keeps OpenCV on its bit-exact 8-bit path (never an approximate HAL).
        out = cv2.GaussianBlur(pixels, (side, side), sigmaX=params.sigma, sigmaY=params.sigma,
                               borderType=cv2.BORDER_REFLECT_101, hint=cv2.ALGO_HINT_ACCURATE)
        return _output(ctx, Image.fromarray(out, "RGB"))


def kernel_side(sigma: float) -> int:
    """Side of the Gaussian kernel for ``sigma``: odd, covering +-3 sigma."""
    return 2 * math.ceil(3 * sigma) + 1


# --- noise ------------------------------------------------------------------------------------

class NoiseParams(OpParams):
    sigma: float = Field(gt=0, le=255, description="standard deviation of the additive "
                                                   "Gaussian noise, on the 0-255 pixel scale")


class Noise(_ImageOp):
    """Add Gaussian noise of a given standard deviation (0-255 scale), drawn from the op's seed."""

    name = "image.noise"
    Params = NoiseParams
    libraries = ("numpy", "pillow")

    def apply(self, value: Value | None, params: NoiseParams, ctx: OpContext) -> OpOutput:
        pixels = np.asarray(_rgb_input(value, ctx), dtype=np.float64)
        noisy = pixels + ctx.rng.normal(0.0, params.sigma, size=pixels.shape)
        out = np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
        return _output(ctx, Image.fromarray(out, "RGB"))


for _op in (Flip(), Rotate(), Crop(), Pad(), Jpeg(), ColorJitter(), Blur(), Noise()):
    OPS.register(_op.name, _op)

"""How strong a perturbation is: SSIM, PSNR, colour change and edge change of a variant image
against its original, computed with kornia from the stored images.

These are measurements, never inputs to a digest. The compiler makes every pixel that enters a
manifest on integer or plain C double paths, not on torch (compiler/ops/image_transform.py),
because torch's float convolutions and reductions may change in the last bit with the CPU's
vector units or the thread count, which would flip rounded 8-bit pixels and so the digests. A
measurement has no such consequence: it is printed (``benchc preview``, ``benchc calibrate``)
and may split a report's metric (``by = ["ssim_bin"]``), but no item, manifest or lock hash is
ever computed from it. It is deterministic to the printed precision: every value is computed in
float64 with one torch thread, its per-pixel map reduced with ``math.fsum`` (an exactly rounded
sum, so the order of the additions does not matter), and rounded to :data:`DECIMALS` decimals.

The four measures, on RGB images scaled to [0, 1]:

- ``ssim``: the mean of kornia's SSIM map (Gaussian window of sigma 1.5 and 11 taps, fewer on
  images under 11 pixels a side; reflected borders; ``eps=0``), over pixels and the three
  channels. 1 for identical images, lower for stronger changes.
- ``psnr``: kornia's PSNR in dB (data range 1). Identical images have no error and an
  infinite PSNR: it is ``math.inf`` here (``inf`` when printed, ``null`` in JSON), never a cap,
  since a cap would tie with a real change of one level in one pixel of a large image.
- ``colour``: the mean CIE76 colour difference (Euclidean distance in CIELAB, kornia's
  ``rgb_to_lab``; about 2.3 is a just noticeable difference, 100 is black against white).
- ``edge``: the mean absolute difference of the Sobel gradient magnitudes (kornia's ``sobel``,
  normalised) of the two images' luma (kornia's ``rgb_to_grayscale``): blur, noise and geometric
  changes move it, a hue change that keeps the luma does not.

A variant whose size differs from the original's (a resize, a rotation with ``expand``) is
resized to the original's size (Pillow, bilinear) before it is measured: the numbers then also
count the resampling and, for a change of aspect, the distortion.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from PIL import Image

DECIMALS = 4
"""Decimals every measure is rounded to (the printed precision)."""
MEASURES = ("ssim", "psnr", "colour", "edge")
"""The measures' names, in the order they are printed."""
SSIM_WINDOW = 11

ImageLike = Image.Image | np.ndarray


@dataclass(frozen=True)
class Measures:
    """A variant against its original (see the module docstring for each measure)."""

    ssim: float
    psnr: float       # math.inf for identical images
    colour: float
    edge: float
    resized: bool     # the variant was resized to the original's size first

    def as_json(self) -> dict[str, Any]:
        """The measures as JSON values: an infinite PSNR is ``None`` (JSON has no infinity)."""
        values = asdict(self)
        values["psnr"] = None if math.isinf(self.psnr) else self.psnr
        return values

    def text(self) -> str:
        """``SSIM 0.8123, PSNR 24.51 dB, colour 3.2, edge 0.0123`` (what a caption shows)."""
        return (f"SSIM {self.ssim:.4f}, PSNR {format_psnr(self.psnr)} dB, colour {self.colour:.4f}, "
                f"edge {self.edge:.4f}" + (" (resized)" if self.resized else ""))


def format_psnr(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.4f}"


def rgb_image(image: ImageLike) -> Image.Image:
    """``image`` (a PIL image, or an 8-bit array: H x W grey, H x W x 3 RGB or x 4 RGBA) as RGB."""
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8:
            raise TypeError(f"an image array must be 8-bit (uint8), not {image.dtype}")
        image = Image.fromarray(image)
    return image if image.mode == "RGB" else image.convert("RGB")


def same_size(original: Image.Image, variant: Image.Image) -> tuple[Image.Image, bool]:
    """``variant`` at the original's size (bilinear), and whether it had to be resized."""
    if variant.size == original.size:
        return variant, False
    return variant.resize(original.size, Image.Resampling.BILINEAR), True


def tensor(image: Image.Image) -> Any:
    """An RGB image as a float64 tensor of shape (1, 3, H, W) in [0, 1]."""
    import torch

    pixels = np.asarray(image, dtype=np.float64) / 255.0
    return torch.from_numpy(np.ascontiguousarray(pixels.transpose(2, 0, 1)))[None]


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch at one intra-op thread inside (its earlier count restored after): the convolutions'
    and reductions' splits then do not depend on the machine's cores."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def exact_mean(values: Any) -> float:
    """The mean of a tensor's values with an exactly rounded sum (independent of the order)."""
    flat = values.detach().reshape(-1).numpy()
    return math.fsum(flat.tolist()) / flat.size if flat.size else 0.0


def ssim_window(height: int, width: int) -> int:
    """11 taps, or the largest odd count whose half is under the smaller side (reflect padding)."""
    return min(SSIM_WINDOW, 2 * min(height, width) - 1)


def ssim(a: Any, b: Any) -> float:
    import kornia.metrics

    return exact_mean(kornia.metrics.ssim(a, b, ssim_window(a.shape[-2], a.shape[-1]), max_val=1.0, eps=0.0))


def psnr(a: Any, b: Any) -> float:
    import kornia.metrics

    if bool((a == b).all()):
        return math.inf
    return float(kornia.metrics.psnr(a, b, max_val=1.0))


def colour_change(a: Any, b: Any) -> float:
    import kornia.color

    delta = kornia.color.rgb_to_lab(a) - kornia.color.rgb_to_lab(b)
    return exact_mean(delta.pow(2).sum(dim=1).sqrt())


def edge_change(a: Any, b: Any) -> float:
    import kornia.color
    import kornia.filters

    def edges(image: Any) -> Any:
        return kornia.filters.sobel(kornia.color.rgb_to_grayscale(image), normalized=True)

    return exact_mean((edges(a) - edges(b)).abs())


def measure(original: ImageLike, variant: ImageLike) -> Measures:
    """SSIM, PSNR, colour change and edge change of ``variant`` against ``original``, each rounded
    to :data:`DECIMALS` decimals; a variant of another size is resized to the original's first."""
    import torch

    reference = rgb_image(original)
    changed, resized = same_size(reference, rgb_image(variant))
    with torch.no_grad(), one_torch_thread():
        a, b = tensor(reference), tensor(changed)
        values = ssim(a, b), psnr(a, b), colour_change(a, b), edge_change(a, b)
    ssim_value, psnr_value, colour, edge = (v if math.isinf(v) else round(v, DECIMALS) for v in values)
    return Measures(ssim_value, psnr_value, colour, edge, resized)

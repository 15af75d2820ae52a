"""MM-R3's restyle task: grayscale, resize, and Johnson et al. fast style transfer.

MM-R3 (benchmarks.md 1.2) restyles each image as Candy, Mosaic, Udnie (Johnson et al.'s fast
style transfer with InstanceNorm) and Grayscale, and ablates resolution at 224/640/1024.
``image.style_transfer`` runs the network of PyTorch's fast_neural_style example on weights the
user supplies (no weights ship with benchc, and nothing is downloaded): the file is named by a
path inside the data roots and pinned by its sha256, which puts the weights' content into every
node key. Both ``image.style_transfer`` and ``image.grayscale`` record ``style`` in the item's
attrs, so the four MM-R3 variants of an image can be grouped by one attribute.
"""

from __future__ import annotations

import functools
import hashlib
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from PIL import Image
from pydantic import Field

from ..errors import OpError, Problem
from ..media import load_image, put_image
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams

if TYPE_CHECKING:
    from ._transformer_net import TransformerNet

# Keys of InstanceNorm running statistics that PyTorch < 0.4 saved and later versions refuse;
# the example's stylize() drops them with this same pattern before loading.
STALE_KEY = re.compile(r"in\d+\.running_(mean|var)$")


class GrayscaleParams(OpParams):
    """No parameters."""


@OPS.add("image.grayscale")
class Grayscale(Op):
    """Gray version of an image, kept as 3-channel RGB (MM-R3's Grayscale style)."""

    reads_record = False
    version = "1.0.0"
    Params = GrayscaleParams
    input_kind = "image"
    libraries = ("pillow",)

    def apply(self, value: Value | None, params: GrayscaleParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        # PIL's "L" is ITU-R 601-2 luma in integer arithmetic: the same pixels on every machine.
        gray = load_image(ctx.store, value.media).convert("RGB").convert("L").convert("RGB")
        return OpOutput(Value("image", media=put_image(ctx.store, gray)),
                        attrs={"style": "grayscale"})


class ResizeParams(OpParams):
    size: int = Field(224, ge=16, le=4096, description="pixels: the shorter side, or both sides")
    mode: Literal["shorter_side", "square"] = Field(
        "shorter_side", description="keep the aspect ratio, or stretch to size x size")


@OPS.add("image.resize")
class Resize(Op):
    """Resize an image with Lanczos filtering (MM-R3's resolution ablation: 224/640/1024)."""

    reads_record = False
    version = "1.0.0"
    Params = ResizeParams
    input_kind = "image"
    libraries = ("pillow",)

    def apply(self, value: Value | None, params: ResizeParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        image = load_image(ctx.store, value.media).convert("RGB")
        size = target_size(image.size, params.size, params.mode)
        resized = image.resize(size, Image.Resampling.LANCZOS)
        return OpOutput(Value("image", media=put_image(ctx.store, resized)))


def target_size(size: tuple[int, int], target: int, mode: str) -> tuple[int, int]:
    """(width, height) after resizing: the shorter side becomes ``target``, or both sides do."""
    if mode == "square":
        return target, target
    width, height = size
    if width <= height:
        return target, max(1, round(height * target / width))
    return max(1, round(width * target / height)), target


class StyleTransferParams(OpParams):
    weights: str = Field(description="TransformerNet state dict (.pth), relative to the data roots")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the weights file")
    style: str = Field(min_length=1, description="label recorded in the item's attrs, e.g. 'candy'")


@OPS.add("image.style_transfer")
class StyleTransfer(Op):
    """Restyle an image with a Johnson et al. fast style-transfer network (MM-R3's restyle)."""

    reads_record = False
    version = "1.0.0"
    Params = StyleTransferParams
    input_kind = "image"
    libraries = ("torch", "numpy", "pillow")

    def apply(self, value: Value | None, params: StyleTransferParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        path = ctx.resolve(params.weights, key="params.weights")
        network = load_network(str(path), params.sha256)
        styled = stylize(network, load_image(ctx.store, value.media).convert("RGB"))
        return OpOutput(Value("image", media=put_image(ctx.store, styled)),
                        attrs={"style": params.style})


@functools.lru_cache(maxsize=8)
def load_network(path: str, sha256: str) -> TransformerNet:
    """The network in ``path``, refused unless the bytes it is built from hash to ``sha256``.
    Cached per (path, sha256): a process reads each weights file once."""
    import torch

    from ._transformer_net import TransformerNet

    data = Path(path).read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise OpError(Problem(
            f"weights file {path} has sha256 {actual}, not the {sha256} the spec pins",
            key="params.sha256",
            hint="check that this is the intended file; if it is, set params.sha256 to its digest "
                 "and bump [benchmark].version"))
    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        network = TransformerNet()
        network.load_state_dict({k: v for k, v in state.items() if not STALE_KEY.search(k)})
    except Exception as exc:  # not a state dict, or not a TransformerNet's
        raise OpError(Problem(
            f"cannot load {path} as a TransformerNet state dict: {exc}", key="params.weights",
            hint="use a fast_neural_style checkpoint such as candy.pth")) from None
    return network.float().eval()


def stylize(network: TransformerNet, image: Image.Image) -> Image.Image:
    """As the example's stylize(): RGB scaled to [0, 255] in, output clamped and truncated to
    uint8; in float32 on the CPU. The network rounds sides up to a multiple of 4 (two stride-2
    convolutions, two x2 upsamplings), so the output is cropped back to the input's size."""
    import torch

    pixels = torch.from_numpy(np.asarray(image, dtype=np.float32)).permute(2, 0, 1).unsqueeze(0)
    with torch.inference_mode():
        out = network(pixels)[0, :, : image.height, : image.width].clamp(0, 255)
    return Image.fromarray(out.permute(1, 2, 0).numpy().astype(np.uint8), "RGB")

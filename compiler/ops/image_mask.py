"""MM-R3's context-reasoning mask: hide an object under a coloured shape with stroke lines.

MM-R3 (seed 000) masks the object with "[1,3,5,7] lines, rectangle/ellipse" in one of six
colours; its label file records all three attributes for every mask, and the drawing code is not
public. Our reading: a filled ``shape`` (rectangle or ellipse) covers the object's box (grown by
``pad``), and ``lines`` parallel strokes of the same colour run across it and past its sides,
so every mask has a shape, a line count and a colour, as in the released labels.
"""

from __future__ import annotations

from typing import Literal

from PIL import ImageDraw
from pydantic import Field

from ..errors import OpError, Problem
from ..media import load_image, put_image
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams

MASK_COLOURS = {
    "red": (255, 0, 0), "blue": (0, 0, 255), "green": (0, 255, 0),
    "yellow": (255, 255, 0), "white": (255, 255, 255), "black": (0, 0, 0),
}


class Params(OpParams):
    shape: Literal["rectangle", "ellipse"] = "rectangle"
    lines: int = Field(1, ge=0, le=15)
    color: Literal["red", "blue", "green", "yellow", "white", "black"] = "black"
    pad: float = Field(0.05, ge=0.0, le=1.0, description="grow the box by this fraction per side")
    box_field: str = Field("object.bbox", description="record field holding [x, y, w, h]")


MaskObjectParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@OPS.add("image.mask_object")
class MaskObject(Op):
    """Cover an object's box with a coloured rectangle or ellipse crossed by N lines (MM-R3)."""

    version = "1.0.0"
    Params = Params
    input_kind = "image"
    libraries = ("pillow",)

    def apply(self, value: Value | None, params: MaskObjectParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        image = load_image(ctx.store, value.media).convert("RGB")
        x0, y0, x1, y1 = self._box(params, ctx, image.size)
        colour = MASK_COLOURS[params.color]
        draw = ImageDraw.Draw(image)
        if params.shape == "rectangle":
            draw.rectangle([x0, y0, x1, y1], fill=colour)
        else:
            draw.ellipse([x0, y0, x1, y1], fill=colour)
        self._lines(draw, (x0, y0, x1, y1), params.lines, colour, image.size)
        return OpOutput(Value("image", media=put_image(ctx.store, image)))

    def _box(self, params: MaskObjectParams, ctx: OpContext, size: tuple[int, int]) -> tuple[int, int, int, int]:
        try:
            x, y, w, h = ctx.record.get(params.box_field)
        except (KeyError, TypeError, ValueError):
            raise OpError(Problem(f"record {ctx.record.id!r} has no box [x, y, w, h] at "
                                  f"{params.box_field!r}", key="params.box_field")) from None
        if params.shape == "ellipse":  # an ellipse inscribed in the box misses its corners
            pad_w, pad_h = w * (0.21 + params.pad), h * (0.21 + params.pad)
        else:
            pad_w, pad_h = w * params.pad, h * params.pad
        return (max(0, round(x - pad_w)), max(0, round(y - pad_h)),
                min(size[0] - 1, round(x + w + pad_w)), min(size[1] - 1, round(y + h + pad_h)))

    @staticmethod
    def _lines(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], count: int,
               colour: tuple[int, int, int], size: tuple[int, int]) -> None:
        x0, y0, x1, y1 = box
        width = max(2, round(min(size) * 0.012))
        reach = round((x1 - x0) * 0.2)
        for k in range(count):
            y = y0 + (k + 1) * (y1 - y0) / (count + 1)
            draw.line([(max(0, x0 - reach), y), (min(size[0] - 1, x1 + reach), y)],
                      fill=colour, width=width)

"""Synthetic scenes: images with objects of known class, colour, size and position, with masks.

The offline substrate of tests and demos for image ops and metrics. Everything is a pure function
of (seed, image index): each image draws from its own generator, so image 7 is the same whether 8
or 800 images are made. Objects are flat shapes on a textured background; later objects occlude
earlier ones and each instance mask holds only the visible pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw
from pydantic import Field

from ..media import put_image
from ..seeds import rng_for, seed_from
from ..values import Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams

SHAPES = ("circle", "square", "triangle", "diamond", "star", "cross")
COLOURS = {
    "red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220),
    "yellow": (235, 210, 40), "purple": (140, 60, 180), "orange": (240, 140, 30),
}


@dataclass(frozen=True)
class SceneObject:
    id: int
    shape: str
    colour: str
    box: tuple[int, int, int, int]  # x, y, w, h of the drawn shape
    mask: np.ndarray  # bool, visible pixels


@dataclass(frozen=True)
class Scene:
    index: int
    image: Image.Image
    objects: list[SceneObject]


def _polygon(shape: str, x: int, y: int, s: int) -> list[tuple[float, float]]:
    cx, cy, r = x + s / 2, y + s / 2, s / 2
    if shape == "triangle":
        return [(cx, y), (x + s, y + s), (x, y + s)]
    if shape == "diamond":
        return [(cx, y), (x + s, cy), (cx, y + s), (x, cy)]
    if shape == "star":
        pts = []
        for k in range(10):
            rad = r if k % 2 == 0 else r * 0.45
            ang = -np.pi / 2 + k * np.pi / 5
            pts.append((cx + rad * np.cos(ang), cy + rad * np.sin(ang)))
        return pts
    if shape == "cross":
        t = s / 3
        return [(x + t, y), (x + 2 * t, y), (x + 2 * t, y + t), (x + s, y + t), (x + s, y + 2 * t),
                (x + 2 * t, y + 2 * t), (x + 2 * t, y + s), (x + t, y + s), (x + t, y + 2 * t),
                (x, y + 2 * t), (x, y + t), (x + t, y + t)]
    raise ValueError(shape)


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, box: tuple[int, int, int, int],
                fill: int | tuple[int, int, int]) -> None:
    x, y, s, _ = box
    if shape == "circle":
        draw.ellipse([x, y, x + s - 1, y + s - 1], fill=fill)
    elif shape == "square":
        draw.rectangle([x, y, x + s - 1, y + s - 1], fill=fill)
    else:
        draw.polygon(_polygon(shape, x, y, s), fill=fill)


def _background(rng: np.random.Generator, size: int) -> Image.Image:
    base = rng.integers(150, 235, size=3)
    ramp = np.linspace(-25, 25, size)[None, :, None]
    noise = rng.normal(0, 6, size=(size, size, 1))
    pixels = np.clip(base[None, None, :] + ramp + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels, "RGB")


def make_scene(seed: int, index: int, size: int = 256, max_objects: int = 4) -> Scene:
    """Scene ``index`` of the family ``seed``."""
    rng = rng_for(seed_from(["scene", seed, index]))
    image = _background(rng, size)
    draw = ImageDraw.Draw(image)
    labels = np.zeros((size, size), dtype=np.int16)
    placed: list[tuple[int, str, str, tuple[int, int, int, int]]] = []
    for obj_id in range(1, int(rng.integers(1, max_objects + 1)) + 1):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        colour = list(COLOURS)[int(rng.integers(len(COLOURS)))]
        side = int(rng.integers(size // 6, size // 2))
        x, y = (int(v) for v in rng.integers(0, size - side, size=2))
        box = (x, y, side, side)
        _draw_shape(draw, shape, box, COLOURS[colour])
        layer = Image.new("L", (size, size), 0)
        _draw_shape(ImageDraw.Draw(layer), shape, box, 255)
        labels[np.asarray(layer) > 0] = obj_id
        placed.append((obj_id, shape, colour, box))
    objects = [SceneObject(i, sh, co, bx, labels == i) for i, sh, co, bx in placed]
    return Scene(index, image, [o for o in objects if o.mask.any()])


def _mask_box(mask: np.ndarray) -> list[int]:
    ys, xs = np.nonzero(mask)
    return [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)]


class Params(SourceParams):
    images: int = Field(40, gt=0, le=100_000)
    seed: int = Field(0, ge=0)
    size: int = Field(256, ge=64, le=2048)
    max_objects: int = Field(4, ge=1, le=12)


ScenesParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@SOURCES.add("scenes")
class ScenesSource(SourceLoader):
    """One record per visible object; the record carries its image and instance mask."""

    version = "1.0.0"
    Params = Params
    record_id = "scene-<seed>-<image index>/<object id>"
    record_fields = {
        "image_id": "the image's id, scene-<seed>-<image index>",
        "image.width": "image width in pixels",
        "image.height": "image height in pixels",
        "image.objects": "the sorted shapes of the objects visible in the image",
        "object.id": "the object's id",
        "object.name": "its shape (the class): circle, square, triangle, diamond, star or cross",
        "object.bbox": "the box [x, y, w, h] of its visible pixels",
        "object.area": "its visible area in pixels",
        "object.area_ratio": "its visible (mask) area over the image's area",
        "object.colour": "its colour: red, green, blue, yellow, purple or orange",
    }
    record_media = {"image": "the scene", "mask": "the object's visible pixels (white on black)"}

    def load(self, params: ScenesParams, ctx: SourceContext) -> LoadedSource:
        records: list[Record] = []
        for index in range(params.images):
            scene = make_scene(params.seed, index, params.size, params.max_objects)
            image_ref = put_image(ctx.store, scene.image)
            names = sorted({o.shape for o in scene.objects})
            for obj in scene.objects:
                mask_ref = put_image(ctx.store, Image.fromarray(obj.mask.astype(np.uint8) * 255, "L"))
                area = int(obj.mask.sum())
                fields = {
                    "image_id": f"scene-{params.seed}-{index:06d}",
                    "image": {"width": params.size, "height": params.size, "objects": names},
                    "object": {"id": obj.id, "name": obj.shape, "colour": obj.colour,
                               "bbox": _mask_box(obj.mask), "area": area,
                               "area_ratio": round(area / params.size**2, 6)},
                }
                records.append(Record(id=f"scene-{params.seed}-{index:06d}/{obj.id}", fields=fields,
                                      media={"image": image_ref, "mask": mask_ref}))
        return LoadedSource(records=records)

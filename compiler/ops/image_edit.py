"""Object edits (MERLIM, Koala) and the validators that drop failed edits.

Edits, each reading the record's object (``object.*`` fields and the instance mask, media
``mask``, as the ``scenes`` and ``coco`` sources give them):

- ``image.remove_object``: inpaint over the object's instance mask, dilated by ``dilate`` px
  (MERLIM removes objects by inpainting; Koala dilates its masks by 15 px before LaMa).
- ``image.recolor_object``: recolour the object to a named colour of :data:`PALETTE`, keeping
  its shading (Koala's parametric conflicts change an object's colour). A target equal to the
  object's known colour (``object.colour``) is no edit: by default the variant is dropped, so a
  grid or choice over the palette counts those in the lock; ``on_same = "error"`` refuses it,
  ``on_same = "other"`` draws another palette colour from the op's seed.
- ``image.compose``: the image beside (or above) a second record image (Koala's source
  conflicts show two images that disagree).

Validators pass their input through unchanged and, when a check fails, return
``OpOutput(..., drop=reason)``: the compiler drops the variant and everything built on it and
counts it per node and reason in the lock (``dropped``). MERLIM validates its edits; these are
the automatic part of that step:

- ``validate.object_removed``: no detection of the removed object overlaps its original box.
- ``validate.scene_kept``: the edited image still embeds close to the record's original.

Hooks. Each edit or check that a model can do better is a name in a registry, chosen by a param:

- :data:`INPAINTERS` (``image.remove_object``, ``params.inpainter``): a callable
  ``(image, mask, params, ctx) -> image`` on RGB uint8 H x W x 3 and bool H x W arrays (the mask
  already dilated) returning the RGB uint8 result; ``telea`` and ``ns`` are OpenCV's
  ``cv2.inpaint`` methods. A model inpainter (LaMa behind a backend) registers from its own module
  of ``compiler/ops/``, e.g. ``INPAINTERS.register("lama", lama)``, and reads its weights from
  ``params.model`` through :func:`._pretrained.pinned_model`, which refuses weights whose digest
  is not ``params.sha256``; ``ctx`` gives it the data roots and, if it samples, ``ctx.rng``.
  The weights' digest keys its outputs (``params.sha256``); the versions of the libraries it
  runs on enter node keys through ``RemoveObject.environment``, so such a plugin adds its
  distributions to ``RemoveObject.libraries`` and bumps the op's version.
- :data:`DETECTORS` (``validate.object_removed``, ``params.detector``): a callable
  ``(image, target, params, ctx) -> list[Detection]`` (boxes [x, y, w, h] in pixels). ``colour``
  finds regions of the object's known colour (offline; for benchc's synthetic scenes), ``hf``
  runs a transformers object detector from a local folder.
- :data:`EMBEDDERS` (``validate.scene_kept``, ``params.embedder``): a callable
  ``(images, params, ctx) -> array`` of one embedding per row. ``pixels`` is a deterministic
  thumbnail embedding (offline), ``clip`` a transformers CLIP image encoder from a local folder.

Model folders are pinned by ``params.sha256`` (see :mod:`._pretrained`), so a node key names
the weights' content and the cache never serves results of other weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import cv2
import numpy as np
from PIL import Image
from pydantic import Field, field_validator

from ..errors import OpError, Problem
from ..media import load_image, put_image
from ..registry import Registry
from ..values import Value
from ._pretrained import Detection, clip_embeddings, detect, pinned_model
from .base import OPENCV, OPS, Op, OpContext, OpOutput, OpParams, library_versions
from .fields import field_or_none

PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220),
    "yellow": (235, 210, 40), "purple": (140, 60, 180), "orange": (240, 140, 30),
    "white": (245, 245, 245), "black": (25, 25, 25),
}
"""Named colours (RGB) for recolouring, gaps and the ``colour`` detector. The first six are
the colours the ``scenes`` source draws with, so a recoloured scene object looks like a drawn one."""
ColourName = Literal["red", "green", "blue", "yellow", "purple", "orange", "white", "black"]

CV2 = (OPENCV,)
MODELS = ("torch", "transformers")


# --- shared helpers ---------------------------------------------------------------------------

def _pixels(ctx: OpContext, value: Value | None) -> np.ndarray:
    assert value is not None and value.media is not None
    return np.asarray(load_image(ctx.store, value.media).convert("RGB"))


def _put(ctx: OpContext, pixels: np.ndarray) -> Value:
    return Value("image", media=put_image(ctx.store, Image.fromarray(pixels, "RGB")))


def _record_image(ctx: OpContext, name: str, key: str) -> Image.Image:
    """The record's image media ``name``; an OpError naming ``key`` when there is none."""
    ref = ctx.record.media.get(name)
    if ref is None or ref.kind != "image":
        images = [k for k, r in sorted(ctx.record.media.items()) if r.kind == "image"]
        raise OpError(Problem(f"record {ctx.record.id!r} has no image named {name!r}", key=key,
                              hint=f"its images: {', '.join(images) or 'none'}"))
    return load_image(ctx.store, ref)


def _object_mask(ctx: OpContext, name: str, shape: tuple[int, int]) -> np.ndarray:
    """The record's instance mask (media ``name``) as a bool array of ``shape``; refused when it
    is missing, empty, or of another size than the image it applies to."""
    mask = np.asarray(_record_image(ctx, name, "params.mask").convert("L")) > 127
    if mask.shape != shape:
        raise OpError(Problem(
            f"mask {name!r} is {mask.shape[1]}x{mask.shape[0]}, the image {shape[1]}x{shape[0]}",
            key="params.mask", hint="apply object edits before ops that resize or crop"))
    if not mask.any():
        raise OpError(Problem(f"mask {name!r} of record {ctx.record.id!r} is empty",
                              key="params.mask", hint="filter out records with object.area = 0"))
    return mask


def _box(ctx: OpContext, path: str) -> tuple[float, float, float, float]:
    box = field_or_none(ctx, path)
    if not (isinstance(box, (list, tuple)) and len(box) == 4
            and all(isinstance(v, (int, float)) for v in box)):
        raise OpError(Problem(f"record {ctx.record.id!r} has no box [x, y, w, h] at {path!r}",
                              key="params.box_field"))
    x, y, w, h = (float(v) for v in box)
    return x, y, w, h


def _registered(registry: Registry[Any], name: str) -> str:
    """A param validator: ``name`` must be registered (did-you-mean otherwise)."""
    if name not in registry:
        problem = registry.unknown(name)
        raise ValueError(f"{problem.message}; {problem.hint}")
    return name


# --- image.remove_object ----------------------------------------------------------------------

Inpainter = Callable[[np.ndarray, np.ndarray, "RemoveParams", OpContext], np.ndarray]
INPAINTERS: Registry[Inpainter] = Registry("inpainter")


class RemoveParams(OpParams):
    inpainter: str = Field("telea", description="a name in INPAINTERS: 'telea' or 'ns' (OpenCV)")
    radius: int = Field(5, ge=1, le=64, description="OpenCV inpainting radius, px")
    dilate: int = Field(3, ge=0, le=64, description="grow the mask by this many px first")
    mask: str = Field("mask", description="record media holding the object's instance mask")
    name_field: str = Field("object.name", description="record field naming the object")
    model: str | None = Field(None, description="model inpainters: weights folder (data roots)")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$",
                               description="model inpainters: the folder's digest")

    @field_validator("inpainter")
    @classmethod
    def _known_inpainter(cls, name: str) -> str:
        return _registered(INPAINTERS, name)


def dilate_mask(mask: np.ndarray, pixels: int) -> np.ndarray:
    """``mask`` grown by ``pixels`` in every direction (a disc, not a square)."""
    if pixels == 0:
        return mask
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * pixels + 1, 2 * pixels + 1))
    return cv2.dilate(mask.astype(np.uint8), disc) > 0


def _opencv_inpainter(flag: int, name: str) -> Inpainter:
    def inpaint(image: np.ndarray, mask: np.ndarray, params: RemoveParams,
                ctx: OpContext) -> np.ndarray:
        if params.model is not None:
            raise OpError(Problem(f"inpainter {name!r} reads no model", key="params.model",
                                  hint="remove params.model and params.sha256"))
        return cv2.inpaint(image, mask.astype(np.uint8) * 255, params.radius, flag)
    return inpaint


INPAINTERS.register("telea", _opencv_inpainter(cv2.INPAINT_TELEA, "telea"))
INPAINTERS.register("ns", _opencv_inpainter(cv2.INPAINT_NS, "ns"))


@OPS.add("image.remove_object")
class RemoveObject(Op):
    """Remove the record's object by inpainting its (dilated) instance mask (MERLIM, Koala)."""

    version = "1.0.0"
    Params = RemoveParams
    input_kind = "image"
    libraries = (*CV2, "numpy", "pillow")

    def apply(self, value: Value | None, params: RemoveParams, ctx: OpContext) -> OpOutput:
        image = _pixels(ctx, value)
        mask = dilate_mask(_object_mask(ctx, params.mask, image.shape[:2]), params.dilate)
        out = INPAINTERS.get(params.inpainter)(image, mask, params, ctx)
        if out.shape != image.shape or out.dtype != np.uint8:
            raise OpError(Problem(f"inpainter {params.inpainter!r} returned {out.dtype} "
                                  f"{out.shape}, not uint8 {image.shape}", key="params.inpainter"))
        # Pixels outside the mask are the input's, whatever the inpainter did there.
        out = np.where(mask[..., None], out, image)
        return OpOutput(_put(ctx, out), attrs={"removed_object": field_or_none(ctx, params.name_field),
                                               "mask_area": int(mask.sum())})


# --- image.recolor_object ---------------------------------------------------------------------

class RecolorParams(OpParams):
    color: ColourName = Field("red", description="target colour, a name of PALETTE")
    on_same: Literal["drop", "error", "other"] = Field(
        "drop", description="when the object already has that colour: drop the variant, fail, "
                            "or pick another palette colour with the op's seed")
    mask: str = Field("mask", description="record media holding the object's instance mask")
    color_field: str = Field("object.colour", description="record field with the object's colour")


def recolor(image: np.ndarray, mask: np.ndarray, rgb: tuple[int, int, int]) -> np.ndarray:
    """The masked pixels moved in CIELAB so that their mean is ``rgb``'s colour, each keeping
    its offset from the mean: lightness offsets (shading, highlights) and chroma offsets
    (texture) survive, and dark or light targets (black, white) are reached too, which keeping
    the lightness would not allow. Pixels outside the mask are not touched."""
    lab = cv2.cvtColor(image.astype(np.float32) / 255.0, cv2.COLOR_RGB2LAB)
    target = cv2.cvtColor(np.array([[rgb]], dtype=np.float32) / 255.0, cv2.COLOR_RGB2LAB)[0, 0]
    inside = lab[mask]
    moved = (inside + (target - inside.mean(axis=0))).reshape(-1, 1, 3).astype(np.float32)
    rgb_out = cv2.cvtColor(moved, cv2.COLOR_LAB2RGB).reshape(-1, 3)
    out = image.copy()
    out[mask] = np.clip(np.rint(rgb_out * 255.0), 0, 255).astype(np.uint8)
    return out


@OPS.add("image.recolor_object")
class RecolorObject(Op):
    """Recolour the record's object inside its instance mask, keeping its shading (Koala)."""

    version = "1.0.0"
    Params = RecolorParams
    input_kind = "image"
    libraries = (*CV2, "numpy", "pillow")

    def apply(self, value: Value | None, params: RecolorParams, ctx: OpContext) -> OpOutput:
        image = _pixels(ctx, value)
        mask = _object_mask(ctx, params.mask, image.shape[:2])
        known = field_or_none(ctx, params.color_field)
        original = str(known).lower() if known is not None else None
        target: str = params.color
        if target == original:
            if params.on_same == "drop":
                return OpOutput(value, {"original_color": original, "new_color": target},  # type: ignore[arg-type]
                                drop="target colour is the object's colour")
            if params.on_same == "error":
                raise OpError(Problem(f"the object is already {target}", key="params.color",
                                      hint="sweep colours with on_same = 'drop' or 'other'"))
            others = [c for c in PALETTE if c != original]
            target = others[int(ctx.rng.integers(len(others)))]
        out = recolor(image, mask, PALETTE[target])
        return OpOutput(_put(ctx, out), attrs={"original_color": original, "new_color": target})


# --- image.compose ----------------------------------------------------------------------------

class ComposeParams(OpParams):
    second: str = Field("image_2", description="record media of the second image (Koala: "
                                               "image_2; MERLIM: original; scenes: image)")
    layout: Literal["horizontal", "vertical"] = Field("horizontal", description="side by side, or stacked")
    order: Literal["input_first", "second_first"] = Field(
        "input_first", description="which image comes left (or on top)")
    gap: int = Field(8, ge=0, le=1024, description="px between the two images")
    gap_color: ColourName = Field("white", description="colour of the gap, a name of PALETTE")


def fit(image: Image.Image, side: int, layout: str) -> Image.Image:
    """``image`` scaled (Lanczos, aspect kept) to height ``side`` (horizontal layout) or width
    ``side`` (vertical layout); unchanged when it already fits."""
    width, height = image.size
    size = ((max(1, round(width * side / height)), side) if layout == "horizontal"
            else (side, max(1, round(height * side / width))))
    return image if size == image.size else image.resize(size, Image.Resampling.LANCZOS)


def compose(image: Image.Image, second: Image.Image, layout: str, gap: int,
            colour: tuple[int, int, int], second_first: bool = False) -> Image.Image:
    """``image`` and ``second`` ``gap`` px apart, ``second`` scaled to ``image``'s height
    (horizontal) or width (vertical): the input keeps its pixels, whichever comes first."""
    horizontal = layout == "horizontal"
    second = fit(second, image.height if horizontal else image.width, layout)
    first, last = (second, image) if second_first else (image, second)
    if horizontal:
        size = (first.width + gap + last.width, first.height)
        offset = (first.width + gap, 0)
    else:
        size = (first.width, first.height + gap + last.height)
        offset = (0, first.height + gap)
    canvas = Image.new("RGB", size, colour)
    canvas.paste(first, (0, 0))
    canvas.paste(last, offset)
    return canvas


@OPS.add("image.compose")
class Compose(Op):
    """Put the image and a second record image side by side or stacked (Koala's source conflicts)."""

    version = "1.0.0"
    Params = ComposeParams
    input_kind = "image"
    libraries = ("pillow",)

    def apply(self, value: Value | None, params: ComposeParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        image = load_image(ctx.store, value.media).convert("RGB")
        second = _record_image(ctx, params.second, "params.second").convert("RGB")
        out = compose(image, second, params.layout, params.gap, PALETTE[params.gap_color],
                      second_first=params.order == "second_first")
        return OpOutput(Value("image", media=put_image(ctx.store, out)),
                        attrs={"composed_with": params.second})


# --- validate.object_removed ------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """What a detector looks for: the removed object as the record describes it."""

    name: str | None
    colour: str | None
    box: tuple[float, float, float, float]


Detector = Callable[[np.ndarray, Target, "RemovedParams", OpContext], list[Detection]]
DETECTORS: Registry[Detector] = Registry("detector")


class RemovedParams(OpParams):
    detector: str = Field("colour", description="a name in DETECTORS: 'colour' or 'hf'")
    iou_threshold: float = Field(0.3, gt=0.0, le=1.0,
                                 description="drop when a detection overlaps the box this much")
    box_field: str = Field("object.bbox", description="record field with the box [x, y, w, h]")
    name_field: str = Field("object.name", description="record field with the object's class")
    color_field: str = Field("object.colour", description="record field with the object's colour")
    tolerance: float = Field(50.0, gt=0.0, le=442.0,
                             description="colour: max RGB distance to the object's colour")
    min_area: int = Field(16, ge=1, description="colour: ignore regions of fewer pixels")
    model: str | None = Field(None, description="hf: detector folder, relative to the data roots")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$", description="hf: the folder's digest")
    score_threshold: float = Field(0.5, ge=0.0, le=1.0, description="hf: min detection score")
    match_label: bool = Field(True, description="hf: count only detections of the object's class")

    @field_validator("detector")
    @classmethod
    def _known_detector(cls, name: str) -> str:
        return _registered(DETECTORS, name)


def colour_regions(image: np.ndarray, target: Target, params: RemovedParams,
                   ctx: OpContext) -> list[Detection]:
    """Connected regions (8-connected, after a 3x3 opening against noise) of pixels within
    ``tolerance`` of the object's palette colour. Enough for flat-coloured synthetic shapes;
    real photos need a learned detector."""
    if target.colour not in PALETTE:
        raise OpError(Problem(
            f"detector 'colour' needs an object colour of the palette, record "
            f"{ctx.record.id!r} has {target.colour!r} at {params.color_field!r}",
            key="params.color_field", hint=f"palette: {', '.join(PALETTE)}; or use detector = 'hf'"))
    distance = np.linalg.norm(image.astype(np.float32) - np.asarray(PALETTE[target.colour], dtype=np.float32), axis=2)
    close = cv2.morphologyEx((distance <= params.tolerance).astype(np.uint8), cv2.MORPH_OPEN,
                             np.ones((3, 3), np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(close, connectivity=8)
    return [Detection((float(x), float(y), float(w), float(h)), target.colour, 1.0)
            for x, y, w, h, area in stats[1:count].tolist() if area >= params.min_area]


def hf_detections(image: np.ndarray, target: Target, params: RemovedParams,
                  ctx: OpContext) -> list[Detection]:
    """A transformers object detector (AutoModelForObjectDetection) from ``params.model``;
    with ``match_label``, only detections whose label is the object's class count."""
    path = pinned_model(ctx, params.model, params.sha256, "detector 'hf'")
    found = detect(path, params.sha256 or "", Image.fromarray(image, "RGB"), params.score_threshold)
    if params.match_label:
        found = [d for d in found if d.label == target.name]
    return found


DETECTORS.register("colour", colour_regions)
DETECTORS.register("hf", hf_detections)


def iou(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Intersection over union of two [x, y, w, h] boxes."""
    width = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    height = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    inter = max(0.0, width) * max(0.0, height)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


@OPS.add("validate.object_removed")
class ObjectRemoved(Op):
    """Drop an edit when a detector still finds the removed object over its original box.

    The box is in the record image's pixels: validate before any op that resizes or crops.
    ``max_iou`` (the largest overlap found) joins the item's attrs."""

    version = "1.0.0"
    Params = RemovedParams
    input_kind = "image"
    libraries = (*CV2, "numpy", "pillow", *MODELS)

    def environment(self, params: RemovedParams | None = None) -> dict[str, str]:
        """torch/transformers shape the result only when the hf detector runs."""
        uses_models = params is None or params.detector == "hf"
        return library_versions(self.libraries if uses_models else (*CV2, "numpy", "pillow"))

    def apply(self, value: Value | None, params: RemovedParams, ctx: OpContext) -> OpOutput:
        name, colour = field_or_none(ctx, params.name_field), field_or_none(ctx, params.color_field)
        target = Target(None if name is None else str(name),
                        None if colour is None else str(colour).lower(), _box(ctx, params.box_field))
        found = DETECTORS.get(params.detector)(_pixels(ctx, value), target, params, ctx)
        overlap = max((iou(d.box, target.box) for d in found), default=0.0)
        attrs = {"max_iou": round(overlap, 4)}
        drop = "removed object still detected" if overlap >= params.iou_threshold else None
        return OpOutput(value, attrs, drop=drop)  # type: ignore[arg-type]


# --- validate.scene_kept ----------------------------------------------------------------------

Embedder = Callable[[list[Image.Image], "KeptParams", OpContext], np.ndarray]
EMBEDDERS: Registry[Embedder] = Registry("embedder")


class KeptParams(OpParams):
    embedder: str = Field("pixels", description="a name in EMBEDDERS: 'pixels' or 'clip'")
    threshold: float = Field(0.7, ge=-1.0, le=1.0, description="drop below this cosine similarity")
    reference: str = Field("image", description="record media the edited image is compared with")
    size: int = Field(16, ge=2, le=256, description="pixels: thumbnail side")
    model: str | None = Field(None, description="clip: model folder, relative to the data roots")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$", description="clip: the folder's digest")

    @field_validator("embedder")
    @classmethod
    def _known_embedder(cls, name: str) -> str:
        return _registered(EMBEDDERS, name)


def pixel_embeddings(images: list[Image.Image], params: KeptParams, ctx: OpContext) -> np.ndarray:
    """Each image as a ``size`` x ``size`` RGB thumbnail (PIL's box filter: the mean of the
    pixels each thumbnail pixel covers), flattened, minus its mean: the cosine similarity of two
    such vectors is the Pearson correlation of the thumbnails, so a uniform brightness change
    costs little and a moved or missing region costs a lot. Plain float64 arithmetic: the same
    numbers on every machine."""
    rows = [np.asarray(image.convert("RGB").resize((params.size, params.size), Image.Resampling.BOX),
                       dtype=np.float64).ravel() for image in images]
    return np.stack([row - row.mean() for row in rows])


def clip_image_embeddings(images: list[Image.Image], params: KeptParams,
                          ctx: OpContext) -> np.ndarray:
    """CLIP image embeddings (CLIPModel or CLIPVisionModelWithProjection) from ``params.model``."""
    path = pinned_model(ctx, params.model, params.sha256, "embedder 'clip'")
    return clip_embeddings(path, params.sha256 or "", [image.convert("RGB") for image in images])


EMBEDDERS.register("pixels", pixel_embeddings)
EMBEDDERS.register("clip", clip_image_embeddings)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity; 0 when either vector is zero (a uniform image under ``pixels``)."""
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / norms) if norms > 0 else 0.0


@OPS.add("validate.scene_kept")
class SceneKept(Op):
    """Drop an edit whose image no longer embeds close to the record's original image."""

    version = "1.0.0"
    Params = KeptParams
    input_kind = "image"
    libraries = ("numpy", "pillow", *MODELS)

    def environment(self, params: KeptParams | None = None) -> dict[str, str]:
        """torch/transformers shape the similarity only when the clip embedder runs."""
        uses_models = params is None or params.embedder == "clip"
        return library_versions(self.libraries if uses_models else ("numpy", "pillow"))

    def apply(self, value: Value | None, params: KeptParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        edited = load_image(ctx.store, value.media)
        reference = _record_image(ctx, params.reference, "params.reference")
        first, second = EMBEDDERS.get(params.embedder)([edited, reference], params, ctx)
        similarity = round(cosine(first, second), 6)
        drop = "scene changed beyond the threshold" if similarity < params.threshold else None
        return OpOutput(value, {"scene_similarity": similarity}, drop=drop)

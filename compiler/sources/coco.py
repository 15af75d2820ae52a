"""COCO-format instance annotations (COCO, LVIS): one record per object, with its image and mask.

Records have the shape of the ``scenes`` source, so a spec written on synthetic scenes runs on
COCO by changing only its ``[source]``: ``object.area_ratio`` is the visible (mask) area over
the image area, as MM-R3's masking task filters on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pycocotools.mask as mask_utils
from PIL import Image
from pydantic import Field

from ..errors import Problem, SourceError
from ..media import put_image
from ..values import Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import MediaFiles, RowError, collect, entries_of, json_part, need, read_json, url_names


class Params(SourceParams):
    annotations: str = Field(description="instances JSON, e.g. annotations/instances_val2017.json")
    images: str = Field(description="folder the images' file_name (or coco_url name) is under")
    categories: list[str] | None = Field(None, min_length=1, description="keep only these classes")


CocoParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


def segmentation_mask(segmentation: Any, height: int, width: int) -> np.ndarray:
    """A COCO segmentation (polygons, uncompressed or compressed RLE) as a 0/1 uint8 mask."""
    if isinstance(segmentation, list):
        if not segmentation or any(not isinstance(p, list) or len(p) < 6 or len(p) % 2
                                   for p in segmentation):
            raise RowError("segmentation polygons must be lists of at least 3 x,y pairs")
        rle = mask_utils.merge(mask_utils.frPyObjects(segmentation, height, width))
    elif isinstance(segmentation, dict) and list(segmentation.get("size", [])) == [height, width]:
        counts = segmentation.get("counts")
        rle = (mask_utils.frPyObjects(segmentation, height, width) if isinstance(counts, list)
               else {"size": [height, width], "counts": counts})
    else:
        raise RowError(f"segmentation is neither polygons nor an RLE of size [{height}, {width}]")
    try:
        mask: np.ndarray = mask_utils.decode(rle)  # pycocotools has no type hints
        return mask
    except (ValueError, TypeError) as exc:
        raise RowError(f"cannot decode segmentation: {exc}") from None


def category_names(doc: Any, path: Path) -> dict[Any, str]:
    return {c["id"]: c["name"] for c in json_part(doc, path, "categories", list)
            if isinstance(c, dict) and {"id", "name"} <= c.keys()}


def classes_per_image(annotations: list[Any], categories: dict[Any, str]) -> dict[Any, list[str]]:
    """The sorted class names annotated in each image: the image-level ground truth."""
    present: dict[Any, set[str]] = {}
    for ann in annotations:
        if isinstance(ann, dict) and ann.get("category_id") in categories:
            present.setdefault(ann.get("image_id"), set()).add(categories[ann["category_id"]])
    return {image_id: sorted(names) for image_id, names in present.items()}


@dataclass(frozen=True)
class CocoIndex:
    """What an annotation is read against: its file's images and classes, and the filter."""

    images: dict[Any, dict[str, Any]]
    categories: dict[Any, str]
    present: dict[Any, list[str]]  # every class in each image, before any filter
    wanted: set[str] | None


@SOURCES.add("coco")
class CocoSource(SourceLoader):
    """One record per annotated object of a COCO instances file, with its image and mask."""

    version = "1.0.0"
    Params = Params
    record_id = "<image_id>/<annotation id>"
    record_fields = {
        "image_id": "the image's id",
        "image.width": "image width in pixels",
        "image.height": "image height in pixels",
        "image.objects": "the sorted class names of every object annotated in the image",
        "object.id": "the object's id",
        "object.name": "its class name",
        "object.bbox": "its box [x, y, w, h] in pixels",
        "object.area": "the annotation's area (the mask's pixels when absent)",
        "object.area_ratio": "its visible (mask) area over the image's area",
        "object.category_id": "its COCO category id",
        "object.iscrowd": "COCO's iscrowd flag, 0 or 1",
        "file_name": "the image's file name",
        "width": "image width in pixels (as image.width)",
        "height": "image height in pixels (as image.height)",
    }
    record_media = {"image": "the object's image", "mask": "the object's instance mask (white on black)"}

    def load(self, params: CocoParams, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.annotations, key="source.annotations")
        doc = read_json(path)
        annotations = json_part(doc, path, "annotations", list)
        index = self._index(doc, annotations, params, path)
        files = MediaFiles(ctx, params.images, "source.images")
        records = collect(ctx, entries_of(annotations, path, "annotations"),
                          lambda ann: self._record(ann, index, files, ctx))
        return LoadedSource(records, [ctx.file_digest(path, len(annotations))])

    @staticmethod
    def _index(doc: Any, annotations: list[Any], params: CocoParams, path: Path) -> CocoIndex:
        images = {i["id"]: i for i in json_part(doc, path, "images", list)
                  if isinstance(i, dict) and "id" in i}
        categories = category_names(doc, path)
        unknown = sorted(set(params.categories or ()) - set(categories.values()))
        if unknown:
            raise SourceError(Problem(
                f"unknown categories: {', '.join(map(repr, unknown))}", key="source.categories",
                hint=f"{path.name} has: {', '.join(sorted(categories.values())[:30])}"))
        return CocoIndex(images, categories, classes_per_image(annotations, categories),
                         set(params.categories) if params.categories else None)

    @staticmethod
    def _record(ann: Any, index: CocoIndex, files: MediaFiles, ctx: SourceContext) -> Record | None:
        ann = need(ann, "id", "image_id", "category_id", "bbox", "segmentation")
        name = index.categories.get(ann["category_id"])
        if name is None:
            raise RowError(f"unknown category_id {ann['category_id']!r}")
        if index.wanted is not None and name not in index.wanted:
            return None  # dropped before its image or mask is read
        if ann["image_id"] not in index.images:
            raise RowError(f"unknown image_id {ann['image_id']!r}")
        image = index.images[ann["image_id"]]
        width, height = _size(image)
        names = image_file_names(image)
        image_ref = files.image(*names)
        mask = segmentation_mask(ann["segmentation"], height, width)
        fields = {"image_id": ann["image_id"], "file_name": names[0], "width": width, "height": height,
                  "image": {"width": width, "height": height, "objects": index.present[ann["image_id"]]},
                  "object": _object(ann, name, mask)}
        mask_ref = put_image(ctx.store, Image.fromarray(mask * 255, "L"))
        return Record(id=f"{ann['image_id']}/{ann['id']}", fields=fields,
                      media={"image": image_ref, "mask": mask_ref})


def image_file_names(image: dict[str, Any]) -> tuple[str, ...]:
    """COCO names an image by file_name; LVIS only by coco_url (its folder, then its name)."""
    if "file_name" in image:
        return (str(image["file_name"]),)
    return url_names(str(image.get("coco_url", "")))


def _size(image: dict[str, Any]) -> tuple[int, int]:
    width, height = need(image, "width", "height")["width"], image["height"]
    if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
        raise RowError(f"image {image.get('id')!r} has no positive integer width and height")
    return width, height


def _object(ann: dict[str, Any], name: str, mask: np.ndarray) -> dict[str, Any]:
    """The object's fields; area_ratio is the mask's (visible) area over the image's."""
    bbox = ann["bbox"]
    if not (isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(v, (int, float)) for v in bbox)):
        raise RowError(f"bbox {bbox!r} is not [x, y, width, height]")
    area = int(mask.sum())
    return {"id": ann["id"], "category_id": ann["category_id"], "name": name,
            "bbox": [float(v) for v in bbox], "area": float(ann.get("area", area)),
            "area_ratio": round(area / mask.size, 6), "iscrowd": int(ann.get("iscrowd", 0))}


@SOURCES.add("lvis")
class LvisSource(CocoSource):
    """LVIS v1: COCO's format, images named by coco_url (train2017/ or val2017/), no iscrowd."""


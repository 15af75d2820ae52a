"""MERLIM's annotation files: one record per edited (inpainted) image.

``kind = "objects"`` reads ``in_data_v3`` (COCO id -> edited images, each with the object
removed) and gives the counting ground truth: the original image has ``num_rem_obj + 1``
objects of the removed class, the edited one ``num_rem_obj``. ``kind = "relations"`` reads
``rel_task_set_eval_{curated,random}_v3`` and adds the relation question, its negation and the
expected answers on the original and edited images. ``.json`` and ``.json.gz`` are both read.

The files hold annotations only. With ``images`` (COCO val2017) and ``edited_images``
(MERLIM's inpainted set) the records carry the media ``original`` and ``image`` (the edited
image, the one a record is about). With ``instances`` (COCO's instances_val2017.json) they
carry the recognition ground truth as MERLIM's code builds it: every class of the original,
and the same minus the removed class when no instance of it is left.

``image_records = "both"`` asks each item about both of its images: two records per item,
``<id>/original`` and ``<id>/edited``, each with the attributes ``image`` (``original`` or
``edited``: merlim metrics' ``image_attr``) and ``pair`` (the edited image's id, shared by the
two), the same fields, and as its media ``image`` the image it shows. A text item carries its
record's ``image``, so the original's questions go with the original image.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import Field, model_validator

from ..values import MediaRef, Record
from .base import SOURCES, FileDigest, LoadedSource, SourceContext, SourceLoader, SourceParams
from .coco import category_names, classes_per_image
from .tables import At, MediaFiles, RowError, collect, json_part, need, read_json

ANSWERS = {"edited": "inp answer", "edited_neg": "inp neg answer",
           "original": "orig answer", "original_neg": "orig neg answer"}
"""Record field names for MERLIM's answer keys (keys with spaces do not fit a field path)."""
KEYS = {"objects": ("orig_img", "in_img", "removed_obj"),
        "relations": ("orig_img", "in_img", "removed_obj", "question", "question_neg", "relationship",
                      *ANSWERS.values())}
"""The keys an item of each kind of file has."""
MEDIA = {"original": ("images", "orig_img"), "image": ("edited_images", "in_img")}
"""Media name -> (the folder parameter, the item key naming the file)."""
ROLES = ("original", "edited")
"""The images of an item, in the order of its records with ``image_records = "both"``."""


class Params(SourceParams):
    annotations: str = Field(description="in_data_v3.json[.gz] or rel_task_set_eval_*_v3.json[.gz]")
    kind: Literal["objects", "relations"]
    images: str | None = Field(None, description="folder of the original COCO val2017 images")
    edited_images: str | None = Field(None, description="folder of MERLIM's edited images")
    instances: str | None = Field(None, description="COCO instances_val2017.json, for class lists")
    image_records: Literal["edited", "both"] = Field(
        "edited", description="one record per item (the edited image), or two: <id>/original and <id>/edited, "
                              "attributes image and pair, media image = the image each shows")

    @model_validator(mode="after")
    def _both_folders(self) -> Params:
        if self.image_records == "both" and (self.images is None) != (self.edited_images is None):
            raise ValueError("image_records = \"both\" needs both image folders (images and edited_images) or "
                             "neither: otherwise the records of one image would be asked without it")
        return self


MerlimParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@SOURCES.add("merlim")
class MerlimSource(SourceLoader):
    """MERLIM edited images with counting, recognition and relation ground truth."""

    version = "1.1.0"
    Params = Params
    record_id = ("the edited image's file name without its extension (image_records = \"both\": then "
                 "/original or /edited)")
    record_fields = {
        "coco_id": "the COCO image id", "orig_img": "the original image's file name",
        "in_img": "the edited (inpainted) image's file name",
        "removed_obj.cat_idx": "the removed object's COCO category id",
        "removed_obj.cat_label": "its class name", "removed_obj.num_rem_obj": "objects of its class left",
        "removed_obj.bbox": "its box [x, y, w, h]",
        "count.original": "objects of the removed class in the original image (num_rem_obj + 1)",
        "count.edited": "objects of the removed class in the edited image",
        "objects.original": "with `instances`: every class in the original image",
        "objects.edited": "with `instances`: the classes left in the edited image",
        "question": "kind = relations: the relation question", "question_neg": "its negation",
        "relationship": "kind = relations: the relation asked about",
        "answers.original": "kind = relations: expected answer on the original image",
        "answers.original_neg": "the negated question's, on the original",
        "answers.edited": "the question's, on the edited image",
        "answers.edited_neg": "the negated question's, on the edited image",
    }
    record_media = {"image": "the edited image (with `edited_images`)",
                    "original": "the original COCO image (with `images`)"}

    def load(self, params: MerlimParams, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.annotations, key="source.annotations")
        per_image = json_part(read_json(path), path, None, dict)
        items = sum(len(v) for v in per_image.values() if isinstance(v, list))
        files = [ctx.file_digest(path, items)]
        classes = None
        if params.instances is not None:
            classes, digest = self._classes(params.instances, ctx)
            files.append(digest)
        media = {name: MediaFiles(ctx, getattr(params, param), f"source.{param}")
                 for name, (param, _) in MEDIA.items() if getattr(params, param) is not None}
        roles: tuple[str | None, ...] = ROLES if params.image_records == "both" else (None,)
        entries = ((at, (*entry, role)) for at, entry in self._entries(per_image, path, ctx) for role in roles)
        records = collect(ctx, entries, lambda entry: self._record(*entry, params.kind, classes, media))
        return LoadedSource(records, files)

    @staticmethod
    def _classes(instances: str, ctx: SourceContext) -> tuple[dict[str, list[str]], FileDigest]:
        path = ctx.resolve(instances, key="source.instances")
        doc = read_json(path)
        annotations = json_part(doc, path, "annotations", list)
        present = classes_per_image(annotations, category_names(doc, path))
        return {str(k): v for k, v in present.items()}, ctx.file_digest(path, len(annotations))

    @staticmethod
    def _entries(per_image: dict[str, Any], path: Path,
                 ctx: SourceContext) -> Iterator[tuple[At, tuple[str, Any]]]:
        """(COCO id, edited-image item) pairs, each with its key path for messages."""
        for coco_id, items in per_image.items():
            if not isinstance(items, list):
                ctx.bad_row(At(path, key=f"[{coco_id!r}]").problem("expected a list of edited images"))
                continue
            for k, item in enumerate(items):
                yield At(path, key=f"[{coco_id!r}][{k}]"), (coco_id, item)

    @staticmethod
    def _record(coco_id: str, item: Any, role: str | None, kind: str, classes: dict[str, list[str]] | None,
                media: dict[str, MediaFiles]) -> Record:
        item = need(item, *KEYS[kind])
        removed = need(item["removed_obj"], "cat_idx", "cat_label", "num_rem_obj", "bbox")
        left = removed["num_rem_obj"]
        if not isinstance(left, int) or left < 0:
            raise RowError(f"num_rem_obj {left!r} is not a count")
        fields: dict[str, Any] = {
            "coco_id": int(coco_id) if coco_id.isdigit() else coco_id,
            "orig_img": item["orig_img"], "in_img": item["in_img"],
            "removed_obj": {k: removed[k] for k in ("cat_idx", "cat_label", "num_rem_obj", "bbox")},
            "count": {"original": left + 1, "edited": left}}
        if classes is not None:  # MERLIM's rule: a class is gone only when no instance is left
            present = classes.get(str(fields["coco_id"]), [])
            edited = [c for c in present if left or c != removed["cat_label"]]
            fields["objects"] = {"original": present, "edited": edited}
        if kind == "relations":
            fields.update(question=item["question"], question_neg=item["question_neg"],
                          relationship=item["relationship"],
                          answers={name: item[key] for name, key in ANSWERS.items()})
        stem = PurePosixPath(item["in_img"]).stem
        if role is None:
            return Record(id=stem, fields=fields, media=_media(item, media))
        shown = _media(item, {name: files for name, files in media.items()
                              if name == ("original" if role == "original" else "image")})
        return Record(id=f"{stem}/{role}", fields=fields, media={"image": list(shown.values())[-1]} if shown else {},
                      attrs={"image": role, "pair": stem})


def _media(item: dict[str, Any], media: dict[str, MediaFiles]) -> dict[str, MediaRef]:
    """MERLIM's code expects ``<id>.png``, its download script saves ``<id>.jpg``: try both."""
    out = {}
    for name, files in media.items():
        file_name = str(item[MEDIA[name][1]])
        out[name] = files.image(file_name, str(PurePosixPath(file_name).with_suffix(".jpg")))
    return out

"""Visual Genome relationships: one record per (subject, predicate, object) triple, with its image.

MERLIM's relation questions come from Visual Genome relationships; this loader reads the
original files (``relationships.json`` and ``image_data.json``) for specs that build their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from ..values import Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import At, MediaFiles, RowError, collect, json_part, need, read_json, url_names


class Params(SourceParams):
    relationships: str = Field(description="relationships.json")
    image_data: str = Field(description="image_data.json (image sizes and URLs)")
    images: str = Field(description="folder holding VG_100K/ and VG_100K_2/ (or the images)")


VisualGenomeParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


def _entity(item: Any) -> dict[str, Any]:
    """A subject or object: VG names it by ``name`` or by a ``names`` list (older releases)."""
    item = need(item, "object_id", "x", "y", "w", "h")
    names = item.get("names") or [item.get("name")]
    if not isinstance(names[0], str):
        raise RowError(f"object {item['object_id']!r} has no name")
    return {"object_id": item["object_id"], "name": names[0], "synsets": list(item.get("synsets", [])),
            "bbox": [item["x"], item["y"], item["w"], item["h"]]}


@SOURCES.add("visual_genome")
class VisualGenomeSource(SourceLoader):
    """One record per relationship of Visual Genome, with subject, object, boxes and image."""

    version = "1.0.0"
    Params = Params
    record_id = "<image_id>/<relationship_id>"
    record_fields = {
        "image_id": "the image's id", "relationship_id": "the relationship's id",
        "predicate": "the relation, e.g. 'on'", "synsets": "the predicate's synsets",
        "subject.name": "the subject's name", "subject.object_id": "its object id",
        "subject.synsets": "its synsets", "subject.bbox": "its box [x, y, w, h]",
        "object.name": "the object's name", "object.object_id": "its object id",
        "object.synsets": "its synsets", "object.bbox": "its box [x, y, w, h]",
        "width": "image width in pixels", "height": "image height in pixels",
    }
    record_media = {"image": "the relationship's image"}

    def load(self, params: VisualGenomeParams, ctx: SourceContext) -> LoadedSource:
        rel_path = ctx.resolve(params.relationships, key="source.relationships")
        data_path = ctx.resolve(params.image_data, key="source.image_data")
        image_items = json_part(read_json(data_path), data_path, None, list)
        images = {i.get("image_id", i.get("id")): i for i in image_items if isinstance(i, dict)}
        per_image = json_part(read_json(rel_path), rel_path, None, list)
        files = MediaFiles(ctx, params.images, "source.images")
        records = collect(ctx, self._entries(per_image, rel_path, ctx),
                          lambda entry: self._record(*entry, images, files))
        return LoadedSource(records, [ctx.file_digest(rel_path, len(per_image)),
                                      ctx.file_digest(data_path, len(image_items))])

    @staticmethod
    def _entries(per_image: list[Any], path: Path,
                 ctx: SourceContext) -> Iterator[tuple[At, tuple[Any, Any]]]:
        """(image id, relationship) pairs; an image entry without a relationship list is a bad row."""
        for index, item in enumerate(per_image):
            at = At(path, key=f"[{index}]")
            if not isinstance(item, dict) or not isinstance(item.get("relationships"), list):
                ctx.bad_row(at.problem("expected an object with a 'relationships' list"))
                continue
            image_id = item.get("image_id", item.get("id"))
            for k, rel in enumerate(item["relationships"]):
                yield At(path, key=f"[{index}].relationships[{k}]"), (image_id, rel)

    @staticmethod
    def _record(image_id: Any, rel: Any, images: dict[Any, dict[str, Any]], files: MediaFiles) -> Record:
        rel = need(rel, "relationship_id", "predicate", "subject", "object")
        image = images.get(image_id)
        if image is None:
            raise RowError(f"image {image_id!r} is not in image_data")
        image_ref = files.image(*url_names(str(need(image, "url")["url"])))
        fields = {"image_id": image_id, "relationship_id": rel["relationship_id"],
                  "predicate": rel["predicate"], "synsets": list(rel.get("synsets", [])),
                  "subject": _entity(rel["subject"]), "object": _entity(rel["object"]),
                  "width": image.get("width"), "height": image.get("height")}
        return Record(id=f"{image_id}/{rel['relationship_id']}", fields=fields, media={"image": image_ref})

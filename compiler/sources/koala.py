"""Koala (SegSub) items: a question about one or two images, original or perturbed, with the
expected answer (a refusal for counterfactual and conflicting items).

An item is ``{system_prompt, image: [...], conversations: [human, gpt], type, dataset, id}``;
the human turn holds ``Caption:`` lines and the question after ``Q:``, the gpt turn the answer.
WebQA's questions and answers are quoted in the files; the quotes are dropped from ``question``
and ``answer`` (``conversations`` keeps them). Ids repeat across perturbations of one question,
so a record id also names its images.

Images: a path names a file under ``images`` (a leading "/", as Koala's WebQA counterfactual
items write it, is dropped: Koala joins it to its image folder); an integer names a WebQA image,
read from WebQA's ``imgs.tsv`` (``webqa_images``; ``imgs.lineidx`` beside it); an original
VQAv2/OK-VQA image (``COCO_val2014_<12 digits>.jpg``) is under ``coco_images``. Without any,
records carry no media (the released files hold annotations only).

``originals = true`` adds to each perturbed, counterfactual or conflicting record the original
item Koala's eval.py compares it with (the question asked on the original image: the
``img_old`` cells of koala.accuracy): the file's ``original`` item of the same dataset and id
when the file has one, else one derived from the record's image names, which name the original
image (``webqa/object_perturbation/<WebQA id>_<guid>_<k>.jpeg``, ``.../object_removal/<WebQA
id>_<guid>.jpeg``, ``vqa|okvqa/object_removal/<split>/<COCO id>_<qid>.jpeg``), with the same
question and captions and no answer (``answer`` is "": the released labelled files hold no
original labels, so l_old is unknown). The companion's id is
``<dataset>/original/<id>/<digest of its images>@<type it serves>``; both carry the field
``task`` (the type of the record served), the new record the attribute ``original`` (the
companion's id), so a spec keeps one task with ``where = "task"``. A derived companion's
``label`` is true when a record it serves was accepted.

``negatives = true`` adds Koala's random-image negative samples (Table 4, negative_eval.py):
for each single-image counterfactual record, its question asked with the original image of
another single-image counterfactual record of the same dataset (a different image), paired by
a seeded ranking of the record ids (``negative_seed``: records ranked by sha256 of seed and id,
each takes the next record of the ranking with another image; no random state, adding a record
moves only its neighbours' partners). Type and task ``negative``, expected answer Koala's
refusal, field ``image_of`` (the partner's record id).
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import PurePosixPath
from typing import Any

from pydantic import Field

from ..canonical import digest
from ..media import put_image
from ..values import MediaRef, Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import (
    MediaFiles,
    RowError,
    collect,
    entries_of,
    json_part,
    need,
    open_image,
    read_json,
)

QUESTION = re.compile(r"(?:^|\n)Q: (.*)\Z", re.DOTALL)
CAPTION = re.compile(r"^Caption: (.*)$", re.MULTILINE)
WEBQA_EDITED = re.compile(r"^/?webqa/object_(?:perturbation|removal)/(\d+)_[0-9a-f]+(?:_\d+)?\.jpe?g$")
COCO_EDITED = re.compile(r"^/?(?:ok)?vqa/object_removal/(val|train)/(\d+)_\d+\.jpe?g$")
REFUSAL = "<RET> Sorry, I cannot determine the answer as there is not enough information. <RET>"
"""Koala's expected answer of a counterfactual item (create_dataset.py), also a negative sample's."""
NEW_TYPES = ("perturbed", "counterfactual", "conflicting")


class Params(SourceParams):
    annotations: str = Field(description="a Koala/SegSub item list (JSON)")
    images: str | None = Field(None, description="folder the items' image paths are under")
    webqa_images: str | None = Field(None, description="WebQA imgs.tsv, for integer image ids")
    coco_images: str | None = Field(None, description="folder of the COCO images of original VQAv2/OK-VQA "
                                                      "items (default: images)")
    originals: bool = Field(False, description="add each edited record's original item (the file's, or one "
                                               "derived from its image names, answer unknown)")
    negatives: bool = Field(False, description="add random-image negative samples (Koala Table 4)")
    negative_seed: int = Field(0, ge=0, description="seed of the negative samples' pairing")


KoalaParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


class WebQaImages:
    """WebQA's image table: line k of imgs.tsv is ``<id>\\t<base64>`` for the image whose
    id % 10,000,000 == k, at the byte offset on line k of imgs.lineidx (as WebQA and Koala read it)."""

    def __init__(self, ctx: SourceContext, tsv: str) -> None:
        self.ctx = ctx
        self.tsv = ctx.resolve(tsv, key="source.webqa_images")
        index = str(PurePosixPath(tsv).with_suffix(".lineidx"))
        self.index = ctx.resolve(index, key="source.webqa_images")
        self.offsets = [int(v) for v in self.index.read_text().split()]
        self._refs: dict[int, MediaRef] = {}

    def image(self, image_id: int) -> MediaRef:
        if image_id not in self._refs:
            self._refs[image_id] = put_image(self.ctx.store, open_image(self._read(image_id),
                                                                         f"WebQA {image_id}"))
        return self._refs[image_id]

    def _read(self, image_id: int) -> bytes:
        line = image_id % 10_000_000
        if line >= len(self.offsets):
            raise RowError(f"WebQA image {image_id} is not in {self.index.name}")
        with self.tsv.open("rb") as fh:
            fh.seek(self.offsets[line])
            found, _, data = fh.readline().strip().partition(b"\t")
        if found != str(image_id).encode():
            raise RowError(f"line {line + 1} of {self.tsv.name} holds image {found[:20]!r}, "
                           f"not {image_id}")
        return base64.b64decode(data)


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _turn(conversations: Any, speaker: str) -> str:
    if isinstance(conversations, list):
        for turn in conversations:
            if isinstance(turn, dict) and turn.get("from") == speaker:
                return str(turn.get("value", ""))
    raise RowError(f"conversations have no {speaker!r} turn")


@SOURCES.add("koala")
class KoalaSource(SourceLoader):
    """Koala/SegSub items, the question and answer parsed out of the conversation."""

    version = "1.1.0"
    Params = Params
    record_id = "<dataset>/<type>/<id>/<digest of the item's images>"
    record_fields = {
        "question": "the question after 'Q: ' in the human turn (WebQA's quotes dropped)",
        "answer": "the gpt turn: the expected answer (WebQA's quotes dropped; \"\" when unknown)",
        "captions": "the human turn's 'Caption:' lines",
        "image": "the item's image list (file paths, or WebQA image ids)",
        "conversations": "the item's [human, gpt] turns as in the file",
        "type": "the item's type", "dataset": "its dataset", "id": "its id (shared by perturbations)",
        "system_prompt": "its system prompt, or none", "label": "its label, or none",
        "task": "with originals or negatives: the type of the edited record an item serves (else its type)",
        "derived": "with originals: true for an original derived from image names (no answer)",
        "image_of": "negative samples: the record whose original image is asked",
    }
    record_media = {"image": "the item's first image (with `images` or `webqa_images`)",
                    "image_2": "its second image, and so on (image_3, ...)"}

    def load(self, params: KoalaParams, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.annotations, key="source.annotations")
        items = json_part(read_json(path), path, None, list)
        files = [ctx.file_digest(path, len(items))]
        images = MediaFiles(ctx, params.images, "source.images") if params.images else None
        coco = MediaFiles(ctx, params.coco_images, "source.coco_images") if params.coco_images else images
        webqa = WebQaImages(ctx, params.webqa_images) if params.webqa_images else None
        if webqa is not None:
            files += [ctx.file_digest(webqa.tsv), ctx.file_digest(webqa.index, len(webqa.offsets))]
        entries = list(entries_of(items, path, ""))
        records = collect(ctx, entries, lambda item: self._record(item, images, webqa, coco))
        if params.originals or params.negatives:
            by_id = {r.id: (at, item) for r, (at, item) in zip(self._kept(ctx, entries, images, webqa), entries)
                     if r is not None}
            extra: list[tuple[Any, Any]] = []
            if params.originals:
                records = self._with_originals(records, by_id, extra)
            if params.negatives:
                extra += self._negatives(records, by_id, params.negative_seed)
            records += collect(ctx, extra, lambda item: self._record(item, images, webqa, coco))
            records = [r if "task" in r.fields else Record(r.id, {**r.fields, "task": r.fields["type"]}, r.media,
                                                           r.attrs) for r in records]
        return LoadedSource(records, files)

    def _kept(self, ctx: SourceContext, entries: list[tuple[Any, Any]], images: MediaFiles | None,
              webqa: WebQaImages | None) -> list[Record | None]:
        """The record id of each entry (None for a malformed one), without loading media twice."""
        out: list[Record | None] = []
        for _, item in entries:
            try:
                out.append(self._record(item, None, None))
            except RowError:
                out.append(None)
        return out

    def _with_originals(self, records: list[Record], by_id: dict[str, tuple[Any, Any]],
                        extra: list[tuple[Any, Any]]) -> list[Record]:
        """Each edited record with the field ``task`` and the attribute ``original``; its
        companion original item (one per dataset, id, images and task) goes to ``extra``."""
        in_file = {(r.fields["dataset"], str(r.fields["id"])): by_id[r.id][1] for r in records
                   if r.fields["type"] == "original"}
        companions: dict[str, tuple[Any, dict[str, Any]]] = {}
        out = []
        for record in records:
            kind = record.fields["type"]
            if kind not in NEW_TYPES:
                out.append(record)
                continue
            at, item = by_id[record.id]
            original = in_file.get((record.fields["dataset"], str(record.fields["id"])))
            if original is None:
                try:
                    original = self._derived(item)
                except RowError:  # an image name that names no original: no companion
                    out.append(Record(record.id, {**record.fields, "task": kind}, record.media, record.attrs))
                    continue
            else:
                original = {**original, "derived": False}
            companion_id = f"{self._record_id(original)}@{kind}"
            known = companions.get(companion_id)
            label = bool(item.get("label")) or bool(known and known[1].get("label"))
            companions[companion_id] = (at, {**original, "task": kind, "_record_id": companion_id,
                                             **({"label": label} if original["derived"] else {})})
            out.append(Record(record.id, {**record.fields, "task": kind}, record.media,
                              {**record.attrs, "original": companion_id}))
        extra += list(companions.values())
        return out

    @staticmethod
    def _derived(item: dict[str, Any]) -> dict[str, Any]:
        """The original item an edited item's image names point at: same question, no answer."""
        names: list[int | str] = []
        for name in item["image"]:
            if isinstance(name, int):
                names.append(name)
            elif (webqa := WEBQA_EDITED.match(str(name))) is not None:
                names.append(int(webqa.group(1)))
            elif (coco := COCO_EDITED.match(str(name))) is not None:
                names.append(f"COCO_{coco.group(1)}2014_{int(coco.group(2)):012d}.jpg")
            else:
                raise RowError(f"image {name!r} names no original image Koala's way")
        human = _turn(item["conversations"], "human")
        return {"system_prompt": item.get("system_prompt"), "image": names, "type": "original",
                "dataset": item["dataset"], "id": item["id"], "label": None, "derived": True,
                "conversations": [{"from": "human", "value": human}, {"from": "gpt", "value": None}]}

    def _negatives(self, records: list[Record], by_id: dict[str, tuple[Any, Any]], seed: int) -> list[tuple[Any, Any]]:
        pool = [r for r in records if r.fields["type"] == "counterfactual" and len(r.fields["image"]) == 1]
        out = []
        for dataset in sorted({r.fields["dataset"] for r in pool}):
            ranked = sorted((r for r in pool if r.fields["dataset"] == dataset),
                            key=lambda r: (hashlib.sha256(f"{seed}\0{r.id}".encode()).hexdigest(), r.id))
            originals = {}
            for r in ranked:
                try:
                    originals[r.id] = self._derived(by_id[r.id][1])["image"]
                except RowError:
                    continue
            ranked = [r for r in ranked if r.id in originals]
            for k, record in enumerate(ranked):
                partner = next((p for p in ranked[k + 1:] + ranked[:k] if originals[p.id] != originals[record.id]),
                               None)
                if partner is None:
                    continue
                at, item = by_id[record.id]
                human = _turn(item["conversations"], "human")
                out.append((at, {**item, "image": originals[partner.id], "type": "negative", "task": "negative",
                                 "image_of": partner.id, "_record_id": f"{record.fields['dataset']}/negative/"
                                 f"{record.fields['id']}/{digest([record.id, originals[partner.id]])[:10]}",
                                 "conversations": [{"from": "human", "value": human},
                                                   {"from": "gpt", "value": REFUSAL}]}))
        return out

    def _record(self, item: Any, images: MediaFiles | None, webqa: WebQaImages | None,
                coco: MediaFiles | None = None) -> Record:
        item = need(item, "image", "conversations", "type", "dataset", "id")
        if not isinstance(item["image"], list) or not item["image"]:
            raise RowError("'image' is not a non-empty list")
        human = _turn(item["conversations"], "human")
        question = QUESTION.search(human)
        if question is None:
            raise RowError("the human turn has no 'Q: ' line")
        gpt = _turn(item["conversations"], "gpt") if item.get("derived") is not True else None
        fields = {**{k: item[k] for k in ("image", "conversations", "type", "dataset", "id")},
                  "system_prompt": item.get("system_prompt"), "label": item.get("label"),
                  "question": _unquote(question.group(1)), "captions": CAPTION.findall(human),
                  "answer": "" if gpt is None else _unquote(gpt)}
        fields.update({k: item[k] for k in ("task", "derived", "image_of") if k in item})
        if fields.get("derived"):
            fields["conversations"] = [item["conversations"][0]]
        record_id = item.get("_record_id") or self._record_id(item)
        return Record(id=record_id, fields=fields, media=self._media(item["image"], images, webqa, coco))

    @staticmethod
    def _record_id(item: dict[str, Any]) -> str:
        return f"{item['dataset']}/{item['type']}/{item['id']}/{digest(item['image'])[:10]}"

    @staticmethod
    def _media(names: list[Any], images: MediaFiles | None, webqa: WebQaImages | None,
               coco: MediaFiles | None = None) -> dict[str, MediaRef]:
        """``image``, ``image_2``, ...; none at all when no image source is given."""
        if images is None and webqa is None and coco is None:
            return {}
        media = {}
        for k, name in enumerate(names):
            key = "image" if k == 0 else f"image_{k + 1}"
            folder = coco if isinstance(name, str) and name.startswith("COCO_") else images
            if isinstance(name, int) and webqa is not None:
                media[key] = webqa.image(name)
            elif isinstance(name, str) and folder is not None:
                media[key] = folder.image(name.lstrip("/"))
            else:
                needed = "webqa_images" if isinstance(name, int) else "images"
                raise RowError(f"image {name!r} needs source.{needed}")
        return media

"""Koala (SegSub) items: a question about one or two images, original or perturbed, with the
expected answer (a refusal for counterfactual and conflicting items).

An item is ``{system_prompt, image: [...], conversations: [human, gpt], type, dataset, id}``;
the human turn holds ``Caption:`` lines and the question after ``Q:``, the gpt turn the answer.
WebQA's questions and answers are quoted in the files; the quotes are dropped from ``question``
and ``answer`` (``conversations`` keeps them). Ids repeat across perturbations of one question,
so a record id also names its images.

Images: a path names a file under ``images``; an integer names a WebQA image, read from WebQA's
``imgs.tsv`` (``webqa_images``; ``imgs.lineidx`` beside it). Without either, records carry no
media (the released files hold annotations only).
"""

from __future__ import annotations

import base64
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


class Params(SourceParams):
    annotations: str = Field(description="a Koala/SegSub item list (JSON)")
    images: str | None = Field(None, description="folder the items' image paths are under")
    webqa_images: str | None = Field(None, description="WebQA imgs.tsv, for integer image ids")


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


class KoalaSource(SourceLoader):
    """Koala/SegSub items, the question and answer parsed out of the conversation."""

    name = "koala"
    version = "1.0.0"
    Params = Params
    record_id = "<dataset>/<type>/<id>/<digest of the item's images>"
    record_fields = {
        "question": "the question after 'Q: ' in the human turn (WebQA's quotes dropped)",
        "answer": "the gpt turn: the expected answer (WebQA's quotes dropped)",
        "captions": "the human turn's 'Caption:' lines",
        "image": "the item's image list (file paths, or WebQA image ids)",
        "conversations": "the item's [human, gpt] turns as in the file",
        "type": "the item's type", "dataset": "its dataset", "id": "its id (shared by perturbations)",
        "system_prompt": "its system prompt, or none", "label": "its label, or none",
    }
    record_media = {"image": "the item's first image (with `images` or `webqa_images`)",
                    "image_2": "its second image, and so on (image_3, ...)"}

    def load(self, params: Params, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.annotations, key="source.annotations")
        items = json_part(read_json(path), path, None, list)
        files = [ctx.file_digest(path, len(items))]
        images = MediaFiles(ctx, params.images, "source.images") if params.images else None
        webqa = WebQaImages(ctx, params.webqa_images) if params.webqa_images else None
        if webqa is not None:
            files += [ctx.file_digest(webqa.tsv), ctx.file_digest(webqa.index, len(webqa.offsets))]
        records = collect(ctx, entries_of(items, path, ""),
                          lambda item: self._record(item, images, webqa))
        return LoadedSource(records, files)

    def _record(self, item: Any, images: MediaFiles | None, webqa: WebQaImages | None) -> Record:
        item = need(item, "image", "conversations", "type", "dataset", "id")
        if not isinstance(item["image"], list) or not item["image"]:
            raise RowError("'image' is not a non-empty list")
        human = _turn(item["conversations"], "human")
        question = QUESTION.search(human)
        if question is None:
            raise RowError("the human turn has no 'Q: ' line")
        fields = {**{k: item[k] for k in ("image", "conversations", "type", "dataset", "id")},
                  "system_prompt": item.get("system_prompt"), "label": item.get("label"),
                  "question": _unquote(question.group(1)), "captions": CAPTION.findall(human),
                  "answer": _unquote(_turn(item["conversations"], "gpt"))}
        record_id = f"{item['dataset']}/{item['type']}/{item['id']}/{digest(item['image'])[:10]}"
        return Record(id=record_id, fields=fields, media=self._media(item["image"], images, webqa))

    @staticmethod
    def _media(names: list[Any], images: MediaFiles | None,
               webqa: WebQaImages | None) -> dict[str, MediaRef]:
        """``image``, ``image_2``, ...; none at all when no image source is given."""
        if images is None and webqa is None:
            return {}
        media = {}
        for k, name in enumerate(names):
            key = "image" if k == 0 else f"image_{k + 1}"
            if isinstance(name, int) and webqa is not None:
                media[key] = webqa.image(name)
            elif isinstance(name, str) and images is not None:
                media[key] = images.image(name)
            else:
                needed = "webqa_images" if isinstance(name, int) else "images"
                raise RowError(f"image {name!r} needs source.{needed}")
        return media


SOURCES.register(KoalaSource.name, KoalaSource())

"""MMCBench's released image and audio corruptions (Parquet, Hugging Face javyduck/MMCBench).

image2text: ``key, caption, clean, <29 corruptions>``, images as encoded bytes (384x384).
speech2text: ``path, transcription, clean, <16 corruptions>``, audio as raw float64 samples at
16 kHz. One record per row; its media are the clean input and every corrupted version, named
by their columns, so a spec picks one with a node's ``input`` (e.g. ``input = "gaussian_noise"``).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from ..errors import Problem, SourceError
from ..values import MediaRef, Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import AUDIO_RATE, MediaFiles, RowError, TableFile, collect, pick, put_audio

LAYOUTS = {"image2text": ("key", "caption"), "speech2text": ("path", "transcription")}
"""Task -> (id column, clean text column); every other column is a media column."""


class Params(SourceParams):
    files: list[str] = Field(min_length=1, description="the task's Parquet shards")
    task: Literal["image2text", "speech2text"]


ParquetParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@SOURCES.add("mmcbench.parquet")
class MMCBenchParquet(SourceLoader):
    """MMCBench image2text / speech2text rows: clean and corrupted media, caption or transcript."""

    version = "1.0.0"
    Params = Params
    record_id = "the row's key (image2text) or path (speech2text)"
    record_fields = {"key": "the row's id (the key or path column)",
                     "text": "the clean caption (image2text) or transcription (speech2text)",
                     "corruptions": "the names of the row's corrupted media"}
    record_media = {"clean": "the clean image or audio",
                    "<corruption>": "one per corruption column, e.g. gaussian_noise"}

    def load(self, params: ParquetParams, ctx: SourceContext) -> LoadedSource:
        id_column, text_column = LAYOUTS[params.task]
        tables = [TableFile(ctx.resolve(f, key=f"source.files[{i}]"), ctx)
                  for i, f in enumerate(params.files)]
        media_columns = self._media_columns(tables, id_column, text_column)
        files = MediaFiles(ctx, None, "source.files")

        def build(row: dict[str, Any]) -> Record:
            media = {c: self._media(params.task, pick(row, c), c, files, ctx) for c in media_columns}
            fields = {"key": str(pick(row, id_column)), "text": pick(row, text_column),
                      "corruptions": [c for c in media_columns if c != "clean"]}
            return Record(id=fields["key"], fields=fields, media=media)

        records = collect(ctx, (row for table in tables for row in table), build)
        return LoadedSource(records, [ctx.file_digest(t.path, t.rows) for t in tables])

    @staticmethod
    def _media_columns(tables: list[TableFile], id_column: str, text_column: str) -> list[str]:
        """Every column but the id and the text, the same in every shard."""
        first: list[str] | None = None
        for table in tables:
            table.require((id_column, text_column, "clean"))
            columns = [c for c in table.header() or [] if c not in (id_column, text_column)]
            if first is not None and columns != first:
                raise SourceError(Problem("its columns differ from the first file's",
                                          file=str(table.path), hint=f"expected: {', '.join(first)}"))
            first = columns
        return first or []

    @staticmethod
    def _media(task: str, cell: Any, column: str, files: MediaFiles, ctx: SourceContext) -> MediaRef:
        if task == "image2text":
            return files.image_cell(cell, column)
        return put_audio(ctx, float64_samples(cell, column), AUDIO_RATE)


def float64_samples(cell: Any, column: str) -> np.ndarray:
    """MMCBench's audio cells: raw little-endian float64 samples (as bytes or HF {bytes, path})."""
    if isinstance(cell, dict):
        cell = cell.get("bytes")
    if not isinstance(cell, bytes) or not cell or len(cell) % 8:
        raise RowError(f"column {column!r} holds no float64 samples")
    return np.frombuffer(cell, dtype="<f8")

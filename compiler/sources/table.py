"""Generic tables: a CSV/TSV/JSON Lines/Parquet file (``table``), a Hugging Face dataset saved
with ``save_to_disk`` or a folder of Parquet shards (``hf_dataset``), and a Common Voice TSV
with its clips (``common_voice``).

One record per row. ``columns`` maps record fields to columns (empty: every column but the
media ones); ``id`` names the column of record ids (default: the row number). An image or
audio column holds encoded bytes, a Hugging Face ``{bytes, path}`` cell, or a file name under
``images`` / ``audio``. Nothing is fetched: ``hf_dataset`` reads local files only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from ..errors import Problem, SourceError
from ..paths import check_within_roots, relative_to_roots
from ..values import MediaRef, Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import (
    At,
    MediaFiles,
    RowError,
    TableFile,
    collect,
    folder_digest,
    jsonable,
    pick,
    require_columns,
)

Rows = Iterable[tuple[At, dict[str, Any]]]


class ColumnParams(SourceParams):
    columns: dict[str, str] = Field(default_factory=dict,
                                    description="record field -> column (empty: every column)")
    id: str | None = Field(default=None, description="column of unique record ids (default: row number)")
    image_column: str | None = Field(default=None, description="column of encoded images or file names")
    audio_column: str | None = Field(default=None, description="column of encoded audio or file names")
    images: str | None = Field(default=None, description="folder the image column's file names are under")
    audio: str | None = Field(default=None, description="folder the audio column's file names are under")

    def required(self) -> list[str]:
        return [c for c in (self.id, self.image_column, self.audio_column, *self.columns.values()) if c]


class RowRecords:
    """Makes a record of a numbered row the way ``ColumnParams`` say."""

    def __init__(self, params: ColumnParams, ctx: SourceContext) -> None:
        self.params = params
        self.images = MediaFiles(ctx, params.images, "source.images")
        self.audio = MediaFiles(ctx, params.audio, "source.audio")
        self.media_columns = {c for c in (params.image_column, params.audio_column) if c}

    def __call__(self, numbered: tuple[int, dict[str, Any]]) -> Record:
        number, row = numbered
        mapping = self.params.columns or {c: c for c in row if c not in self.media_columns}
        fields = {name: jsonable(pick(row, column), column) for name, column in mapping.items()}
        return Record(id=self._id(number, row), fields=fields, media=self._media(row))

    def _id(self, number: int, row: dict[str, Any]) -> str:
        if self.params.id is None:
            return str(number)
        value = pick(row, self.params.id)
        if value is None or value == "":
            raise RowError(f"empty id in column {self.params.id!r}")
        return str(jsonable(value, self.params.id))

    def _media(self, row: dict[str, Any]) -> dict[str, MediaRef]:
        media = {}
        image, audio = self.params.image_column, self.params.audio_column
        if image:
            media["image"] = self.images.image_cell(pick(row, image), image)
        if audio:
            media["audio"] = self.audio.audio_cell(pick(row, audio), audio)
        return media


def numbered(rows: Rows) -> Iterator[tuple[At, tuple[int, dict[str, Any]]]]:
    """Rows numbered from 1 across every file read, the default record ids."""
    return ((at, (number, row)) for number, (at, row) in enumerate(rows, start=1))


class TableParams(ColumnParams):
    path: str = Field(description="a .csv, .tsv, .jsonl or .parquet file")


@SOURCES.add("table")
class TableSource(SourceLoader):
    """One record per row of a CSV, TSV, JSON Lines or Parquet file."""

    version = "1.0.0"
    Params = TableParams
    record_id = "the `id` column's value, or the row number (from 1) without `id`"
    record_fields = {"<column>": "every column of the file by its header name (the image and audio "
                                 "columns left out), or only the fields `columns` maps to columns; "
                                 "a JSON object cell keeps its keys (`<column>.<key>`)"}
    record_media = {"image": "the `image_column` cell: encoded image bytes, or a file name under `images`",
                    "audio": "the `audio_column` cell: encoded audio bytes, or a file name under `audio`"}

    def load(self, params: TableParams, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.path, key="source.path")
        table = TableFile(path, ctx)
        table.require(params.required())
        records = collect(ctx, numbered(table), RowRecords(params, ctx))
        return LoadedSource(records, [ctx.file_digest(path, table.rows)])


class CommonVoiceParams(SourceParams):
    path: str = Field(description="a Common Voice TSV, e.g. validated.tsv")
    audio: str = Field(description="its clips/ folder (MP3 decoded by libsndfile >= 1.1)")


@SOURCES.add("common_voice")
class CommonVoiceSource(SourceLoader):
    """Common Voice: one record per clip, id = the clip's file name, fields = the TSV's columns."""

    version = "1.0.0"
    Params = CommonVoiceParams
    record_id = "the clip's file name (the TSV's `path` column)"
    record_fields = {"sentence": "the clip's transcript",
                     "<column>": "every other column of the TSV by its header name (client_id, "
                                 "up_votes, down_votes, age, gender, accents, locale, ...), `path` left out"}
    record_media = {"audio": "the clip, from the `audio` folder"}

    def load(self, params: CommonVoiceParams, ctx: SourceContext) -> LoadedSource:
        table = TableParams(path=params.path, id="path", audio_column="path", audio=params.audio,
                            columns={})
        return TableSource().load(table, ctx)


class HfDatasetParams(ColumnParams):
    path: str = Field(description="a save_to_disk folder, or a folder of Parquet shards")
    split: str | None = Field(None, description="split of a DatasetDict or of the shards")


@SOURCES.add("hf_dataset")
class HfDatasetSource(SourceLoader):
    """A Hugging Face dataset on disk, read without the hub: one record per row."""

    version = "1.0.0"
    Params = HfDatasetParams
    record_id = "the `id` column's value, or the row number (from 1) without `id`"
    record_fields = {"<column>": "every column of the dataset by its header name (the image and audio "
                                 "columns left out), or only the fields `columns` maps to columns; "
                                 "a JSON object cell keeps its keys (`<column>.<key>`)"}
    record_media = {"image": "the `image_column` cell: encoded image bytes, or a file name under `images`",
                    "audio": "the `audio_column` cell: encoded audio bytes, or a file name under `audio`"}

    def load(self, params: HfDatasetParams, ctx: SourceContext) -> LoadedSource:
        folder = ctx.resolve(params.path, key="source.path")
        if (folder / "dataset_dict.json").is_file():
            folder = self._split_folder(folder, params.split)
        _refuse_links_out(folder, params.path, ctx)
        if (folder / "state.json").is_file():
            return self._load_saved(folder, params, ctx)
        return self._load_shards(self._shards(folder, params.split), params, ctx)

    @staticmethod
    def _split_folder(folder: Path, split: str | None) -> Path:
        splits = json.loads((folder / "dataset_dict.json").read_text())["splits"]
        if split is None or split not in splits:  # (JSON split names are never null)
            message = "no split given" if split is None else f"unknown split {split!r}"
            raise SourceError(Problem(message, key="source.split",
                                      hint=f"the dataset has: {', '.join(splits)}"))
        return folder / split

    @staticmethod
    def _load_saved(folder: Path, params: HfDatasetParams, ctx: SourceContext) -> LoadedSource:
        """Rows as stored (arrow), so Image/Audio cells stay {bytes, path}: nothing is decoded by
        ``datasets`` (its audio decoding needs torchcodec) and nothing is written to its cache."""
        import datasets

        dataset = datasets.load_from_disk(str(folder))
        require_columns(folder, dataset.column_names, params.required())
        batches = dataset.with_format("arrow").iter(batch_size=64)
        rows = enumerate((row for batch in batches for row in batch.to_pylist()), start=1)
        records = collect(ctx, numbered((At(folder, key=f"row {n}"), row) for n, row in rows),
                          RowRecords(params, ctx))
        files = sorted(f for f in folder.rglob("*") if f.is_file())
        return LoadedSource(records, [folder_digest(relative_to_roots(folder, ctx.roots), folder, files)])

    @staticmethod
    def _load_shards(shards: list[Path], params: HfDatasetParams, ctx: SourceContext) -> LoadedSource:
        tables = [TableFile(shard, ctx) for shard in shards]
        for table in tables:
            table.require(params.required())
        rows = (row for table in tables for row in table)
        records = collect(ctx, numbered(rows), RowRecords(params, ctx))
        return LoadedSource(records, [ctx.file_digest(t.path, t.rows) for t in tables])

    @staticmethod
    def _shards(folder: Path, split: str | None) -> list[Path]:
        """Parquet shards, sorted; a split keeps ``<split>/...`` or ``<split>-0000x-of-...`` files."""
        def wanted(shard: Path) -> bool:
            return (split is None or split in shard.relative_to(folder).parts[:-1]
                    or shard.name.startswith(f"{split}-"))

        shards = sorted((p for p in folder.rglob("*.parquet") if wanted(p)), key=lambda p: p.as_posix())
        if not shards:
            of_split = "" if split is None else f" of split {split!r}"
            raise SourceError(Problem(f"no Parquet files{of_split} and no save_to_disk dataset in {folder}",
                                      key="source.path"))
        return shards


def _refuse_links_out(folder: Path, written: str, ctx: SourceContext) -> None:
    """Every file of a dataset folder, before any is read: a symlink in it that leads outside the
    data roots is refused (issue 13). A snapshot whose files link into a blob folder is readable
    when that folder is a data root too (``--data-root``)."""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            name = f"{written.rstrip('/')}/{path.relative_to(folder).as_posix()}"
            check_within_roots(path, ctx.roots, "source.path", name, ctx.spec_file)

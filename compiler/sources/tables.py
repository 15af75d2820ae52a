"""What the file-reading source loaders share: positions for error messages, JSON and table
readers with row numbers, JSON-able cells, and media files loaded once into the content store.

A loader turns each entry of its files (a JSON element, a table row) into one record with
``collect``; a malformed entry raises ``RowError`` and ``collect`` reports it through
``ctx.bad_row`` with the file and row, so ``source.on_error = "skip"`` can skip and count it.
Problems with a whole file (not JSON, a missing column in a header) are ``SourceError``.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import gzip
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..canonical import digest, digest_file
from ..errors import Problem, SourceError
from ..media import put_image, wav_bytes
from ..paths import check_within_roots, inside
from ..values import MediaRef, Record
from .base import FileDigest, SourceContext

AUDIO_RATE = 16_000
"""Every audio record is stored at this rate, mono, 16-bit: what ASR judges and ops expect."""

T = TypeVar("T")


class RowError(Exception):
    """One entry of a file is malformed; ``collect`` adds where it is."""


@dataclass(frozen=True)
class At:
    """Where an entry is: a line of a text table, or a key path (``annotations[3]``, ``row 7``)."""

    file: Path
    line: int | None = None
    key: str | None = None

    def problem(self, message: str) -> Problem:
        return Problem(message, file=str(self.file), line=self.line, key=self.key)

    @property
    def here(self) -> str:
        return f"line {self.line}" if self.line is not None else str(self.key)


def collect(ctx: SourceContext, entries: Iterable[tuple[At, T]],
            build: Callable[[T], Record | None]) -> list[Record]:
    """Build one record per entry (None drops it on purpose); report malformed entries and
    repeated ids as bad rows, since an id seeds every random choice made for its record."""
    records: list[Record] = []
    first_seen: dict[str, At] = {}
    for at, entry in entries:
        try:
            record = build(entry)
        except RowError as exc:
            ctx.bad_row(at.problem(str(exc)))
            continue
        if record is None:
            continue
        if record.id in first_seen:
            ctx.bad_row(at.problem(f"duplicate record id {record.id!r} "
                                   f"(first at {first_seen[record.id].here})"))
            continue
        first_seen[record.id] = at
        records.append(record)
    return records


# JSON ------------------------------------------------------------------------------------------
def read_json(path: Path) -> Any:
    """A ``.json`` or ``.json.gz`` document; a file that is not JSON is a whole-file error."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise SourceError(Problem(f"not valid JSON: {exc.msg} (column {exc.colno})",
                                  file=str(path), line=exc.lineno)) from None
    except (UnicodeDecodeError, OSError) as exc:
        raise SourceError(Problem(f"cannot read JSON: {exc}", file=str(path))) from None


def json_part(doc: Any, path: Path, key: str | None, kind: type) -> Any:
    """``doc[key]`` (or ``doc``), which must be a ``kind``: the file's shape, checked once."""
    part = doc.get(key) if key is not None and isinstance(doc, dict) else doc
    if not isinstance(part, kind):
        where = f"key {key!r}" if key is not None else "the document"
        raise SourceError(Problem(f"{where} is not a JSON {'list' if kind is list else 'object'}",
                                  file=str(path),
                                  hint="is this the right file for this source loader?"))
    return part


def entries_of(items: list[Any], path: Path, key: str) -> Iterator[tuple[At, Any]]:
    """The elements of a JSON list, each with its key path for messages."""
    return ((At(path, key=f"{key}[{index}]"), item) for index, item in enumerate(items))


def need(item: Any, *keys: str) -> dict[str, Any]:
    """``item`` as an object holding ``keys``, or a RowError naming the missing ones."""
    if not isinstance(item, dict):
        raise RowError(f"expected a JSON object, found {type(item).__name__}")
    missing = [k for k in keys if k not in item]
    if missing:
        raise RowError(f"missing key(s): {', '.join(missing)}")
    return item


# tables ----------------------------------------------------------------------------------------
class TableFile:
    """Rows of a CSV, TSV, JSON Lines or Parquet file (chosen by extension), with positions.

    CSV/TSV cells stay strings; JSON Lines and Parquet keep their types. Parquet is read in
    batches so tables of encoded images need not fit in memory. ``rows`` counts the rows read.
    """

    FORMATS = (".csv", ".tsv", ".jsonl", ".parquet")

    def __init__(self, path: Path, ctx: SourceContext) -> None:
        self.path, self.ctx, self.rows = path, ctx, 0
        found = next((f for f in self.FORMATS if path.name.endswith(f)), None)
        if found is None:
            raise SourceError(Problem(f"unknown table format {path.suffix!r}", file=str(path),
                                      hint=f"use one of {', '.join(self.FORMATS)}"))
        self.format: str = found

    def require(self, columns: Iterable[str]) -> None:
        """Check a header before any row is read; JSON Lines has none, so its rows are checked."""
        header = self.header()
        if header is not None:
            line = 1 if self.format in (".csv", ".tsv") else None
            require_columns(self.path, header, columns, line=line)

    def header(self) -> list[str] | None:
        if self.format == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(self.path).names)
        if self.format == ".jsonl":
            return None
        with self.path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: Excel's BOM
            return next(self._csv(fh), [])

    def __iter__(self) -> Iterator[tuple[At, dict[str, Any]]]:
        rows = {".parquet": self._parquet_rows, ".jsonl": self._jsonl_rows}.get(
            self.format, self._csv_rows)()
        for at, row in rows:
            self.rows += 1
            yield at, row

    def _csv(self, fh: io.TextIOBase) -> Any:
        if self.format == ".tsv":  # Common Voice style: tabs, quotes are text
            return csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        return csv.reader(fh)

    def _csv_rows(self) -> Iterator[tuple[At, dict[str, Any]]]:
        with self.path.open(newline="", encoding="utf-8-sig") as fh:
            reader = self._csv(fh)
            header: list[str] = next(reader, [])
            for cells in reader:
                # short rows keep only the cells they have, so a missing cell reads as missing
                yield At(self.path, line=reader.line_num), dict(zip(header, cells))

    def _jsonl_rows(self) -> Iterator[tuple[At, dict[str, Any]]]:
        with self.path.open(encoding="utf-8") as fh:
            for number, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                at = At(self.path, line=number)
                try:
                    row = json.loads(text)
                except json.JSONDecodeError as exc:
                    self.ctx.bad_row(at.problem(f"not valid JSON: {exc.msg} (column {exc.colno})"))
                    continue
                if not isinstance(row, dict):
                    self.ctx.bad_row(at.problem(f"expected a JSON object, found {type(row).__name__}"))
                    continue
                yield at, row

    def _parquet_rows(self) -> Iterator[tuple[At, dict[str, Any]]]:
        import pyarrow.parquet as pq

        number = 0
        for batch in pq.ParquetFile(self.path).iter_batches(batch_size=64):
            for row in batch.to_pylist():
                number += 1
                yield At(self.path, key=f"row {number}"), row


def require_columns(path: Path, header: list[str], columns: Iterable[str],
                    line: int | None = None) -> None:
    """A table without a column the spec names is a whole-file error, found before any row."""
    missing = [c for c in dict.fromkeys(columns) if c not in header]
    if missing:
        raise SourceError(Problem(f"missing column(s): {', '.join(missing)}", file=str(path),
                                  line=line, hint=f"the columns are: {', '.join(header)}"))


def folder_digest(label: str, folder: Path, files: list[Path]) -> FileDigest:
    """One lock entry for a folder of many files: the digest of every file's path and sha256."""
    listing = [[f.relative_to(folder).as_posix(), digest_file(f)] for f in files]
    return FileDigest(label, digest(listing), len(files))


def pick(row: dict[str, Any], column: str) -> Any:
    """A row's cell; a missing cell (absent key, short CSV row) is a RowError."""
    if column not in row:
        raise RowError(f"missing column {column!r}")
    return row[column]


def jsonable(value: Any, column: str) -> Any:
    """A cell as a JSON value: numpy scalars unwrapped, NaN as null, dates as ISO text. Bytes
    are refused, because binary data belongs in media, not in fields."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        raise RowError(f"column {column!r} holds binary data; name it as the image or audio column")
    if isinstance(value, dict):
        return {str(k): jsonable(v, column) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v, column) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


# media -----------------------------------------------------------------------------------------
def put_audio(ctx: SourceContext, samples: np.ndarray, rate: int) -> MediaRef:
    """Float samples, shape (n,) or (n, channels), as 16 kHz mono 16-bit WAV in the store."""
    mono = samples.mean(axis=1) if samples.ndim == 2 else samples
    if rate != AUDIO_RATE:
        import soxr

        mono = soxr.resample(mono, rate, AUDIO_RATE)
    return ctx.store.put(wav_bytes(np.asarray(mono, dtype=np.float64), AUDIO_RATE), "audio")


def decode_audio(source: Path | bytes, name: str) -> tuple[np.ndarray, int]:
    """Any format libsndfile reads (WAV, FLAC, OGG, MP3 with libsndfile >= 1.1)."""
    import soundfile

    try:
        decoded: tuple[np.ndarray, int] = soundfile.read(
            io.BytesIO(source) if isinstance(source, bytes) else source, dtype="float64", always_2d=True)
        return decoded
    except soundfile.SoundFileError as exc:
        raise RowError(f"cannot decode audio {name}: {exc}") from None


def open_image(source: Path | bytes, name: str) -> Image.Image:
    """An image file or encoded bytes as RGB: one mode, whatever the file's encoding."""
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as image:
            return image.convert("RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError) as exc:
        raise RowError(f"cannot decode image {name}: {exc}") from None


class MediaFiles:
    """Media the data names by file (relative to a folder the spec names) or holds as bytes.

    Each file is decoded and stored once per load, however many records share it (COCO: every
    object of an image); a file that fails fails every record that names it.
    """

    def __init__(self, ctx: SourceContext, folder: str | None, key: str) -> None:
        self.ctx, self.key = ctx, key
        self.folder = ctx.resolve(folder, key=key) if folder is not None else None
        self._done: dict[tuple[str, Path], MediaRef | RowError] = {}

    def path(self, *names: str) -> Path:
        """The first of ``names`` that exists under the folder (data may name it several ways)."""
        if self.folder is None:
            raise RowError(f"the data names file {names[0]!r} but {self.key} is not set")
        for name in names:
            # lexically, so that a folder of symlinks (a Hugging Face snapshot) stays readable
            candidate = Path(os.path.normpath(self.folder / name))
            if not inside(candidate, self.folder):
                raise RowError(f"file name {name!r} escapes {self.key}")
            if candidate.is_file():
                # a link that leads outside the data roots is refused, not read (issue 13)
                return check_within_roots(candidate, self.ctx.roots, self.key, name, self.ctx.spec_file)
        raise RowError(f"file {names[0]!r} not found in {self.key} ({self.folder})")

    def image(self, *names: str) -> MediaRef:
        return self._once("image", self.path(*names),
                          lambda p: put_image(self.ctx.store, open_image(p, repr(p.name))))

    def audio(self, *names: str) -> MediaRef:
        return self._once("audio", self.path(*names),
                          lambda p: put_audio(self.ctx, *decode_audio(p, repr(p.name))))

    def image_cell(self, cell: Any, column: str) -> MediaRef:
        """A cell holding encoded image bytes, a file name, or a Hugging Face {bytes, path}."""
        data = self._cell_data(cell, column)
        if isinstance(data, str):
            return self.image(data)
        return put_image(self.ctx.store, open_image(data, f"in column {column!r}"))

    def audio_cell(self, cell: Any, column: str) -> MediaRef:
        """A cell holding encoded audio bytes, a file name, or a Hugging Face {bytes, path}."""
        data = self._cell_data(cell, column)
        if isinstance(data, str):
            return self.audio(data)
        return put_audio(self.ctx, *decode_audio(data, f"in column {column!r}"))

    @staticmethod
    def _cell_data(cell: Any, column: str) -> bytes | str:
        if isinstance(cell, dict):  # Hugging Face Image/Audio storage: bytes, else a path
            cell = cell.get("bytes") or cell.get("path")
        if isinstance(cell, bytearray):
            cell = bytes(cell)
        if isinstance(cell, (bytes, str)) and cell:
            return cell
        raise RowError(f"column {column!r} holds {type(cell).__name__}, "
                       "not encoded media or a file name")

    def _once(self, kind: str, path: Path, load: Callable[[Path], MediaRef]) -> MediaRef:
        done = self._done.get((kind, path))
        if done is None:
            try:
                done = load(path)
            except RowError as exc:
                done = exc
            self._done[(kind, path)] = done
        if isinstance(done, RowError):
            raise done
        return done


def url_names(url: str) -> tuple[str, ...]:
    """File names to try for an image known only by URL (LVIS, Visual Genome): its last folder
    and name (``val2017/000000000139.jpg``, ``VG_100K_2/1.jpg``), then the bare name."""
    parts = url.rstrip("/").split("/")
    return ("/".join(parts[-2:]), parts[-1]) if len(parts) >= 2 else (parts[-1],)

"""Reading a file of answers made outside benchc (``benchc import``): JSON Lines and CSV/TSV
tables keyed by item id or rendered prompt, and the logs of lm-evaluation-harness, lmms-eval
and inspect-ai (read in ``harness_logs.py``). Each row becomes an ``AnswerRow`` with its line
number; anything unreadable is one ``RunError`` naming the file and line, with a hint. Which formats and columns
are read is documented in ``import_answers.py``."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchc.compiler.errors import Problem, RunError

FORMATS = ("auto", "jsonl", "csv", "lm-eval", "lmms-eval", "inspect")
KEYS = ("id", "prompt")
ID_COLUMNS = ("item_id", "id")
ANSWER_COLUMNS = ("response", "answer", "prediction", "output")
MEDIA_COLUMN, PROMPT_COLUMN, SAMPLE_COLUMN, STAGE_COLUMN = "media_sha256", "prompt", "sample", "stage"
EXAMPLES = 3
_SHA = re.compile(r"^[0-9a-f]{64}$")
_SPLIT = re.compile(r"[\s,;]+")


@dataclass(frozen=True)
class ImportOptions:
    format: str = "auto"
    key: str = "id"
    model: str | None = None
    stage: str | None = None  # the stage of rows that name none
    answer_column: str | None = None
    id_column: str | None = None
    allow_missing: bool = False
    ignore_unmatched: bool = False
    filter: str | None = None  # the lm-eval filter whose lines are read (default: the file's first)
    variant: str | None = None  # the variant (node) that answers keyed by record id go to


@dataclass(frozen=True)
class AnswerRow:
    """One row of the answers file: the answers (one per sample, from ``first_sample``) of the
    item its key names."""

    line: int
    key: str  # an item id, or a rendered prompt
    media: tuple[str, ...] | None
    stage: str | None
    first_sample: int
    texts: tuple[str, ...]
    target: str | None = None  # the harness's target, checked against the item's (another task's file?)
    file: str | None = None  # the file of the row, where several were read (a harness's output folder)

    @property
    def where(self) -> str:
        """``line N``, or ``FILE line N`` where a folder's files were read."""
        return f"line {self.line}" if self.file is None else f"{self.file} line {self.line}"


@dataclass(frozen=True)
class ParsedFile:
    format: str
    answer_field: str
    rows: list[AnswerRow]
    sha256: str  # of the bytes the rows were read from (read once: no other version is recorded)
    size: int
    note: str | None = None  # what was chosen in reading it (an lm-eval filter)


def problem_at(path: Path, line: int | None, message: str, hint: str | None = None) -> RunError:
    return RunError(Problem(message, file=str(path), line=line, hint=hint))


# reading the file ----------------------------------------------------------------------------

def detect_format(path: Path, data: bytes) -> str:
    """``csv`` for .csv/.tsv; ``inspect`` for .eval and a .json that is one JSON value (not JSON
    Lines); ``lmms-eval`` or ``lm-eval`` when the first object has their sample fields; else ``jsonl``."""
    from .harness_logs import is_lmms_07

    if path.suffix.lower() in (".csv", ".tsv"):
        return "csv"
    if path.suffix.lower() == ".eval":
        return "inspect"
    for _, obj in _json_lines(path, data, strict=False):
        if path.suffix.lower() == ".json" and isinstance(obj, dict) and "eval" in obj and "samples" in obj:
            return "inspect"  # a log on one line
        is_sample = isinstance(obj, dict) and "doc_id" in obj and ("resps" in obj or "filtered_resps" in obj)
        return ("lmms-eval" if is_lmms_07(obj) else "lm-eval") if is_sample else "jsonl"
    return "inspect" if path.suffix.lower() == ".json" else "jsonl"  # an indented .json: inspect's log


MAX_ANSWERS_BYTES = int(os.environ.get("BENCHC_MAX_ANSWERS_MB", "2048")) * 2**20
"""The largest answers file read (BENCHC_MAX_ANSWERS_MB, default 2048): `benchc import /dev/zero`
never ended."""


def _read_bytes(path: Path) -> bytes:
    try:
        if path.exists() and not path.is_file():  # a FIFO, a device (/dev/zero), a folder
            raise problem_at(path, None, "not a regular file", "give the path of an answers file")
        if path.exists() and path.stat().st_size > MAX_ANSWERS_BYTES:
            raise problem_at(path, None, f"larger than {MAX_ANSWERS_BYTES // 2**20} MB",
                             "raise the limit with BENCHC_MAX_ANSWERS_MB=N if the file is right")
        return path.read_bytes()
    except FileNotFoundError:
        raise problem_at(path, None, "no answers file",
                         "give the path of a JSONL, CSV or lm-eval samples file") from None
    except OSError as exc:
        raise problem_at(path, None, f"cannot read the answers file: {exc.strerror or exc}") from None


def _json_lines(path: Path, data: bytes, strict: bool = True) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; a line that is not UTF-8 JSON is an error
    naming it (``strict=False``: the iteration just stops there, for format detection)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            if not strict:
                return
            reason = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else f"not JSON ({exc.args[0].split(':')[0]})"
            raise problem_at(path, number, f"line {number} is {reason}",
                           "a JSON Lines file holds one JSON object per line") from None


def _table_rows(path: Path, data: bytes) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    """The header and (line, row) of a CSV/TSV file; a row with the wrong number of cells is
    an error naming its line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise problem_at(path, None, f"the file is not UTF-8 (byte {exc.start})", "save it as UTF-8") from None
    csv.field_size_limit(1 << 30)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
    try:
        header = next(reader)
    except StopIteration:
        raise problem_at(path, 1, "the file is empty", "the first line names the columns") from None
    except csv.Error as exc:
        raise problem_at(path, 1, f"cannot read the header: {exc}") from None

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        start = reader.line_num + 1
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise problem_at(path, start, f"cannot read the row: {exc}") from None
            if cells and any(c.strip() for c in cells):
                if len(cells) != len(header):
                    raise problem_at(path, start, f"the row has {len(cells)} cells, the header {len(header)}",
                                   "quote cells that hold the delimiter")
                yield start, dict(zip(header, cells))
            start = reader.line_num + 1

    return header, rows()


def read_answers(path: Path, options: ImportOptions) -> ParsedFile:
    """The rows of the answers file at ``path`` in ``options.format`` (``auto``: detected); a
    folder is an lm-eval or lmms-eval output folder (``read_samples_folder``)."""
    from .harness_logs import inspect_rows, lm_eval_rows

    if path.is_dir():
        return read_samples_folder(path, options)
    data = _read_bytes(path)
    fmt = detect_format(path, data) if options.format == "auto" else options.format
    if options.filter is not None and fmt not in ("lm-eval", "lmms-eval"):
        raise problem_at(path, None, f"--filter names an lm-eval filter; this is a {fmt} file")
    if fmt in ("lm-eval", "lmms-eval", "inspect"):
        read = (inspect_rows(path, data, options) if fmt == "inspect"
                else lm_eval_rows(path, list(_json_lines(path, data)), options))
        return ParsedFile(fmt, read.answer_field, read.rows, hashlib.sha256(data).hexdigest(), len(data), read.note)
    if fmt == "csv":
        header, table = _table_rows(path, data)
        columns = _columns(path, header, options, 1)
        field, rows = columns["answer"], [_table_row(path, line, row, columns) for line, row in table]
    else:
        field, rows = _jsonl_rows(path, data, options)
    return ParsedFile(fmt, field, rows, hashlib.sha256(data).hexdigest(), len(data))


_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<time>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")


def samples_files(folder: Path) -> dict[str, list[Path]]:
    """The ``samples_<task>_<datetime>.jsonl`` files of an lm-eval/lmms-eval ``--output_path``
    folder or of its model subfolder (one level down: never a deeper walk), by datetime."""
    runs: dict[str, list[Path]] = {}
    for pattern in ("samples_*.jsonl", "*/samples_*.jsonl"):
        try:
            found = sorted(folder.glob(pattern))
        except OSError:
            found = []
        for file in found:
            match = _SAMPLES_NAME.match(file.name)
            if match and file.is_file():
                runs.setdefault(match["time"], []).append(file)
    return runs


def read_samples_folder(folder: Path, options: ImportOptions) -> ParsedFile:
    """The rows of every task's samples file of the folder's latest run (lm-eval names its files
    by the run's start time, and writes a model's runs side by side; lm-eval's own readers take
    the latest too). Each row names its file; the source digest covers the files' names and bytes."""
    runs = samples_files(folder)
    if not runs:
        raise problem_at(folder, None, "the folder holds no lm-eval samples files (samples_<task>_<datetime>.jsonl)",
                         "give an answers file, or the --output_path folder of an lm-eval/lmms-eval "
                         "run made with --log_samples")
    latest = max(runs)
    rows: list[AnswerRow] = []
    formats: set[str] = set()
    fields: set[str] = set()
    notes: list[str] = []
    parts: list[str] = []
    for file in runs[latest]:
        parsed = read_answers(file, options)
        if parsed.format not in ("lm-eval", "lmms-eval"):
            raise problem_at(file, None, f"a {parsed.format} file among the samples files",
                             "the folder's samples_*.jsonl files are read as lm-eval or lmms-eval logs")
        name = str(file.relative_to(folder))
        formats.add(parsed.format)
        fields.add(parsed.answer_field)
        notes += [parsed.note] if parsed.note and parsed.note not in notes else []
        parts.append(f"{name}\0{parsed.sha256}\n")
        rows += [dataclasses.replace(row, file=name) for row in parsed.rows]
    if len(formats) > 1:
        raise problem_at(folder, None, "the folder mixes lm-eval and lmms-eval samples files",
                         "import one harness's files at a time")
    older = f"; {len(runs) - 1} older run(s) beside it not read" if len(runs) > 1 else ""
    note = "; ".join([f"{len(runs[latest])} samples file(s) of the run of {latest}{older}", *notes])
    size = sum(f.stat().st_size for f in runs[latest])
    source = hashlib.sha256("".join(parts).encode()).hexdigest()
    return ParsedFile(formats.pop(), "/".join(sorted(fields)), rows, source, size, note)


def _jsonl_rows(path: Path, data: bytes, options: ImportOptions) -> tuple[str, list[AnswerRow]]:
    columns: dict[str, str] | None = None
    out = []
    for line, obj in _json_lines(path, data):
        if not isinstance(obj, dict):
            raise problem_at(path, line, f"line {line} is a JSON {type(obj).__name__}, not an object",
                           "each line holds one object, e.g. {\"item_id\": ..., \"response\": ...}")
        if columns is None:
            columns = _columns(path, list(obj), options, line)
        out.append(_table_row(path, line, obj, columns))
    if columns is None:
        raise problem_at(path, None, "the file holds no answers", "one JSON object per line")
    return columns["answer"], out


def _columns(path: Path, names: list[str], options: ImportOptions, line: int) -> dict[str, str]:
    """The columns to read: answer, and the key (item id or prompt)."""
    answer = _pick(path, names, options.answer_column, ANSWER_COLUMNS, "answer", "--answer-column", line)
    if options.key == "prompt":
        if PROMPT_COLUMN not in names:
            raise problem_at(path, line, f"--key prompt needs a column {PROMPT_COLUMN!r}; found {_listed(names)}",
                           "or import by item id with --key id")
        return {"answer": answer, "key": PROMPT_COLUMN}
    return {"answer": answer, "key": _pick(path, names, options.id_column, ID_COLUMNS, "item id", "--id-column", line)}


def _pick(path: Path, names: list[str], chosen: str | None, candidates: tuple[str, ...], what: str, flag: str,
          line: int) -> str:
    if chosen is not None:
        if chosen not in names:
            raise problem_at(path, line, f"no column {chosen!r} ({flag}); found {_listed(names)}")
        return chosen
    found = [c for c in candidates if c in names]
    if len(found) == 1:
        return found[0]
    if found:
        raise problem_at(path, line, f"several {what} columns: {_listed(found)}", f"name the one to read with {flag}")
    raise problem_at(path, line, f"no {what} column ({' or '.join(candidates)}); found {_listed(names)}",
                   f"name it with {flag}")


def _listed(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names[:12]) + (" ..." if len(names) > 12 else "") if names else "none"


def _table_row(path: Path, line: int, row: dict[str, Any], columns: dict[str, str]) -> AnswerRow:
    key = cell_text(path, line, row.get(columns["key"]), columns["key"])
    text = cell_text(path, line, row.get(columns["answer"]), columns["answer"])
    stage = row.get(STAGE_COLUMN)
    return AnswerRow(line, key, cell_media(path, line, row.get(MEDIA_COLUMN)),
                     None if stage in (None, "") else str(stage), _sample(path, line, row.get(SAMPLE_COLUMN)),
                     (text,))


def cell_text(path: Path, line: int, value: Any, column: str) -> str:
    """A cell as text: a string, or an integer; anything else is refused, not converted."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    what = "missing" if value is None else f"a {type(value).__name__}"
    raise problem_at(path, line, f"{column!r} is {what}, not text",
                   'write "" for an empty answer, or leave the row out (see --allow-missing)')


def _sample(path: Path, line: int, value: Any) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise problem_at(path, line, f"sample {value!r} is not a sample index (0, 1, ...)")


def cell_media(path: Path, line: int, value: Any) -> tuple[str, ...] | None:
    if value is None or value == "" or value == []:
        return None
    hint = "benchc show --json MANIFEST lists each item's media sha256"
    if not isinstance(value, (str, list)) or not all(isinstance(v, str)
                                                     for v in (value if isinstance(value, list) else [])):
        raise problem_at(path, line, f"{MEDIA_COLUMN} {value!r} is not a sha256 or a list of them", hint)
    parts = value if isinstance(value, list) else _SPLIT.split(value.strip())
    shas = tuple(p.strip().lower() for p in parts if p.strip())
    bad = [s for s in shas if not _SHA.match(s)]
    if bad:
        raise problem_at(path, line, f"{MEDIA_COLUMN} {bad[0]!r} is not a sha256 (64 hex digits)", hint)
    return shas

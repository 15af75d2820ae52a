"""``benchc new``: write a first, working consistency spec for the user's own data.

From a table (``.csv``, ``.tsv``, ``.jsonl`` or ``.parquet``) the header (or first JSON object)
is read to find:

* the id column: ``id``, ``qid`` or ``question_id`` (else refused: pass ``id_column``);
* a question column: ``question``, ``prompt``, ``text`` or ``input``;
* an answer column: ``answer``, ``label`` or ``target`` (optional: accuracy is scored when
  there is one);
* an image column: ``image``, ``image_path``, ``image_file``, ``image_name`` or ``img``
  (optional; its file names are looked up next to the table or in an ``images/`` folder beside
  it).

Names match case-insensitively; each can be given instead (``id_column``, ``question_column``,
``answer_column``, ``image_column``). From a folder of images, each image is a record.

The spec tests one perturbation against the unperturbed item (``kind``; default ``text`` for a
table, ``image`` for a folder):

* ``text``: the question as asked (``text.original``) and rephrased by two fixed templates
  (``text.paraphrase_template``, ``params.index`` swept);
* ``image``: the image as given (``image.original``) and rotated by 90 and 180 degrees
  (``image.rotate``); the prompt is the question, or "Describe this image." without one.

Then ``[prompt]``, ``[answer]`` (the first line of each answer), ``general.accuracy`` (when there
is an answer column) and ``general.consistency``, each section with a comment saying what it
does. Data paths in the spec are relative to its folder; a spec whose data would lie outside
its folder is refused (benchc refuses such paths when it compiles), and so is an existing file.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .compiler.errors import BenchcError, Problem

TABLE_FORMATS = (".csv", ".tsv", ".jsonl", ".parquet")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")
ID_COLUMNS = ("id", "qid", "question_id")
QUESTION_COLUMNS = ("question", "prompt", "text", "input")
ANSWER_COLUMNS = ("answer", "label", "target")
IMAGE_COLUMNS = ("image", "image_path", "image_file", "image_name", "img")
KINDS = ("text", "image")
PARAPHRASES = ("Please answer: {{ text }}", "{{ text }} Answer briefly.")
ROTATIONS = (90, 180)
DESCRIBE = "Describe this image."
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ScaffoldError(BenchcError):
    """The data cannot be scaffolded, or the spec cannot be written there (exit 2)."""


@dataclass(frozen=True)
class Table:
    """What the scaffold needs to know of a table: its columns and its first row."""

    columns: list[str]
    first: dict[str, Any]


def default_out(data: Path) -> Path:
    """Where ``benchc new DATA`` writes without ``-o``: next to the data, named after it
    (``qa.csv`` -> ``qa.toml``; a folder ``photos/`` -> ``photos.toml`` beside it)."""
    data = Path(data)
    table = data.is_file() or data.suffix.lower() in TABLE_FORMATS
    return data.with_name(f"{data.stem if table else data.name}.toml")


def scaffold(data: Path, out: Path, *, kind: str | None = None, id_column: str | None = None,
             question_column: str | None = None, answer_column: str | None = None,
             image_column: str | None = None) -> Path:
    """Write a working consistency spec for ``data`` (a table or an image folder) to ``out``
    and return its path. Raises ScaffoldError (a user error, exit 2) when it cannot."""
    data, out = Path(data), Path(out)
    if kind is not None and kind not in KINDS:
        raise ScaffoldError(Problem(f"unknown kind {kind!r}", key="--kind", hint=f"use one of: {', '.join(KINDS)}"))
    if not data.exists():
        raise ScaffoldError(Problem("no such file or folder", file=str(data)))
    if out.suffix != ".toml":
        raise ScaffoldError(Problem("a spec file must end in .toml", file=str(out), key="--out"))
    if out.exists() or out.is_symlink():
        raise ScaffoldError(Problem("the file exists; benchc new never overwrites a file", file=str(out),
                                    key="--out", hint="choose another name with -o, or delete the file first"))
    if not out.parent.is_dir():
        raise ScaffoldError(Problem(f"the folder {out.parent} does not exist", file=str(out), key="--out"))
    relative = _relative(data, out)
    if data.is_dir():
        if any(c is not None for c in (id_column, question_column, answer_column, image_column)):
            raise ScaffoldError(Problem("--id, --question, --answer and --image name columns of a table; "
                                        f"{data} is a folder of images", file=str(data)))
        text = _folder_spec(data, relative, out, kind or "image")
    else:
        text = _table_spec(data, relative, out, kind, id_column, question_column, answer_column, image_column)
    try:
        with out.open("x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
            fh.write(text)
    except FileExistsError:
        raise ScaffoldError(Problem("the file exists; benchc new never overwrites a file", file=str(out),
                                    key="--out")) from None
    return out


# -- paths --------------------------------------------------------------------------------------


def _relative(data: Path, out: Path) -> str:
    """``data`` relative to the spec's folder, which it must not escape."""
    folder = out.parent.resolve()
    target = data.resolve()
    if target != folder and folder not in target.parents:
        raise ScaffoldError(Problem(
            f"the data ({data}) is outside the spec's folder ({out.parent}); benchc reads data only "
            "from the spec's folder (and --data-root folders), so this spec could not find it",
            file=str(out), key="--out",
            hint=f"write the spec next to the data: -o {default_out(data)}"))
    return Path(os.path.relpath(target, folder)).as_posix()


def _relative_folder(folder: Path, out: Path) -> str:
    return Path(os.path.relpath(folder.resolve(), out.parent.resolve())).as_posix()


# -- reading the data ---------------------------------------------------------------------------


def read_table(path: Path) -> Table:
    """The columns and the first row of a CSV, TSV, JSON Lines or Parquet file."""
    fmt = next((f for f in TABLE_FORMATS if path.name.lower().endswith(f)), None)
    if fmt is None:
        raise ScaffoldError(Problem(f"not a table benchc reads ({path.suffix or 'no extension'})", file=str(path),
                                    hint=f"use a {', '.join(TABLE_FORMATS)} file, or a folder of images"))
    try:
        if fmt in (".csv", ".tsv"):
            with path.open(newline="", encoding="utf-8-sig") as fh:  # as the table loader reads it
                reader = (csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if fmt == ".tsv"
                          else csv.reader(fh))
                header = next(reader, [])
                first = next(reader, None)
            if not header:
                raise ScaffoldError(Problem("the file is empty (no header row)", file=str(path)))
            if first is None:
                raise ScaffoldError(Problem("the file has a header but no rows", file=str(path), line=1))
            return Table(header, dict(zip(header, first)))
        if fmt == ".jsonl":
            with path.open(encoding="utf-8") as fh:
                for number, line in enumerate(fh, start=1):
                    if line.strip():
                        try:
                            row = json.loads(line)
                        except json.JSONDecodeError as exc:
                            raise ScaffoldError(Problem(f"not valid JSON: {exc.msg}", file=str(path),
                                                        line=number)) from None
                        if not isinstance(row, dict):
                            raise ScaffoldError(Problem(f"expected a JSON object, found {type(row).__name__}",
                                                        file=str(path), line=number))
                        return Table(list(row), row)
            raise ScaffoldError(Problem("the file has no rows", file=str(path)))
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        columns = list(parquet.schema_arrow.names)
        for batch in parquet.iter_batches(batch_size=1):
            rows = batch.to_pylist()
            if rows:
                return Table(columns, rows[0])
        raise ScaffoldError(Problem("the file has no rows", file=str(path)))
    except UnicodeDecodeError:
        raise ScaffoldError(Problem("not UTF-8 text", file=str(path), hint="save the table as UTF-8")) from None
    except OSError as exc:
        raise ScaffoldError(Problem(f"cannot read it: {exc.strerror or exc}", file=str(path))) from None


def _pick(table: Table, given: str | None, names: Sequence[str], flag: str, path: Path) -> str | None:
    """A given column (which must exist), or the first of ``names`` the table has (any case)."""
    if given is not None:
        if given not in table.columns:
            raise ScaffoldError(Problem(f"no column {given!r}", file=str(path), key=flag,
                                        hint=f"the columns are: {', '.join(table.columns)}"))
        return given
    by_lower = {}
    for column in table.columns:
        by_lower.setdefault(column.lower(), column)
    return next((by_lower[n] for n in names if n in by_lower), None)


def _image_folder_for(table: Table, column: str, data: Path, out: Path) -> str | None:
    """The ``images`` folder (relative to the spec) holding the first row's image file, or None
    when the cell holds the image itself (Parquet bytes)."""
    cell = table.first.get(column)
    if isinstance(cell, dict):  # a Hugging Face {bytes, path} cell
        if cell.get("bytes"):
            return None
        cell = cell.get("path")
    if isinstance(cell, (bytes, bytearray)):
        return None
    if not isinstance(cell, str) or not cell.strip():
        raise ScaffoldError(Problem(f"the first row's {column!r} cell is empty or not a file name", file=str(data),
                                    hint="name an image column with --image, or use --kind text"))
    for folder in (data.parent, data.parent / "images"):  # inside the spec's folder, as the data is
        if (folder / cell).is_file():
            return _relative_folder(folder, out)
    raise ScaffoldError(Problem(
        f"the first row's image {cell!r} (column {column!r}) is neither in {data.parent} nor in "
        f"{data.parent / 'images'}", file=str(data),
        hint="put the images next to the table or in an images/ folder beside it"))


def _images_in(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)


# -- writing the spec ---------------------------------------------------------------------------


def _q(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def _name(data: Path, what: str) -> str:
    stem = data.stem if data.is_file() else data.name
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") or "my-benchmark"
    return f"{slug}/{what}"


def _header(data: Path, relative: str, out: Path, summary: str) -> list[str]:
    spec = out.name
    return [
        f"# A first consistency benchmark for {relative}, written by `benchc new`: {summary}.",
        "# Edit it freely; every key is explained in benchc's docs/spec.md, and",
        "# `benchc ops`, `benchc sources` and `benchc metrics` list what else you can use.",
        "#",
        f"#   benchc validate {spec} --data        # check the spec against the data",
        f"#   benchc preview  {spec} RECORD_ID     # look at one record's items",
        f"#   benchc eval     {spec} -o out --model MODEL   # compile, run, score, report",
        "#",
        "# MODEL is a backend string, e.g. an OpenAI-compatible server (vLLM, Ollama):",
        "#   openai:MODEL_NAME,base_url=http://127.0.0.1:8000/v1,api_key_env=none",
        "",
        "# [benchmark]: what this benchmark is. Bump `version` whenever you change what it measures",
        "# (major: items, prompts or metrics change; minor: items are only added; patch: comments).",
        "[benchmark]",
        f"name = {_q(_name(data, summary.split()[0]))}",
        'version = "0.1.0"',
        "seed = 0                      # the root of every derived random choice",
        f"description = {_q(f'Scaffolded from {data.name}: {summary}')}",
        "",
    ]


def _table_spec(data: Path, relative: str, out: Path, kind: str | None, id_given: str | None,
                question_given: str | None, answer_given: str | None, image_given: str | None) -> str:
    table = read_table(data)
    columns = ", ".join(table.columns)
    id_col = _pick(table, id_given, ID_COLUMNS, "--id", data)
    if id_col is None:
        raise ScaffoldError(Problem(
            f"no id column: looked for {', '.join(ID_COLUMNS)} (the columns are: {columns})", file=str(data),
            hint="name a column of unique record ids with --id COLUMN (ids name every item and seed "
                 "every random choice, so they must be stable)"))
    question = _pick(table, question_given, QUESTION_COLUMNS, "--question", data)
    answer = _pick(table, answer_given, ANSWER_COLUMNS, "--answer", data)
    image = _pick(table, image_given, IMAGE_COLUMNS, "--image", data)
    kind = kind or "text"
    if kind == "text" and question is None:
        raise ScaffoldError(Problem(
            f"no question column: looked for {', '.join(QUESTION_COLUMNS)} (the columns are: {columns})",
            file=str(data), hint="name the column to ask with --question COLUMN"
                                 + (", or test the images with --kind image" if image else "")))
    if kind == "image" and image is None:
        raise ScaffoldError(Problem(
            f"no image column: looked for {', '.join(IMAGE_COLUMNS)} (the columns are: {columns})",
            file=str(data), hint="name the column of image files with --image COLUMN, or use --kind text"))
    images = _image_folder_for(table, image, data, out) if image else None

    # Record fields are named by their column; a column name that is not a plain identifier
    # (spaces, dots: a dotted field path) is mapped to a plain field name instead.
    fields = {"question": question, "answer": answer}
    mapped = any(c is not None and not _PLAIN_NAME.match(c) for c in fields.values())
    field = {role: (role if mapped else column) for role, column in fields.items() if column is not None}

    summary = ("paraphrase invariance of the answers" if kind == "text"
               else "rotation invariance of the answers")
    lines = _header(data, relative, out, summary)
    lines += [
        f"# [source]: one record per row of {data.name}. `id` names each record's id column: ids must be",
        "# unique and stable (item ids are built from them and they seed every random choice).",
        "# Paths are relative to this file's folder.",
        "[source]",
        'loader = "table"',
        f"path = {_q(relative)}",
        f"id = {_q(id_col)}",
    ]
    if mapped:
        mapping = ", ".join(f"{role} = {_q(column)}" for role, column in fields.items() if column is not None)
        lines += ["# record field = column (only these fields are read; add others the prompt needs)",
                  f"columns = {{ {mapping} }}"]
    if image:
        lines += [f"image_column = {_q(image)}    # the record's image (every item's requests carry it)"]
        if images is not None:
            lines += [f"images = {_q(images)}    # the folder the image column's file names are in"]
    lines.append("")
    if kind == "text":
        lines += _text_nodes(field["question"], with_image=image is not None)
    else:
        lines += _image_nodes(f"{{{{ record.{field['question']} }}}}" if question else DESCRIBE)
    lines += _answer_and_metrics(kind, field.get("answer"), free_form=question is None)
    return "\n".join(lines)


def _folder_spec(folder: Path, relative: str, out: Path, kind: str) -> str:
    if kind != "image":
        raise ScaffoldError(Problem(f"{folder} is a folder: only --kind image tests a folder of images",
                                    file=str(folder), key="--kind",
                                    hint="for text, give a table (.csv, .tsv, .jsonl, .parquet) "
                                         "with a question column"))
    if not _images_in(folder):
        raise ScaffoldError(Problem(f"no image files ({', '.join(IMAGE_EXTENSIONS)}) in the folder", file=str(folder)))
    lines = _header(folder, relative, out, "rotation invariance of image descriptions")
    lines += [
        f"# [source]: one record per image file under {folder.name}/ (read recursively); a record's id",
        "# is the file's path relative to the folder. Paths are relative to this file's folder.",
        "[source]",
        'loader = "image_folder"',
        f"folder = {_q(relative)}",
        "",
    ]
    lines += _image_nodes(DESCRIBE)
    lines += _answer_and_metrics("image", None, free_form=True)
    return "\n".join(lines)


def _text_nodes(question_field: str, *, with_image: bool) -> list[str]:
    templates = ", ".join(_q(t) for t in PARAPHRASES)
    return [
        "# [[node]]: the perturbation graph. Only nodes that no other node reads become items:",
        "# here `original` (the question as asked: the reference) and `paraphrased` (one item",
        "# per template: `params.index = { grid = [...] }` makes one variant per value). Every",
        "# item gets the attribute perturbation = its node id, and index = its template.",
        "[[node]]",
        'id = "question"              # the record\'s question as text, read by the two nodes below',
        'op = "text.field"',
        'input = "record"',
        f"params.field = {_q(question_field)}",
        "",
        "[[node]]",
        'id = "original"',
        'op = "text.original"',
        'input = "question"',
        "",
        "[[node]]",
        'id = "paraphrased"',
        'op = "text.paraphrase_template"',
        'input = "question"',
        f"params.templates = [{templates}]",
        "params.index = { grid = [0, 1] }",
        "",
        "# [prompt]: what the model is asked (Jinja2): `text` is the item's text and `record.FIELD`",
        "# a field of its record" + ("; the record's image goes with every request." if with_image else "."),
        "[prompt]",
        'template = "{{ text }}"',
        "",
    ]


def _image_nodes(prompt: str) -> list[str]:
    return [
        "# [[node]]: the perturbation graph. Only nodes that no other node reads become items:",
        "# here `original` (the image as given: the reference) and `rotated` (one item per angle:",
        "# `params.angle = { grid = [...] }` makes one variant per value; expand = true keeps the",
        "# whole picture). Every item gets the attribute perturbation = its node id, and angle.",
        "[[node]]",
        'id = "original"',
        'op = "image.original"',
        'input = "image"',
        "",
        "[[node]]",
        'id = "rotated"',
        'op = "image.rotate"',
        'input = "image"',
        f"params.angle = {{ grid = [{', '.join(str(a) for a in ROTATIONS)}] }}",
        "params.expand = true",
        "",
        "# [prompt]: what the model is asked about each image (Jinja2: `record.FIELD` is a field",
        "# of the item's record). The image goes with every request.",
        "[prompt]",
        f"template = {_q(prompt)}",
        "",
    ]


def _answer_and_metrics(kind: str, answer_field: str | None, *, free_form: bool) -> list[str]:
    variant = "template" if kind == "text" else "angle"
    lines = [
        "# [answer]: how each answer is read before any metric sees it: here its first non-blank",
        "# line. Other steps: normalize, first_sentence, yes_no, number, option_letter, regex.",
        "[answer]",
        'extract = ["first_line"]',
        "",
        "# [[metric]]: what is scored (`benchc metrics` lists every metric and its parameters).",
    ]
    if answer_field is not None:
        lines += [
            f"# Accuracy: the share of answers equal to the record's {answer_field!r} after normalisation",
            "# (case, punctuation, articles, number words), per perturbation, with a 95% bootstrap",
            '# interval over records. correct = "word" also accepts the answer inside a longer reply.',
            "[[metric]]",
            'name = "general.accuracy"',
            f"target = {_q(answer_field)}",
            'by = ["perturbation"]',
            "",
        ]
    else:
        lines += ["# There is no answer column, so accuracy is not scored: add a general.accuracy metric",
                  '# with target = "COLUMN" once the data has the right answers.']
    lines += [
        "# Consistency: the share of perturbed items whose answer agrees with the answer to their",
        "# record's `original` item (relation \"same\": the answer should not change), per",
        f"# perturbation and {variant}, with a 95% bootstrap interval over records.",
    ]
    if free_form:
        lines += ["# Free-form answers rarely agree word for word, so two answers agree when their",
                  "# sentence embeddings (MiniLM) have a cosine similarity above `threshold`."]
    lines += [
        "[[metric]]",
        'name = "general.consistency"',
        'over = "perturbation"         # the attribute that names the perturbation ...',
        'reference = "original"        # ... and its value on the reference item',
    ]
    if free_form:
        lines += ['match = "embedding"', "threshold = 0.7"]
    lines += [f'by = ["perturbation", "{"index" if kind == "text" else "angle"}"]', ""]
    return lines

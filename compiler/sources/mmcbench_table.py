"""MMCBench's released text-corruption tables (CSV): one clean text and 23 corrupted versions.

Columns: an id column (``path`` for text2speech, ``key`` for text2image), the clean text
(``transcription`` or ``caption``), then one column per corruption. Each table is declared with
the attributes that tell it apart (severity heavy/light, selection hard/random).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from ..errors import Problem, SourceError
from ..values import Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams

MMCBENCH_TEXT_CORRUPTIONS = (
    "substitute_char_by_ocr", "substitute_char_by_keyboard", "insert_char_randomly",
    "substitute_char_randomly", "swap_char_randomly", "delete_char_randomly",
    "uppercase_char_randomly", "repeat_characters", "leet_letters", "whitespace_perturbation",
    "substitute_with_homoglyphs", "synonym_replacement", "random_deletion", "random_swap",
    "random_insertion", "misspell_word", "abbreviate_word",
    "multilingual_dictionary_based_code_switch", "checklist", "close_homophones_swap",
    "back_translation", "style_paraphraser", "paraphrase",
)


class Table(SourceParams):
    path: str
    severity: str = Field(pattern=r"^(heavy|light)$")
    selection: str = Field(pattern=r"^(hard|random)$")


class Params(SourceParams):
    tables: list[Table] = Field(min_length=1, description="[{path, severity = heavy|light, selection = hard|random}]")
    id_column: str = Field("path", description="column of unique row ids")
    text_column: str = Field("transcription", description="column of the clean text")


TextTableParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@SOURCES.add("mmcbench.text_table")
class MMCBenchTextTable(SourceLoader):
    """MMCBench's released text tables: one record per row, with its clean and 23 corrupted texts."""

    version = "1.0.0"
    Params = Params
    record_id = "<selection>-<severity>/<key>"
    record_fields = {"key": "the row's id (`id_column`)", "text": "the clean text (`text_column`)",
                     "table": "<selection>-<severity>, e.g. hard-heavy",
                     "severity": "heavy or light (also an item attribute)",
                     "selection": "hard or random (also an item attribute)",
                     "versions.<corruption>": "the text under each of the 23 corruptions, and "
                                              "versions.clean the clean text"}

    def load(self, params: TextTableParams, ctx: SourceContext) -> LoadedSource:
        records: list[Record] = []
        files = []
        for index, table in enumerate(params.tables):
            path = ctx.resolve(table.path, key=f"source.tables[{index}].path")
            rows = self._read(path, table, params, ctx, records)
            files.append(ctx.file_digest(path, rows))
        return LoadedSource(records=records, files=files)

    def _read(self, path: Path, table: Table, params: TextTableParams, ctx: SourceContext,
              out: list[Record]) -> int:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            self._check_header(path, header, params)
            rows = 0
            for row in reader:
                rows += 1
                record = self._record(row, table, params, ctx, path, reader.line_num)
                if record is not None:
                    out.append(record)
        return rows

    def _check_header(self, path: Path, header: Sequence[str], params: TextTableParams) -> None:
        missing = [c for c in (params.id_column, params.text_column, *MMCBENCH_TEXT_CORRUPTIONS)
                   if c not in header]
        if missing:
            raise SourceError(Problem(
                f"missing column(s): {', '.join(missing)}", file=str(path), line=1,
                hint=f"the header has: {', '.join(header[:8])}...; "
                     "set source.id_column / source.text_column if yours differ"))

    def _record(self, row: dict[str, str | None], table: Table, params: TextTableParams,
                ctx: SourceContext, path: Path, line: int) -> Record | None:
        key = row.get(params.id_column)
        clean = row.get(params.text_column)
        empty = [c for c in (params.id_column, params.text_column, *MMCBENCH_TEXT_CORRUPTIONS)
                 if not row.get(c)]
        if empty or key is None or clean is None:
            ctx.bad_row(Problem(f"empty cell(s) in column(s) {', '.join(empty)}",
                                file=str(path), line=line))
            return None
        corrupted = {c: row[c] for c in MMCBENCH_TEXT_CORRUPTIONS}
        fields = {"key": key, "text": clean, "table": f"{table.selection}-{table.severity}",
                  "severity": table.severity, "selection": table.selection, "versions": corrupted}
        corrupted["clean"] = clean
        return Record(id=f"{table.selection}-{table.severity}/{key}", fields=fields,
                      attrs={"severity": table.severity, "selection": table.selection})

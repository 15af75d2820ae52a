"""Small specs written into a test's folder, with a copy of one bundled table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import SPECS

TABLE = "text2speech_heavy_corrupted_hard_1k_first50.csv"

_HEAD = """\
[benchmark]
name = "test/{name}"
version = "1.0.0"
seed = 0

[source]
loader = "mmcbench.text_table"

[[source.tables]]
path = "data/{{table}}"
severity = "heavy"
selection = "hard"

[sample]
n = {n}

[[node]]
id = "text"
op = "mmcbench.released_text"
input = "record"
params.corruption = {{{{ grid = {grid} }}}}

"""


def text_table_spec(name: str, grid: str, rest: str, n: int | str = "{n}") -> str:
    """A spec template over the released texts of the bundled table: benchmark test/``name``, a
    sample of ``n``, the text node swept over ``grid`` (a TOML list of corruptions), then ``rest``.
    Fill ``{table}`` (and ``{n}`` when ``n`` is left so) with str.format: double the braces in
    ``rest``."""
    return _HEAD.format(name=name, n=n, grid=grid) + rest


# The judge decodes with pocketsphinx's narrower first pass (`make demo`'s until whisper): a fifth of the
# default's CPU per clip, for the many tests that run this spec to check the run, not the judge.
MINI_SPEC = text_table_spec("mini", '["clean", "leet_letters", "random_swap"]', """\
[prompt]
template = "{{{{ text }}}}"

[[stage]]
id = "speech"
task = "text-to-speech"

[[stage]]
id = "transcript"
task = "speech-to-text"
backend = "pocketsphinx:beam=1e-30"
input = "speech"

[[metric]]
name = "mmcbench.consistency"
stage = "transcript"
by = ["severity"]
""")


def write_mini(folder: Path, n: int = 4, table: str = TABLE, text: str | None = None) -> Path:
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(SPECS / "mmcbench" / "data" / TABLE, data / table)
    spec = folder / "mini.toml"
    spec.write_text(text if text is not None else MINI_SPEC.format(table=table, n=n))
    return spec


FROM_TABLE = """
[[node]]
id = "source"
op = "text.rephrase_from_table"
input = "record"
params.field = "texts"
"""
"""The node that makes one text item per string of a row's ``texts`` list."""


def write_rows_spec(folder: Path, name: str, rows: list[dict[str, Any]], nodes: str) -> Path:
    """``rows`` as rows.jsonl (keyed by "id") and a spec.toml over them in ``folder``: benchmark
    test/``name``, then ``nodes``, each item's text as its prompt."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "spec.toml"
    spec.write_text(f"""\
[benchmark]
name = "test/{name}"
version = "1.0.0"

[source]
loader = "table"
path = "rows.jsonl"
id = "id"
{nodes}
[prompt]
template = "{{{{ text }}}}"
""")
    return spec


QUESTION_NODE = """
[[node]]
id = "question"
op = "text.field"
input = "record"
params.field = "question"
"""
"""The node that reads a table's ``question`` column (no braces: safe inside ``str.format``)."""

_QUESTIONS_HEAD = """
[benchmark]
name = "test/NAME"
version = "0.1.0"

[source]
loader = "table"
path = "questions.csv"
id = "id"
""" + QUESTION_NODE


def questions_spec(name: str, rest: str) -> str:
    """A spec over the test's questions.csv (id, question, ...) whose first node reads the
    question; ``rest`` follows it (it may hold ``str.format`` fields: the head holds no braces)."""
    return _QUESTIONS_HEAD.replace("NAME", name) + rest

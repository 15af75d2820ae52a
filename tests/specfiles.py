"""Small specs written into a test's folder, with a copy of one bundled table."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import SPECS

TABLE = "text2speech_heavy_corrupted_hard_1k_first50.csv"

MINI_SPEC = """\
[benchmark]
name = "test/mini"
version = "1.0.0"
seed = 0

[source]
loader = "mmcbench.text_table"

[[source.tables]]
path = "data/{table}"
severity = "heavy"
selection = "hard"

[sample]
n = {n}

[[node]]
id = "text"
op = "mmcbench.released_text"
input = "record"
params.corruption = {{ grid = ["clean", "leet_letters", "random_swap"] }}

[prompt]
template = "{{{{ text }}}}"

[[stage]]
id = "speech"
task = "text-to-speech"

[[stage]]
id = "transcript"
task = "speech-to-text"
backend = "pocketsphinx"
input = "speech"

[[metric]]
name = "mmcbench.consistency"
stage = "transcript"
by = ["severity"]
"""


def write_mini(folder: Path, n: int = 4, table: str = TABLE, text: str | None = None) -> Path:
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(SPECS / "mmcbench" / "data" / TABLE, data / table)
    spec = folder / "mini.toml"
    spec.write_text(text if text is not None else MINI_SPEC.format(table=table, n=n))
    return spec

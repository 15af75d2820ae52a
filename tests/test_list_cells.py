"""A CSV or TSV cell holding a JSON list is the list an op needs (issue 25 item 7): it compiles,
`validate --data` checks it, and an op's field error names the spec's file and line."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import cli

CSV = '''id,question,options,answer
q1,What is the capital of France?,"[""Paris"", ""Rome"", ""Berlin"", ""Madrid""]",Paris
q2,Who wrote Hamlet?,"[""Dickens"", ""Shakespeare"", ""Austen"", ""Twain""]",Shakespeare
'''
SPEC = '''[benchmark]
name = "t/csv-options"
version = "1.0.0"

[source]
loader = "table"
path = "q.csv"
id = "id"

[[node]]
id = "question"
op = "text.field"
input = "record"
params.field = "question"

[[node]]
id = "permuted"
op = "text.permute_options"
input = "question"
params.options = "options"
params.answer = "answer"
params.shift = { grid = [0, 1, 2, 3] }

[prompt]
template = "{{ text }}\\nAnswer with the letter."

[answer]
extract = ["option_letter"]

[[metric]]
name = "general.worst_case"
target = "{{ attrs.expected }}"
'''


def _write(folder: Path, csv: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "q.csv").write_text(csv)
    (folder / "spec.toml").write_text(SPEC)
    return folder / "spec.toml"


def test_a_json_list_in_a_csv_cell_is_the_option_list(tmp_path: Path) -> None:
    spec = _write(tmp_path, CSV)
    assert cli("validate", "--data", spec).returncode == 0
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    items = [json.loads(line) for line in cli("show", tmp_path / "m", "--format", "jsonl").stdout.splitlines()]
    assert len(items) == 8
    shifted = next(i for i in items if i["item_id"] == "q2#question/permuted[shift=1]")
    assert "B. Dickens\nC. Shakespeare" in shifted["prompt"] and shifted["attrs"]["expected"] == "C"


def test_a_cell_that_is_no_list_is_refused_by_validate_and_compile_with_its_line(tmp_path: Path) -> None:
    spec = _write(tmp_path, CSV.replace('"[""Paris"", ""Rome"", ""Berlin"", ""Madrid""]"', "Paris; Rome"))
    checked = cli("validate", "--data", spec)
    assert checked.returncode == 2 and "Traceback" not in checked.stderr
    assert "spec.toml:20 node[1].params.options: 1 of 2 records' field 'options' is not a list of texts" \
           in checked.stderr and "JSON list" in checked.stderr
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "cache")
    assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "m").exists()
    assert "spec.toml:20 node[1].params.options: item 'q1'" in done.stderr and 'holds "Paris; Rome"' in done.stderr

"""Plain `benchc validate` (no `--data`) catches what costs nothing to check (issue 28 item 11)."""

from __future__ import annotations

from pathlib import Path

from conftest import cli
from specfiles import write_rows_spec

ROWS = [{"id": "q1", "question": "What is the capital of France?", "answer": "Paris"}]
NODE = """
[[node]]
id = "question"
op = "text.field"
input = "record"
params.field = "question"
"""

def test_validate_without_data_checks_names_files_and_limits(tmp_path: Path) -> None:
    """Issue 28 item 11: plain `validate` said ok for a node input that names no node, for a data
    file that does not exist, and for max_new_tokens = 2**63 - 1."""
    spec = write_rows_spec(tmp_path, "small", ROWS, NODE + '\n[[node]]\nid = "low"\nop = "text.case"\n'
                                                       'input = "questoin"\nparams.mode = "lower"\n')
    done = cli("validate", spec)
    assert done.returncode == 2 and "node[1].input: no node 'questoin'" in done.stderr
    assert "did you mean 'question'?" in done.stderr
    spec.write_text(spec.read_text().replace('"questoin"', '"question"').replace('"rows.jsonl"', '"gone.jsonl"'))
    done = cli("validate", spec)
    assert done.returncode == 2 and "source.path" in done.stderr and "gone.jsonl" in done.stderr
    spec.write_text(spec.read_text().replace('"gone.jsonl"', '"rows.jsonl"') + "\n[generation]\n"
                    "max_new_tokens = 9223372036854775807\n")
    done = cli("validate", spec)
    assert done.returncode == 2 and "generation.max_new_tokens" in done.stderr and "1000000" in done.stderr

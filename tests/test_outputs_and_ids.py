"""What a compile refuses before it writes: output folders that are not manifests, sources whose
record ids repeat. And the memo is published once, never replaced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchc.compiler.errors import SourceError
from benchc.compiler.source_loading import _refuse_duplicate_ids
from benchc.compiler.sources import LoadedSource
from benchc.compiler.spec.parse import load_spec
from benchc.compiler.values import Record
from conftest import cli

SPEC = """\
[benchmark]
name = "test/ids"
version = "1.0.0"

[source]
loader = "table"
path = "t.csv"
id = "uid"

[prompt]
template = "{{ record.q }}"
"""


def _spec(tmp_path: Path, rows: str) -> Path:
    (tmp_path / "t.csv").write_text("uid,q\n" + rows)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    return spec


def test_a_repeated_record_id_is_refused_with_its_rows(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "a,one\nb,two\na,three\n")
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert done.returncode == 2, done.stderr
    assert "t.csv:4: duplicate record id 'a' (first at line 2)" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "m").exists()


def test_the_compiler_refuses_repeated_ids_from_any_loader(tmp_path: Path) -> None:
    """The backstop behind every loader's own check (a plugin loader may have none)."""
    spec = load_spec(_spec(tmp_path, "a,one\n"))
    source = LoadedSource([Record("x", {}), Record("y", {}), Record("x", {"q": 2})])
    with pytest.raises(SourceError) as caught:
        _refuse_duplicate_ids(spec, source)
    assert "1 record id(s) occur more than once: 'x'" in str(caught.value)


def test_an_output_folder_with_other_files_is_never_replaced(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "a,one\nb,two\n")
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    done = cli("compile", spec, "-o", precious, "--cache", tmp_path / "c")
    assert done.returncode != 0 and "is not a benchc manifest" in done.stderr
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_a_manifest_folder_is_replaced_and_readable_by_others(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "a,one\nb,two\n")
    out = tmp_path / "m"
    cli("compile", spec, "-o", out, "--cache", tmp_path / "c", check=True)
    cli("compile", spec, "-o", out, "--cache", tmp_path / "c", check=True)  # memo hit, replaces
    assert (out / "lock.json").is_file() and os.stat(out).st_mode & 0o777 == 0o755
    memos = list((tmp_path / "c" / "compiled").iterdir())
    assert len(memos) == 1 and not [p for p in memos[0].parent.iterdir() if p.name.startswith(".")]

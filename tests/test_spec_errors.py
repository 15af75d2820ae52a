"""Bad input: one clear message (file, line, key path, hint), non-zero exit, no traceback,
nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli
from specfiles import MINI_SPEC, TABLE, write_mini


def _mutated(tmp_path: Path, old: str, new: str) -> Path:
    text = MINI_SPEC.format(table=TABLE, n=4)
    assert old in text
    return write_mini(tmp_path, text=text.replace(old, new, 1))


def _compile_fails(tmp_path: Path, spec: Path) -> str:
    out = tmp_path / "manifest"
    done = cli("compile", spec, "-o", out, "--cache", tmp_path / "cache")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists(), "a failed compile left a manifest behind"
    assert not list(tmp_path.glob(".manifest.*")), "a failed compile left a staging folder"
    assert done.stderr.startswith("error: ")
    return done.stderr


CASES = [
    # (old, new, expected fragments)
    ('op = "mmcbench.released_text"', 'op = "mmcbench.released_txt"',
     ["mini.toml:", "node[0].op", "unknown op 'mmcbench.released_txt'", "did you mean 'mmcbench.released_text'"]),
    ("seed = 0", 'seed = "zero"', ["mini.toml:4", "benchmark.seed", "integer"]),
    ('input = "record"', 'input = "record"\ncolour = "red"', ["mini.toml:21", "node[0].colour", "unknown key"]),
    ('path = "data/', 'path = "data/missing-', ["source.tables[0].path", "not found"]),
    ("{{ text }}", "{{ txt }}", ["mini.toml:24", "prompt.template", "undefined variable 'txt'", "did you mean 'text'"]),
    ('"leet_letters"', '"leet_leters"', ["node[0].params.corruption", "leet_leters"]),
    ('by = ["severity"]', 'bye = ["severity"]', ["metric[0]", "bye", "unknown parameter"]),
    ('by = ["severity"]', 'by = ["sevrity"]',
     ["metric[0].by", "no item has the attribute 'sevrity'", "did you mean 'severity'"]),
    ('by = ["severity"]', 'by = ["severity"]\nreference = "clen"',
     ["metric[0].reference", "no item has corruption = 'clen'", "did you mean 'clean'"]),
]


@pytest.mark.parametrize("old,new,fragments", CASES, ids=[c[1][:24] for c in CASES])
def test_bad_spec_gets_one_clear_message(tmp_path: Path, old: str, new: str, fragments: list[str]) -> None:
    message = _compile_fails(tmp_path, _mutated(tmp_path, old, new))
    for fragment in fragments:
        assert fragment in message, message


def test_validate_reports_every_error_at_once(tmp_path: Path) -> None:
    text = MINI_SPEC.format(table=TABLE, n=4)
    text = text.replace('op = "mmcbench.released_text"', 'op = "nope"').replace(
        'name = "mmcbench.consistency"', 'name = "mmcbench.consistensy"').replace(
        'backend = "pocketsphinx:beam=1e-30"', 'backend = "pocketsfinx"')
    done = cli("validate", write_mini(tmp_path, text=text))
    assert done.returncode == 2
    for fragment in ("node[0].op", "metric[0].name", "did you mean 'mmcbench.consistency'",
                     "stage[1].backend", "did you mean 'pocketsphinx'"):
        assert fragment in done.stderr, done.stderr


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    spec = _mutated(tmp_path, 'version = "1.0.0"', 'version = "1.0.0')
    assert "mini.toml:3" in _compile_fails(tmp_path, spec)


def test_template_cannot_reach_python_internals(tmp_path: Path) -> None:
    spec = _mutated(tmp_path, "{{ text }}", "{{ ''.__class__.__mro__ }}")
    assert "unsafe" in _compile_fails(tmp_path, spec)


def test_source_path_cannot_escape_the_data_roots(tmp_path: Path) -> None:
    spec = _mutated(tmp_path, 'path = "data/', 'path = "../../../etc/')
    message = _compile_fails(tmp_path, spec)
    assert "escapes the data roots" in message


def test_malformed_row_is_named_or_skipped(tmp_path: Path) -> None:
    spec = write_mini(tmp_path)
    table = tmp_path / "data" / TABLE
    lines = table.read_text().splitlines(keepends=True)
    cells = lines[3].split(",")
    cells[1] = ""
    lines[3] = ",".join(cells)
    table.write_text("".join(lines))
    message = _compile_fails(tmp_path, spec)
    assert f"{TABLE}:4" in message and "transcription" in message
    skipping = spec.read_text().replace('loader = "mmcbench.text_table"',
                                        'loader = "mmcbench.text_table"\non_error = "skip"')
    spec.write_text(skipping)
    done = cli("compile", spec, "-o", tmp_path / "m2", "--cache", tmp_path / "cache", check=True)
    import json
    assert json.loads((tmp_path / "m2" / "lock.json").read_text())["source"]["skipped_rows"] == 1
    assert done.returncode == 0


def test_a_pinned_source_that_changed_is_refused(tmp_path: Path) -> None:
    spec = _mutated(tmp_path, 'loader = "mmcbench.text_table"',
                    'loader = "mmcbench.text_table"\npin = "' + "0" * 64 + '"')
    message = _compile_fails(tmp_path, spec)
    assert "mini.toml:8 source.pin: source data changed" in message and "bump the version" in message


def test_an_override_reaches_into_an_array_of_tables_by_number(tmp_path: Path) -> None:
    from benchc.compiler.spec.parse import load_spec

    spec = write_mini(tmp_path)
    loaded = load_spec(spec, ["metric.0.bootstrap=7"])
    assert loaded.spec.metric[0].params["bootstrap"] == 7
    for override, words in (("metric.5.bootstrap=7", "not an entry of an array of"),
                            ("metric.x.bootstrap=7", "not an entry of an array of"),
                            ("metric.0=1", "replaces an entry of an array")):
        done = cli("compile", spec, "-o", tmp_path / "m", "--set", override)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr

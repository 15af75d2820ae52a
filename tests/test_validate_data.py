"""`benchc validate` says it checked the spec only; `benchc validate --data` loads the source
(no ops, nothing written) and checks the record fields, media and data paths the spec names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchc import api
from benchc.compiler.errors import SpecError
from benchc.compiler.validate_data import template_fields
from conftest import SPECS, cli

CSV = "id,question,answer,colour\nq1,What colour is it?,red,red\nq2,What shape is it?,circle,blue\n"

SPEC = """\
[benchmark]
name = "tiny"
version = "1.0.0"

[source]
loader = "table"
path = "data.csv"
id = "id"

[[node]]
id = "question"
op = "text.field"
params.field = "question"

[prompt]
template = "Answer briefly. {{ text }} ({{ record.question }})"

[[metric]]
name = "general.worst_case"
target = "answer"
"""


def write(folder: Path, text: str = SPEC) -> Path:
    (folder / "data.csv").write_text(CSV)
    spec = folder / "spec.toml"
    spec.write_text(text)
    return spec


def line_of(spec: Path, fragment: str) -> int:
    return next(n for n, line in enumerate(spec.read_text().splitlines(), start=1) if fragment in line)


def test_plain_validate_says_the_data_was_not_loaded(tmp_path: Path) -> None:
    done = cli("validate", write(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "spec only: data not loaded; `--data` also loads the source" in done.stdout


def test_a_good_spec_passes_and_nothing_is_written(tmp_path: Path) -> None:
    spec = write(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    done = cli("validate", "--data", spec, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "data: 2 record(s) loaded; the first 2 checked (2 pass the filters)" in done.stdout
    assert "spec only" not in done.stdout
    assert sorted(tmp_path.rglob("*")) == before  # no manifest, no cache, no store


def test_a_misspelt_field_in_the_prompt_template(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC.replace("record.question }}", "record.questoin }}"))
    assert cli("validate", spec).returncode == 0  # the spec alone cannot tell
    done = cli("validate", "--data", spec)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = line_of(spec, "questoin")
    assert f"{spec}:{line} prompt.template: no record has the field 'questoin'" in done.stderr
    assert "hint: did you mean 'question'?" in done.stderr


def test_a_misspelt_metric_target_and_node_field_are_reported_together(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC.replace('target = "answer"', 'target = "anwser"')
                 .replace('params.field = "question"', 'params.field = "qestion"'))
    done = cli("validate", "--data", spec)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{spec}:{line_of(spec, 'anwser')} metric[0].target: no record has the field 'anwser'" in done.stderr
    assert "hint: did you mean 'answer'?" in done.stderr
    assert f"{spec}:{line_of(spec, 'qestion')} node[0].params.field: no record has the field 'qestion'" \
        in done.stderr


def test_filter_and_sample_fields(tmp_path: Path) -> None:
    text = SPEC + '\n[[filter]]\nwhere = "colur"\nequals = "red"\n\n[sample]\nstratify = "answr"\nn = 1\n'
    done = cli("validate", "--data", write(tmp_path, text))
    assert done.returncode == 2
    assert "filter[0].where: no record has the field 'colur'" in done.stderr
    assert "hint: did you mean 'colour'?" in done.stderr
    assert "sample.stratify: no record has the field 'answr'" in done.stderr


def test_a_data_path_that_escapes_its_root(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC.replace('path = "data.csv"', 'path = "../../etc/passwd"'))
    done = cli("validate", "--data", spec)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{spec}:{line_of(spec, 'passwd')} source.path: path '../../etc/passwd' escapes the data roots" \
        in done.stderr


def test_a_missing_data_file(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC.replace('path = "data.csv"', 'path = "dta.csv"'))
    done = cli("validate", "--data", spec)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "source.path: file 'dta.csv' not found" in done.stderr


def test_a_bundled_spec_with_its_data_under_a_data_root(tmp_path: Path) -> None:
    spec = tmp_path / "question_rephrasing.toml"
    shutil.copy(SPECS / "mm_r3" / "question_rephrasing.toml", spec)
    assert cli("validate", "--data", spec).returncode == 2  # its data is not beside the copy
    done = cli("validate", "--data", spec, "--data-root", SPECS / "mm_r3")
    assert done.returncode == 0, done.stderr
    assert "data: 24 record(s) loaded" in done.stdout


def test_a_record_media_that_is_not_there(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    text = (SPECS / "mm_r3" / "question_rephrasing.toml").read_text().replace("{{ text }}", "{{ record.question }}")
    spec.write_text(text + '\n[[node]]\nid = "gray"\nop = "image.grayscale"\ninput = "imgae"\n')
    with pytest.raises(SpecError) as caught:
        api.validate_data(spec, data_roots=[SPECS / "mm_r3"])
    [problem] = caught.value.problems
    assert problem.key == "node[1].input" and problem.message == "no record has an image named 'imgae'"
    assert problem.hint == "did you mean 'image'?"


def test_the_api_reports_what_it_read(tmp_path: Path) -> None:
    resolved, report = api.validate_data(write(tmp_path), limit=1)
    assert resolved.loaded.spec.benchmark.name == "tiny"
    assert (report.records, report.checked, report.kept, report.skipped) == (2, 1, 1, 0)


@pytest.mark.parametrize("template,expected", [
    ("{{ record.question }}", [("question", True)]),
    ("{{ record.object.name }} at {{ record.object.bbox[0] }}", [("object.name", True), ("object.bbox", True)]),
    ("{{ record['answer'] }}", [("answer", True)]),
    ("{% if record.hint is defined %}{{ record.hint }}{% endif %}{{ record.x }}", [("hint", False), ("x", False)]),
    ("{{ record.y | default('') }} {{ record.items() }} {{ text }} {{ attrs.kind }}", []),
])
def test_template_fields(template: str, expected: list[tuple[str, bool]]) -> None:
    assert template_fields(template) == expected

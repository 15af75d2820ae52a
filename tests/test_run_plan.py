"""Cache carry-over and `benchc plan`: request keys hold no spec version, so after a version
bump the unchanged items are answered from the response store; the plan counts, per stage and
backend, what is cached, what would run and what cannot be known before an earlier stage runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchc import api
from benchc.cli import main
from conftest import SPECS
from support import rule_backends  # noqa: F401  (registers the test-echo backend)

QR = SPECS / "mm_r3" / "question_rephrasing.toml"


FOLLOW_UP = '''
[[stage]]
id = "answer"

[[stage]]
id = "check"
input = "answer"
template = "Are you sure that {{ answer }}?"
'''


def _spec(folder: Path, edit=None, data_edit=None) -> Path:
    if not (folder / "data").exists():
        shutil.copytree(QR.parent / "data" / "easy_vqa_rephrasings", folder / "data" / "easy_vqa_rephrasings")
    spec = folder / QR.name
    spec.write_text(edit(QR.read_text()) if edit else QR.read_text())
    if data_edit:
        table = folder / "data" / "easy_vqa_rephrasings" / "questions.jsonl"
        table.write_text(data_edit(table.read_text()))
    return spec


def _edit_question(rows: str, record: str) -> str:
    out = []
    for line in rows.splitlines():
        row = json.loads(line)
        if row["id"] == record:
            row["questions"][1] += " Answer briefly."
        out.append(json.dumps(row) + "\n")
    return "".join(out)


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.common = {"cache_dir": root / "cache", "store_dir": root / "store"}

    def compile(self, spec: Path, name: str) -> Path:
        return api.compile(spec, self.root / name, overrides=["sample.n=3"], progress=False,
                           **self.common).manifest_dir

    def plan(self, manifest: Path, model: str = "test-echo") -> list:
        return api.plan(manifest, model=model, **self.common)

    def run(self, manifest: Path, name: str, model: str = "test-echo") -> list:
        return api.run(manifest, self.root / name, model=model, progress=False, **self.common)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_a_version_bump_reuses_every_stored_answer_and_an_edit_reruns_only_its_items(project: Project) -> None:
    v1 = project.compile(_spec(project.root / "v1"), "m1")
    [before] = project.plan(v1)
    assert (before.requests, before.cached, before.to_run, before.unknown) == (12, 0, 12, 0)
    assert not (project.root / "store").exists()  # a plan writes nothing
    assert before.backend == "test-echo" and before.stage == "answer"
    [ran] = project.run(v1, "r1")
    assert (ran.cached, ran.ran) == (0, 12)
    bumped = project.compile(_spec(project.root / "v2", lambda t: t.replace('version = "1.0.0"', 'version = "2.0.0"')),
                             "m2")
    [plan] = project.plan(bumped)
    assert (plan.requests, plan.cached, plan.to_run) == (12, 12, 0)  # keys hold no version
    record = api.read_manifest(v1).items()["record_id"][0]  # one sampled record: edit one of its questions
    edited = project.compile(_spec(project.root / "v3", lambda t: t.replace('version = "1.0.0"', 'version = "3.0.0"'),
                                   lambda rows: _edit_question(rows, record)), "m3")
    [plan] = project.plan(edited)
    assert (plan.requests, plan.cached, plan.to_run) == (12, 11, 1)
    [ran] = project.run(edited, "r3")
    assert (ran.cached, ran.ran) == (plan.cached, plan.to_run)


def test_a_later_stage_is_unknown_until_its_input_stage_has_run(project: Project) -> None:
    spec = _spec(project.root / "two", lambda t: t + FOLLOW_UP)
    manifest = project.compile(spec, "m")
    answer, check = project.plan(manifest)
    assert (answer.requests, answer.to_run) == (12, 12)
    assert (check.requests, check.cached, check.to_run, check.unknown, check.waits_on) == (0, 0, 0, 12, "answer")
    assert "12 more unknown until stage 'answer' has run" in check.line()
    project.run(manifest, "r")
    answer, check = project.plan(manifest)
    assert (answer.cached, check.requests, check.cached, check.unknown) == (12, 12, 12, 0)
    answer, check = project.plan(manifest, model="test-echo:suffix=yes")  # another model: all new
    assert (answer.to_run, check.unknown, check.waits_on) == (12, 12, "answer")


def test_plan_command(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = project.compile(_spec(project.root / "v1"), "m")
    args = ["plan", str(manifest), "--model", "test-echo", "--store", str(project.root / "store"),
            "--cache", str(project.root / "cache")]
    assert main(args) == 0
    assert capsys.readouterr().out == "answer: 12 requests to test-echo (0 cached, 12 to run)\n"
    assert main([*args, "--format", "json"]) == 0
    [stage] = json.loads(capsys.readouterr().out)
    assert stage == {"stage": "answer", "backend": "test-echo", "requests": 12, "cached": 0, "to_run": 12,
                     "unknown": 0, "waits_on": None}
    assert main([*args, "--backend", "nope=test-echo"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["plan", str(manifest)]) == 2 and "no model was given" in capsys.readouterr().err


def test_run_plan_prints_the_plan_and_answers_nothing(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = project.compile(_spec(project.root / "v1"), "m")
    args = ["run", str(manifest), "--model", "test-echo", "--store", str(project.root / "store"),
            "--cache", str(project.root / "cache")]
    assert main([*args, "--plan"]) == 0
    assert capsys.readouterr().out == "answer: 12 requests to test-echo (0 cached, 12 to run)\n"
    assert main(args) == 2 and "needs --out" in capsys.readouterr().err  # no run folder, no --plan
    assert main([*args, "-o", str(project.root / "run")]) == 0
    capsys.readouterr()
    assert main([*args, "--plan"]) == 0
    assert capsys.readouterr().out == "answer: 12 requests to test-echo (12 cached, 0 to run)\n"

"""Version discipline: a spec under specs/ with a committed lock in generated/ cannot change
content (spec or source data) at the lock's version; the compile (and `benchc lock`) asks for a
bump and says what changed, `benchc lock --check` too. Scratch work is not refused."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchc import api
from benchc.compiler.diff.version import SKIP_ENV, VersionNotBumped, committed_lock_path
from conftest import SPECS, cli

QR = SPECS / "mm_r3" / "question_rephrasing.toml"
TEMPLATE, EDITED = 'template = "{{ text }}"', 'template = "Q: {{ text }}"'


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project layout: specs/mm_r3/question_rephrasing.toml with its data, and its lock
    written by `benchc lock` into generated/."""
    spec = tmp_path / "specs" / "mm_r3" / QR.name
    shutil.copytree(QR.parent / "data" / "easy_vqa_rephrasings", spec.parent / "data" / "easy_vqa_rephrasings")
    shutil.copy(QR, spec)
    api.write_lock(spec, tmp_path / "generated", tmp_path / "cache", tmp_path / "work", tmp_path / "store")
    return tmp_path


def _spec(tree: Path) -> Path:
    return tree / "specs" / "mm_r3" / QR.name


def _compile(tree: Path, **kwargs):
    return api.compile(_spec(tree), tree / "out", cache_dir=tree / "cache", store_dir=tree / "store",
                       progress=False, **kwargs)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_committed_lock_sits_in_generated_beside_specs(tree: Path) -> None:
    assert committed_lock_path(_spec(tree)) == tree / "generated" / "mm_r3" / "question_rephrasing.lock.json"
    assert committed_lock_path(tree / "elsewhere" / "x.toml") is None
    assert _compile(tree).lock["item_count"] == 96  # unchanged: compiles


def test_an_edit_at_the_same_version_is_refused_and_a_bump_accepted(tree: Path) -> None:
    _edit(_spec(tree), TEMPLATE, EDITED)
    with pytest.raises(VersionNotBumped) as caught:
        _compile(tree)
    problem = caught.value.problems[0]
    assert problem.key == "benchmark.version" and problem.line is not None
    assert "still 3.0.0" in problem.message and "bump [benchmark].version" in problem.hint
    assert _compile(tree, check_version=False).lock["item_count"] == 96  # the API's opt-out
    assert _compile(tree, overrides=["sample.n=2"]).lock["item_count"] == 8  # a --set variant is not the spec
    _edit(_spec(tree), 'version = "3.0.0"', 'version = "4.0.0"')
    assert _compile(tree).lock["benchmark"]["version"] == "4.0.0"


@pytest.mark.slow
def test_the_refusal_names_what_changed_since_the_locks_commit(tree: Path) -> None:
    _git(tree, "init", "-q")
    _git(tree, "add", "specs/mm_r3/question_rephrasing.toml", "generated")
    _git(tree, "commit", "-q", "-m", "lock")
    _edit(_spec(tree), TEMPLATE, EDITED)
    done = cli("compile", _spec(tree), "-o", tree / "out", "--cache", tree / "cache", "--store", tree / "store")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert 'prompt.template: "{{ text }}" -> "Q: {{ text }}"' in done.stderr
    assert "bump [benchmark].version" in done.stderr and "question_rephrasing.toml:" in done.stderr
    skipped = cli("compile", _spec(tree), "-o", tree / "out", "--cache", tree / "cache", "--store", tree / "store",
                  env={SKIP_ENV: "1"})
    assert skipped.returncode == 0, skipped.stderr
    lock = cli("lock", _spec(tree), "--generated", tree / "generated", "--cache", tree / "cache",
               "--store", tree / "store")
    assert lock.returncode == 2 and "prompt.template" in lock.stderr  # `benchc lock` does not paper over it
    check = cli("lock", "--check", _spec(tree), "--generated", tree / "generated", "--cache", tree / "cache",
                "--store", tree / "store")
    assert check.returncode == 1
    assert 'prompt.template: "{{ text }}" -> "Q: {{ text }}"' in check.stderr
    assert "spec_digest" in check.stderr and "bump [benchmark].version" in check.stderr
    assert "benchc diff" in check.stderr and "@" in check.stderr


def test_a_digest_moved_by_benchc_code_does_not_stop_a_compile_but_fails_the_check(tree: Path) -> None:
    """The spec file is as committed, but the lock's spec digest is another (as when a new op or
    metric default changes every spec's document): compiles go on; `lock --check` says why."""
    lock_file = tree / "generated" / "mm_r3" / "question_rephrasing.lock.json"
    lock = json.loads(lock_file.read_text())
    lock["spec_digest"] = "0" * 64
    lock_file.write_text(json.dumps(lock))
    _git(tree, "init", "-q")
    _git(tree, "add", "specs/mm_r3/question_rephrasing.toml", "generated")
    _git(tree, "commit", "-q", "-m", "lock")
    assert _compile(tree).lock["item_count"] == 96
    problems = api.check_lock(_spec(tree), tree / "generated", tree / "cache", tree / "work", tree / "store")
    assert len(problems) == 1 and "moved with benchc's code" in problems[0].message


def test_a_changed_source_row_at_the_same_version_is_refused(tree: Path) -> None:
    table = _spec(tree).parent / "data" / "easy_vqa_rephrasings" / "questions.jsonl"
    _edit(table, '"answer": "rectangle"', '"answer": "square"')
    with pytest.raises(VersionNotBumped) as caught:
        _compile(tree)
    assert "source data changed" in caught.value.problems[0].message
    assert "source.digest" in caught.value.problems[0].message


def test_specs_without_a_committed_lock_are_not_checked(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "scratch" / QR.name
    outside.parent.mkdir()
    shutil.copytree(QR.parent / "data", outside.parent / "data")
    outside.write_text(QR.read_text().replace(TEMPLATE, EDITED))
    api.compile(outside, tmp_path / "o1", cache_dir=tree / "cache", store_dir=tree / "store", progress=False)
    (tree / "generated" / "mm_r3" / "question_rephrasing.lock.json").unlink()
    _edit(_spec(tree), TEMPLATE, EDITED)
    assert _compile(tree).lock["item_count"] == 96

"""A secret written into a spec is refused before anything is compiled, with its key path and
line and never its value (issue 28 item 5: a key in a judge's backend string reached spec.json
and was refused only at score)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchc.compiler.secrets import secret_kinds
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
KEYS = {"openai": "sk-proj-9fQ2xLr7Tz4mWv8bN1cK5yHs3dJ6gPa0T3BlbkFJ9fQ2xLr7Tz4mWv8bN1",
        "anthropic": "sk-ant-api03-9fQ2xLr7Tz4mWv8bN1cK5yHs3dJ6gPa0",
        "aws": "AKIAIOSFODNN7EXAMPLE", "github": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}


@pytest.mark.parametrize("where", ["judge", "api_key_env", "base_url"])
def test_a_key_in_a_spec_is_refused_at_validate_and_compile(tmp_path: Path, where: str) -> None:
    key = KEYS["openai"]
    backend = {"judge": f"openai:gpt-4o-mini,api_key_env={key}",
               "api_key_env": f"openai:gpt-4o-mini,api_key_env={KEYS['anthropic']}",
               "base_url": f"openai:m,base_url=https://u:{key}@example.invalid/v1"}[where]
    spec = write_rows_spec(tmp_path, "secret", ROWS, NODE)
    spec.write_text(spec.read_text() + f"""
[[metric]]
name = "judge.score"
parser = "yes_no"
template = "Is {{{{ answer }}}} right?"
backend = "{backend}"
""")
    for command in (("validate", spec), ("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")):
        done = cli(*command)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "spec.toml:" in done.stderr and "metric[0].backend" in done.stderr and "secret" in done.stderr
        assert key not in done.stderr and KEYS["anthropic"] not in done.stderr and "9fQ2xLr7" not in done.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("kind", list(KEYS))
def test_each_vendors_key_is_found(kind: str) -> None:
    assert secret_kinds(f"token = {KEYS[kind]}")


@pytest.mark.parametrize("text", ["openai:gpt-4o-mini,api_key_env=OPENAI_API_KEY", "api_key_env=none",
                                  "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                                  "What is the capital of France?", "sk-learn is a library"])
def test_ordinary_strings_are_not_secrets(text: str) -> None:
    assert secret_kinds(text) == []


"""Every command the README shows runs as written (issue 31: "a test keeps every command shown in
the README running"; docs/tutorial.md's are run by tests/test_tutorial.py).

The README's ```sh blocks run in order, each command in bash, in an empty folder holding the
bundled specs (and the venv), as a user would after setting up: each must succeed. Two are not
run here because the suite is where they run: `make demo` (the session's demo fixture runs its
exact command, checked against the Makefile by tests/test_text2speech_e2e.py) and `make test`
(this suite). The run in steps asks what the README's earlier `benchc eval` asked, so its answers
come from the store (checked: nothing is asked again), and scores as `benchc eval` does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, SPECS

NOT_RUN_HERE = {"make demo", "make test"}
"""README commands this suite runs by being itself (see the module docstring)."""


def readme_blocks() -> list[list[str]]:
    """The README's ```sh blocks, each as its command lines (comments and blanks dropped)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    out = []
    for block in blocks:
        lines = [line.split("  #")[0].rstrip() for line in block.splitlines()]
        out.append([line for line in lines if line and not line.startswith("#")])
    return out


def _commands() -> list[str]:
    commands = [line for block in readme_blocks() for line in block]
    assert NOT_RUN_HERE <= set(commands)  # the README still shows them (else drop them here)
    return [c for c in commands if c not in NOT_RUN_HERE]


def test_every_readme_command_runs(tmp_path: Path) -> None:
    (tmp_path / "specs").symlink_to(SPECS)
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    commands = _commands()
    assert any(c.startswith("benchc eval") for c in commands) and any(c.startswith("benchc run") for c in commands)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    outputs = []
    for command in commands:
        done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{command}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        outputs.append((command, done.stdout + done.stderr))
    ran = next(out for command, out in outputs if command.startswith("benchc run"))
    assert re.search(r"\((\d+) cached, 0 run\)", ran), ran  # every answer from the store
    # the run in steps and `benchc eval` give the same scores
    steps = json.loads((tmp_path / "out" / "steps" / "run" / "scores.json").read_text())
    at_once = json.loads((tmp_path / "out" / "at-once" / "run" / "scores.json").read_text())
    assert steps["metrics"] == at_once["metrics"] and steps["manifest_digest"] == at_once["manifest_digest"]
    assert (tmp_path / "out" / "finetune").is_dir()

"""Every command that takes a path, given `/`, a file where a folder is expected, a folder where a
file is expected, a FIFO and `/dev/zero` (issue 28): one clear message each, exit 2, no traceback,
no hang, and nothing written outside the folders the command was given."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from conftest import cli

# (command, arguments around the path P; OUT is a fresh output folder)
COMMANDS = {
    "validate": ["validate", "P"], "validate --data": ["validate", "--data", "P"],
    "compile": ["compile", "P", "-o", "OUT"], "show": ["show", "P"], "preview": ["preview", "P", "q1"],
    "run": ["run", "P", "-o", "OUT", "--model", "echo"], "plan": ["plan", "P", "--model", "echo"],
    "score": ["score", "P"], "report": ["report", "P"], "report-html": ["report-html", "P"],
    "eval": ["eval", "P", "-o", "OUT", "--model", "echo"], "export": ["export", "P", "-f", "jsonl", "-o", "OUT"],
    "import answers": ["import", "MANIFEST", "P", "-o", "OUT"],
    "import manifest": ["import", "P", "ANSWERS", "-o", "OUT"],
    "diff": ["diff", "P", "P"], "diff-runs": ["diff-runs", "P", "P"], "check-disjoint": ["check-disjoint", "P", "P"],
    "reproduce": ["reproduce", "P"],
}
KINDS = ["root", "file", "folder", "fifo", "dev-zero"]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import SPECS

    root = tmp_path_factory.mktemp("paths")
    cli("compile", SPECS / "examples" / "paraphrase.toml", "-o", root / "m", "--cache", root / "c", check=True)
    return root / "m"


def _path(kind: str, tmp_path: Path) -> Path:
    if kind == "root":
        return Path("/")
    if kind == "dev-zero":
        return Path("/dev/zero")
    path = tmp_path / f"given-{kind}"
    if kind == "file":
        path.write_text("not what benchc reads\n")
    elif kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    return path


def _unblock(fifo: Path, hung: list[bool]) -> threading.Timer:
    """After 20 s, a writer opens and closes the FIFO: a reader blocked on it gets end of file."""
    def write() -> None:
        hung.append(True)
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
    timer = threading.Timer(20.0, write)
    timer.start()
    return timer


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_path_that_is_not_what_the_command_reads(command: str, kind: str, tmp_path: Path, manifest: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    given = _path(kind, tmp_path)
    (tmp_path / "answers.jsonl").write_text('{"item_id": "x", "response": "y"}\n')
    args = [str(given) if a == "P" else str(tmp_path / "out") if a == "OUT" else str(manifest) if a == "MANIFEST"
            else str(tmp_path / "answers.jsonl") if a == "ANSWERS" else a for a in COMMANDS[command]]
    before = sorted(p.name for p in tmp_path.iterdir())
    hung: list[bool] = []
    timer = _unblock(given, hung) if kind == "fifo" else None
    try:
        done = cli(*args, cwd=work)
    finally:
        if timer is not None:
            timer.cancel()
    assert not hung, f"benchc {' '.join(args)} waited on the FIFO"
    assert done.returncode == 2, (args, done.returncode, done.stdout[-300:], done.stderr[-600:])
    assert "Traceback" not in done.stderr and done.stderr.startswith("error: "), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not (tmp_path / "out").exists()
    assert {p.name for p in work.iterdir()} <= {".benchc"}

"""The command line as a boundary: a usage error is one line (and a hint naming the command's
help), exit 2, no traceback; ``--version``; ``--format json`` on every command that reports
(one JSON document on stdout, nothing else there); ``-v/-vv`` logging to stderr; the default
folders spelled once."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from benchc import api
from benchc.cli import main
from conftest import ROOT
from test_reproduce import FILES, Tree, _copy, recorded, runs  # noqa: F401 (fixtures)
from test_run_plan import _spec  # also registers the test-echo backend


def _benchc(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``benchc ARGS`` in a fresh process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "benchc.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


# usage errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,message,command", [
    (["compile", "spec.toml"], "error: Missing option '--out' / '-o'.", "compile"),
    (["nosuchcmd"], "error: No such command 'nosuchcmd'.", ""),
    (["compil", "spec.toml"], "error: No such command 'compil'. Did you mean 'compile'?", ""),
    (["show", "m", "--bogus"], "error: No such option: --bogus", "show"),
    (["--bogus", "validate", "spec.toml"], "error: No such option: --bogus", ""),
    (["run", "m", "-o", "r", "--workers", "many"], "error: Invalid value for '--workers' / '-j'", "run"),
    (["show", "m", "--limit", "x"], "error: Invalid value for '--limit' / '-n'", "show"),
    (["diff-runs", "a", "b", "--resamples", "5"], "error: Invalid value for '--resamples'", "diff-runs"),
    (["diff"], "error: Missing argument", "diff"),
])
def test_a_usage_error_is_one_line_and_a_hint(args: list[str], message: str, command: str) -> None:
    done = _benchc(*args)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 2 and lines[0].startswith(message), done.stderr
    assert lines[1] == f"Try 'benchc {command + ' ' if command else ''}--help' for help."


def test_no_command_prints_the_help() -> None:
    done = _benchc()
    assert done.returncode == 2 and "Usage: benchc [OPTIONS] COMMAND" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    done = _benchc(flag)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == f"benchc {importlib.metadata.version('benchc')}\n"


def test_the_installed_version_is_the_sources() -> None:
    import benchc

    assert importlib.metadata.version("benchc") == benchc.__version__


# --format json -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A spec (three records of question_rephrasing), its manifest, a scored run of test-echo."""
    root = tmp_path_factory.mktemp("boundary")
    spec = _spec(root / "spec")
    common = {"cache_dir": root / "cache", "store_dir": root / "store", "progress": False}
    manifest = api.compile(spec, root / "m", overrides=["sample.n=3"], **common).manifest_dir
    api.run(manifest, root / "r", model="test-echo", **common)
    api.score(root / "r", cache_dir=root / "cache", store_dir=root / "store")
    return {"root": root, "spec": spec, "manifest": manifest, "run": root / "r"}


def _json(capsys: pytest.CaptureFixture[str], *args: str | Path, code: int = 0) -> object:
    got = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert got == code, err
    return json.loads(out)  # the whole of stdout is one JSON document


COMMANDS = {
    "validate": lambda p: ["validate", p["spec"], "--set", "sample.n=3"],
    "validate --data": lambda p: ["validate", p["spec"], "--set", "sample.n=3", "--data"],
    "compile": lambda p: ["compile", p["spec"], "-o", p["root"] / "m-json", "--set", "sample.n=3", *p["common"]],
    "show": lambda p: ["show", p["manifest"], "-n", "2"],
    "preview": lambda p: ["preview", p["manifest"], p["item"], "-o", p["root"] / "preview", *p["common"]],
    "plan": lambda p: ["plan", p["manifest"], "-m", "test-echo", *p["common"]],
    "run --plan": lambda p: ["run", p["manifest"], "--plan", "-m", "test-echo", *p["common"]],
    "run": lambda p: ["run", p["manifest"], "-o", p["root"] / "r-json", "-m", "test-echo", *p["common"]],
    "score": lambda p: ["score", p["run"], *p["common"]],
    "report": lambda p: ["report", p["run"], *p["common"]],
    "report-html": lambda p: ["report-html", p["run"], "-o", p["root"] / "html", "--no-browser", *p["common"]],
    "diff": lambda p: ["diff", p["spec"], p["spec"], "--spec-only"],
    "diff-runs": lambda p: ["diff-runs", p["run"], p["run"], "--resamples", "100"],
    "lock": lambda p: ["lock", p["spec"], "--generated", p["root"] / "generated", *p["common"]],
    "eval": lambda p: ["eval", p["spec"], "-o", p["root"] / "eval", "-m", "test-echo", "--set", "sample.n=3",
                       *p["common"]],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_format_json_prints_one_json_document(project: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                              name: str) -> None:
    common = ["--cache", project["root"] / "cache", "--store", project["root"] / "store"]
    item = api.read_manifest(project["manifest"]).items()["item_id"][0]
    args = COMMANDS[name]({**project, "common": common, "item": item})  # type: ignore[dict-item]
    value = _json(capsys, *args, "--format", "json")
    assert value not in (None, "", [], {}), value


@pytest.mark.slow  # two espeak runs, a paper recorded
def test_reproduce_format_json(recorded: Tree,  # noqa: F811  (the fixture imported from test_reproduce)
                               tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _copy(recorded, tmp_path)
    result = _json(capsys, "reproduce", tree.paper, "--format", "json")
    assert result["ok"] is True and result["drift"] == [] and set(result["files"]) == FILES
    assert set(result["status"].values()) == {"ok"} and result["output"] == str(tree.paper.parent / "artifacts")


def test_json_fields(project: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--cache", project["root"] / "cache", "--store", project["root"] / "store"]
    built = _json(capsys, "compile", project["spec"], "-o", project["root"] / "m2", "--set", "sample.n=3", *common,
                  "-f", "json")
    lock = api.read_manifest(project["manifest"]).lock
    assert built["manifest_digest"] == lock["manifest_digest"] and built["item_count"] == lock["item_count"]
    assert built["memo_hit"] is True and built["manifest"] == str(project["root"] / "m2")
    checked = _json(capsys, "validate", project["spec"], "-f", "json")
    assert checked["ok"] is True and checked["data"] is None
    assert checked["benchmark"]["name"] == lock["benchmark"]["name"]
    scores = _json(capsys, "score", project["run"], *common, "--format", "json")
    assert scores == json.loads((project["run"] / "scores.json").read_text())
    [stage] = _json(capsys, "run", project["manifest"], "--plan", "-m", "test-echo", *common, "-f", "json")
    assert stage["cached"] == stage["requests"] == 12 and stage["to_run"] == 0


def test_show_keeps_json_lines_under_the_deprecated_json_flag(project: dict[str, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(project["manifest"]), "-n", "3", "--json"]) == 0
    old = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main(["show", str(project["manifest"]), "-n", "3", "--format", "jsonl"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == old
    assert _json(capsys, "show", project["manifest"], "-n", "3", "--format", "json") == old and len(old) == 3


@pytest.mark.parametrize("command", ["validate", "compile", "show", "run", "report", "lock", "report-html"])
def test_an_unknown_format_is_a_user_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    extra = ["-o", str(tmp_path / "o")] if command == "compile" else []
    assert main([command, str(tmp_path / "nothing"), *extra, "--format", "yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --format: unknown --format 'yaml'") and "hint: one of text, json" in err, err


def test_a_failed_check_still_prints_its_json(project: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["lock", project["spec"], "--generated", project["root"] / "nowhere", "--check",
            "--cache", project["root"] / "cache", "--store", project["root"] / "store", "--format", "json"]
    [entry] = _json(capsys, *args, code=1)
    assert entry["ok"] is False and "no committed lock" in entry["problems"][0]


def test_compile_says_its_estimate_on_stderr_and_keeps_stdout_json(project: dict[str, Path],
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from benchc.compiler import compile as compile_module

    monkeypatch.setattr(compile_module, "ANNOUNCE_ITEMS", 1)  # as a compile of more than 10,000 items
    code = main(["compile", str(project["spec"]), "-o", str(project["root"] / "m-big"), "--set", "sample.n=3",
                 "--cache", str(project["root"] / "cache"), "--store", str(project["root"] / "store"),
                 "--no-memo", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["item_count"] == 12
    assert err.startswith("estimate: "), err


# -v / --verbose --------------------------------------------------------------------------------

def test_verbose_logs_to_stderr(project: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    validate = api.validate

    def logged(*args: object, **kwargs: object) -> object:
        logging.getLogger("benchc.test").info("a step")
        logging.getLogger("benchc.test").debug("a detail")
        return validate(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "validate", logged)
    spec = str(project["spec"])
    assert main(["validate", spec]) == 0
    quiet = capsys.readouterr()
    assert "a step" not in quiet.err and "INFO" not in quiet.err
    assert main(["-v", "validate", spec]) == 0
    once = capsys.readouterr()
    assert "INFO benchc.test: a step" in once.err and "a detail" not in once.err and once.out == quiet.out
    assert main(["-vv", "validate", spec]) == 0
    assert "DEBUG benchc.test: a detail" in capsys.readouterr().err
    assert main(["validate", spec]) == 0  # each call starts quiet again
    assert "a step" not in capsys.readouterr().err
    assert logging.getLogger("benchc").level == logging.NOTSET


def test_verbose_compile_says_what_it_does(project: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--verbose", "compile", str(project["spec"]), "-o", str(project["root"] / "m-v"),
                 "--set", "sample.n=3", "--cache", str(project["root"] / "cache"),
                 "--store", str(project["root"] / "store")])
    err = capsys.readouterr().err
    assert code == 0 and "INFO benchc.cli: compile " in err and "INFO benchc.cli: compiled 12 item(s) in " in err


# the default folders -------------------------------------------------------------------------------

def test_the_default_folders_are_spelled_once_in_the_command_line() -> None:
    from benchc import cli, cli_diff, cli_reports, defaults

    assert (api.DEFAULT_CACHE, api.DEFAULT_STORE) == (defaults.DEFAULT_CACHE, defaults.DEFAULT_STORE)
    for module in (cli, cli_diff, cli_reports):
        assert module.DEFAULT_CACHE is defaults.DEFAULT_CACHE and module.DEFAULT_STORE is defaults.DEFAULT_STORE
        assert ".benchc/" not in Path(module.__file__).read_text()

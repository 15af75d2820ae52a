"""One way to extend benchc: an out-of-tree plugin package (tests/fixtures/benchc-mylab) is
installed with pip and its source, op, backend and metric are used from the CLI, found through
their entry points; ``--plugin MODULE`` loads one that is not installed; a broken plugin is one
clear message."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_process as cli  # a plugin's import is process-wide: each call gets its own

from benchc.compiler.registry import PluginError, Registry, UnknownName, instance

FIXTURE = ROOT / "tests" / "fixtures" / "benchc-mylab"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package, installed by pip (no index, no build isolation: offline) into a folder
    that the CLI's processes find on PYTHONPATH."""
    work = tmp_path_factory.mktemp("mylab")
    shutil.copytree(FIXTURE, work / "src")  # a build writes build/ and *.egg-info next to the sources
    target = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(work / "src")], check=True, timeout=300)
    return target


def mylab(site: Path, *args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return cli(*args, cwd=cwd, env={"PYTHONPATH": str(site)})


def test_listings_name_every_kind_of_plugin_entry(site: Path) -> None:
    for command, name in [("sources", "mylab.lines"), ("ops", "mylab.shout"),
                          ("backends", "mylab.parrot"), ("metrics", "mylab.same_answer")]:
        done = mylab(site, command)
        assert done.returncode == 0, done.stderr
        assert name in done.stdout, (command, done.stdout[-2000:])
    backends = mylab(site, "backends").stdout
    assert "which word of the prompt to answer with" in backends  # the Options model's docs


def test_a_plugin_spec_compiles_runs_and_scores(site: Path, tmp_path: Path) -> None:
    spec = FIXTURE / "example" / "shout.toml"
    mylab(site, "compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c").check_returncode()
    lock = json.loads((tmp_path / "m" / "lock.json").read_text())
    assert lock["ops"]["mylab.shout"] == "1.0.0"
    assert lock["source"]["loader"] == "mylab.lines"
    assert lock["libraries"]["benchc-mylab"] == "0.1.0"  # the plugin's version is pinned
    done = mylab(site, "run", tmp_path / "m", "-o", tmp_path / "r", "--model", "mylab.parrot:lower=false",
                 "--store", tmp_path / "s")
    assert done.returncode == 0, done.stderr
    mylab(site, "score", tmp_path / "r").check_returncode()
    scores = json.loads((tmp_path / "r" / "scores.json").read_text())
    rows = [m["rows"] for m in scores["metrics"]]
    # by hand: the parrot answers with the last word: "sky" as asked, "SKY" shouted; three
    # questions, none answered the same with case, all three without
    assert rows == [[{"perturbation": "shouted", "items": 3, "same": 0.0}],
                    [{"perturbation": "shouted", "items": 3, "same": 100.0}]]


def test_a_misspelt_plugin_backend_option_is_one_line_with_did_you_mean(site: Path, tmp_path: Path) -> None:
    spec = FIXTURE / "example" / "shout.toml"
    mylab(site, "compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c").check_returncode()
    done = mylab(site, "run", tmp_path / "m", "-o", tmp_path / "r", "--model", "mylab.parrot:lowr=true")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "unknown option(s) lowr" in done.stderr and "did you mean 'lower'?" in done.stderr
    done = mylab(site, "run", tmp_path / "m", "-o", tmp_path / "r", "--model", "mylab.parrot:word=middle")
    assert done.returncode == 2 and "option word='middle' is not valid" in done.stderr


def test_entry_points_are_listed_without_importing_the_plugin(site: Path) -> None:
    script = ("import sys; from benchc.compiler.ops import OPS; "
              "assert 'mylab.shout' in OPS.names(); assert 'mylab_benchc.ops' not in sys.modules; "
              "OPS.get('mylab.shout'); assert 'mylab_benchc.ops' in sys.modules; print('ok')")
    done = subprocess.run([sys.executable, "-c", script], env={"PYTHONPATH": str(site), "PATH": ""},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_plugin_flag_loads_a_module_from_the_working_folder() -> None:
    done = cli("--plugin", "mylab_benchc.ops", "ops", cwd=FIXTURE)  # the plugin, not installed
    assert done.returncode == 0, done.stderr
    assert "mylab.shout" in done.stdout


@pytest.mark.parametrize("body, expected", [
    ("raise RuntimeError('boom')", "--plugin broken_plugin failed to import: RuntimeError: boom"),
    ("import not_a_module_anywhere", "it imports 'not_a_module_anywhere', which is not installed"),
])
def test_a_broken_plugin_is_one_clear_message(tmp_path: Path, body: str, expected: str) -> None:
    (tmp_path / "broken_plugin.py").write_text(body + "\n")
    done = cli("--plugin", "broken_plugin", "ops", cwd=tmp_path)
    assert done.returncode == 2
    assert expected in done.stderr and "Traceback" not in done.stderr


def test_a_missing_plugin_module_says_how_to_name_one(tmp_path: Path) -> None:
    done = cli("--plugin", "mylab/plugin.py", "ops", cwd=tmp_path)
    assert done.returncode == 2 and "not a file path" in done.stderr


class Thing:
    """An entry of a test registry."""


def test_registry_decorator_names_the_class_and_keeps_what_the_kind_keeps() -> None:
    classes: Registry[type] = Registry("thing")
    instances: Registry[object] = Registry("thing", make=instance)
    assert classes.add("lab.thing")(Thing) is Thing and classes.get("lab.thing") is Thing
    assert Thing.name == "lab.thing"  # type: ignore[attr-defined]
    instances.add("lab.thing")(Thing)
    assert isinstance(instances.get("lab.thing"), Thing)


def test_the_decorator_takes_a_name() -> None:
    with pytest.raises(TypeError, match='add\\("mylab.name"\\)'):
        Registry("thing").add(Thing)  # type: ignore[arg-type]


def test_two_entries_under_one_name_are_refused() -> None:
    registry: Registry[type] = Registry("thing")

    class One:
        pass

    class Other:
        pass

    registry.add("lab.one")(One)
    registry.add("lab.one")(One)  # the same entry again is harmless (a module imported twice)
    with pytest.raises(PluginError, match="registered twice"):
        registry.add("lab.one")(Other)


def test_a_class_named_otherwise_is_refused() -> None:
    class Named:
        name = "lab.a"

    with pytest.raises(PluginError, match="is named 'lab.a' and registered as 'lab.b'"):
        Registry("thing").add("lab.b")(Named)


def test_an_unknown_plugin_name_says_how_plugins_are_found() -> None:
    registry: Registry[type] = Registry("op", group="benchc.no-such-group")
    with pytest.raises(UnknownName) as caught:
        registry.get("mylab.shout")
    assert "entry-point group 'benchc.no-such-group'" in str(caught.value)
    assert "--plugin MODULE" in str(caught.value)

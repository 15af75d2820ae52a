"""Bad input to the general transforms and per-item targets: one clear message with the file,
line and key path, exit 2, no traceback, nothing written (issue 12)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SPECS, cli

SPEC = SPECS / "examples" / "image_invariance.toml"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad")
    shutil.copytree(SPEC.parent / "data", root / "data")
    return root


CASES = {
    "unknown parameter": (("params.expand = true", "params.expand = true\nparams.spin = 3"),
                          "node[1].params.spin: unknown parameter", "parameters: angle, expand, fill"),
    "misspelt parameter": (("params.direction =", "params.directoin ="),
                           "node[2].params.directoin: unknown parameter", "did you mean 'direction'?"),
    "angle out of range": (("grid = [90, 180, 270]", "grid = [90, 720]"),
                           "node[1].params.angle", "less than or equal to 360"),
    "quality zero": (("grid = [10, 50]", "grid = [0, 50]"), "node[3].params.quality", "greater than or equal to 1"),
    "sweep of a missing parameter": (("params.quality = { grid = [10, 50] }", "params.qualty = { grid = [10, 50] }"),
                                     "node[3].params.qualty: unknown parameter", "did you mean 'quality'?"),
    "duplicate grid value": (("grid = [90, 180, 270]", "grid = [90, 180, 90]"),
                             "node[1].params.angle", "names a value twice"),
    "target names an attribute no item has": (('target = "answer"', 'target = "{{ attrs.colour or record.answer }}"'),
                                              "metric[0].target", "has no attribute 'colour'"),
    "unknown extraction step": (('extract = ["first_line", "normalize"]', 'extract = ["first_line", "lowercased"]'),
                                "answer.extract", "normalize"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_clear_message(folder: Path, case: str) -> None:
    (old, new), where, hint = CASES[case]
    text = SPEC.read_text()
    assert old in text, case
    spec = folder / f"{case.replace(' ', '_')}.toml"
    spec.write_text(text.replace(old, new, 1))
    out = folder / f"out-{spec.stem}"
    done = cli("compile", spec, "-o", out, "--cache", folder / "cache")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{spec.name}:" in done.stderr and where in done.stderr and hint in done.stderr, done.stderr
    assert not out.exists()

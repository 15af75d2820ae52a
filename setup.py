"""Maps the design card's top-level compiler/ and runtime/ folders onto benchc.compiler and
benchc.runtime (pyproject.toml cannot express a computed package list)."""
from setuptools import find_packages, setup

LAYOUT = {"compiler": "compiler", "runtime": "runtime"}
packages = ["benchc", *find_packages(".", include=["benchc.*"])]
for name in LAYOUT:
    packages += [f"benchc.{p}" for p in find_packages(".", include=[name, f"{name}.*"])]

setup(
    packages=packages,
    package_dir={"benchc": "benchc", **{f"benchc.{k}": v for k, v in LAYOUT.items()}},
    package_data={"benchc.compiler": ["py.typed"], "benchc.runtime": ["py.typed"]},
)

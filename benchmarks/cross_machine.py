"""Every bundled manifest digest and every paper artifact hash, made on this machine, with the
machine's CPU flags and math paths: two machines are compared by diffing this script's output.

    .venv/bin/python benchmarks/cross_machine.py                       # all specs, all papers
    OMP_NUM_THREADS=2 PYTHONHASHSEED=1 .venv/bin/python benchmarks/cross_machine.py --papers mmcbench

benchc pins the vector code paths of numpy, OpenCV, OpenBLAS, MKL, oneDNN and torch when it is
imported (benchc/mathpaths.py); the header prints them, so two machines' outputs show whether they
ran the same paths. BENCHC_NATIVE_MATH=1 shows what this CPU's own paths give.

Each bundled spec is compiled afresh (a scratch cache) and its manifest digest compared with the
committed lock under generated/; each papers/*.toml is reproduced as in a fresh clone (a scratch
copy, every run made from its [run.make]) and each artifact's sha256 compared with the one the
paper file records. Lines read ``lock SPEC DIGEST ok|DIFFERS`` and ``paper NAME FILE SHA256
ok|DIFFERS``; the header names the CPU, its vector flags, torch's kernel set and the math
settings in force. Exit 1 if anything differs from what is committed.

What this measures is the claim of the README's "What is exact" section: manifests, request keys
and deterministic engines' answers are exact on any CPU; scores are exact to their printed
precision (paper artifacts are rounded to their declared digits before they are hashed).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import platform
import sys
import tempfile
import tomllib
from pathlib import Path

import benchc  # noqa: F401  (first: pins the math paths before torch, numpy and OpenCV load)

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE",
            "OPENCV_CPU_DISABLE", "CT2_USE_MKL", "CT2_FORCE_CPU_ISA",
            "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED", "BENCHC_NATIVE_MATH")
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")


def machine_lines() -> list[str]:
    """The CPU, its vector flags, torch's kernel set and threads, and the math settings in force."""
    import torch

    model, flags = platform.processor() or "?", set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model in ("?", "x86_64", ""):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    lines = [f"# cpu: {model} ({os.cpu_count()} cores), flags: {' '.join(f for f in VECTOR_FLAGS if f in flags)}",
             f"# torch {torch.__version__}: kernels {torch.backends.cpu.get_cpu_capability()}, "
             f"{torch.get_num_threads()} thread(s); python {platform.python_version()}"]
    lines.append("# settings: " + (", ".join(f"{k}={os.environ[k]}" for k in SETTINGS if k in os.environ) or "none"))
    return lines


def lock_lines(specs: list[Path], scratch: Path) -> tuple[list[str], int]:
    """``lock SPEC DIGEST ok|DIFFERS`` for each spec, compiled into a scratch cache."""
    import json

    from benchc import api
    from benchc.api import lock_path

    out, differ = [], 0
    for spec in specs:
        result = api.compile(spec, scratch / "m" / spec.stem, cache_dir=scratch / "cache",
                             store_dir=scratch / "store", progress=False, check_version=False)
        committed = json.loads(lock_path(spec, ROOT / "generated").read_text())["manifest_digest"]
        same = result.lock["manifest_digest"] == committed
        differ += not same
        out.append(f"lock {spec.relative_to(ROOT)} {result.lock['manifest_digest']} {'ok' if same else 'DIFFERS'}")
    return out, differ


def paper_lines(name: str, scratch: Path) -> tuple[list[str], int]:
    """``paper NAME FILE SHA256 ok|DIFFERS`` for each artifact of papers/NAME.toml, reproduced
    in a fresh copy (runs made from their [run.make])."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.papers import fresh_paper

    from benchc.cli import main

    folder = scratch / f"paper-{name}"
    paper = fresh_paper(folder, name)
    recorded = tomllib.loads(paper.read_text())["recorded"]["artifacts"]
    here = Path.cwd()
    os.chdir(folder)  # runs' default cache and store under the scratch folder
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["reproduce", str(paper)])  # exit 1 on drift; the hashes are compared below
    finally:
        os.chdir(here)
    output = paper.parent / name
    out, differ = [], 0
    for file in sorted(recorded):
        drifted = output / "drift" / file
        path = drifted if drifted.is_file() else output / file
        sha = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
        differ += sha != recorded[file]
        out.append(f"paper {name} {file} {sha} {'ok' if sha == recorded[file] else 'DIFFERS'}")
    return out, differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", default="all", help="'all' (every bundled spec), 'none', or comma-separated "
                                                       "paths under specs/")
    parser.add_argument("--papers", default="all", help="'all', 'none', or comma-separated names under papers/")
    parser.add_argument("--scratch", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args(argv)
    specs = (sorted((ROOT / "specs").rglob("*.toml")) if args.specs == "all" else [] if args.specs == "none"
             else [ROOT / "specs" / s for s in args.specs.split(",")])
    papers = (sorted(p.stem for p in (ROOT / "papers").glob("*.toml")) if args.papers == "all"
              else [] if args.papers == "none" else args.papers.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        scratch = args.scratch or Path(tmp)
        lines, differ = machine_lines(), 0
        found, bad = lock_lines(specs, scratch)
        lines, differ = lines + found, differ + bad
        for name in papers:
            found, bad = paper_lines(name, scratch)
            lines, differ = lines + found, differ + bad
    print("\n".join(lines))
    print(f"# {differ} of {len(lines) - 3} differ from what is committed")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

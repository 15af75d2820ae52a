"""One set of math code paths on every x86-64 CPU, chosen before numpy, OpenCV and torch load.

numpy, OpenCV, OpenBLAS, MKL, oneDNN and torch pick their vector code at import or first use
from the CPU they find (AVX-512 here, AVX2 there), and those paths round differently: measured
on 2026-12-04, the bundled image and audio specs compiled on an AMD EPYC (AVX2) to other
manifest digests than on the machine their locks were made on (OpenCV's AVX2 dispatch changed
``examples/image_corruptions`` and ``mmcbench/image2text``; numpy's ``X86_V3`` loops changed
``mmcbench/speech2text``; torch's AVX2 kernels changed the style transfer's pixels). Each library
reads an environment variable that caps its dispatch; benchc sets them all to the x86-64-v2
level (SSE4.2, which every x86-64 CPU of the last 15 years has) when it is imported, so a
manifest, a response of a deterministic engine and a table are the same bytes on any CPU.

Set before the libraries load: ``import benchc`` first (the CLI does). A variable the user set
is kept (the cross-machine test sets them to simulate other machines). ``BENCHC_NATIVE_MATH=1``
leaves every library at its fastest path: faster on CPUs, and not portable (a lock made so may
not match another machine's)."""

from __future__ import annotations

import os
import platform
import sys

PORTABLE: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "default",  # torch's CPU kernels: no AVX2/AVX-512 variants
    "MKL_CBWR": "COMPATIBLE",  # MKL (torch's BLAS): the code path MKL gives the same results on every x86 CPU
    "ONEDNN_MAX_CPU_ISA": "SSE41",  # torch's oneDNN convolutions
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",  # numpy's loops above x86-64-v2
    "OPENBLAS_CORETYPE": "Nehalem",  # numpy's and scipy's OpenBLAS: its SSE4.2-era kernels
}
# OpenCV warns on stderr for each disabled feature the CPU lacks, so only those it has are named.
OPENCV_FEATURES = {"avx": "AVX", "f16c": "FP16", "avx2": "AVX2", "fma": "FMA3", "avx512f": "AVX512F",
                   "avx512bw": "AVX512-SKX"}
LIBRARIES = ("numpy", "cv2", "torch")


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def portable_settings() -> dict[str, str]:
    """The variables benchc sets on this machine (none off x86-64)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    flags = _cpu_flags()
    opencv = [name for flag, name in OPENCV_FEATURES.items() if flag in flags]
    return {**PORTABLE, **({"OPENCV_CPU_DISABLE": ",".join(opencv)} if opencv else {})}


def pin() -> list[str]:
    """Sets the portable math paths where the user set none; returns the libraries already
    loaded (too late for them: their paths are this CPU's)."""
    if os.environ.get("BENCHC_NATIVE_MATH") == "1":
        return []
    for name, value in portable_settings().items():
        os.environ.setdefault(name, value)
    return [name for name in LIBRARIES if name in sys.modules]

"""One set of math code paths on every x86-64 CPU, chosen before numpy, OpenCV and torch load.

numpy, OpenCV, OpenBLAS, MKL, oneDNN and torch pick their vector code at import or first use
from the CPU they find (AVX-512 here, AVX2 there), and those paths round differently: measured
on 2026-12-04, the bundled image and audio specs compiled on an AMD EPYC (AVX2) to other
manifest digests than on the machine their locks were made on (OpenCV's AVX2 dispatch changed
``examples/image_corruptions`` and ``mmcbench/image2text``; numpy's ``X86_V3`` loops changed
``mmcbench/speech2text``; torch's AVX2 kernels changed the style transfer's pixels). CTranslate2
(the ``whisper`` backend) is pinned too: its GEMMs to oneDNN (``CT2_USE_MKL``), its own kernels
to AVX2 (``CTRANSLATE2_ISA``, the one pin above x86-64-v2). Each library reads an environment
variable that caps its dispatch; benchc sets them all to the x86-64-v2 level (SSE4.2, which every
x86-64 CPU of the last 15 years has) when it is imported, so a manifest, a response of a
deterministic engine and a table are the same bytes on any CPU (whisper's: on any CPU with AVX2).

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
    "ONEDNN_MAX_CPU_ISA": "SSE41",  # torch's oneDNN convolutions, CTranslate2's oneDNN GEMMs
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",  # numpy's loops above x86-64-v2
    "OPENBLAS_CORETYPE": "Nehalem",  # numpy's and scipy's OpenBLAS: its SSE4.2-era kernels
    # CTranslate2 (faster-whisper, the whisper backend): its GEMMs through its bundled oneDNN, which
    # ONEDNN_MAX_CPU_ISA above caps, never through MKL, which CTranslate2 uses by default on Intel
    # CPUs only (cpu_is_genuine_intel(); AMD gets oneDNN). Measured 2026-12-07: the example paper's
    # whisper transcripts, recorded on an AMD EPYC, differed on an Intel Xeon (AVX-512, VNNI) under
    # MKL (score heavy/hard 554.42 -> 541.7); with CT2_USE_MKL=0 all 11 artifacts were the recorded
    # bytes. It is also faster here: MKL under MKL_CBWR=COMPATIBLE took 5.8-8.5 s of CPU per demo clip
    # (tiny.en, int8, beam 5, 1 thread), oneDNN at SSE4.1 1.6 s (native MKL 0.63 s, not portable).
    # Uncapped (ONEDNN_MAX_CPU_ISA=ALL) oneDNN gave other transcripts again. CTranslate2 reads both
    # variables when it is imported (imported before benchc, it kept MKL), so it is in LIBRARIES.
    # Without MKL it offers no int16 compute type (int8, int8_float32, float32 remain).
    "CT2_USE_MKL": "0",
}
CTRANSLATE2_ISA = "AVX2"
"""CTranslate2's own kernels (softmax, layer norm, quantization...) dispatch on the CPU too, and
round differently: on the demo's 95 clips AVX-512 and GENERIC each gave other transcripts than
AVX2. CTranslate2 4.x picks AVX2 on every CPU that has it (AVX-512 is not in its automatic
dispatch), which is what the recorded runs used; ``CT2_FORCE_CPU_ISA`` holds it there should a
later version pick AVX-512. Set only where the CPU has AVX2 (CTranslate2 refuses to load a model
otherwise): a CPU without AVX2 runs CTranslate2's AVX or GENERIC kernels, and its whisper
transcripts may differ from the recorded ones."""
# OpenCV warns on stderr for each disabled feature the CPU lacks, so only those it has are named.
OPENCV_FEATURES = {"avx": "AVX", "f16c": "FP16", "avx2": "AVX2", "fma": "FMA3", "avx512f": "AVX512F",
                   "avx512bw": "AVX512-SKX"}
LIBRARIES = ("numpy", "cv2", "torch", "ctranslate2")


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
    return {**PORTABLE, **({"OPENCV_CPU_DISABLE": ",".join(opencv)} if opencv else {}),
            **({"CT2_FORCE_CPU_ISA": CTRANSLATE2_ISA} if "avx2" in flags else {})}


def pin() -> list[str]:
    """Sets the portable math paths where the user set none; returns the libraries already
    loaded (too late for them: their paths are this CPU's)."""
    if os.environ.get("BENCHC_NATIVE_MATH") == "1":
        return []
    for name, value in portable_settings().items():
        os.environ.setdefault(name, value)
    return [name for name in LIBRARIES if name in sys.modules]

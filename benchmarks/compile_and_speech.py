"""Measured, not asserted: compile time of the text2speech spec and speech throughput per core.

Prints, from one run on this machine:
  1. cold compile of specs/mmcbench/text2speech.toml (empty cache) vs the unchanged recompile
     (must do no op work and take well under a second), and a recompile with the memo disabled
     (node cache only), as ratios against the cold compile;
  2. espeak-ng + pocketsphinx throughput on one core: the engines called directly (baseline)
     vs through benchc's runtime (store, request keys, batching), as items/s and their ratio.

Usage: .venv/bin/python benchmarks/compile_and_speech.py [--records 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "mmcbench" / "text2speech.toml"


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def compile_times(work: Path) -> None:
    from benchc import api

    cache = work / "cache"
    cold, t_cold = _timed(lambda: api.compile(SPEC, work / "m1", cache_dir=cache))
    warm, t_warm = _timed(lambda: api.compile(SPEC, work / "m2", cache_dir=cache))
    nodes, t_nodes = _timed(lambda: api.compile(SPEC, work / "m3", cache_dir=cache, use_memo=False))
    items = cold.lock["item_count"]
    assert warm.lock["manifest_digest"] == cold.lock["manifest_digest"] == nodes.lock["manifest_digest"]
    print(f"compile {SPEC.relative_to(ROOT)}: {items} items")
    print(f"  cold (empty cache)         {t_cold:7.3f} s   ops run {cold.ops_run:6d}   1.00x")
    print(f"  unchanged recompile (memo) {t_warm:7.3f} s   ops run {warm.ops_run:6d}   "
          f"{t_warm / t_cold:.3f}x of cold")
    print(f"  recompile, node cache only {t_nodes:7.3f} s   ops run {nodes.ops_run:6d}   "
          f"{t_nodes / t_cold:.3f}x of cold")


def speech_throughput(work: Path, records: int) -> None:
    """The same texts (every version of ``records`` source rows) spoken and transcribed twice."""
    from benchc import api
    from benchc.compiler.manifest import read_manifest
    from benchc.compiler.spec.models import Generation
    from benchc.runtime.backends import make_backend

    manifest = api.compile(SPEC, work / "speech-m", cache_dir=work / "cache", overrides=[f"sample.n={records}"])
    texts = read_manifest(manifest.manifest_dir).items()["text"].to_list()
    tts = make_backend("espeak", Generation(), "text-to-speech")
    asr = make_backend("pocketsphinx", Generation(), "speech-to-text")
    asr.transcribe(tts.speak("warm up"))

    def direct() -> None:
        for text in texts:
            asr.transcribe(tts.speak(text))

    _, t_direct = _timed(direct)
    _, t_runtime = _timed(lambda: api.run(manifest.manifest_dir, work / "speech-r", model="espeak",
                                         cache_dir=work / "cache", store_dir=work / "store", progress=False))
    print(f"espeak-ng + pocketsphinx on one core, {len(texts)} texts ({records} source rows x 24 versions)")
    print(f"  engines called directly    {len(texts) / t_direct:7.2f} items/s   1.00x")
    print(f"  benchc runtime, 1 worker   {len(texts) / t_runtime:7.2f} items/s   "
          f"{t_direct / t_runtime:.2f}x of direct")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1, help="source rows for the speech part")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        compile_times(work)
        speech_throughput(work, args.records)


if __name__ == "__main__":
    main()

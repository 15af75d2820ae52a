"""Measured, not asserted: compiling N images x 29 corruptions x 2 severities, and benchc's overhead.

Builds, in a temporary folder, a spec of the ``scenes`` source (one record per image) and one
``image.corrupt`` node whose corruption and severity are grids, and prints, from one run:
  1. the cold compile (empty cache, memo off) with each ``--workers`` value: wall time, CPU time
     of the parent and of the worker processes (getrusage SELF and CHILDREN), and core use
     (CPU / (wall x workers)); then, on the same cache, the unchanged recompile (memo hit) and
     the recompile with the memo off (node cache only), as ratios of the cold compile; and,
     since the machine may be shared (other processes' load lowers core use without benchc
     serialising anything), the machine's CPU during the cold compile (ours, other processes',
     idle: /proc/stat) and the share of the time the workers were on a CPU or ready for one
     (/proc/PID/schedstat), which no other load lowers;
  2. the baseline, measured in this run in this process: the library calls alone
     (``image_corrupt.corrupt``: imagecorruptions / albumentations / scikit-image / OpenCV) on the
     same decoded images with the same seeds (their outputs are checked to be the compile's
     pixels), summed per corruption, slowest first; and, around them, the parts of the op that
     are benchc's (decoding the input PNG; hashing, PNG-encoding and writing the output) and the
     scenes source alone;
  3. benchc's overhead: (compile CPU - library CPU) / library CPU, split into its parts, against
     the target of at most 10%, and a one-line verdict, which also holds the cores against the
     target of at least 90% (the lower of: our share of the CPU others left free, and the
     workers' runnable share).

The compile runs first, so its workers do not find libraries imported by the baseline.
The baseline calls each corruption once on a warm-up image before timing (first-call imports and
file loads are left out of the library time, so they count as overhead: a strict reading).

With more than one worker, each compile worker caps its libraries' thread pools (OpenMP,
OpenBLAS, OpenCV) to its share of the cores (compiler/expand.py); the baseline keeps the defaults.
Runs kept for the record
are in benchmarks/results/.

Usage: .venv/bin/python benchmarks/image_corruptions.py [--images 1000] [--size 224]
           [--workers 2 [1]] [--corruptions glass_blur zoom_blur ...] [--baseline-images N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.10  # the target: benchc's own overhead at most 10% of op time
CORES_TARGET = 0.90  # and the workers kept busy at least 90% of the time the cores were theirs


@dataclass
class Usage:
    """Wall and CPU seconds of one phase: this process, and its waited-for children; and, for
    a sampled phase, the machine's other processes and how often the workers wanted a CPU."""

    wall: float
    parent: float
    children: float
    machine_busy: float = 0.0   # CPU s of every process on the machine (/proc/stat), ours included
    machine_idle: float = 0.0   # CPU s no process used (idle + iowait)
    workers_on_cpu: float = 0.0  # the workers' CPU s (/proc/PID/schedstat), from samples
    workers_queued: float = 0.0  # s the workers were runnable but waited for a CPU another process held

    @property
    def cpu(self) -> float:
        return self.parent + self.children

    @property
    def others(self) -> float:
        """CPU s other processes on the machine used meanwhile (other agents, CI jobs)."""
        return max(0.0, self.machine_busy - self.cpu)

    def used(self, workers: int) -> float:
        """Cores used: CPU / (wall x workers), what the issue measured. On a shared machine other
        processes' load lowers it without benchc serialising anything."""
        return self.cpu / (self.wall * workers)

    def of_free(self) -> float:
        """Our share of the CPU time other processes left: CPU / (CPU + idle). On an idle
        machine with as many CPUs as workers this is ``used``; cores left idle while benchc had
        work (a serial step, a worker waiting for the parent or the disk) lower it."""
        return self.cpu / (self.cpu + self.machine_idle) if self.cpu else 0.0

    def runnable(self, workers: int) -> float:
        """Share of the wall time the workers were on a CPU or ready for one (load-independent:
        a worker waiting for benchc (a pipe, a lock, the disk) is neither)."""
        return (self.workers_on_cpu + self.workers_queued) / (self.wall * workers)


def _cpu() -> tuple[float, float]:
    """This process's CPU seconds, and its descendants': the waited-for children (getrusage) plus
    each live child with the children it waited for (/proc). Compile workers are forked from a
    forkserver (compiler/pools.py), a live child of this process that reaps them."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime + _live_children_cpu()


def _live_children_cpu() -> float:
    """utime + stime + cutime + cstime of every live child of this process (Linux /proc)."""
    ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        if int(fields[1]) == os.getpid():  # fields[1] is the parent pid; times are fields 11-14
            total += sum(int(f) for f in fields[11:15]) / ticks
    return total


def _machine() -> tuple[float, float]:
    """CPU seconds of the whole machine since boot: (busy, idle + iowait), from /proc/stat."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = [int(f) for f in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / ticks, idle / ticks


def _descendants() -> list[int]:
    """Every live descendant of this process (the forkserver, its workers), from /proc."""
    children: dict[int, list[int]] = defaultdict(list)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children[int(fields[1])].append(int(stat.parent.name))
    found, todo = [], [os.getpid()]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


class SchedSampler:
    """Samples, every SAMPLE_SECONDS on a thread, each descendant's schedstat: its time on a CPU
    and its time runnable in the queue (waiting for a CPU another process holds). The last
    sample of each process counts, so a worker's last SAMPLE_SECONDS may be missed. The thread's
    own CPU time is subtracted from the parent's."""

    SAMPLE_SECONDS = 1.0

    def __init__(self) -> None:
        self.last: dict[int, tuple[float, float]] = {}
        self.own_cpu = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SchedSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self.sample()
            usage = resource.getrusage(resource.RUSAGE_THREAD)
            self.own_cpu = usage.ru_utime + usage.ru_stime
            if self._stop.wait(self.SAMPLE_SECONDS):
                break

    def sample(self) -> None:
        for pid in _descendants():
            try:
                on_cpu, queued = Path(f"/proc/{pid}/schedstat").read_text().split()[:2]
            except (OSError, ValueError):
                continue
            self.last[pid] = (int(on_cpu) / 1e9, int(queued) / 1e9)

    def workers(self) -> tuple[float, float]:
        """(on-CPU s, queued s) summed over the busiest processes sampled: the workers (the
        forkserver and the resource tracker barely run)."""
        busy = [times for times in self.last.values() if times[0] > 1.0] or list(self.last.values())
        return sum(t[0] for t in busy), sum(t[1] for t in busy)


def measured(fn, sample: bool = False):
    """``fn()`` and its Usage; with ``sample``, also the machine's CPU and the workers' schedstat."""
    import contextlib

    sampler = SchedSampler() if sample else None
    parent0, children0 = _cpu()
    busy0, idle0 = _machine()
    start = time.perf_counter()
    with sampler or contextlib.nullcontext():
        result = fn()
    wall = time.perf_counter() - start
    busy1, idle1 = _machine()
    parent1, children1 = _cpu()
    own = sampler.own_cpu if sampler else 0.0
    on_cpu, queued = sampler.workers() if sampler else (0.0, 0.0)
    return result, Usage(wall, parent1 - parent0 - own, children1 - children0, busy1 - busy0 - own,
                         idle1 - idle0, on_cpu, queued)


def write_spec(folder: Path, images: int, size: int, corruptions: list[str]) -> Path:
    grid = ", ".join(json.dumps(c) for c in corruptions)
    spec = folder / "image_corruptions_bench.toml"
    spec.write_text(f"""\
[benchmark]
name = "bench/image-corruptions"
version = "1.0.0"
seed = 0

[source]
loader = "scenes"
images = {images}
seed = 0
size = {size}

[sample]
per = "image_id"   # one record (and so one source image) per scene

[[node]]
id = "corrupted"
op = "image.corrupt"
input = "image"
params.severity = {{ grid = ["light", "heavy"] }}
params.corruption = {{ grid = [{grid}] }}

[prompt]
template = "Describe this image as detailed as possible."
""", encoding="utf-8")
    return spec


def compile_phase(spec: Path, work: Path, workers: list[int], expected: int):
    """Cold compiles (one per workers value, each with its own fresh cache), then the two
    recompiles on the first one's cache. Returns the first manifest's folder, its cache and the
    timings."""
    from benchc import api

    colds: dict[int, Usage] = {}
    first = None
    for count in workers:
        cache = work / f"cache-w{count}"
        result, usage = measured(lambda count=count, cache=cache: api.compile(
            spec, work / f"m-w{count}", cache_dir=cache, workers=count, use_memo=False), sample=count > 1)
        assert result.lock["item_count"] == expected == result.ops_run, (result.lock["item_count"], result.ops_run)
        colds[count] = usage
        if first is None:
            first = (result, cache)
        else:  # the results must not depend on the worker count; then free the disk
            assert result.lock["manifest_digest"] == first[0].lock["manifest_digest"]
            shutil.rmtree(cache)
    cold, cache = first
    warm, memo = measured(lambda: api.compile(spec, work / "m-memo", cache_dir=cache, workers=workers[0]))
    assert warm.memo_hit and warm.ops_run == 0
    nodes, node_only = measured(lambda: api.compile(spec, work / "m-nodes", cache_dir=cache, workers=workers[0],
                                                    use_memo=False))
    assert nodes.ops_run == 0 and nodes.lock["manifest_digest"] == cold.lock["manifest_digest"]
    return cold.manifest_dir, cache, colds, memo, node_only


def source_phase(images: int, size: int, work: Path):
    """The scenes source alone (what every compile, the memo hit included, does first)."""
    from benchc.compiler.cas import ContentStore
    from benchc.compiler.sources import SOURCES, SourceContext

    loader = SOURCES.get("scenes")
    store = ContentStore(work / "source-only")
    loaded, usage = measured(lambda: loader.load(loader.Params(images=images, seed=0, size=size),
                                                 SourceContext(roots=[work], store=store)))
    return loaded.records, store, usage


STARTUP = """
import json, sys, time
import numpy as np
from benchc.compiler.ops.image_corrupt import LEVELS, corrupt
from benchc.compiler.seeds import rng_for
from benchc.compiler.sources.scenes import make_scene
pixels = np.asarray(make_scene(0, 0, int(sys.argv[1])).image)
names = json.loads(sys.argv[2])
passes = []
for _ in range(2):
    start = time.process_time()
    for name in names:
        for level in LEVELS[name]:
            corrupt(pixels, name, level, rng_for(0))
    passes.append(time.process_time() - start)
print(json.dumps(passes))
"""


def startup_phase(size: int, corruptions: list[str]) -> float:
    """A worker's one-off cost: its first call of each corruption (library imports, torch
    imported by rng_guard, files such as frost's loaded) less a second call, in a fresh
    process that has imported benchc's ops (as forked workers have)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", STARTUP, str(size), json.dumps(corruptions)],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    first, second = json.loads(out.stdout.strip().splitlines()[-1])
    return first - second


@dataclass
class Baseline:
    images: int
    calls: int
    identical: int
    library_cpu: dict[tuple[str, str], float]   # (corruption, severity) -> CPU s, summed
    library_wall: dict[tuple[str, str], float]
    decode_cpu: float   # the op's input decode (once per image: the op keeps the last input), summed
    encode_cpu: float   # the op's output hash + PNG encode + write, summed


def baseline_phase(manifest_dir: Path, records, source_store, work: Path, images: int,
                   corruptions: list[str]) -> Baseline:
    """Per image: decode the source PNG once (as the op does: it keeps the last input it
    decoded), then for every item of the image: the library call, then the op's output step,
    put_image (sha256 of the pixels, PNG encode, atomic write without the per-file fsync, as in
    the compile's workers, which sync once per batch) into a scratch store; each timed
    apart."""
    import numpy as np
    from benchc.compiler.cas import ContentStore
    from benchc.compiler.manifest import read_manifest
    from benchc.compiler.media import image_identity, load_image, put_image
    from benchc.compiler.ops.image_corrupt import LEVELS, corrupt
    from benchc.compiler.seeds import derive_seed, rng_for
    from PIL import Image

    items = read_manifest(manifest_dir).items().select("item_id", "record_id", "attrs", "media").to_dicts()
    by_record: dict[str, list[dict]] = defaultdict(list)
    for row in items:
        by_record[row["record_id"]].append(row)
    chosen = sorted((r for r in records if r.id in by_record), key=lambda r: r.id)[:images]
    assert len(chosen) == images, (len(chosen), images)  # the compile's records, one per image
    scratch = ContentStore(work / "baseline-out", durable=False)  # as the compile's workers
    seed = 0

    def pixels_of(record):
        return np.asarray(load_image(source_store, record.media["image"]).convert("RGB"))

    warm = pixels_of(chosen[0])
    for name in corruptions:  # first-call imports and file loads, outside the timing
        for level in LEVELS[name]:
            corrupt(warm, name, level, rng_for(0))

    lib_cpu: dict[tuple[str, str], float] = defaultdict(float)
    lib_wall: dict[tuple[str, str], float] = defaultdict(float)
    decode = encode = 0.0
    calls = identical = 0
    for record in chosen:
        c0 = time.process_time()
        pixels = pixels_of(record)
        decode += time.process_time() - c0
        for row in by_record[record.id]:
            attrs = json.loads(row["attrs"])
            name, severity = attrs["corruption"], attrs["severity"]
            level = LEVELS[name][0 if severity == "light" else 1]
            path = row["item_id"].split("#", 1)[1]
            rng = rng_for(derive_seed(seed, record.id, path))

            c0, w0 = time.process_time(), time.perf_counter()
            out = corrupt(pixels, name, level, rng)
            c1, w1 = time.process_time(), time.perf_counter()
            ref = put_image(scratch, Image.fromarray(out, "RGB"))
            encode += time.process_time() - c1

            lib_cpu[name, severity] += c1 - c0
            lib_wall[name, severity] += w1 - w0
            calls += 1
            identical += ref.sha256 == json.loads(row["media"])[0]["sha256"]
            assert ref.sha256 == image_identity(Image.fromarray(out, "RGB"))
            scratch.path_of(ref.sha256).unlink(missing_ok=True)  # keep put_image writing; free disk
    return Baseline(len(chosen), calls, identical, dict(lib_cpu), dict(lib_wall), decode, encode)


def report(args, corruptions: list[str], colds: dict[int, Usage], memo: Usage, node_only: Usage,
           source: Usage, startup: float, base: Baseline) -> None:
    n, items = args.images, args.images * len(corruptions) * 2
    scale = n / base.images
    lib_total = sum(base.library_cpu.values()) * scale
    decode, encode = base.decode_cpu * scale, base.encode_cpu * scale
    main = args.workers[0]
    cold = colds[main]

    print(f"\nbenchc compile: {n} scenes images x {len(corruptions)} corruptions x 2 severities = "
          f"{items} items, {args.size} x {args.size} px")
    print(f"{'phase':34s} {'wall s':>9s} {'CPU s':>9s} {'(parent':>9s} {'+ workers)':>10s} "
          f"{'cores used':>11s} {'vs cold':>8s}")
    for count, usage in colds.items():
        used = usage.cpu / (usage.wall * count)
        print(f"{f'cold compile, {count} worker(s)':34s} {usage.wall:9.2f} {usage.cpu:9.2f} "
              f"{usage.parent:9.2f} {usage.children:10.2f} {f'{used:.0%} of {count}':>11s} "
              f"{usage.wall / cold.wall:7.3f}x")
    for label, usage in (("unchanged recompile (memo hit)", memo), ("recompile, node cache only", node_only)):
        print(f"{label:34s} {usage.wall:9.2f} {usage.cpu:9.2f} {usage.parent:9.2f} {usage.children:10.2f} "
              f"{'':>11s} {usage.wall / cold.wall:7.3f}x")
    machine_report(colds)

    subset = (f"measured on the first {base.images} of {n} images and scaled x{scale:.2f}"
              if base.images != n else f"measured on all {n} images")
    print(f"\nBaseline, this run, one process: the library calls alone (image_corrupt.corrupt), {subset}; "
          f"{base.identical}/{base.calls} outputs identical to the compile's")
    print(f"{'corruption':20s} {'light ms':>9s} {'heavy ms':>9s} {'CPU s, all':>11s} {'share':>7s} "
          f"{'wall/CPU':>9s}")
    per = {c: base.library_cpu.get((c, "light"), 0) + base.library_cpu.get((c, "heavy"), 0) for c in corruptions}
    for c in sorted(corruptions, key=per.get, reverse=True):
        light = 1000 * base.library_cpu.get((c, "light"), 0) / base.images
        heavy = 1000 * base.library_cpu.get((c, "heavy"), 0) / base.images
        wall = base.library_wall.get((c, "light"), 0) + base.library_wall.get((c, "heavy"), 0)
        print(f"{c:20s} {light:9.2f} {heavy:9.2f} {per[c] * scale:11.2f} {per[c] / sum(per.values()):7.1%} "
              f"{wall / per[c] if per[c] else 0:9.2f}")
    light_all = 1000 * sum(v for (_, sev), v in base.library_cpu.items() if sev == "light") / base.images
    heavy_all = 1000 * sum(v for (_, sev), v in base.library_cpu.items() if sev == "heavy") / base.images
    print(f"{'all (ms per image)':20s} {light_all:9.1f} {heavy_all:9.1f} {lib_total:11.2f} {'100.0%':>7s}")

    overhead = cold.cpu - lib_total
    rest = overhead - source.cpu - decode - encode - startup * main
    print(f"\nWhere the cold compile's CPU goes ({main} worker(s)); shares are of the library CPU")
    print(f"{'part':58s} {'CPU s':>9s} {'share':>8s}")
    parts = [
        ("library calls (baseline above)", lib_total),
        ("benchc overhead = compile CPU - library CPU", overhead),
        ("  scenes source: draw + hash + PNG-encode images and masks", source.cpu),
        ("  op input decode (PNG -> RGB array), once per image", decode),
        ("  op output: sha256 of pixels + PNG encode + write, per op", encode),
        (f"  first calls in each of {main} process(es): imports, files", startup * main),
        ("  rest: plan, keys, params, pool, pickling, sqlite, prompts,", rest),
        ("        manifest (by difference)", None),
    ]
    for label, value in parts:
        if value is None:
            print(label)
        else:
            print(f"{label:58s} {value:9.2f} {value / lib_total:8.1%}")
    ops_only = overhead - source.cpu
    print(f"speed: cold compile wall {cold.wall:.1f} s vs the library calls on one core {lib_total:.1f} s "
          f"(CPU): speed-up {lib_total / cold.wall:.2f}x (ideal {main}x with no overhead); "
          f"{1000 * cold.wall / items:.2f} ms per item")
    ok = overhead <= TARGET * lib_total
    print(f"\nVERDICT: benchc's own overhead is {overhead / lib_total:.1%} of library time "
          f"({ops_only / lib_total:.1%} without generating the synthetic source) -- "
          f"{'within' if ok else 'ABOVE'} the {TARGET:.0%} target; cores used "
          f"{cold.used(main):.0%} of {main}", end="")
    if main > 1:
        fed = min(cold.of_free(), cold.runnable(main))
        print(f"; of the CPU other processes left free {cold.of_free():.0%}, workers runnable "
              f"{cold.runnable(main):.0%} of the time -- {'within' if fed >= CORES_TARGET else 'BELOW'} the "
              f"{CORES_TARGET:.0%} target (the lower of the two).")
    else:
        print(".")


def machine_report(colds: dict[int, Usage]) -> None:
    """Where the machine's CPUs went during each cold compile on workers: ours, other
    processes', idle; and how much of the time the workers were ready to run (schedstat)."""
    cpus = os.cpu_count() or 1
    print(f"\nThe machine during the cold compile ({cpus} CPUs; CPU s of wall x {cpus}):")
    print(f"{'workers':8s} {'ours':>9s} {'others':>9s} {'idle':>9s} {'ours/(ours+idle)':>17s} "
          f"{'workers on a CPU':>17s} {'+ queued':>9s} {'= runnable':>11s}")
    for count, usage in colds.items():
        if count < 2:
            continue
        span = usage.wall * count
        print(f"{count:<8d} {usage.cpu:9.1f} {usage.others:9.1f} {usage.machine_idle:9.1f} "
              f"{usage.of_free():17.0%} {usage.workers_on_cpu / span:17.0%} {usage.workers_queued / span:9.0%} "
              f"{usage.runnable(count):11.0%}")
    print("(ours/(ours+idle): cores left idle while benchc had work lower it; runnable: on a CPU or ready for "
          "one, from /proc/PID/schedstat sampled every second; queued time is what other processes took)")


def main() -> None:
    from benchc.compiler.ops.image_corrupt import CORRUPTIONS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000, help="scenes images (one record each)")
    parser.add_argument("--size", type=int, default=224, help="image side in pixels")
    parser.add_argument("--workers", type=int, nargs="+", default=[2],
                        help="worker counts of the cold compiles; the first is used for the recompiles")
    parser.add_argument("--corruptions", nargs="+", choices=CORRUPTIONS, default=list(CORRUPTIONS),
                        metavar="NAME", help="a subset of the 29 corruptions (default: all)")
    parser.add_argument("--baseline-images", type=int, default=None,
                        help="run the baseline on the first N images and scale (default: all)")
    parser.add_argument("--keep", type=Path, default=None, help="work here instead of a temporary folder")
    args = parser.parse_args()
    corruptions = list(dict.fromkeys(args.corruptions))
    base_images = min(args.baseline_images or args.images, args.images)

    work_ctx = tempfile.TemporaryDirectory(prefix="benchc-imgbench-") if args.keep is None else None
    work = Path(work_ctx.name) if work_ctx else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        started, load_before = time.perf_counter(), os.getloadavg()[0]
        spec = write_spec(work, args.images, args.size, corruptions)
        expected = args.images * len(corruptions) * 2
        print(f"compiling {expected} items with workers {args.workers} ...", flush=True)
        manifest_dir, cache, colds, memo, node_only = compile_phase(spec, work, args.workers, expected)
        for count, usage in colds.items():
            print(f"  cold, {count} worker(s): {usage.wall:.1f} s", flush=True)
        records, source_store, source = source_phase(args.images, args.size, work)
        startup = startup_phase(args.size, corruptions)
        print(f"baseline on {base_images} images ...", flush=True)
        base = baseline_phase(manifest_dir, records, source_store, work, base_images, corruptions)
        report(args, corruptions, colds, memo, node_only, source, startup, base)
        print(f"(whole benchmark: {time.perf_counter() - started:.0f} s; cache folder "
              f"{sum(f.stat().st_size for f in cache.rglob('*') if f.is_file()) / 2**20:.0f} MiB; "
              f"1-minute load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
              f"on {os.cpu_count()} CPUs: other processes on the machine slow the wall times)")
    finally:
        if work_ctx:
            work_ctx.cleanup()


if __name__ == "__main__":
    main()

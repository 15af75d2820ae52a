"""``benchc calibrate``: how strong each op is at each of its settings, measured on a sample.

A spec is compiled (into a scratch folder, as ``benchc preview`` does), a seeded sample of its
groups is taken, and every image variant of those groups is measured against its record's
original image (runtime/score/measures.py: SSIM, PSNR, colour and edge change). The variants are
grouped by the node that made them, the op(s) of their lineage, and their *setting*: the values
of the parameters the spec sweeps (``{ grid = [...] }`` or ``{ choice = [...] }``) on the nodes of
their lineage, e.g. ``corruption=gaussian_blur, severity=heavy``. Each group's distribution is
summarised (n, min, median, mean, max), so that an author can pick severities whose strengths
are spread as intended.

The sample is deterministic: the group ids are sorted, ``seed`` draws ``sample`` of them
(``random.Random``, never hash order), and the drawn ids are measured in sorted order. These are
measurements: nothing here enters a manifest or a digest.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compiler.cas import ContentStore
from .compiler.errors import BenchcError, Problem
from .compiler.manifest import Manifest, read_manifest
from .compiler.sweep import is_sweep
from .preview import item_kind, manifest_rows, media_image, natural_key, original_media, source_records
from .runtime.score.measures import DECIMALS, MEASURES, Measures, format_psnr, measure

STATS = ("min", "median", "mean", "max")
NO_SETTING = "-"
"""The setting of a variant whose lineage sweeps nothing."""


@dataclass(frozen=True)
class Summary:
    """One (node, ops, setting): how many variants were measured and each measure's statistics."""

    node: str
    op: str
    setting: str
    n: int
    stats: dict[str, dict[str, float]]  # measure -> {min, median, mean, max}

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "op": self.op, "setting": self.setting, "n": self.n,
                "stats": {m: {k: _json_number(v) for k, v in s.items()} for m, s in self.stats.items()}}


@dataclass(frozen=True)
class Calibration:
    """What ``benchc calibrate`` found: the summaries, in the spec's node order."""

    benchmark: str
    groups: int                  # image groups in the compiled manifest
    sampled: list[str]           # the group ids measured, sorted
    measured: int                # image variants measured
    without_original: int        # image variants left out: their record's original was not found
    summaries: list[Summary] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "groups": self.groups, "sampled": self.sampled,
                "measured": self.measured, "without_original": self.without_original,
                "measures": list(MEASURES), "stats": list(STATS), "psnr_null": "identical images (infinite PSNR)",
                "rows": [s.as_json() for s in self.summaries]}


def _json_number(value: float) -> float | None:
    return None if math.isinf(value) else value


def no_images(what: str) -> BenchcError:
    return BenchcError(Problem(f"calibrate measures images: {what}",
                               hint="its items are text or audio; calibrate a spec whose nodes make images, "
                                    "e.g. specs/examples/image_corruptions.toml"))


def check_makes_images(spec_path: Path, overrides: list[str] | None) -> None:
    """Refuse, before compiling, a spec none of whose nodes' ops make an image (an unknown op is
    left to the compile, which names it)."""
    from .compiler.ops import OPS
    from .compiler.spec.parse import load_spec

    loaded = load_spec(spec_path, overrides)
    kinds = set()
    for node in loaded.spec.node:
        try:
            kinds.add(OPS.get(node.op).output_kind)
        except LookupError:
            return
    if "image" not in kinds:
        raise no_images(f"no node of {spec_path} makes an image (its ops make {', '.join(sorted(kinds)) or 'nothing'})")


def sample_groups(groups: list[str], sample: int | None, seed: int) -> list[str]:
    """``sample`` of the group ids (all when None or at least as many), drawn with ``seed`` from
    their sorted list; returned sorted."""
    ordered = sorted(set(groups))
    if sample is None or sample >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, sample))


def swept_keys(manifest: Manifest) -> dict[str, list[str]]:
    """Node id -> the parameter names its spec entry sweeps, in the spec's order."""
    return {str(node.get("id")): [k for k, v in (node.get("params") or {}).items() if is_sweep(v)]
            for node in manifest.spec.get("node", [])}


def setting_of(row: dict[str, Any], swept: dict[str, list[str]]) -> str:
    """``key=value, ...`` of the swept parameters of the nodes in the row's lineage."""
    parts = []
    for step in row["lineage"] or [{"node": row["node"]}]:
        for key in swept.get(step["node"], []):
            if key in row["attrs"]:
                parts.append(f"{key}={row['attrs'][key]}")
    return ", ".join(dict.fromkeys(parts)) or NO_SETTING


def op_of(row: dict[str, Any]) -> str:
    return " > ".join(step["op"] for step in row["lineage"]) or row["node"]


def summarise(values: list[Measures]) -> dict[str, dict[str, float]]:
    """Each measure's min, median, mean (an exactly rounded sum) and max, to DECIMALS decimals."""
    out = {}
    for name in MEASURES:
        column = [getattr(v, name) for v in values]
        mean = math.inf if any(math.isinf(x) for x in column) else math.fsum(column) / len(column)
        stats = (min(column), statistics.median(column), mean, max(column))
        out[name] = {k: (x if math.isinf(x) else round(x, DECIMALS)) for k, x in zip(STATS, stats)}
    return out


def _order(manifest: Manifest) -> dict[str, int]:
    return {str(node.get("id")): index for index, node in enumerate(manifest.spec.get("node", []))}


def _value_rank(manifest: Manifest, row: dict[str, Any], swept: dict[str, list[str]]) -> list[Any]:
    """The row's swept values as their positions in the spec's lists (light before heavy)."""
    nodes = {str(n.get("id")): n for n in manifest.spec.get("node", [])}
    rank: list[Any] = []
    for step in row["lineage"]:
        params = nodes.get(step["node"], {}).get("params") or {}
        for key in swept.get(step["node"], []):
            sweep = params[key]
            candidates = sweep.get("grid", sweep.get("choice", []))
            names = [str(c) for c in (list(candidates) if isinstance(candidates, dict) else candidates)]
            value = str(row["attrs"].get(key))
            rank.append((names.index(value), "") if value in names else (len(names), value))
    return rank


def calibrate_manifest(manifest_dir: Path, cache_dir: Path, roots: list[Path], *, sample: int | None = None,
                       seed: int = 0) -> Calibration:
    """Measure every image variant of a seeded sample of a compiled manifest's groups against
    its record's original; summarise per node, ops and setting."""
    manifest = read_manifest(Path(manifest_dir))
    bench = manifest.locked.benchmark
    rows = [r for r in manifest_rows(manifest) if item_kind(r) == "image"]
    if not rows:
        raise no_images(f"{bench.name} has no image items")
    groups = {r["group_id"] for r in rows}
    chosen = set(sample_groups(sorted(groups), sample, seed))
    rows = sorted((r for r in rows if r["group_id"] in chosen), key=lambda r: (r["group_id"], natural_key(r)))
    store = ContentStore(Path(cache_dir))
    try:
        found = originals(manifest, rows, store, roots)
        measured, missing = _measure_rows(rows, found, store)
    finally:
        store.close()
    if not measured:
        raise BenchcError(Problem(f"no original image found for the {len(rows)} sampled image item(s) of "
                                  f"{bench.name}: its source could not be reloaded from here",
                                  hint="calibrate the spec itself, or pass --data-root"))
    swept, order = swept_keys(manifest), _order(manifest)
    buckets: dict[tuple[str, str, str], list[Measures]] = {}
    ranks: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    for row, values in measured:
        key = (row["node"], op_of(row), setting_of(row, swept))
        buckets.setdefault(key, []).append(values)
        ranks.setdefault(key, (order.get(row["node"], len(order)), row["node"], key[1],
                               _value_rank(manifest, row, swept), key[2]))
    summaries = [Summary(*key, n=len(buckets[key]), stats=summarise(buckets[key]))
                 for key in sorted(buckets, key=lambda k: ranks[k])]
    return Calibration(bench.name, len(groups), sorted(chosen), len(measured), missing, summaries)


def originals(manifest: Manifest, rows: list[dict[str, Any]], store: ContentStore,
              roots: list[Path]) -> dict[str, str | None]:
    """Item id -> the sha256 of its record's original image: the record's own, from the source
    reloaded (``roots``: where its data may be), else the image of the group's ``image.original``
    item (a one-step lineage), else None."""
    records = source_records(manifest, store, roots)
    in_group = {r["group_id"]: r["media"][0]["sha256"] for r in rows
                if item_kind(r) == "image" and [s["op"] for s in r["lineage"]] == ["image.original"]}
    out: dict[str, str | None] = {}
    for row in rows:
        media = original_media(manifest, row, "image", records) if records else None
        out[row["item_id"]] = media["sha256"] if media else in_group.get(row["group_id"])
    return out


def _measure_rows(rows: list[dict[str, Any]], found: dict[str, str | None],
                  store: ContentStore) -> tuple[list[tuple[dict[str, Any], Measures]], int]:
    """(row, its measures) for each row whose original was found (each original decoded once per
    run of rows sharing it), and how many were not."""
    measured, missing = [], 0
    for original_sha, group in itertools.groupby(rows, key=lambda r: found.get(r["item_id"])):
        batch = list(group)
        if original_sha is None:
            missing += len(batch)
            continue
        with media_image(store, original_sha) as original:
            for row in batch:
                with media_image(store, row["media"][0]["sha256"]) as variant:
                    measured.append((row, measure(original, variant)))
    return measured, missing


MEASURE_TITLES = {
    "ssim": "SSIM (1 = unchanged; lower = stronger)",
    "psnr": "PSNR, dB (inf = unchanged; lower = stronger)",
    "colour": "colour change, mean CIE76 delta E (0 = unchanged; ~2.3 just noticeable)",
    "edge": "edge change, mean |Sobel magnitude difference| of the luma, [0, 1] scale (0 = unchanged)",
}


def render_text(result: Calibration) -> str:
    """One table per measure: a row per (node, op, setting) with n and the four statistics."""
    header = ["node", "op", "setting", "n", *STATS]
    lines = [f"{result.benchmark}: {result.measured} image variant(s) of {len(result.sampled)} of {result.groups} "
             "group(s) measured against their originals"
             + (f"; {result.without_original} left out (no original found)" if result.without_original else "")]
    for name in MEASURES:
        table = [[s.node, s.op, s.setting, str(s.n), *(_cell(name, s.stats[name][k]) for k in STATS)]
                 for s in result.summaries]
        widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
        lines += ["", MEASURE_TITLES[name]]
        for index, cells in enumerate([header, *table]):
            lines.append("  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip())
            if index == 0:
                lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def _cell(name: str, value: float) -> str:
    return format_psnr(value) if name == "psnr" else f"{value:.{DECIMALS}f}"

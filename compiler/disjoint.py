"""Leakage checks: do two sets of items share a source record, a media object or (images) a
near-duplicate picture?

A *footprint* is what a set of items was made from: its source record ids and the sha256 of its
media (each with one record that holds it). ``benchc check-disjoint`` compares two manifests'
footprints (and the perceptual hashes of their images, ``phash.py``); a spec's
``[split] disjoint_from`` makes compile compare its items' footprint with each named evaluation
set's and refuse an overlap (``disjoint_from.py`` builds those).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .canonical import digest
from .cas import ContentStore
from .errors import Problem, SpecError
from .manifest import read_manifest
from .media import load_image
from .phash import dhash, near_pairs
from .spec.parse import LoadedSpec
from .text_overlap import TextMatch
from .values import Record

SHOWN = 10
"""Overlapping ids named in a message; the rest are counted."""


@dataclass(frozen=True)
class Footprint:
    label: str
    """the spec file or manifest folder it comes from"""
    records: frozenset[str]
    media: dict[str, tuple[str, str]] = field(default_factory=dict)
    """sha256 -> (kind, the first record id, in sorted order, that holds it)"""

    def digest(self) -> str:
        """What a compile memo must depend on: the record ids and media, not where they came from."""
        return digest({"kind": "footprint", "records": sorted(self.records), "media": sorted(self.media)})

    def images(self) -> dict[str, str]:
        return {sha: record for sha, (kind, record) in self.media.items() if kind == "image"}


def footprint_of_records(label: str, records: list[Record],
                         item_media: list[tuple[str, str, str]] | None = None) -> Footprint:
    """The footprint of ``records`` (their media) and of items' own media (sha256, kind, record id)."""
    media: dict[str, tuple[str, str]] = {}
    found = [(ref.sha256, ref.kind, r.id) for r in records for ref in r.media.values()] + (item_media or [])
    for sha, kind, record in sorted(found, key=lambda entry: (entry[0], entry[2])):
        media.setdefault(sha, (kind, record))
    return Footprint(label, frozenset(r.id for r in records), media)


def footprint_of_manifest(root: Path) -> Footprint:
    """A compiled manifest's footprint: its items' record ids and media (checked against its lock)."""
    frame = read_manifest(root).items()
    media: dict[str, tuple[str, str]] = {}
    rows = sorted(zip(frame.get_column("record_id").to_list(), frame.get_column("media").to_list()))
    for record, text in rows:
        for entry in json.loads(text):
            media.setdefault(entry["sha256"], (entry["kind"], record))
    return Footprint(str(root), frozenset(r for r, _ in rows), media)


@dataclass(frozen=True)
class Overlap:
    """What two footprints share: record ids, media (sha256, record here, record there) and near
    duplicate images (sha256 here, record, sha256 there, record, bits apart)."""

    records: list[str]
    media: list[tuple[str, str, str]]
    near: list[tuple[str, str, str, str, int]] = field(default_factory=list)
    unchecked: int = 0
    """images whose pixels were not in the compile cache (not checked for near duplicates)"""
    texts: list[TextMatch] = field(default_factory=list)
    """items whose prompts are the same (normalised) or near duplicates (``text_overlap.py``)"""

    @property
    def empty(self) -> bool:
        return not (self.records or self.media or self.near or self.texts)

    def as_json(self) -> dict[str, Any]:
        return {"disjoint": self.empty, "records": self.records,
                "media": [{"sha256": s, "record": a, "other_record": b} for s, a, b in self.media],
                "near_duplicates": [{"sha256": s, "record": a, "other_sha256": t, "other_record": b, "distance": d}
                                    for s, a, t, b, d in self.near],
                "images_not_checked": self.unchecked,
                "texts": [{"how": m.how, "signal": m.signal, "item": m.item, "other_item": m.other_item,
                           "jaccard": m.jaccard} for m in self.texts]}

    def lines(self) -> list[str]:
        """One line per kind of overlap, each naming the first SHOWN ids."""
        out = []
        if self.records:
            out.append(f"{len(self.records)} record id(s) in both: {_some(self.records)}")
        if self.media:
            out.append(f"{len(self.media)} media object(s) in both: "
                       + _some([f"{s[:12]} (record {a!r} / {b!r})" for s, a, b in self.media], quote=False))
        if self.near:
            out.append(f"{len(self.near)} near-duplicate image pair(s): "
                       + _some([f"{a!r} ~ {b!r} ({d} bits apart)" for _, a, _, b, d in self.near], quote=False))
        for how, said in (("exact", "the same prompt (normalised)"), ("near", "near-duplicate prompts")):
            found = [m for m in self.texts if m.how == how]
            if found:
                both = sum(m.same_target for m in found)
                out.append(f"{len(found)} item pair(s) with {said}, {both} with the same target too: "
                           + _some([f"{m.item!r} ~ {m.other_item!r} ({m.signal}"
                                    + (f", Jaccard {m.jaccard:.2f})" if how == "near" else ")") for m in found],
                                   quote=False))
        return out


def _some(names: list[str], quote: bool = True) -> str:
    shown = [repr(n) if quote else n for n in names[:SHOWN]]
    return ", ".join(shown) + (f", ... ({len(names) - SHOWN} more)" if len(names) > SHOWN else "")


def overlap(mine: Footprint, other: Footprint) -> Overlap:
    """Record ids and media in both footprints (exact matches only)."""
    shared = sorted(set(mine.media) & set(other.media))
    return Overlap(sorted(mine.records & other.records),
                   [(sha, mine.media[sha][1], other.media[sha][1]) for sha in shared])


def with_near_duplicates(found: Overlap, mine: Footprint, other: Footprint, store: ContentStore,
                         max_distance: int) -> Overlap:
    """``found`` with the image pairs whose dHashes are at most ``max_distance`` bits apart (exact
    media matches are listed already and left out here)."""
    hashes_a, missing_a = _dhashes(store, mine.images())
    hashes_b, missing_b = _dhashes(store, other.images())
    exact = {sha for sha, _, _ in found.media}
    near = [(a, mine.media[a][1], b, other.media[b][1], d)
            for a, b, d in near_pairs(hashes_a, hashes_b, max_distance) if not (a == b and a in exact)]
    return Overlap(found.records, found.media, near, missing_a + missing_b)


def _dhashes(store: ContentStore, images: dict[str, str]) -> tuple[dict[str, int], int]:
    out: dict[str, int] = {}
    missing = 0
    for sha in sorted(images):
        if not store.has(sha):
            missing += 1
            continue
        out[sha] = dhash(load_image(store, sha))
    return out, missing


def refuse_overlap(loaded: LoadedSpec, mine: Footprint, guards: list[Footprint]) -> None:
    """The compile's refusal: one error naming every evaluation set this spec's items overlap."""
    problems = []
    for index, other in enumerate(guards):
        found = overlap(mine, other)
        if found.empty:
            continue
        key = f"split.disjoint_from[{index}]"
        problems.append(loaded.problem(
            key, f"this spec's items overlap the evaluation set {other.label}: " + "; ".join(found.lines()),
            hint="leave those records out (a [[filter]], another source), or split both specs with the same "
                 "[split] key, fractions and seed and keep different splits"))
    if problems:
        raise SpecError(problems)


def footprint_problem(label: str, reason: str, key: str, loaded: LoadedSpec) -> Problem:
    """A ``disjoint_from`` entry that cannot be read."""
    return loaded.problem(key, f"cannot read the evaluation set {label}: {reason}",
                          hint="name a spec (.toml) or a compiled manifest folder, relative to this spec's folder")

"""Stage 3a: filters and sampling. Both are independent of the order records arrive in."""

from __future__ import annotations

from typing import Any

from .canonical import digest
from .seeds import seed_from
from .errors import SourceError
from .spec.models import Filter, Sample
from .spec.parse import LoadedSpec
from .values import Record


def _passes(flt: Filter, value: Any) -> bool:
    if flt.between is not None:
        return bool(flt.between[0] <= value <= flt.between[1])
    if flt.equals is not None:
        return bool(value == flt.equals)
    if flt.one_of is not None:
        return bool(value in flt.one_of)
    if flt.not_in is not None:
        return value not in flt.not_in
    return (flt.min is None or value >= flt.min) and (flt.max is None or value <= flt.max)


def apply_filters(loaded: LoadedSpec, records: list[Record]) -> list[Record]:
    return apply_filters_counted(loaded, records)[0]


def apply_filters_counted(loaded: LoadedSpec, records: list[Record]) -> tuple[list[Record], list[int]]:
    """The records that pass every filter, and how many were left after each filter in turn."""
    kept = records
    counts: list[int] = []
    for index, flt in enumerate(loaded.spec.filter):
        key = f"filter[{index}].where"
        survivors = []
        for record in kept:
            try:
                value = record.get(flt.where)
            except KeyError:
                raise SourceError(loaded.problem(
                    key, f"record {record.id!r} has no field {flt.where!r}",
                    hint=f"its fields: {', '.join(sorted(record.fields))}")) from None
            try:
                if _passes(flt, value):
                    survivors.append(record)
            except TypeError:
                raise SourceError(loaded.problem(
                    key, f"cannot compare {flt.where!r} = {value!r} of record {record.id!r}")) from None
        kept = survivors
        counts.append(len(kept))
    return kept, counts


def _field(loaded: LoadedSpec, record: Record, key: str, path: str) -> str:
    try:
        return digest(record.get(path))
    except KeyError:
        raise SourceError(loaded.problem(key, f"record {record.id!r} has no field {path!r}",
                                         hint=f"its fields: {', '.join(sorted(record.fields))}")) from None


def sample(loaded: LoadedSpec, records: list[Record]) -> list[Record]:
    """Rank records by a seeded hash of their id; keep one per ``per`` value, then the first n
    (per ``stratify`` value when set)."""
    spec: Sample = loaded.spec.sample
    seed = loaded.spec.benchmark.seed
    ranked = sorted(records, key=lambda r: (seed_from(["sample", seed, r.id]), r.id))
    if spec.per is not None:
        seen: set[str] = set()
        unique = []
        for record in ranked:
            group = _field(loaded, record, "sample.per", spec.per)
            if group not in seen:
                seen.add(group)
                unique.append(record)
        ranked = unique
    if spec.n is None:
        chosen = ranked
    elif spec.stratify is None:
        chosen = ranked[: spec.n]
    else:
        taken: dict[str, int] = {}
        chosen = []
        for record in ranked:
            stratum = _field(loaded, record, "sample.stratify", spec.stratify)
            if taken.get(stratum, 0) < spec.n:
                taken[stratum] = taken.get(stratum, 0) + 1
                chosen.append(record)
    return sorted(chosen, key=lambda r: r.id)


def stratum_sizes(loaded: LoadedSpec, records: list[Record]) -> dict[str, int]:
    """How many of ``records`` hold each value of ``sample.stratify`` (keyed by the value's digest)."""
    path = loaded.spec.sample.stratify
    sizes: dict[str, int] = {}
    if path is None:
        return sizes
    for record in records:
        stratum = _field(loaded, record, "sample.stratify", path)
        sizes[stratum] = sizes.get(stratum, 0) + 1
    return sizes

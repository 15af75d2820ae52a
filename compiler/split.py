"""``[split]``: each record goes to a named split by a seeded hash of its key.

The key is the record id, or the value of one or more record fields (a group key: an image id
keeps every question about one image, and so every variant of it, in one split). The hash is
the seed recipe (``seeds.seed_from``) of ``["split", seed, key value]``, a 64-bit number; the
splits own consecutive ranges of the 64-bit numbers, in name order, each as wide as its
fraction. So a record's split depends on its key, the fractions and the split seed only: not on
row order, other records, processes, PYTHONHASHSEED or worker counts, and two specs with the
same ``[split]`` over the same records split them the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .artifacts import SplitLock
from .canonical import SEED_RECIPE_VERSION
from .errors import SourceError, SpecError
from .registry import did_you_mean
from .seeds import seed_from
from .spec.models import Split
from .spec.parse import LoadedSpec
from .values import Record

SPACE = 2**64
RECIPE = ("seed_from(['split', seed, key value]) under the seed recipe; the splits own consecutive "
          "ranges of the 64-bit hash in name order, each fraction x 2**64 wide")


@dataclass(frozen=True)
class SplitResult:
    """The records of the kept splits (each with its split attribute) and how many records went
    to each split (kept or not)."""

    kept: list[Record]
    counts: dict[str, int]

    def lock(self, split: Split) -> SplitLock:
        assert split.fractions is not None
        return SplitLock(key=split.key, seed=split.seed, fractions=dict(sorted(split.fractions.items())),
                         keep=sorted(split.keep or split.fractions), attribute=split.attribute,
                         seed_recipe=SEED_RECIPE_VERSION, recipe=RECIPE, records=self.counts,
                         kept=len(self.kept))


def bounds(fractions: dict[str, float]) -> list[tuple[int, str]]:
    """(exclusive upper bound on the hash, split name) of each split, in name order; the last
    bound is 2**64 whatever rounding left."""
    names = sorted(fractions)
    out = []
    for index, name in enumerate(names):
        total = math.fsum(fractions[n] for n in names[: index + 1])
        out.append((SPACE if index == len(names) - 1 else min(SPACE, int(total * SPACE)), name))
    return out


def key_value(split: Split, record: Record) -> Any:
    """What is hashed for ``record``: its id, a field's value, or the list of the fields' values.
    KeyError (the path) when the record lacks a field."""
    if split.key is None:
        return record.id
    if isinstance(split.key, str):
        return record.get(split.key)
    return [record.get(path) for path in split.key]


def split_of(split: Split, record: Record) -> str:
    """The name of ``record``'s split."""
    assert split.fractions is not None
    point = seed_from(["split", split.seed, key_value(split, record)])
    return next(name for bound, name in bounds(split.fractions) if point < bound)


def apply_split(loaded: LoadedSpec, records: list[Record]) -> SplitResult | None:
    """The records of the kept splits, with the split's attribute; None without fractions."""
    split = loaded.spec.split
    if split is None or split.fractions is None:
        return None
    counts = {name: 0 for name in sorted(split.fractions)}
    keep = set(split.keep or split.fractions)
    kept = []
    for record in records:
        name = _assigned(loaded, split, record)
        counts[name] += 1
        if name in keep:
            kept.append(Record(record.id, record.fields, record.media, {**record.attrs, split.attribute: name}))
    return SplitResult(kept, counts)


def _assigned(loaded: LoadedSpec, split: Split, record: Record) -> str:
    if split.attribute in record.attrs:
        raise SpecError(loaded.problem(
            "split.attribute", f"record {record.id!r} already has the attribute {split.attribute!r}",
            hint="name the split's attribute otherwise, e.g. attribute = \"fold\""))
    try:
        return split_of(split, record)
    except KeyError as exc:
        path = str(exc.args[0])
        raise SourceError(loaded.problem(
            "split.key", f"record {record.id!r} has no field {path!r}",
            hint=did_you_mean(path, sorted(record.fields)) or f"its fields: {', '.join(sorted(record.fields))}"
        )) from None

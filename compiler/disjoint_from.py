"""``[split] disjoint_from``: the footprints (``disjoint.py``) of the evaluation sets a spec's
items must not overlap, read before the compile so that they enter its memo key.

An entry is a compiled manifest folder (its items' record ids and media) or a spec (.toml): the
records its filters, ``[split]`` and ``[sample]`` keep, with their media, without running its
nodes (an evaluation item is made from its record, so the records are what must not leak; a
``[select]`` of that spec is not run, so all its candidates count: a safe superset).
"""

from __future__ import annotations

from pathlib import Path

from .cas import ContentStore
from .compile_options import CompileOptions, data_roots
from .disjoint import Footprint, footprint_of_manifest, footprint_of_records, footprint_problem
from .errors import BenchcError, SpecError
from .manifest import is_manifest_dir
from .paths import within_roots
from .resolve import resolve
from .select import apply_filters, sample
from .source_loading import load_source
from .spec.parse import LoadedSpec, load_spec
from .split import apply_split


def guards(loaded: LoadedSpec, options: CompileOptions, store: ContentStore) -> list[Footprint]:
    """The footprint of each ``disjoint_from`` entry, in order ([] without any)."""
    split = loaded.spec.split
    out: list[Footprint] = []
    for index, entry in enumerate(split.disjoint_from if split is not None else []):
        key = f"split.disjoint_from[{index}]"
        path = loaded.path.parent / entry
        if not within_roots(path, data_roots(loaded, options)):  # it would print another folder's record ids
            raise SpecError(footprint_problem(entry, "lies outside the spec's folder and the data roots", key, loaded))
        try:
            if is_manifest_dir(path):
                out.append(footprint_of_manifest(path))
            elif path.suffix == ".toml" and path.is_file():
                out.append(_spec_footprint(path, options, store))
            else:
                raise SpecError(footprint_problem(entry, "not a spec file or a manifest folder", key, loaded))
        except SpecError:
            raise
        except BenchcError as exc:
            raise SpecError(footprint_problem(entry, exc.render(), key, loaded)) from None
    return out


def _spec_footprint(path: Path, options: CompileOptions, store: ContentStore) -> Footprint:
    other = load_spec(path)
    source = load_source(resolve(other), other, store, options)
    records = apply_filters(other, source.records)
    split = apply_split(other, records)
    return footprint_of_records(str(path), sample(other, split.kept if split is not None else records))

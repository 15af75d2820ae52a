"""Loading a spec's source as a compile does: the loader run over the data roots, then its
record ids checked for duplicates and its digest against the spec's ``source.pin``.

Shared by the compile (``compile.py``), ``[split] disjoint_from`` (which loads the records of
the specs a benchmark must not overlap) and ``benchc validate --data`` (``validate_data.py``).
"""

from __future__ import annotations

from collections import Counter

from .canonical import digest
from .cas import ContentStore
from .compile_options import CompileOptions, data_roots
from .errors import SourceError
from .resolve import Resolved
from .sources import LoadedSource, SourceContext
from .spec.parse import LoadedSpec


def load_source(resolved: Resolved, loaded: LoadedSpec, store: ContentStore,
                 options: CompileOptions) -> LoadedSource:
    ctx = SourceContext(roots=data_roots(loaded, options), store=store, on_error=loaded.spec.source.on_error,
                        spec_file=str(loaded.path))
    source = resolved.source.load(resolved.source_params, ctx)
    source.skipped.extend(ctx.skipped)
    _refuse_duplicate_ids(loaded, source)
    pin = loaded.spec.source.pin
    if pin is not None and pin != source_digest(source):
        raise SourceError(loaded.problem(
            "source.pin", f"source data changed: digest is {source_digest(source)}, the spec pins {pin}",
            hint="check the data; if the change is intended, update the pin and bump the version"))
    return source


def _refuse_duplicate_ids(loaded: LoadedSpec, source: LoadedSource) -> None:
    """Record ids seed every random choice and name every item: two records with one id would
    share seeds and collide in the manifest, so a source that yields them is refused."""
    counts = Counter(r.id for r in source.records)
    duplicates = sorted(i for i, n in counts.items() if n > 1)
    if duplicates:
        shown = ", ".join(repr(d) for d in duplicates[:5]) + (" ..." if len(duplicates) > 5 else "")
        raise SourceError(loaded.problem(
            "source", f"{len(duplicates)} record id(s) occur more than once: {shown}",
            hint="the loader's id column must be unique; pick another id field or deduplicate the data"))


def source_digest(source: LoadedSource) -> str:
    return digest({"kind": "source", "records": sorted(r.digest for r in source.records)})

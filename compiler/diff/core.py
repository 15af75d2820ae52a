"""``benchc diff``: what changed between two versions of a benchmark, and why.

Three levels, each computed only from what both sides have:

* spec: the spec documents with every default made explicit (``spec_document``, the same
  document the spec digest hashes), flattened into key paths such as
  ``node[question].params.index.grid`` and compared value by value, so writing a default out is
  no change and a changed default is one;
* lock: the lock files (source files and digests, op and library versions, counts, digests);
* items: the items tables, joined on ``item_id`` (``compiler/diff/items.py``): items added,
  removed and changed, each change attributed to its cause (a source row, a filter, node
  params, a template, the seed...).

The result also says which version bump the changes need (``needed_bump``), the rule the
README's *Versioning benchmarks* section states and the compile-time version check enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..canonical import canonical_json
from .items import ItemDiff, Signals, item_diff

ID_KEYS = {"node": "id", "stage": "id", "metric": "name", "filter": "where", "files": "path", "tables": "path"}
"""Lists of tables whose entries are matched by a key rather than by position: reordering nodes
or adding a filter then reads as one entry added, not as every later entry changed."""

SECTIONS = {"benchmark": "benchmark", "source": "source", "filter": "filters", "sample": "sample",
            "node": "nodes", "prompt": "templates", "generation": "generation", "stage": "stages",
            "metric": "metrics"}
SECTION_ORDER = ("benchmark", "source", "filters", "sample", "nodes", "templates", "generation", "stages",
                 "metrics", "lock")
PROSE_KEYS = ("benchmark.description", "benchmark.version")
"""Spec keys the spec digest leaves out: changing them changes no item."""
BUMPS = ("none", "patch", "minor", "major")


@dataclass(frozen=True)
class Change:
    """One key that differs: ``before`` or ``after`` is None when the key is only on one side."""

    section: str
    path: str
    before: Any
    after: Any
    kind: str  # "changed" | "added" | "removed"

    def as_json(self) -> dict[str, Any]:
        return {"section": self.section, "path": self.path, "kind": self.kind,
                "before": self.before, "after": self.after}


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


def flatten(value: Any, path: str = "", out: dict[str, Any] | None = None,
            entries: dict[str, Any] | None = None) -> dict[str, Any]:
    """Key path -> leaf value. Tables recurse; lists of tables named in ``ID_KEYS`` are keyed by
    their id (``node[question]``), or by position when the ids are missing or repeated, and
    each such entry is also recorded whole in ``entries``; any other list is one leaf (a grid
    is compared whole)."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for key, item in value.items():
            flatten(item, f"{path}.{key}" if path else str(key), out, entries)
        return out
    name = path.rsplit(".", 1)[-1]
    if isinstance(value, list) and name in ID_KEYS and all(isinstance(v, dict) for v in value):
        id_key = ID_KEYS[name]
        ids = [v.get(id_key) for v in value]
        keyed = all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids)
        for index, item in enumerate(value):
            entry = f"{path}[{ids[index] if keyed else index}]"
            rest = {k: v for k, v in item.items() if not (keyed and k == id_key)}
            if entries is not None:
                entries[entry] = {k: v for k, v in item.items() if v is not None}
            flatten(rest, entry, out, entries) if rest else out.setdefault(entry, {})
        return out
    out[path] = value
    return out


def section_of(path: str, default: str) -> str:
    top = path.split(".", 1)[0].split("[", 1)[0]
    if top == "stage" and (path.endswith(".template") or ".template." in path):
        return "templates"
    return SECTIONS.get(top, default)


def _same(a: Any, b: Any) -> bool:
    """Equal as canonical JSON: 1 and 1.0 differ, as they do in a digest."""
    if a is MISSING or b is MISSING:
        return a is b
    try:
        return canonical_json(a) == canonical_json(b)
    except TypeError:
        return bool(a == b)


def compare(a: dict[str, Any], b: dict[str, Any], default_section: str) -> list[Change]:
    """Every key path whose value differs, in section order, then key order. An entry (a node,
    a filter, a metric...) on one side only is one change holding the whole entry."""
    entries_a: dict[str, Any] = {}
    entries_b: dict[str, Any] = {}
    flat_a, flat_b = flatten(a, entries=entries_a), flatten(b, entries=entries_b)
    whole = [(path, entries_a.get(path, MISSING), entries_b.get(path, MISSING))
             for path in sorted(set(entries_a) ^ set(entries_b))]
    covered = {path for path, _, _ in whole}
    inside = tuple(f"{path}{sep}" for path in covered for sep in (".", "["))
    leaves = [(path, flat_a.get(path, MISSING), flat_b.get(path, MISSING))
              for path in sorted(set(flat_a) | set(flat_b)) if path not in covered and not path.startswith(inside)]
    leaves = _retyped(leaves, flat_a, flat_b)
    changes = []
    for path, before, after in whole + leaves:
        if _same(before, after):
            continue
        kind = "added" if before is MISSING else "removed" if after is MISSING else "changed"
        changes.append(Change(section_of(path, default_section), path,
                              None if before is MISSING else before, None if after is MISSING else after, kind))
    order = {name: i for i, name in enumerate(SECTION_ORDER)}
    return sorted(changes, key=lambda c: (order.get(c.section, len(order)), c.path))


def _retyped(leaves: list[tuple[str, Any, Any]], flat_a: dict[str, Any], flat_b: dict[str, Any]
             ) -> list[tuple[str, Any, Any]]:
    """A key that is a value on one side and a table on the other (a template written as a
    string, then swept: ``prompt.template`` -> ``prompt.template.grid.terse``...) is one change at
    that key, its table side shown as its leaves by relative path."""
    paths = {path for path, _, _ in leaves}
    retyped = sorted(path for path in paths if any(q.startswith((f"{path}.", f"{path}[")) for q in paths))
    if not retyped:
        return leaves
    out = [leaf for leaf in leaves if not any(leaf[0].startswith((f"{r}.", f"{r}[")) for r in retyped)]
    return [(path, _side(path, flat_a, before), _side(path, flat_b, after)) if path in retyped
            else (path, before, after) for path, before, after in out]


def _side(path: str, flat: dict[str, Any], value: Any) -> Any:
    """The value at ``path``, or the leaves under it by relative path when it is a table."""
    if value is not MISSING:
        return value
    under = {q[len(path):].lstrip("."): v for q, v in flat.items() if q.startswith((f"{path}.", f"{path}["))}
    return under or MISSING


def spec_changes(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    """Changes between two spec documents (``spec_document``: defaults explicit)."""
    return compare(a, b, "other")


LOCK_RECORDS = ("libraries", "model_steps")
"""Lock keys that record where a compile ran rather than what it made (check_lock ignores them
too); they are shown, but alone never make two manifests differ."""


def lock_changes(a: dict[str, Any], b: dict[str, Any], *, with_benchmark: bool = True) -> list[Change]:
    """Changes between two lock files; ``with_benchmark=False`` leaves out the benchmark's
    name, version and seed when the spec section already shows them."""
    skip = () if with_benchmark else ("benchmark",)
    changes = compare({k: v for k, v in a.items() if k not in skip},
                      {k: v for k, v in b.items() if k not in skip}, "lock")
    return sorted((Change("lock", c.path, c.before, c.after, c.kind) for c in changes), key=lambda c: c.path)


def signals_of(changes: list[Change], lock_delta: list[Change],
               docs: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> Signals:
    """Summarise spec and lock changes into the flags ``item_diff`` attributes causes with."""
    paths = [c.path for c in changes]
    nodes = frozenset(p.split("]", 1)[0].removeprefix("node[") for p in paths if p.startswith("node["))
    source_moved = any(c.path.startswith(("source.digest", "source.files", "source.records")) for c in lock_delta)
    sampling = any(doc and any(v is not None for v in (doc.get("sample") or {}).values()) for doc in docs)
    return Signals(
        seed="benchmark.seed" in paths,
        filter=any(p.startswith("filter") for p in paths),
        sample=any(p.startswith("sample") for p in paths),
        sampling=bool(sampling),
        source=source_moved or any(p.startswith("source") for p in paths),
        template=any(p.startswith("prompt.") for p in paths),
        targets=any(p.startswith("metric[") and p.endswith(".target") for p in paths),
        nodes=nodes,
        settings=any(c.section in ("generation", "templates") and (".grid" in c.path or ".choice" in c.path)
                     for c in changes),
        known=all(doc is not None for doc in docs),
    )


@dataclass(frozen=True)
class SideInfo:
    """What a side of a diff is, for the header of every output format."""

    label: str
    kind: str  # "spec" | "manifest" | "lock"
    name: str | None = None
    version: str | None = None
    items: int | None = None
    manifest_digest: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"label": self.label, "kind": self.kind, "name": self.name, "version": self.version,
                "items": self.items, "manifest_digest": self.manifest_digest}


@dataclass
class Diff:
    a: SideInfo
    b: SideInfo
    spec: list[Change] | None = None
    lock: list[Change] | None = None
    items: ItemDiff | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return (not self.spec and not [c for c in self.lock or [] if not c.path.startswith(LOCK_RECORDS)]
                and (self.items is None or self.items.equal))

    def bump(self) -> dict[str, str] | None:
        """The bump made (A's version -> B's) and the bump the changes need; None when the two
        sides are different benchmarks or a version is unknown."""
        if self.a.name != self.b.name or not self.a.version or not self.b.version:
            return None
        return {"from": self.a.version, "to": self.b.version, "made": bump_made(self.a.version, self.b.version),
                "needed": needed_bump(self.spec or [], self.lock or [], self.items)}

    def as_json(self) -> dict[str, Any]:
        return {"equal": self.equal, "a": self.a.as_json(), "b": self.b.as_json(),
                "spec": None if self.spec is None else [c.as_json() for c in self.spec],
                "lock": None if self.lock is None else [c.as_json() for c in self.lock],
                "items": None if self.items is None else self.items.as_json(),
                "bump": self.bump(), "notes": self.notes}


def _semver(version: str) -> tuple[int, int, int] | None:
    parts = version.split("-", 1)[0].split("+", 1)[0].split(".")
    try:
        major, minor, patch = (int(p) for p in parts)
    except ValueError:
        return None
    return major, minor, patch


def bump_made(before: str, after: str) -> str:
    """Which part of the version went up from ``before`` to ``after`` ("none" when none did)."""
    a, b = _semver(before), _semver(after)
    if a is None or b is None or b <= a:
        return "none"
    return "major" if b[0] > a[0] else "minor" if b[1] > a[1] else "patch"


UNCOMPARABLE = ("templates", "generation", "stages", "metrics")
"""Spec sections whose change changes what a score means even when no item changes (adding a
stage or a metric adds scores and leaves the others comparable)."""
ADDABLE = ("stages", "metrics")


def needed_bump(spec: list[Change], lock: list[Change], items: ItemDiff | None) -> str:
    """The README's rule. major: an existing item changes or goes, or what a score means changes
    (templates, generation, stages, metrics); minor: items, stages or metrics are only added;
    patch: nothing an item or a score depends on changes (the description, a source pin);
    none: nothing changed. Without items (a lock on one side), a content change is assumed to
    need a major bump."""
    content = [c for c in spec if c.path not in PROSE_KEYS]
    moved = [c for c in lock if c.path in ("spec_digest", "manifest_digest", "source.digest")]
    if items is not None and (items.removed or items.changed):
        return "major"
    if any(c.section in UNCOMPARABLE and not _entry_added(c) and not sweep_grew(c) for c in content):
        return "major"
    if (items is not None and items.added) or any(c.section in ADDABLE for c in content):
        return "minor"
    if content or moved:
        return "major" if items is None else "patch"
    return "patch" if any(c.path == "benchmark.description" for c in spec) else "none"


def sweep_grew(change: Change) -> bool:
    """A ``[generation]`` or template sweep that only gained values (``temperature.grid`` [0.2] ->
    [0.2, 0.7], a name added to ``prompt.template.grid``): it only adds items, as a node's grid
    value does, and the items say the rest (a renamed, reordered or removed value changes or
    removes items: major)."""
    if change.section not in ("generation", "templates"):
        return False
    if change.kind == "added" and ".grid." in change.path:
        return True
    before, after = change.before, change.after
    if change.kind != "changed" or not change.path.endswith(".grid") or not isinstance(before, list) \
            or not isinstance(after, list):
        return False
    kept = {canonical_json(v) for v in after}
    return all(canonical_json(v) in kept for v in before)


def _entry_added(change: Change) -> bool:
    """A whole stage or metric added (``metric[name]``): new scores beside comparable ones. A key
    added inside an existing entry (``metric[name].where``) changes what that score means."""
    return change.section in ADDABLE and change.kind == "added" and change.path.endswith("]")


def side_info(label: str, kind: str, doc: dict[str, Any] | None, lock: dict[str, Any] | None,
              items: int | None) -> SideInfo:
    bench = (doc or {}).get("benchmark") or (lock or {}).get("benchmark") or {}
    return SideInfo(label, kind, bench.get("name"), bench.get("version"), items,
                    (lock or {}).get("manifest_digest"))


def diff_documents(a: SideInfo, b: SideInfo, docs: tuple[dict[str, Any] | None, dict[str, Any] | None],
                   locks: tuple[dict[str, Any] | None, dict[str, Any] | None], frames: tuple[Any, Any],
                   examples: int = 5) -> Diff:
    """Compare what both sides have: spec documents, lock files, items tables (polars frames)."""
    spec = spec_changes(docs[0], docs[1]) if docs[0] is not None and docs[1] is not None else None
    lock = (lock_changes(locks[0], locks[1], with_benchmark=spec is None)
            if locks[0] is not None and locks[1] is not None else None)
    result = Diff(a, b, spec, lock)
    if frames[0] is not None and frames[1] is not None:
        signals = signals_of(spec or [], lock or [], docs)
        result.items = item_diff(frames[0], frames[1], signals, examples)
    elif "lock" in (a.kind, b.kind):
        result.notes.append("items not compared: a lock file has none (give specs or manifests on both sides)")
    if spec is None and "lock" in (a.kind, b.kind):
        result.notes.append("spec documents not compared: a lock file holds only the spec's digest")
    return result

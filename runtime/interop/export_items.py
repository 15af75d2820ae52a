"""The fine-tuning examples of a manifest (``benchc export``): one per item with a target, with
its split, prompt, target and media, in manifest order (sorted item ids)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...compiler.canonical import canonical_json
from ...compiler.errors import BenchcError, Problem
from ...compiler.manifest import Manifest
from ...compiler.registry import did_you_mean

NO_SPLIT = "all"
"""The split name of items of a spec without ``[split]``."""


@dataclass(frozen=True)
class Example:
    id: str
    split: str
    system: str | None
    prompt: str
    target: str
    media: list[tuple[str, str]]
    """(kind, sha256) of each medium, in the item's order"""
    attrs: dict[str, Any]


def target_key(manifest: Manifest, wanted: str | None) -> str:
    """The target (a metric's ``target``) the examples answer with: ``wanted``, or the only one."""
    keys = sorted({key for text in manifest.items().get_column("targets").to_list() for key in json.loads(text)})
    if wanted is not None and wanted not in keys:
        hint = did_you_mean(wanted, keys) or (f"the manifest's targets: {', '.join(keys)}" if keys else None)
        raise BenchcError(Problem(f"the manifest has no target {wanted!r}", key="--target", hint=hint))
    if wanted is not None:
        return wanted
    if len(keys) != 1:
        raise BenchcError(Problem(
            f"{manifest.root}: " + ("its items have no target" if not keys else f"{len(keys)} targets: "
                                    + ", ".join(repr(k) for k in keys)),
            key="--target", hint="add a [[metric]] with a `target` to the spec and recompile" if not keys
            else "choose one with --target"))
    return keys[0]


def examples(manifest: Manifest, target: str) -> tuple[list[Example], int]:
    """The examples, and how many items were left out for an empty target."""
    split = (manifest.lock.get("split") or {}).get("attribute")
    out, skipped = [], 0
    for row in manifest.items().sort("item_id").iter_rows(named=True):
        answers = [a for a in json.loads(row["targets"]).get(target, []) if a.strip()]
        if not answers:
            skipped += 1
            continue
        attrs = json.loads(row["attrs"])
        out.append(Example(row["item_id"], str(attrs.get(split, NO_SPLIT)) if split else NO_SPLIT,
                           row["system"], row["prompt"], answers[0],
                           [(m["kind"], m["sha256"]) for m in json.loads(row["media"])], attrs))
    return out, skipped


def counts(found: list[Example]) -> dict[str, Any]:
    """Examples per split, and per attribute value (values as text: canonical JSON unless a string)."""
    splits: dict[str, int] = {}
    attributes: dict[str, dict[str, int]] = {}
    for example in found:
        splits[example.split] = splits.get(example.split, 0) + 1
        for name, value in example.attrs.items():
            shown = value if isinstance(value, str) else canonical_json(value)
            attributes.setdefault(name, {})
            attributes[name][shown] = attributes[name].get(shown, 0) + 1
    return {"splits": dict(sorted(splits.items())),
            "attributes": {k: dict(sorted(v.items())) for k, v in sorted(attributes.items())}}

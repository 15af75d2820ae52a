"""``benchc diff`` output: plain text (terminals, logs), Markdown (pull requests) and JSON (tools).

Text and Markdown say the same things in the same order: the two sides, the spec changes by
section (before -> after), the lock changes, the items (added, removed, changed, counts per
cause, examples) and the version bump the changes need.
"""

from __future__ import annotations

import json
from typing import Any

from .core import Change, Diff
from .items import ItemDiff

FORMATS = ("text", "markdown", "json")
VALUE_CHARS = 120


def render(diff: Diff, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(diff.as_json(), indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return (_markdown if fmt == "markdown" else _text)(diff)


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "..."


def change_line(change: Change) -> str:
    if change.kind == "added":
        return f"{change.path}: added {_value(change.after)}"
    if change.kind == "removed":
        return f"{change.path}: removed (was {_value(change.before)})"
    return f"{change.path}: {_value(change.before)} -> {_value(change.after)}"


def _side(diff: Diff, which: str) -> str:
    side = diff.a if which == "a" else diff.b
    what = f"{side.name} {side.version}" if side.name else "?"
    items = f", {side.items} items" if side.items is not None else ""
    return f"{which.upper()}: {side.label} ({side.kind}: {what}{items})"


def _by_section(changes: list[Change]) -> dict[str, list[Change]]:
    out: dict[str, list[Change]] = {}
    for change in changes:
        out.setdefault(change.section, []).append(change)
    return out


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def _bump_line(diff: Diff) -> str | None:
    bump = diff.bump()
    if bump is None:
        return None
    line = f"version {bump['from']} -> {bump['to']}: bump made {bump['made']}, needed {bump['needed']}"
    order = ("none", "patch", "minor", "major")
    if order.index(bump["made"]) < order.index(bump["needed"]):
        line += f" (too small: these changes need a {bump['needed']} bump)"
    return line


def _item_lines(items: ItemDiff) -> list[str]:
    lines = [(f"{items.items_a} -> {items.items_b} items: {items.added} added, {items.removed} removed, "
              f"{items.changed} changed, {items.unchanged} unchanged")]
    if items.causes:
        lines.append(f"changed by cause: {_counts(items.causes)}")
    if items.fields:
        lines.append(f"changed fields: {_counts(items.fields)}")
    if items.added_causes:
        lines.append(f"added by cause: {_counts(items.added_causes)}")
    if items.removed_causes:
        lines.append(f"removed by cause: {_counts(items.removed_causes)}")
    return lines


def _example_lines(items: ItemDiff) -> list[tuple[str, list[str]]]:
    """(heading, lines) per example group."""
    out = []
    for group, examples in items.examples.items():
        lines = []
        for ex in examples:
            if "fields" in ex:
                lines.append(f"{ex['item_id']} [{', '.join(ex['causes'])}]")
                lines += [f"  {f}: {_value(ex['before'][f])} -> {_value(ex['after'][f])}" for f in ex["before"]]
                hidden = [f for f in ex["fields"] if f not in ex["before"]]
                if hidden:
                    lines.append(f"  also: {', '.join(hidden)}")
            else:
                lines.append(f"{ex['item_id']}: {_value(ex['prompt'])}")
        heading = group if group in ("added", "removed") else f"changed ({group})"
        out.append((heading, lines))
    return out


def _text(diff: Diff) -> str:
    out = [_side(diff, "a"), _side(diff, "b"), ""]
    if diff.equal:
        out.append("no differences")
    if diff.spec:
        out.append("spec:")
        for section, changes in _by_section(diff.spec).items():
            out.append(f"  {section}:")
            out += [f"    {change_line(c)}" for c in changes]
    if diff.lock:
        out.append("lock:")
        out += [f"  {change_line(c)}" for c in diff.lock]
    if diff.items is not None and not diff.items.equal:
        out.append("items:")
        out += [f"  {line}" for line in _item_lines(diff.items)]
        for heading, lines in _example_lines(diff.items):
            out.append(f"  examples, {heading}:")
            out += [f"    {line}" for line in lines]
    bump = _bump_line(diff)
    if bump and not diff.equal:
        out.append(bump)
    out += [f"note: {n}" for n in diff.notes]
    return "\n".join(out)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(diff: Diff) -> str:
    out = ["# benchc diff", "", f"- {_side(diff, 'a')}", f"- {_side(diff, 'b')}", ""]
    if diff.equal:
        out += ["No differences.", ""]
    if diff.spec:
        out += ["## Spec", "", "| section | key | before | after |", "|---|---|---|---|"]
        out += [f"| {c.section} | `{c.path}` | {_md_escape(_value(c.before) if c.kind != 'added' else '')} | "
                f"{_md_escape(_value(c.after) if c.kind != 'removed' else '')} |" for c in diff.spec]
        out.append("")
    if diff.lock:
        out += ["## Lock", "", "| key | before | after |", "|---|---|---|"]
        out += [f"| `{c.path}` | {_md_escape(_value(c.before))} | {_md_escape(_value(c.after))} |" for c in diff.lock]
        out.append("")
    if diff.items is not None and not diff.items.equal:
        out += ["## Items", ""] + [f"- {line}" for line in _item_lines(diff.items)] + [""]
        for heading, lines in _example_lines(diff.items):
            out += [f"<details><summary>examples, {heading}</summary>", "", "```"] + lines + ["```", "</details>", ""]
    bump = _bump_line(diff)
    if bump and not diff.equal:
        out += [f"**Version:** {bump}", ""]
    out += [f"> {n}" for n in diff.notes]
    return "\n".join(out).rstrip() + "\n"

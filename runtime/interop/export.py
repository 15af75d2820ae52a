"""``benchc export MANIFEST --format F -o DIR``: a manifest as fine-tuning conversations.

Formats (one file per split, named after it; ``all`` for a spec without ``[split]``):

* ``llava``: ``<split>.json``, LLaVA's list of ``{"id", "image", "conversations": [{"from":
  "human", "value": "<image>\\n<prompt>"}, {"from": "gpt", "value": <target>}]}`` (``image`` a
  list when an item has several; no ``image`` for text-only items; ``system`` when the spec has one).
* ``sharegpt``: ``<split>.json``, LLaMA-Factory's ShareGPT form: ``conversations`` (an ``<image>``
  or ``<audio>`` token per medium before the prompt), ``system``, ``images``, ``audios``.
* ``jsonl``: ``<split>.jsonl``, one object per line: ``id``, ``split``, ``system``, ``prompt``,
  ``target``, ``media`` ([{kind, path or data}]), ``attrs``.
* ``hf-datasets``: a ``datasets.DatasetDict`` written with ``save_to_disk`` (columns id, system,
  prompt, target, images, audios, attrs), when the ``datasets`` library is installed.

Media are copied to ``media/<sha256>.<ext>`` and named by that relative path, or, with
``--media embed``, written inline as ``data:`` URIs. Beside them,
``card.json`` and ``README.md``: the spec, the manifest digest, the target, and the examples per
split and per attribute value. Nothing depends on time or place, so exporting one manifest twice
gives the same bytes; the folder is written beside DIR and renamed into place.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...compiler.atomic import make_staging_dir, replace_dir_atomic
from ...compiler.cas import ContentStore
from ...compiler.errors import BenchcError, Problem
from ...compiler.manifest import read_manifest
from ...compiler.registry import did_you_mean
from .export_items import Example, counts, examples, target_key

FORMATS = ("llava", "sharegpt", "jsonl", "hf-datasets")
MEDIA_MODES = ("files", "embed")
CARD = "card.json"
MEDIA_TYPES = ((b"\x89PNG", "png", "image/png"), (b"\xff\xd8\xff", "jpg", "image/jpeg"),
               (b"RIFF", "wav", "audio/wav"), (b"GIF8", "gif", "image/gif"))


@dataclass(frozen=True)
class ExportResult:
    out_dir: Path
    format: str
    examples: int
    skipped: int
    splits: dict[str, int]
    files: list[str]


def check_export_format(fmt: str) -> str:
    """``fmt`` if it is a format, else one line with the closest."""
    if fmt not in FORMATS:
        hint = did_you_mean(fmt, list(FORMATS)) or f"one of {', '.join(FORMATS)}"
        raise BenchcError(Problem(f"unknown --format {fmt!r}", key="--format", hint=hint))
    return fmt


def export(manifest_dir: Path, out_dir: Path, fmt: str, store: ContentStore, *, target: str | None = None,
           media: str = "files") -> ExportResult:
    check_export_format(fmt)
    if media not in MEDIA_MODES:
        raise BenchcError(Problem(f"unknown --media {media!r}", key="--media", hint=f"one of {', '.join(MEDIA_MODES)}"))
    writer = _writer(fmt)
    _check_out(out_dir)
    manifest = read_manifest(manifest_dir)
    key = target_key(manifest, target)
    found, skipped = examples(manifest, key)
    _check_media(fmt, found)
    staging = make_staging_dir(out_dir)
    try:
        refs = _MediaRefs(store, staging, embed=media == "embed")
        writer(found, refs, staging)
        card = {"format": fmt, "media": media, "target": key, "examples": len(found),
                "skipped_without_target": skipped, "benchmark": manifest.lock["benchmark"],
                "spec_digest": manifest.lock.get("spec_digest"),
                "manifest_digest": manifest.lock["manifest_digest"], "split": manifest.lock.get("split"),
                **counts(found)}
        files = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
        card["files"] = sorted([*files, CARD, "README.md"])
        (staging / CARD).write_text(json.dumps(card, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                                    encoding="utf-8")
        (staging / "README.md").write_text(_readme(card), encoding="utf-8")
        replace_dir_atomic(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(out_dir, fmt, len(found), skipped, card["splits"], card["files"])


CARRIES = {"llava": frozenset({"image"}), "sharegpt": frozenset({"image", "audio"})}
"""The media each format can hold (the others, jsonl and hf-datasets, hold every kind)."""


def _check_media(fmt: str, found: list[Example]) -> None:
    """Refuse a format that cannot carry the examples' media, with the count, before anything is
    written: `--format llava` of an audio manifest wrote examples with no audio, exit 0 (issue 28)."""
    carried = CARRIES.get(fmt)
    if carried is None:
        return
    lost = [e for e in found if any(kind not in carried for kind, _ in e.media)]
    if lost:
        kinds = sorted({kind for e in lost for kind, _ in e.media} - carried)
        able = [name for name in FORMATS if name not in CARRIES or set(kinds) <= CARRIES[name]]
        raise BenchcError(Problem(
            f"--format {fmt} carries {', '.join(sorted(carried))} only: {len(lost)} of {len(found)} example(s) have "
            f"{', '.join(kinds)} (e.g. {lost[0].id}), which it would leave out", key="--format",
            hint=f"export them as {' or '.join(able)}"))


def _check_out(out_dir: Path) -> None:
    """Replace only an earlier export (or an empty folder), never the user's files."""
    if out_dir.exists() and (not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / CARD).is_file())):
        raise BenchcError(Problem(f"{out_dir} exists and is not a benchc export; refusing to replace it",
                                  key="--out", hint="choose a new or empty folder for -o/--out"))


class _MediaRefs:
    """Each medium once: a file under media/ (its relative path) or a data: URI."""

    def __init__(self, store: ContentStore, root: Path, embed: bool) -> None:
        self.store, self.root, self.embed = store, root, embed

    def data(self, sha: str) -> bytes:
        try:
            return self.store.get(sha)
        except FileNotFoundError:
            raise BenchcError(Problem(f"medium {sha[:16]}... is not in the compile cache {self.store.root}",
                                      key="--cache", hint="pass the --cache the manifest was compiled with, "
                                                          "or compile it again")) from None

    def ref(self, sha: str) -> str:
        data = self.data(sha)
        ext, mime = next(((e, m) for magic, e, m in MEDIA_TYPES if data.startswith(magic)),
                         ("bin", "application/octet-stream"))
        if self.embed:
            return f"data:{mime};base64,{base64.b64encode(data).decode()}"
        path = self.root / "media" / f"{sha}.{ext}"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
        return f"media/{sha}.{ext}"

    def of(self, example: Example, kind: str) -> list[str]:
        return [self.ref(sha) for k, sha in example.media if k == kind]


def _by_split(found: list[Example]) -> dict[str, list[Example]]:
    out: dict[str, list[Example]] = {}
    for example in found:
        out.setdefault(example.split, []).append(example)
    return dict(sorted(out.items()))


def _dump(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _llava(example: Example, refs: _MediaRefs) -> dict[str, Any]:
    images = refs.of(example, "image")
    tokens = "<image>\n" * len(images)
    row: dict[str, Any] = {"id": example.id, "conversations": [
        {"from": "human", "value": tokens + example.prompt}, {"from": "gpt", "value": example.target}]}
    if images:
        row["image"] = images[0] if len(images) == 1 else images
    if example.system:
        row["system"] = example.system
    return row


def _sharegpt(example: Example, refs: _MediaRefs) -> dict[str, Any]:
    images, audios = refs.of(example, "image"), refs.of(example, "audio")
    tokens = "<image>" * len(images) + "<audio>" * len(audios)
    row: dict[str, Any] = {"id": example.id, "conversations": [
        {"from": "human", "value": tokens + example.prompt}, {"from": "gpt", "value": example.target}]}
    for name, value in (("images", images), ("audios", audios), ("system", example.system)):
        if value:
            row[name] = value
    return row


def _jsonl_row(example: Example, refs: _MediaRefs) -> dict[str, Any]:
    media = [{"kind": kind, ("data" if refs.embed else "path"): refs.ref(sha)} for kind, sha in example.media]
    return {"id": example.id, "split": example.split, "system": example.system, "prompt": example.prompt,
            "target": example.target, "media": media, "attrs": example.attrs}


def _json_files(row: Callable[[Example, _MediaRefs], dict[str, Any]]) -> Callable[..., None]:
    def write(found: list[Example], refs: _MediaRefs, root: Path) -> None:
        for split, group in _by_split(found).items():
            (root / f"{split}.json").write_text(_dump([row(e, refs) for e in group]), encoding="utf-8")
    return write


def _jsonl(found: list[Example], refs: _MediaRefs, root: Path) -> None:
    for split, group in _by_split(found).items():
        lines = [json.dumps(_jsonl_row(e, refs), sort_keys=True, ensure_ascii=False) for e in group]
        (root / f"{split}.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _writer(fmt: str) -> Callable[[list[Example], _MediaRefs, Path], None]:
    if fmt == "hf-datasets":
        from .export_hf import hf_datasets_writer

        return hf_datasets_writer()
    return {"llava": _json_files(_llava), "sharegpt": _json_files(_sharegpt), "jsonl": _jsonl}[fmt]


def _readme(card: dict[str, Any]) -> str:
    bench = card["benchmark"]
    lines = [f"# {bench['name']} {bench['version']}: fine-tuning export", "",
             f"Format `{card['format']}` (media: {card['media']}), written by `benchc export` from the manifest "
             f"`{card['manifest_digest']}` (spec digest `{card['spec_digest']}`). Targets: `{card['target']}`.",
             "", f"{card['examples']} examples ({card['skipped_without_target']} items without a target left out).",
             "", "| split | examples |", "|---|---|"]
    lines += [f"| {name} | {n} |" for name, n in card["splits"].items()]
    if card["split"]:
        split = card["split"]
        lines += ["", f"Split by `{split['key'] or 'record id'}` (seed {split['seed']}, fractions "
                      f"{json.dumps(split['fractions'], sort_keys=True)}): {split['recipe']}."]
    lines += ["", "| attribute | value | examples |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {n} |" for name, values in card["attributes"].items()
              for value, n in values.items()]
    return "\n".join(lines) + "\n"

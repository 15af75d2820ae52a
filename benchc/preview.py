"""``benchc preview``: look at one item's variants before running a model on them.

Image items become a contact sheet (``contact_sheet.png``): the record's original image, then
every variant, each captioned with its item id suffix, the attributes that vary across its group,
its strength against the original (SSIM, PSNR, colour and edge change: runtime/score/measures.py,
measurements that never enter a digest) and the first line of its prompt; ``index.md`` lists the
same measures to 4 decimals. Audio items become one WAV per variant (the stored bytes, so
what you hear is what the model gets). Text items are listed in ``index.md``, which every
preview writes. The folder is filled beside the target and renamed into place.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from .compiler.atomic import make_staging_dir, replace_dir_atomic
from .compiler.cas import ContentStore, CorruptObjectError
from .compiler.errors import BenchcError, Problem
from .compiler.manifest import Manifest, read_manifest
from .compiler.media import load_image
from .runtime.score.measures import Measures, format_psnr, measure

THUMB = 256
"""Largest side of a thumbnail on the contact sheet, in pixels."""
PAD = 8
LINE = 12
CAPTION_LINES = 5
COLUMNS = 4
SHEET_FILE, INDEX_FILE = "contact_sheet.png", "index.md"
CELL_W, CELL_H = THUMB + 2 * PAD, THUMB + 2 * PAD + CAPTION_LINES * LINE


@dataclass(frozen=True)
class Entry:
    """One thing shown: the record's original, or one item of the manifest."""

    label: str                       # "original" or the item id after '#'
    item_id: str | None
    attrs: dict[str, Any]            # the attributes that vary across the group
    prompt: str
    text: str | None
    media: dict[str, str] | None     # {name, kind, sha256} of what is shown
    measures: Measures | None = None  # an image variant against the record's original


@dataclass(frozen=True)
class PreviewResult:
    out_dir: Path
    group_id: str
    kind: str                        # "image", "audio" or "text"
    items: int
    files: list[str]
    original: bool


def safe_name(text: str) -> str:
    """A file name made of the id's letters, digits and ``.,=-``; anything else becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9.,=-]+", "_", text).strip("._") or "item"


def default_out_dir(item: str) -> Path:
    return Path("preview") / safe_name(item)


def manifest_rows(manifest: Manifest) -> list[dict[str, Any]]:
    rows = []
    for row in manifest.items().iter_rows(named=True):
        parsed = {k: json.loads(row[k] or default) for k, default in
                  (("attrs", "{}"), ("media", "[]"), ("lineage", "[]"))}
        rows.append({**row, **parsed})
    return rows


def select(rows: list[dict[str, Any]], item: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the rows ITEM names, all rows of their group): one item by its id, or a whole group."""
    chosen = [r for r in rows if r["item_id"] == item]
    if not chosen:
        chosen = [r for r in rows if item in (r["group_id"], r["record_id"])]
    if not chosen:
        raise unknown_item(item, rows)
    group = [r for r in rows if r["group_id"] == chosen[0]["group_id"]]
    return sorted(chosen, key=natural_key), group


def natural_key(row: dict[str, Any]) -> list[Any]:
    """Item ids in numeric order: ``masked.2`` before ``masked.10``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", row["item_id"])]


def unknown_item(item: str, rows: list[dict[str, Any]]) -> BenchcError:
    ids = sorted({r["item_id"] for r in rows} | {r["group_id"] for r in rows})
    close = difflib.get_close_matches(item, ids, n=3, cutoff=0.6)
    if close:
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?"
    elif ids:
        hint = f"ids look like {ids[0]!r} (a group) or {rows[0]['item_id']!r}; `benchc show` lists them"
    else:
        hint = "the manifest has no items"
    return BenchcError(Problem(f"no item or group {item!r} in the manifest ({len(rows)} items)", hint=hint))


def varying_attrs(group: list[dict[str, Any]]) -> list[str]:
    """The attribute names whose value is not the same on every item of the group."""
    names = sorted({k for r in group for k in r["attrs"]})
    return [k for k in names if len({json.dumps(r["attrs"].get(k), sort_keys=True) for r in group}) > 1]


def item_kind(row: dict[str, Any]) -> str:
    if row["text"] is None and row["media"] and row["media"][0]["kind"] in ("image", "audio"):
        return row["media"][0]["kind"]
    return "text"


def entry_of(row: dict[str, Any], shown: list[str]) -> Entry:
    label = row["item_id"].partition("#")[2] or row["item_id"]
    media = row["media"][0] if row["media"] else None
    return Entry(label, row["item_id"], {k: row["attrs"][k] for k in shown if k in row["attrs"]},
                 row["prompt"] or "", row["text"], media)


def original_entry(manifest: Manifest, row: dict[str, Any], kind: str, store: ContentStore,
                   roots: list[Path]) -> Entry | None:
    """The record's own image or audio (what the item's first node read), found by reloading the
    source; None when the source cannot be loaded from here or the record has no such media."""
    media = original_media(manifest, row, kind, source_records(manifest, store, roots))
    return None if media is None else Entry("original", None, {}, "", None, media)


def original_media(manifest: Manifest, row: dict[str, Any], kind: str,
                   records: dict[tuple[str, str], Any]) -> dict[str, str] | None:
    """``{name, kind, sha256}`` of the record's own image or audio among ``records`` (those of
    :func:`source_records`): the media its first node read, else the record's media named
    ``kind``; None when there is none."""
    record = records.get((row["record_id"], row["record_digest"]))
    if record is None:
        return None
    first = row["lineage"][0]["node"] if row["lineage"] else None
    name = next((n.get("input") for n in manifest.spec.get("node", []) if n.get("id") == first), None)
    ref = record.media.get(name) if isinstance(name, str) else None
    if ref is None or ref.kind != kind:
        name, ref = kind, record.media.get(kind)
    if ref is None or ref.kind != kind:
        return None
    return {"name": name, **ref.as_json()}


def source_records(manifest: Manifest, store: ContentStore, roots: list[Path]) -> dict[tuple[str, str], Any]:
    """The manifest's source reloaded (its media stored in ``store``), by (record id, record
    digest); empty when it cannot be loaded from here (e.g. data relative to an unknown folder)."""
    from .compiler.sources import SOURCES, SourceContext

    source = manifest.spec.get("source", {})
    params = {k: v for k, v in source.items() if k not in ("loader", "pin", "on_error")}
    try:
        loader = SOURCES.get(source["loader"])
        ctx = SourceContext(roots=[r.resolve() for r in roots], store=store, on_error="skip")
        records = loader.load(loader.Params.model_validate(params), ctx).records
    except (BenchcError, LookupError, ValueError, OSError):  # e.g. data relative to an unknown spec folder
        return {}
    return {(r.id, r.digest): r for r in records}


def media_bytes(store: ContentStore, sha256: str) -> bytes:
    """The stored bytes of a medium, checked against its key (a damaged file is a
    CorruptObjectError naming it)."""
    try:
        return store.get(sha256)
    except FileNotFoundError:
        raise _not_in_cache(store, sha256) from None


def media_image(store: ContentStore, sha256: str) -> Image.Image:
    """A stored image, decoded once and checked against its key: a damaged file is a
    CorruptObjectError naming it, not a traceback or a tile of other pixels."""
    try:
        return load_image(store, sha256)
    except FileNotFoundError:
        raise _not_in_cache(store, sha256) from None
    except CorruptObjectError:
        raise
    except Exception as exc:  # the bytes match their key, and PIL still cannot decode them
        raise BenchcError(Problem(f"image {sha256[:16]}... in the cache cannot be decoded: {type(exc).__name__}: "
                                  f"{exc}", file=str(store.path_of(sha256)))) from None


def _not_in_cache(store: ContentStore, sha256: str) -> BenchcError:
    return BenchcError(Problem(f"media {sha256[:16]}... is not in the cache {store.root}",
                               hint="pass the --cache the manifest was compiled with"))


def thumbnail(image: Image.Image) -> Image.Image:
    """An RGB copy no larger than THUMB x THUMB (aspect kept; smaller images are not enlarged)."""
    small = image.convert("RGB")
    small.thumbnail((THUMB, THUMB))
    return small


def tile_origin(index: int, columns: int) -> tuple[int, int]:
    """Top-left corner of tile ``index`` (reading order) on a sheet of ``columns`` columns."""
    return index % columns * CELL_W + PAD, index // columns * CELL_H + PAD


def sheet_columns(count: int) -> int:
    return max(1, min(COLUMNS, count))


def _fit(text: str, draw: ImageDraw.ImageDraw, font: Any) -> list[str]:
    """``text`` cut into lines no wider than a thumbnail (words kept whole where possible)."""
    if not isinstance(font, ImageFont.FreeTypeFont):  # the bitmap fallback font is Latin-1 only
        text = text.encode("latin-1", "replace").decode("latin-1")
    lines, current = [], ""
    for word in text.split():
        candidate = f"{current} {word}".strip()
        if current and draw.textlength(candidate, font=font) > THUMB:
            lines.append(current)
            candidate = word
        while draw.textlength(candidate, font=font) > THUMB:
            cut = max(1, len(candidate) - 1)
            while cut > 1 and draw.textlength(candidate[:cut], font=font) > THUMB:
                cut -= 1
            lines.append(candidate[:cut])
            candidate = candidate[cut:]
        current = candidate
    return [*lines, current] if current else lines


def caption(entry: Entry, draw: ImageDraw.ImageDraw, font: Any) -> list[str]:
    """Label, varying attributes (up to two lines), the measures against the original (one line)
    and the prompt's first line."""
    attrs = _fit(" ".join(f"{k}={v}" for k, v in entry.attrs.items()), draw, font)
    prompt = _fit(entry.prompt.strip().splitlines()[0] if entry.prompt.strip() else "", draw, font)
    attrs = attrs[:2] if len(attrs) <= 2 else [attrs[0], attrs[1][:-3] + "..."]
    strength = _fit(short_measures(entry.measures), draw, font)[:1] if entry.measures else []
    lines = [*_fit(entry.label, draw, font)[:1], *attrs, *strength, *prompt[:1]]
    return lines[:CAPTION_LINES]


def short_measures(m: Measures) -> str:
    """The measures as a tile caption shows them: ``SSIM 0.812 PSNR 24.5 dE 3.21 edge 0.012``."""
    psnr = "inf" if math.isinf(m.psnr) else f"{m.psnr:.1f}"
    return f"SSIM {m.ssim:.3f} PSNR {psnr} dE {m.colour:.2f} edge {m.edge:.3f}"


def with_measures(entries: list[Entry], store: ContentStore) -> list[Entry]:
    """The image entries after the original (the first entry), each with its measures against it."""
    original, variants = entries[0], entries[1:]
    assert original.media is not None
    with media_image(store, original.media["sha256"]) as reference:
        measured = [original]
        for entry in variants:
            assert entry.media is not None
            with media_image(store, entry.media["sha256"]) as image:
                measured.append(dataclasses.replace(entry, measures=measure(reference, image)))
    return measured


def write_sheet(entries: list[Entry], store: ContentStore, path: Path) -> None:
    columns = sheet_columns(len(entries))
    rows = -(-len(entries) // columns)
    sheet = Image.new("RGB", (columns * CELL_W, rows * CELL_H), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for index, entry in enumerate(entries):
        assert entry.media is not None
        x, y = tile_origin(index, columns)
        with media_image(store, entry.media["sha256"]) as image:
            tile = thumbnail(image)
        draw.rectangle((x - 1, y - 1, x + tile.width, y + tile.height), outline="#b0b0b0")
        sheet.paste(tile, (x, y))
        for number, line in enumerate(caption(entry, draw, font)):
            draw.text((x, y + THUMB + PAD // 2 + number * LINE), line, fill="black", font=font)
    sheet.save(path, format="PNG")


def write_wavs(entries: list[Entry], store: ContentStore, folder: Path) -> list[str]:
    """``<n>_<attrs>.wav`` per entry: the stored bytes, unchanged."""
    width = len(str(max(len(entries) - 1, 0)))
    names = []
    for number, entry in enumerate(entries):
        assert entry.media is not None
        tag = ("original" if entry.item_id is None else
               ",".join(f"{k}={v}" for k, v in entry.attrs.items()) or entry.label)
        name = f"{number:0{width}d}_{safe_name(tag)}.wav"
        (folder / name).write_bytes(media_bytes(store, entry.media["sha256"]))
        names.append(name)
    return names


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", "<br>") or " "


def index_text(item: str, group: str, manifest: Manifest, kind: str, entries: list[Entry],
               shown: list[str], files: list[str], note: str | None) -> str:
    bench = manifest.locked.benchmark
    count = sum(e.item_id is not None for e in entries)
    lines = [f"# Preview of `{item}`", "",
             f"{bench.name} {bench.version}, group `{group}`: {count} item(s) of kind {kind}.",
             f"Attributes that vary across the group: {', '.join(shown) or 'none'}.", ""]
    if kind == "image":
        lines += [f"Tiles of `{SHEET_FILE}` in reading order, numbered as below.", ""]
    if note:
        lines += [note, ""]
    measured = any(e.measures is not None for e in entries)
    if measured:
        lines += ["SSIM, PSNR (dB), colour (mean CIE76 delta E) and edge change (Sobel magnitudes of the luma) "
                  "of each variant against the original (runtime/score/measures.py); measurements only, never in a "
                  "digest.", ""]
    header = ["#", "item", "attrs", *(["text"] if kind == "text" else []),
              *(["SSIM", "PSNR", "colour", "edge"] if measured else []), "prompt", *(["file"] if files else [])]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for number, entry in enumerate(entries):
        cells = [str(number), entry.item_id or "original", _cell(entry.attrs) if entry.attrs else " ",
                 *([_cell(entry.text or "")] if kind == "text" else []),
                 *(_measure_cells(entry.measures) if measured else []), _cell(entry.prompt),
                 *([files[number]] if files else [])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _measure_cells(m: Measures | None) -> list[str]:
    if m is None:
        return [" "] * 4
    return [f"{m.ssim:.4f}", format_psnr(m.psnr), f"{m.colour:.4f}", f"{m.edge:.4f}" + (" (resized)" if m.resized
                                                                                          else "")]


def check_out_dir(out_dir: Path) -> None:
    """A preview replaces an earlier preview, never a folder of other files."""
    if out_dir.exists() and (not out_dir.is_dir() or
                             (any(out_dir.iterdir()) and not (out_dir / INDEX_FILE).is_file())):
        raise BenchcError(Problem(f"{out_dir} exists and is not a benchc preview; refusing to replace it",
                                  hint="choose a new or empty folder for -o/--out"))


def preview_kind(rows: list[dict[str, Any]]) -> str:
    kinds = {item_kind(r) for r in rows}
    return next(k for k in ("image", "audio", "text") if k in kinds)


def write_preview(manifest_dir: Path, item: str, out_dir: Path, cache_dir: Path,
                  roots: list[Path]) -> PreviewResult:
    """Write the preview of ``item`` (an item id, or a group id: all its items) into ``out_dir``;
    ``roots`` are where the source may be reloaded from to find the record's original media."""
    manifest = read_manifest(Path(manifest_dir))
    chosen, group = select(manifest_rows(manifest), item)
    out_dir = Path(out_dir)
    check_out_dir(out_dir)
    store = ContentStore(Path(cache_dir))
    staging = make_staging_dir(out_dir)
    try:
        kind, original = _fill(staging, item, manifest, chosen, group, store, roots)
        replace_dir_atomic(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        store.close()
    return PreviewResult(out_dir, chosen[0]["group_id"], kind, len(chosen),
                         sorted(p.name for p in out_dir.iterdir()), original)


def _fill(folder: Path, item: str, manifest: Manifest, chosen: list[dict[str, Any]],
          group: list[dict[str, Any]], store: ContentStore, roots: list[Path]) -> tuple[str, bool]:
    """Write a preview's media files and index.md into ``folder``: (kind, whether the original is in)."""
    shown, kind = varying_attrs(group), preview_kind(chosen)
    original = original_entry(manifest, chosen[0], kind, store, roots) if kind != "text" else None
    items = [entry_of(r, shown) for r in chosen]
    entries = ([original] if original else []) + [
        e for e in items if kind == "text" or (e.media is not None and e.media["kind"] == kind)]
    if original and kind == "image":
        entries = with_measures(entries, store)
    files = _write_media(kind, entries, store, folder)
    note = None if original or kind == "text" else (
        f"No original: the record has no {kind} of its own, or its source could not be reloaded "
        "from here (preview the spec, or pass --data-root)" + (", so no measures against it." if kind == "image"
                                                               else "."))
    text = index_text(item, chosen[0]["group_id"], manifest, kind, entries, shown, files, note)
    (folder / INDEX_FILE).write_text(text, encoding="utf-8")
    return kind, original is not None


def _write_media(kind: str, entries: list[Entry], store: ContentStore, folder: Path) -> list[str]:
    if kind == "image":
        write_sheet(entries, store, folder / SHEET_FILE)
        return []
    return write_wavs(entries, store, folder) if kind == "audio" else []

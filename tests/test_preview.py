"""`benchc preview SPEC ITEM`: a contact sheet, WAV files or a text listing of an item's variants."""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.manifest import read_manifest
from conftest import CONTEXT_REASONING, SPECS, cli
from PIL import Image

from benchc.preview import (
    CELL_H,
    CELL_W,
    INDEX_FILE,
    SHEET_FILE,
    natural_key,
    safe_name,
    sheet_columns,
    thumbnail,
    tile_origin,
)

SPEECH = SPECS / "mmcbench" / "speech2text.toml"
TEXT = SPECS / "mmcbench" / "text_corruptions_generated.toml"


def compiled(spec: Path, out: Path, cache: Path, n: int | None) -> list[dict[str, Any]]:
    sample = ["--set", f"sample.n={n}"] if n else []
    cli("compile", spec, "-o", out, "--cache", cache, *sample, check=True)
    rows = read_manifest(out).items().to_dicts()
    return [{**r, "attrs": json.loads(r["attrs"]), "media": json.loads(r["media"])} for r in rows]


def group_of(rows: list[dict[str, Any]], group: str) -> list[dict[str, Any]]:
    return sorted((r for r in rows if r["group_id"] == group), key=natural_key)


def tiles(sheet: Image.Image, count: int) -> list[np.ndarray]:
    columns = sheet_columns(count)
    assert sheet.size == (columns * CELL_W, -(-count // columns) * CELL_H)
    out = []
    for index in range(count):
        x, y = tile_origin(index, columns)
        out.append(np.asarray(sheet.crop((x, y, x + 256, y + 256))))
    return out


def stored_image(store: ContentStore, sha: str) -> np.ndarray:
    return np.asarray(thumbnail(Image.open(io.BytesIO(store.get(sha)))))


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> tuple[Path, list[dict[str, Any]]]:
    manifest = tmp_path_factory.mktemp("preview-images") / "manifest"
    return manifest, compiled(CONTEXT_REASONING, manifest, shared_cache, 2)


def test_image_group_sheet_shows_the_original_then_every_variant(
        tmp_path: Path, shared_cache: Path, images: tuple[Path, list[dict[str, Any]]]) -> None:
    _, rows = images
    group = group_of(rows, rows[0]["group_id"])
    assert len(group) == 3
    done = cli("preview", CONTEXT_REASONING, group[0]["group_id"], "-o", tmp_path / "g",
               "--cache", shared_cache, "--set", "sample.n=2", check=True)
    assert "3 image item(s)" in done.stdout and "+ original" in done.stdout
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == [SHEET_FILE, INDEX_FILE]
    sheet_tiles = tiles(Image.open(tmp_path / "g" / SHEET_FILE), 4)
    store = ContentStore(shared_cache)
    for tile, row in zip(sheet_tiles[1:], group):  # pixels of each tile are the stored image
        assert np.array_equal(tile, stored_image(store, row["media"][0]["sha256"]))
    original = sheet_tiles[0]  # the same scene, unmasked: equal to a variant outside the mask only
    assert not np.array_equal(original, sheet_tiles[1])
    assert (original == sheet_tiles[1]).all(axis=-1).mean() > 0.5
    index = (tmp_path / "g" / INDEX_FILE).read_text()
    assert all(row["item_id"] in index for row in group) and "| 0 | original |" in index
    assert "color, lines, shape" in index


def test_one_item_from_a_manifest_folder_to_the_default_folder(
        tmp_path: Path, shared_cache: Path, images: tuple[Path, list[dict[str, Any]]]) -> None:
    manifest, rows = images
    item = rows[0]["item_id"]
    cli("preview", manifest, item, "--cache", shared_cache, cwd=tmp_path, check=True)
    out = tmp_path / "preview" / safe_name(item)
    sheet = Image.open(out / SHEET_FILE)
    original, variant = tiles(sheet, 2)  # smaller than the group's sheet: two tiles
    assert np.array_equal(variant, stored_image(ContentStore(shared_cache), rows[0]["media"][0]["sha256"]))
    assert (original == variant).all(axis=-1).mean() > 0.5
    refused = cli("preview", manifest, item, "--cache", shared_cache, "-o", SPECS)
    assert refused.returncode == 2 and "not a benchc preview" in refused.stderr


def test_unknown_item_is_one_error_with_suggestions(images: tuple[Path, list[dict[str, Any]]],
                                                    shared_cache: Path, tmp_path: Path) -> None:
    manifest, rows = images
    item = rows[0]["item_id"]
    done = cli("preview", manifest, item[:-1] + "9", "--cache", shared_cache, "-o", tmp_path / "x")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: no item or group") and "did you mean" in done.stderr
    assert repr(item) in done.stderr and not (tmp_path / "x").exists()


def test_audio_preview_writes_the_stored_wavs(tmp_path: Path, shared_cache: Path) -> None:
    rows = compiled(SPEECH, tmp_path / "m", shared_cache, 1)
    group = rows[0]["group_id"]
    cli("preview", tmp_path / "m", group, "-o", tmp_path / "a", "--cache", shared_cache, check=True)
    wavs = sorted((tmp_path / "a").glob("*.wav"))
    assert len(wavs) == len(rows) == 34 and wavs[0].name.startswith("00_corruption=")
    assert any(w.name.endswith("_corruption=clean,severity=light.wav") for w in wavs)
    store = ContentStore(shared_cache)
    assert sorted(w.read_bytes() for w in wavs) == sorted(store.get(r["media"][0]["sha256"]) for r in rows)
    for path in wavs:
        with wave.open(str(path)) as audio:
            assert audio.getnframes() > 0 and audio.getsampwidth() == 2
    index = (tmp_path / "a" / INDEX_FILE).read_text()
    assert all(w.name in index for w in wavs) and "Transcribe the audio." in index


def test_text_preview_lists_texts_and_prompts(tmp_path: Path, shared_cache: Path) -> None:
    # the spec as committed (its imports dominate, not its size): test_golden's compile memo may answer it
    rows = compiled(TEXT, tmp_path / "m", shared_cache, None)
    group = rows[0]["group_id"]
    rows = [r for r in rows if r["group_id"] == group]
    done = cli("preview", TEXT, group, "-o", tmp_path / "t", "--cache", shared_cache,
               check=True)  # after a compile, the spec's preview is answered from the compile memo
    assert f"{len(rows)} text item(s)" in done.stdout
    assert [p.name for p in (tmp_path / "t").iterdir()] == [INDEX_FILE]
    index = (tmp_path / "t" / INDEX_FILE).read_text()
    assert all(r["item_id"] in index and r["text"].replace("|", "\\|") in index for r in rows)

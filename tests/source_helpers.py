"""Calling source loaders directly, as the compiler does, on fixture files under a test's folder."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import SourceError
from benchc.compiler.media import load_image, read_wav
from benchc.compiler.sources import SOURCES, LoadedSource, SourceContext
from benchc.compiler.values import MediaRef
from PIL import Image


def load(name: str, root: Path, on_error: str = "fail", **params: Any) -> tuple[LoadedSource, SourceContext]:
    """Load source ``name`` with ``root`` as the only data root (spec paths stay inside it).
    Every record's digest is taken, as the compiler does: fields must be canonical JSON."""
    ctx = SourceContext(roots=[root], store=ContentStore(root / ".store"), on_error=on_error)
    loader = SOURCES.get(name)
    loaded = loader.load(loader.Params(**params), ctx)
    for record in loaded.records:
        assert record.digest
    return loaded, ctx


def assert_bad_rows(name: str, root: Path, *rows: list[str], skipped: int | None = None,
                    **params: Any) -> LoadedSource:
    """Each of ``rows`` lists what the message of one bad row names (file, row, what is wrong), in
    file order. The first fails a load; with ``on_error = "skip"`` every one is skipped and
    counted (``skipped`` of them in all, when more than listed)."""
    with pytest.raises(SourceError) as failed:
        load(name, root, **params)
    message = failed.value.render()
    assert all(fragment in message for fragment in rows[0]), message
    loaded, ctx = load(name, root, on_error="skip", **params)
    found = [p.render() for p in ctx.skipped]
    assert len(found) == (skipped if skipped is not None else len(rows)), found
    for fragments, text in zip(rows, found):
        assert all(fragment in text for fragment in fragments), (fragments, text)
    return loaded


def image_bytes(colour: tuple[int, int, int], size: tuple[int, int] = (16, 12), fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format=fmt)
    return buffer.getvalue()


def write_image(path: Path, colour: tuple[int, int, int], size: tuple[int, int] = (16, 12)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "JPEG" if path.suffix.lower() in (".jpg", ".jpeg") else "PNG"
    path.write_bytes(image_bytes(colour, size, fmt))
    return path


def tone(seconds: float = 0.25, rate: int = 8000) -> np.ndarray:
    return (0.5 * np.sin(2 * np.pi * 440 * np.arange(int(seconds * rate)) / rate)).astype(np.float32)


def stored_pixel(root: Path, ref: MediaRef) -> tuple[int, ...]:
    """The top-left pixel of a stored image."""
    return load_image(ContentStore(root / ".store"), ref).getpixel((0, 0))


def stored_audio(root: Path, ref: MediaRef) -> tuple[np.ndarray, int]:
    assert ref.kind == "audio"
    return read_wav(ContentStore(root / ".store").get(ref))

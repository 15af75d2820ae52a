"""Small images the model tests send (PNG bytes)."""

from __future__ import annotations

import io

from PIL import Image


def solid_png(colour: tuple[int, int, int], size: tuple[int, int] = (40, 40)) -> bytes:
    """A PNG of one colour."""
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()

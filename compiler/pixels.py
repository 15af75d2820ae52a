"""An image's identity, the sha256 of its decoded pixels, and a stored file checked against it.

A PNG's bytes depend on the compressor (zlib, zlib-ng) that wrote them, so the content store
names an image by its pixels (mode, size, raw bytes) instead. Both the store (``cas.py``, which
checks every image it reads) and the media encoders (``media.py``, which name what they store)
need that identity; it lives here, knowing neither of them.
"""

from __future__ import annotations

import hashlib
import io

from PIL import Image

from .canonical import digest_bytes


class PixelMismatch(Exception):
    """The file of an object does not decode to the pixels its key names; ``reason`` says how
    (the content store turns it into a ``CorruptObjectError`` naming the object)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def image_identity(image: Image.Image) -> str:
    h = hashlib.sha256()
    h.update(f"image:{image.mode}:{image.width}x{image.height}\n".encode())
    h.update(image.tobytes())
    if image.mode in ("P", "PA"):
        # Palette images store indices: two images with the same indices and other palettes
        # look different, so the palette is part of what the pixels are.
        h.update(b"palette:" + bytes(image.getpalette() or []))
    return h.hexdigest()


def decode_checked(key: str, data: bytes) -> Image.Image:
    """``data`` (the file of object ``key``) decoded; a ``PixelMismatch`` unless its pixel
    identity is ``key``. A file stored by the sha256 of its bytes (an image a backend returned)
    passes by that sha256, and when it cannot be decoded, Pillow's own error is raised."""
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError, zlib.error... on broken files
        if digest_bytes(data) == key:
            raise  # stored as these very bytes: not a corrupt file, an undecodable one
        raise PixelMismatch(f"it cannot be decoded: {type(exc).__name__}: {exc}") from None
    identity = image_identity(image)
    if identity != key and digest_bytes(data) != key:
        raise PixelMismatch(f"its decoded pixels have identity {identity[:16]}...")
    return image

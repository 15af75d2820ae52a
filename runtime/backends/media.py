"""Media decoding the model backends share (a leaf module: it imports no backend)."""

from __future__ import annotations

import io
from typing import Any

from benchc.compiler.errors import BackendError, Problem


def decode_image(data: bytes, sha256: str, backend: str = "hf") -> Any:
    """An image's bytes (as the compile cache holds them) as an RGB PIL image; bytes that do not
    decode are a BackendError naming the image, with the hint to recompile."""
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(io.BytesIO(data)).convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise BackendError(Problem(f"{backend}: image {sha256[:12]} cannot be decoded: {exc}",
                                   hint="the compile cache may be damaged; recompile with a fresh --cache")) from None

"""Perceptual hashes of images, for near-duplicate checks (``benchc check-disjoint``).

A difference hash (dHash, Krawetz): the image in grey, shrunk to (size + 1) x size pixels, one
bit per pair of horizontal neighbours (is the left one brighter?). Resizing, re-encoding, small
colour or brightness changes and a grey copy keep most bits; a different picture flips about
half. The `imagehash` package computes the same thing, but it is not installed here (nor a
dependency of benchc), and these few lines with Pillow and numpy need nothing new.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

HASH_SIZE = 16
"""16 x 16 = 256 bits: synthetic images (flat backgrounds, a few shapes) put unrelated pictures
as close as 4 of 64 bits apart, and 15 of 256 (the bundled scenes); real near duplicates
(re-encoded, resized, a grey copy, a shift of brightness) stay within a few bits."""
DEFAULT_MAX_DISTANCE = 10
"""Bits of 256 that two near duplicates may differ in (about 4%)."""
CHUNK = 256
"""Hashes of one side compared at a time against all of the other (memory: CHUNK x other side)."""
WORDS = HASH_SIZE * HASH_SIZE // 64


def dhash(image: Image.Image, size: int = HASH_SIZE) -> int:
    """The image's difference hash, ``size * size`` bits as an int."""
    grey = image.convert("L").resize((size + 1, size), Image.Resampling.LANCZOS)
    pixels = np.asarray(grey, dtype=np.int16)
    bits = (pixels[:, :-1] > pixels[:, 1:]).flatten()
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def _words(hashes: list[int]) -> np.ndarray:
    """Each hash as WORDS 64-bit words (rows)."""
    mask = 2**64 - 1
    return np.array([[(h >> (64 * k)) & mask for k in range(WORDS)] for h in hashes], dtype=np.uint64)


def near_pairs(left: dict[str, int], right: dict[str, int], max_distance: int) -> list[tuple[str, str, int]]:
    """(left key, right key, Hamming distance) of every pair of hashes at most ``max_distance``
    bits apart, sorted; keys are any labels (media sha256s)."""
    if not left or not right or max_distance < 0:
        return []
    right_keys = sorted(right)
    right_bits = _words([right[k] for k in right_keys])
    left_keys = sorted(left)
    out = []
    for start in range(0, len(left_keys), CHUNK):
        keys = left_keys[start:start + CHUNK]
        bits = _words([left[k] for k in keys])
        distance = np.bitwise_count(bits[:, None, :] ^ right_bits[None, :, :]).sum(axis=2)
        for i, j in zip(*np.nonzero(distance <= max_distance)):
            out.append((keys[i], right_keys[j], int(distance[i, j])))
    return sorted(out)

"""Encoding media for the content store, with identities independent of the encoder.

An image's identity is the sha256 of its decoded pixels (mode, size, raw bytes), not of its PNG
bytes: PNG compressors (zlib, zlib-ng) may emit different bytes for the same pixels, and a
benchmark's hashes must not change with the compressor a Pillow wheel bundles. The stored file is
a PNG named by that identity. Audio is stored as 16-bit PCM WAV, whose bytes are canonical.

8-bit L, RGB and RGBA images (what every op writes) are PNG-encoded by OpenCV with the Sub filter
and Huffman-only zlib: Pillow exposes neither setting, and its level-1 encode of a 224 px photo
costs about 4.5 ms against 0.8 ms here at the same size (benchmarks/image_corruptions.py measures
it). Other modes (palette, 1-bit, 16-bit) go through Pillow. Either way the file is a plain PNG.

Reading an image back (``load_image``, and ``ContentStore.get`` of an image) decodes it and
compares the identity of its pixels with its key: a file whose pixels changed after it was
stored is a ``CorruptObjectError``, never a silently different input (``compiler/cas.py``); the
identity and that check live in ``compiler/pixels.py``.
"""

from __future__ import annotations

import io
import wave

import cv2
import numpy as np
from PIL import Image

from .atomic import write_bytes_atomic
from .cas import ContentStore
from .pixels import image_identity as image_identity  # re-exported: callers name images from here
from .values import MediaRef


def put_image(store: ContentStore, image: Image.Image) -> MediaRef:
    sha = image_identity(image)
    path = store.path_of(sha)
    if not path.exists():
        write_bytes_atomic(path, png_bytes(image), durable=store.durable_writes)
    return MediaRef("image", sha)


_CV2_CHANNELS = {"L": None, "RGB": cv2.COLOR_RGB2BGR, "RGBA": cv2.COLOR_RGBA2BGRA}
_CV2_PNG = [cv2.IMWRITE_PNG_COMPRESSION, 1, cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_HUFFMAN_ONLY,
            cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_SUB]


def png_bytes(image: Image.Image) -> bytes:
    """Lossless PNG bytes of ``image`` (see the module docstring for the encoder choice)."""
    if image.mode in _CV2_CHANNELS:
        pixels = np.asarray(image)
        conversion = _CV2_CHANNELS[image.mode]
        if conversion is not None:
            pixels = cv2.cvtColor(pixels, conversion)
        ok, encoded = cv2.imencode(".png", pixels, _CV2_PNG)
        if ok:
            return encoded.tobytes()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def load_image(store: ContentStore, ref: MediaRef | str) -> Image.Image:
    """The stored image ``ref``, decoded and checked against its key (``CorruptObjectError``
    when its pixels are not the ones it was stored as); a missing file is a FileNotFoundError."""
    key = ref if isinstance(ref, str) else ref.sha256
    return store.decode_image(key, store.path_of(key).read_bytes())


def wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    """Mono float32 in [-1, 1] or int16 samples -> 16-bit PCM WAV bytes."""
    if samples.dtype != np.int16:
        samples = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0)
        samples = np.round(samples * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(samples.astype("<i2").tobytes())
    return buffer.getvalue()


def read_wav(data: bytes) -> tuple[np.ndarray, int]:
    """16-bit PCM WAV bytes -> (int16 mono samples, sample rate)."""
    with wave.open(io.BytesIO(data), "rb") as src:
        if src.getsampwidth() != 2:
            raise ValueError("only 16-bit PCM WAV is supported")
        frames = np.frombuffer(src.readframes(src.getnframes()), dtype="<i2")
        channels = src.getnchannels()
        rate = src.getframerate()
    if channels > 1:
        frames = frames.reshape(-1, channels).mean(axis=1).astype("<i2")
    return frames, rate

"""Text-to-speech through the espeak-ng engine (Debian package ``espeak-ng``).

The speaking itself is ``compiler.ops.speech.synthesize`` (16 kHz mono 16-bit, soxr HQ), the
same code as the compile-time op ``audio.tts``: the model under test and the op that makes
speech sources can never drift apart. The runtime may import the compiler, never the reverse.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib import metadata
from typing import Any

from benchc.compiler.errors import BackendError, OpError
from benchc.compiler.ops.speech import OUTPUT_RATE, engine, synthesize

from .base import BACKENDS, Backend, BackendSpec, MediaLoader, Request, Response


def _engine() -> tuple[str, str]:
    try:
        return engine()
    except OpError as exc:
        raise BackendError(exc.problems) from None


@lru_cache(maxsize=16)
def _voice_exists(exe: str, voice: str) -> bool:
    """Checked once per voice when the backend is built, so a typo fails before any request."""
    done = subprocess.run([exe, "-q", "-v", voice, ""], capture_output=True, check=False)
    return done.returncode == 0


class ESpeak(Backend):
    name = "espeak"
    tasks = frozenset({"text-to-speech"})
    batch_size = 8
    process_parallel = True
    OPTIONS = {"voice", "speed", "pitch"}

    def __init__(self, spec: BackendSpec, generation: Any) -> None:
        super().__init__(spec, generation)
        self.check_options(self.OPTIONS)
        self.exe, self.version = _engine()
        self.voice = self.option("voice", "en-us")
        self.speed = self.int_option("speed", 175, minimum=1)
        self.pitch = self.int_option("pitch", 50, minimum=0)
        if not _voice_exists(self.exe, self.voice):
            raise self.bad_option("voice", self.voice, "a voice espeak-ng knows (see `espeak-ng --voices`)")

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "engine": self.version, "voice": self.voice,
                "speed": self.speed, "pitch": self.pitch, "rate": OUTPUT_RATE,
                "resampler": f"soxr {metadata.version('soxr')} HQ"}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        return [Response("audio", data=self.speak(r.prompt)) for r in requests]

    def speak(self, text: str) -> bytes:
        try:
            return synthesize(text, self.voice, self.speed, self.pitch)
        except OpError as exc:
            raise BackendError(exc.problems) from None


BACKENDS.register(ESpeak.name, ESpeak)

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

from pydantic import Field

from benchc.compiler.errors import BackendError, OpError
from benchc.compiler.ops.speech import OUTPUT_RATE, engine, synthesize

from .base import BACKENDS, Backend, BackendOptions, BackendSpec, MediaLoader, Request, Response


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


class ESpeakOptions(BackendOptions):
    voice: str = Field("en-us", description="an espeak-ng voice, see `espeak-ng --voices`")
    speed: int = Field(175, ge=1, description="words per minute")
    pitch: int = Field(50, ge=0, description="pitch adjustment, as espeak-ng's -p")


@BACKENDS.add("espeak")
class ESpeak(Backend):
    """Text-to-speech with the espeak-ng engine."""

    tasks = frozenset({"text-to-speech"})
    batch_size = 8
    process_parallel = True
    Options = ESpeakOptions
    opts: ESpeakOptions

    def __init__(self, spec: BackendSpec, generation: Any) -> None:
        super().__init__(spec, generation)
        self.exe, self.version = _engine()
        self.voice, self.speed, self.pitch = self.opts.voice, self.opts.speed, self.opts.pitch
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


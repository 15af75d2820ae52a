"""Text-to-speech through the espeak-ng engine (Debian package ``espeak-ng``).

espeak-ng writes 22,050 Hz WAV; we resample to 16 kHz mono 16-bit with soxr (the SoX resampler),
the rate speech recognisers expect and MMCBench resamples to.
"""

from __future__ import annotations

import shutil
from importlib import metadata
import subprocess
from functools import lru_cache
from typing import Any

import numpy as np
import soxr

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.media import read_wav, wav_bytes

from .base import BACKENDS, Backend, BackendSpec, MediaLoader, Request, Response

OUTPUT_RATE = 16_000


@lru_cache(maxsize=1)
def _engine() -> tuple[str, str]:
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise BackendError(Problem("espeak-ng is not installed",
                                   hint="apt-get install espeak-ng (make setup does this)"))
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    return exe, version.split("Data at")[0].strip()


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
        # Text goes through stdin, never argv: a sentence starting with '-' is not an option.
        done = subprocess.run(
            [self.exe, "--stdout", "-v", self.voice, "-s", str(self.speed), "-p", str(self.pitch)],
            input=text.encode("utf-8"), capture_output=True, check=False)
        if done.returncode != 0:
            raise BackendError(Problem(f"espeak-ng failed: {done.stderr.decode(errors='replace')[:200]}"))
        samples, rate = read_wav(done.stdout)
        resampled = soxr.resample(samples.astype(np.float64) / 32768.0, rate, OUTPUT_RATE, quality="HQ")
        return wav_bytes(resampled, OUTPUT_RATE)


BACKENDS.register(ESpeak.name, ESpeak)

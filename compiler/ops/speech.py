"""Text to speech with the espeak-ng engine: the op ``audio.tts`` and the plain ``synthesize``.

espeak-ng writes 22,050 Hz WAV; we resample it with soxr (HQ) to 16 kHz mono 16-bit, the rate
speech recognisers expect and MMCBench resamples to. ``synthesize`` is a plain function so that
the runtime's espeak backend can speak through the same code (runtime may import the compiler,
never the reverse); it raises ``OpError``, which a backend re-raises as its own error.

espeak-ng is a Debian package, not a Python distribution, so its version cannot be one of the
op's ``libraries`` (those are looked up with importlib.metadata and recorded in the lock).
Instead the op returns the engine's version line as the attribute ``tts_engine``, which joins
every item's attributes: the manifest says which engine spoke each item, and a compile on a
machine with another espeak-ng changes the manifest digest (its audio differs too), so
``benchc lock --check`` fails there instead of passing silently. The version line is also part
of the op's ``environment()`` and so of its node keys: after an espeak-ng upgrade the cache
recomputes the speech instead of serving what the old engine said.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

import numpy as np
import soxr
from pydantic import Field

from ..errors import OpError, Problem
from ..media import read_wav, wav_bytes
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams

OUTPUT_RATE = 16_000


@cache
def engine() -> tuple[str, str]:
    """espeak-ng's executable and version line, e.g. "eSpeak NG text-to-speech: 1.51"."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise OpError(Problem("espeak-ng is not installed",
                              hint="apt-get install espeak-ng (make setup does this)"))
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    return exe, version.split("Data at")[0].strip()


def synthesize(text: str, voice: str = "en-us", speed: int = 175, pitch: int = 50) -> bytes:
    """``text`` spoken by espeak-ng, as 16 kHz mono 16-bit PCM WAV bytes.

    The text goes through stdin, never argv: a sentence starting with '-' is not an option.
    """
    exe, _ = engine()
    done = subprocess.run([exe, "--stdout", "-v", voice, "-s", str(speed), "-p", str(pitch)],
                          input=text.encode("utf-8"), capture_output=True, check=False)
    if done.returncode != 0 or not done.stdout:
        raise OpError(Problem(f"espeak-ng failed: {done.stderr.decode(errors='replace')[:200]}",
                              hint="espeak-ng --voices lists the installed voices"))
    samples, rate = read_wav(done.stdout)
    resampled = soxr.resample(samples.astype(np.float64) / 32768.0, rate, OUTPUT_RATE, quality="HQ")
    return wav_bytes(resampled, OUTPUT_RATE)


class Params(OpParams):
    voice: str = Field("en-us", pattern=r"^[A-Za-z0-9][A-Za-z0-9_+\-]*$",
                       description="an espeak-ng voice (espeak-ng --voices), e.g. en-us or en+f3")
    speed: int = Field(175, ge=80, le=450, description="words per minute")
    pitch: int = Field(50, ge=0, le=99, description="espeak-ng pitch adjustment, 0-99")


SpeechParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@OPS.add("audio.tts")
class TextToSpeech(Op):
    """Speak text with espeak-ng as 16 kHz mono speech; the engine's version goes in attrs."""

    reads_record = False
    version = "1.0.0"
    Params = Params
    input_kind = "text"
    output_kind = "audio"
    libraries = ("numpy", "soxr")

    def environment(self, params: SpeechParams | None = None) -> dict[str, str]:
        return {**super().environment(params), "espeak-ng": engine()[1]}

    def apply(self, value: Value | None, params: SpeechParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.text is not None
        data = synthesize(value.text, params.voice, params.speed, params.pitch)
        return OpOutput(Value("audio", media=ctx.store.put(data, "audio")),
                        attrs={"tts_engine": engine()[1]})

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

espeak-ng's clips are about a quarter exact-zero samples (digital silence between words and at
the ends), which some recognisers hear poorly (pocketsphinx; Whisper does not mind). Compile warns
once per ``audio.tts`` node, with the count, when any clip is more than 20% exact zeros (cached
outputs included). ``noise_floor_db`` (default: none) adds white Gaussian noise that many dB below
full scale, drawn from the item's seed (the node's RNG, ``ctx.rng``): one
``standard_normal(n)`` draw times ``32768 * 10^(-db/20)`` added to the int16 samples, rounded half
to even and clipped (``with_noise_floor``). It is a parameter added after the op's first release
(``OpParams.added``): left out of the spec document and node keys while unset, so specs that do not
set it keep every digest.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from typing import ClassVar

import numpy as np
import soxr
from pydantic import Field

from ..cas import ContentStore
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


ZERO_SHARE = 0.2
"""A clip with more than this share of exact-zero samples is "mostly digital silence": compile warns."""


def with_noise_floor(wav: bytes, floor_db: float, rng: np.random.Generator) -> bytes:
    """``wav`` (16-bit PCM) plus white Gaussian noise of RMS ``floor_db`` dB below full scale: one
    ``rng.standard_normal(n)`` draw (float64) times ``32768 * 10^(-floor_db/20)`` added to the
    int16 samples, rounded half to even and clipped to the int16 range (60 dB: RMS 32.8 steps)."""
    samples, rate = read_wav(wav)
    noise = rng.standard_normal(len(samples)) * (32768.0 * 10.0 ** (-floor_db / 20.0))
    noisy = np.clip(np.round(samples.astype(np.float64) + noise), -32768, 32767).astype("<i2")
    return wav_bytes(noisy, rate)


def zero_share(wav: bytes) -> float:
    """The share of a clip's samples that are exactly zero (digital silence)."""
    samples, _ = read_wav(wav)
    return float(np.mean(samples == 0)) if len(samples) else 1.0


class Params(OpParams):
    added: ClassVar[frozenset[str]] = frozenset({"noise_floor_db"})

    voice: str = Field("en-us", pattern=r"^[A-Za-z0-9][A-Za-z0-9_+\-]*$",
                       description="an espeak-ng voice (espeak-ng --voices), e.g. en-us or en+f3")
    speed: int = Field(175, ge=80, le=450, description="words per minute")
    pitch: int = Field(50, ge=0, le=99, description="espeak-ng pitch adjustment, 0-99")
    noise_floor_db: float | None = Field(
        None, ge=20, le=90, description="add seeded white noise this many dB below full scale (60: -60 dBFS) so "
                                        "the clip has no digital silence; drawn from the item's seed "
                                        "(default: none, espeak-ng's clip as it is)")


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
        if params.noise_floor_db is not None:
            data = with_noise_floor(data, params.noise_floor_db, ctx.rng)
        return OpOutput(Value("audio", media=ctx.store.put(data, "audio")),
                        attrs={"tts_engine": engine()[1]})

    def output_warning(self, outputs: list[Value], store: ContentStore) -> str | None:
        silent = sum(zero_share(store.get(v.media)) > ZERO_SHARE for v in outputs if v.media is not None)
        if not silent:
            return None
        return (f"{silent} of {len(outputs)} clips are more than {ZERO_SHARE:.0%} exact-zero samples (digital "
                "silence, which some recognisers, pocketsphinx among them, hear poorly); params.noise_floor_db "
                "(e.g. 60) adds a seeded noise floor")

"""General audio transforms with explicit, user-named parameters: speed, pitch, noise, gain and
resampling at any value of a documented range (out-of-range values are refused when the spec is
validated). Unlike ``audio.corrupt`` (MMCBench's fixed light/heavy table at 16 kHz), these keep
the input's sample rate and take the magnitude from the spec, so a sweep
(``factor = [0.5, 1.0, 2.0]``) gives one variant per value.

Common to every op: the input is read as 16-bit PCM (channels averaged to mono) and scaled to
floats by 1/32768; the output is mono 16-bit PCM WAV at the input's rate (except ``audio.resample``
with ``restore = false``), converted back by x32768, rounded half to even and saturated to
int16 full scale, i.e. clipped to [-1, 1). Because read and write use the same scale, an identity
setting (factor 1, 0 semitones, 0 dB, a resample to the input's own rate) returns the input's
samples exactly. Empty input is an error.

- ``audio.speed`` (factor, 0.25..4): plain resampling-style time scaling, like playing a tape
  faster. The clip is read as if it had been recorded at ``factor x rate`` and resampled with
  soxr (HQ) to ``rate``: the duration is divided by ``factor`` (output length round(n / factor)
  and at least 1, soxr's output zero-padded or trimmed to it) and every frequency is multiplied
  by it, so pitch moves with tempo. Content that would land above the Nyquist frequency is
  removed by soxr's anti-alias filter.
- ``audio.pitch`` (semitones, -12..12): ``librosa.effects.pitch_shift`` (phase-vocoder time
  stretch by 2^(-semitones/12), n_fft 2048, hop 512, then a soxr HQ resample back): every
  frequency is multiplied by 2^(semitones/12) and the length is kept exactly. (librosa warns
  about clips shorter than n_fft, 128 ms at 16 kHz, and pads them; the op still runs.)
- ``audio.noise`` (snr_db, -20..60): white Gaussian noise at exactly that signal-to-noise ratio.
  With ``rms(x) = sqrt(mean(x^2))`` over the whole clip, noise is drawn from the op's RNG
  (``ctx.rng.standard_normal``), scaled so that ``rms(noise) = rms(x) / 10^(snr_db / 20)``
  exactly (not just in expectation), and added: ``20 log10(rms(x) / rms(noise)) = snr_db``
  before int16 rounding and clipping (at low SNR a loud clip clips). A silent clip
  (rms 0) stays silent. Same input, params and seed give the same noise.
- ``audio.gain`` (db, -60..60): every sample multiplied by ``10^(db / 20)`` (+6.02 dB doubles
  the amplitude), then clipped to [-1, 1): a gain that pushes peaks past full scale
  hard-clips them, as a real recorder would; nothing is normalised or limited.
- ``audio.resample`` (rate, 2000..48000 Hz; restore, default true): soxr (HQ) resampling from
  the input's rate to ``rate``. With ``restore`` the result is resampled back to the input's
  rate and fixed to the input's length (zero-padded or trimmed by at most a sample or two), so
  the model sees the band-limited signal (nothing above rate/2) at its original rate; a
  ``rate`` at or above the input's changes almost nothing. Without it the output stays at
  ``rate``, with soxr's length: n x rate / input rate, rounded (half up).

Every op is deterministic: the same input, params and seed give the same bytes; only
``audio.noise`` uses the seed. librosa (with scipy) takes about a second to import, so it is
imported on first use.
"""

from __future__ import annotations

import numpy as np
import soxr
from pydantic import Field

from ..errors import OpError, Problem
from ..media import read_wav, wav_bytes
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams

SCALE = 32768.0
"""int16 full scale: samples are read as pcm / SCALE and written back as round(x * SCALE)."""


# --- reading and writing ----------------------------------------------------------------------

def load(value: Value | None, ctx: OpContext) -> tuple[np.ndarray, int]:
    """The input audio as float64 mono samples in [-1, 1) and its sample rate."""
    assert value is not None and value.media is not None
    pcm, rate = read_wav(ctx.store.get(value.media))
    if pcm.size == 0:
        raise OpError(Problem("the input audio has no samples"))
    return pcm.astype(np.float64) / SCALE, rate


def to_pcm(samples: np.ndarray) -> np.ndarray:
    """Float samples -> int16, rounded and saturated (clipped to [-1, 1) in float terms)."""
    scaled = np.round(np.asarray(samples, np.float64) * SCALE)
    return np.clip(scaled, -32768, 32767).astype(np.int16)


def output(samples: np.ndarray, rate: int, ctx: OpContext) -> OpOutput:
    """Store ``samples`` as 16-bit PCM WAV at ``rate``; the op's output value."""
    return OpOutput(Value("audio", media=ctx.store.put(wav_bytes(to_pcm(samples), rate), "audio")))


def fit_length(samples: np.ndarray, length: int) -> np.ndarray:
    """``samples`` trimmed or zero-padded at the end to exactly ``length``."""
    if samples.size >= length:
        return samples[:length]
    return np.concatenate([samples, np.zeros(length - samples.size, samples.dtype)])


def resample(samples: np.ndarray, in_rate: float, out_rate: float) -> np.ndarray:
    """soxr HQ resampling (identity when the rates are equal)."""
    if in_rate == out_rate:
        return samples
    return np.asarray(soxr.resample(samples, in_rate, out_rate, quality="HQ"), np.float64)


def rms(samples: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(samples))))


# --- the transforms, as pure functions --------------------------------------------------------

def change_speed(samples: np.ndarray, rate: int, factor: float) -> np.ndarray:
    """Duration / factor, frequencies x factor (read as if recorded at factor x rate)."""
    if factor == 1.0:
        return samples
    length = max(1, round(samples.size / factor))
    return fit_length(resample(samples, rate * factor, rate), length)


def shift_pitch(samples: np.ndarray, rate: int, semitones: float) -> np.ndarray:
    """Frequencies x 2^(semitones/12), duration kept (librosa phase vocoder + soxr HQ)."""
    if semitones == 0.0:
        return samples
    import librosa

    out = librosa.effects.pitch_shift(samples, sr=rate, n_steps=semitones, res_type="soxr_hq")
    return fit_length(np.asarray(out, np.float64), samples.size)


def add_noise(samples: np.ndarray, snr_db: float, rng: np.random.Generator) -> np.ndarray:
    """``samples`` plus white Gaussian noise with rms(noise) = rms(samples) / 10^(snr_db/20)."""
    noise = rng.standard_normal(samples.size)
    target = rms(samples) / 10 ** (snr_db / 20)
    return samples + noise * (target / rms(noise))


def apply_gain(samples: np.ndarray, db: float) -> np.ndarray:
    """``samples`` x 10^(db/20), clipped to [-1, 1]."""
    return np.clip(samples * 10 ** (db / 20), -1.0, 1.0)


# --- the ops ----------------------------------------------------------------------------------

class AudioOp(Op):
    """Shared settings of the audio transforms (not registered)."""

    input_kind = "audio"
    reads_record = False


class SpeedParams(OpParams):
    factor: float = Field(
        ge=0.25, le=4.0,
        description="playback speed: 2.0 is twice as fast (half the duration, an octave up), "
                    "1.0 unchanged")


class AudioSpeed(AudioOp):
    """Speed audio up or down by resampling, pitch moving with tempo, like a tape played faster."""

    name = "audio.speed"
    version = "1.0.0"
    Params = SpeedParams
    libraries = ("numpy", "soxr")

    def apply(self, value: Value | None, params: SpeedParams, ctx: OpContext) -> OpOutput:
        samples, rate = load(value, ctx)
        return output(change_speed(samples, rate, params.factor), rate, ctx)


class PitchParams(OpParams):
    semitones: float = Field(
        ge=-12.0, le=12.0,
        description="pitch shift in semitones (12 = an octave up); the duration is kept")


class AudioPitch(AudioOp):
    """Shift audio's pitch by a number of semitones, keeping its duration (librosa)."""

    name = "audio.pitch"
    version = "1.0.0"
    Params = PitchParams
    libraries = ("librosa", "numpy", "scipy", "soxr")

    def apply(self, value: Value | None, params: PitchParams, ctx: OpContext) -> OpOutput:
        samples, rate = load(value, ctx)
        return output(shift_pitch(samples, rate, params.semitones), rate, ctx)


class NoiseParams(OpParams):
    snr_db: float = Field(
        ge=-20.0, le=60.0,
        description="signal-to-noise ratio in dB of added white Gaussian noise, relative to the "
                    "clip's RMS")


class AudioNoise(AudioOp):
    """Add white Gaussian noise at an exact signal-to-noise ratio in dB (vs the clip's RMS)."""

    name = "audio.noise"
    version = "1.0.0"
    Params = NoiseParams
    libraries = ("numpy",)

    def apply(self, value: Value | None, params: NoiseParams, ctx: OpContext) -> OpOutput:
        samples, rate = load(value, ctx)
        if rms(samples) == 0.0:
            return output(samples, rate, ctx)
        return output(add_noise(samples, params.snr_db, ctx.rng), rate, ctx)


class GainParams(OpParams):
    db: float = Field(
        ge=-60.0, le=60.0,
        description="gain in dB (+6.02 doubles the amplitude); samples past full scale are "
                    "clipped to [-1, 1]")


class AudioGain(AudioOp):
    """Change audio's level by a gain in dB, clipping samples past full scale."""

    name = "audio.gain"
    version = "1.0.0"
    Params = GainParams
    libraries = ("numpy",)

    def apply(self, value: Value | None, params: GainParams, ctx: OpContext) -> OpOutput:
        samples, rate = load(value, ctx)
        return output(apply_gain(samples, params.db), rate, ctx)


class ResampleParams(OpParams):
    rate: int = Field(
        ge=2000, le=48000,
        description="sample rate in Hz to resample to (soxr HQ); content above rate/2 is removed")
    restore: bool = Field(
        True,
        description="resample back to the input's rate and length, so the band-limited signal "
                    "keeps its original rate; false: the output stays at `rate`")


class AudioResample(AudioOp):
    """Resample audio to a rate (soxr), by default back again: band-limited at its own rate."""

    name = "audio.resample"
    version = "1.0.0"
    Params = ResampleParams
    libraries = ("numpy", "soxr")

    def apply(self, value: Value | None, params: ResampleParams, ctx: OpContext) -> OpOutput:
        samples, rate = load(value, ctx)
        low = resample(samples, rate, params.rate)
        if not params.restore:
            return output(low, params.rate, ctx)
        return output(fit_length(resample(low, params.rate, rate), samples.size), rate, ctx)


for _op in (AudioSpeed(), AudioPitch(), AudioNoise(), AudioGain(), AudioResample()):
    OPS.register(_op.name, _op)

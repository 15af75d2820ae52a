"""MMCBench's 16 speech corruptions at two severities, "light" and "heavy", via audiomentations.

MMCBench (sail-sg/MMCBench) corrupts 16 kHz speech with 16 audiomentations transforms at a
"heavy" and a "light" degree but publishes neither its calls nor its parameters. Our reading is
the one table ``SEVERITY`` below (every transform runs with p=1.0; a range [a, b] is drawn
uniformly by audiomentations from the op's seed):

  corruption          transform           light                         heavy
  gaussian_noise      AddGaussianNoise    amplitude 0.003-0.006         amplitude 0.03-0.05
  short_noises        AddShortNoises      SNR 10-20 dB, gaps 0.4-0.8 s  SNR -5-5 dB, gaps 0.1-0.4 s
  gaussian_snr        AddGaussianSNR      SNR 20-30 dB                  SNR 0-10 dB
  bandpass_filter     BandPassFilter      centre 1500-2500 Hz,          centre 1000-1500 Hz,
                                          bandwidth 1.2-1.6 x centre,   bandwidth 0.4-0.6 x centre,
                                          12 dB/octave                  24 dB/octave
  low_pass_filter     LowPassFilter       cutoff 3000-4000 Hz,          cutoff 500-800 Hz,
                                          12 dB/octave                  24 dB/octave
  clipping_distortion ClippingDistortion  2-5 % of samples clipped      20-40 % of samples clipped
  mp3_compression     Mp3Compression      32-48 kbps                    8-16 kbps
  tanh_distortion     TanhDistortion      distortion 0.1-0.3            distortion 0.7-0.9
  fast_resample       Resample            to 13300-14500 Hz (x1.1-1.2)  to 10000-11400 Hz (x1.4-1.6)
  slow_resample       Resample            to 17800-18800 Hz (x0.85-0.9) to 22900-26600 Hz (x0.6-0.7)
  time_stretch_fast   TimeStretch         rate 1.1-1.2                  rate 1.4-1.6
  time_stretch_slow   TimeStretch         rate 0.85-0.9                 rate 0.6-0.7
  pitch_shift         PitchShift          1-2 semitones, down or up     4-6 semitones, down or up
  gain_transition     GainTransition      gains -12 to 0 dB, fading     gains -36 to -12 dB, fading
                                          over 0.2-0.5 of the clip      over 0.2-0.5 of the clip
  repeat_part         RepeatPart          1 repeat of 0.15-0.3 s        2-3 repeats of 0.4-0.7 s
  time_mask           TimeMask            0.05-0.1 of the clip silenced 0.2-0.3 of the clip silenced

Choices behind the table:
- Light and heavy ranges are disjoint (at most they share an end point), so a heavy draw is
  never milder than a light one along the table's own axis.
- "Fast/Slow Resample" resample to another rate and keep calling the result 16 kHz, i.e. play the
  speech faster (higher, shorter) or slower (lower, longer), like a tape at the wrong speed. That
  is what audiomentations' ``Resample`` does when its output is used at the input's rate, and it
  makes the pair the speed-and-pitch sibling of Time Stretch (tempo only) and Pitch Shift (pitch
  only); a round trip to a lower rate and back would only be another low-pass filter.
- Time stretches and resamples change the duration (``leave_length_unchanged=False``): keeping
  the length would cut the end of slowed speech, losing words instead of perturbing them.
  Fast and slow use the same speed factors in both, so the two families are comparable.
- Pitch shifts have a fixed size range per degree and a direction drawn from the seed.
- Short noises are five clips made here from a fixed seed (white and brown noise bursts, a
  crackle, a 1 kHz beep and a two-tone beep), written as 16 kHz WAVs to ``$BENCHC_AUDIO_ASSETS``
  (default ``~/.cache/benchc/audio_assets``) because ``AddShortNoises`` reads sound files. Each
  file is (re)written atomically whenever its bytes differ from the ones this code generates, so
  the folder is a cache, never a source of truth. The generator is numpy's legacy ``RandomState``,
  whose stream numpy keeps frozen across versions. Gaps between noises are at most 0.8 s (and
  AddShortNoises starts the first one at most one gap early or late), so every clip longer than
  0.8 s gets at least one noise.

Input is read as 16-bit PCM, resampled to 16 kHz with soxr if needed; output is 16 kHz mono
16-bit WAV. audiomentations draws from python's ``random`` and numpy's global RNG, so every call
runs inside ``seeded_globals`` with a seed drawn from the op's RNG. audiomentations (with scipy
and librosa) takes about a second to import, so it is imported on first use, not when every
``benchc`` command loads the op registry.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

import numpy as np
import soxr
from pydantic import Field

from ..atomic import write_bytes_atomic
from ..errors import OpError, Problem
from ..media import read_wav, wav_bytes
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams
from .rng_guard import seeded_globals

RATE = 16_000
Corruption = Literal[
    "gaussian_noise", "short_noises", "gaussian_snr", "bandpass_filter", "low_pass_filter",
    "clipping_distortion", "mp3_compression", "tanh_distortion", "fast_resample",
    "slow_resample", "time_stretch_fast", "time_stretch_slow", "pitch_shift", "gain_transition",
    "repeat_part", "time_mask",
]
Severity = Literal["light", "heavy"]
CORRUPTIONS: tuple[str, ...] = get_args(Corruption)
Transform = Callable[[np.ndarray, int], np.ndarray]
"""An audiomentations transform: (float32 samples, sample rate) -> float32 samples."""


# --- short-noise clips ------------------------------------------------------------------------

NOISE_SEED = 20_240_001  # part of the op's definition: changing it changes short_noises outputs


def _normalise(samples: np.ndarray, peak: float = 0.5) -> np.ndarray:
    scaled: np.ndarray = samples * (peak / np.max(np.abs(samples)))
    return scaled


def _tone(freqs: tuple[float, ...], seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    # start at zeros (not sum's int 0) for the type: 0.0 + x is exactly x, as 0 + x was
    return _normalise(sum((np.sin(2 * np.pi * f * t) for f in freqs), np.zeros_like(t)))


@cache
def noise_clips() -> dict[str, bytes]:
    """The short-noise clips as 16 kHz WAV bytes, by file name: a pure function of NOISE_SEED."""
    rs = np.random.RandomState(NOISE_SEED)
    white = rs.standard_normal(int(0.3 * RATE))
    brown = np.cumsum(rs.standard_normal(int(0.8 * RATE)))
    crackle = np.zeros(int(0.5 * RATE))
    crackle[rs.randint(0, crackle.size, size=60)] = rs.uniform(-1.0, 1.0, size=60)
    clips = {
        "white_burst": _normalise(white),
        "brown_rumble": _normalise(brown - np.linspace(brown[0], brown[-1], brown.size)),
        "crackle": _normalise(crackle),
        "beep_1k": _tone((1000.0,), 0.25),
        "beep_two_tone": _tone((440.0, 660.0), 0.4),
    }
    return {f"{name}.wav": wav_bytes(samples, RATE) for name, samples in clips.items()}


def assets_dir() -> Path:
    return Path(os.environ.get("BENCHC_AUDIO_ASSETS") or Path.home() / ".cache/benchc/audio_assets")


def noise_clip_paths() -> list[Path]:
    """The clips as files (what AddShortNoises reads), written only where missing or different.

    Sorted by name: AddShortNoises picks clips from this list by position, so its order is part
    of the output."""
    folder = assets_dir() / "short_noises"
    paths = []
    for name, data in sorted(noise_clips().items()):
        path = folder / name
        if not path.is_file() or path.read_bytes() != data:
            write_bytes_atomic(path, data)
        paths.append(path)
    return paths


# --- the severity table -----------------------------------------------------------------------

class Recipe(NamedTuple):
    """How to build one corruption's transform, and its keyword arguments per severity."""

    make: Callable[..., Transform]
    light: dict[str, Any]
    heavy: dict[str, Any]


def _am(name: str, **fixed: Any) -> Callable[..., Transform]:
    """A maker of ``audiomentations.<name>`` with ``fixed`` arguments (imported when called)."""

    def make(**kwargs: Any) -> Transform:
        import audiomentations

        transform: Transform = getattr(audiomentations, name)(**fixed, **kwargs)
        return transform

    return make


def _short_noises(**kwargs: Any) -> Transform:
    return _am("AddShortNoises")(sounds_path=noise_clip_paths(), **kwargs)


def _pitch_shift_either_way(min_semitones: float, max_semitones: float, p: float) -> Transform:
    """A shift of min..max semitones, down or up (PitchShift draws from one interval only)."""
    shift = _am("PitchShift", method="signalsmith_stretch", p=1.0)
    down = shift(min_semitones=-max_semitones, max_semitones=-min_semitones)
    up = shift(min_semitones=min_semitones, max_semitones=max_semitones)
    return _am("OneOf")(transforms=[down, up], p=p)


_stretch = _am("TimeStretch", leave_length_unchanged=False, method="signalsmith_stretch")

SEVERITY: dict[str, Recipe] = {
    "gaussian_noise": Recipe(_am("AddGaussianNoise"),
                             {"min_amplitude": 0.003, "max_amplitude": 0.006},
                             {"min_amplitude": 0.03, "max_amplitude": 0.05}),
    "short_noises": Recipe(_short_noises,
                           {"min_snr_db": 10.0, "max_snr_db": 20.0,
                            "min_time_between_sounds": 0.4, "max_time_between_sounds": 0.8},
                           {"min_snr_db": -5.0, "max_snr_db": 5.0,
                            "min_time_between_sounds": 0.1, "max_time_between_sounds": 0.4}),
    "gaussian_snr": Recipe(_am("AddGaussianSNR"),
                           {"min_snr_db": 20.0, "max_snr_db": 30.0},
                           {"min_snr_db": 0.0, "max_snr_db": 10.0}),
    "bandpass_filter": Recipe(_am("BandPassFilter"),
                              {"min_center_freq": 1500.0, "max_center_freq": 2500.0,
                               "min_bandwidth_fraction": 1.2, "max_bandwidth_fraction": 1.6,
                               "min_rolloff": 12, "max_rolloff": 12},
                              {"min_center_freq": 1000.0, "max_center_freq": 1500.0,
                               "min_bandwidth_fraction": 0.4, "max_bandwidth_fraction": 0.6,
                               "min_rolloff": 24, "max_rolloff": 24}),
    "low_pass_filter": Recipe(_am("LowPassFilter"),
                              {"min_cutoff_freq": 3000.0, "max_cutoff_freq": 4000.0,
                               "min_rolloff": 12, "max_rolloff": 12},
                              {"min_cutoff_freq": 500.0, "max_cutoff_freq": 800.0,
                               "min_rolloff": 24, "max_rolloff": 24}),
    "clipping_distortion": Recipe(_am("ClippingDistortion"),
                                  {"min_percentile_threshold": 2, "max_percentile_threshold": 5},
                                  {"min_percentile_threshold": 20, "max_percentile_threshold": 40}),
    "mp3_compression": Recipe(_am("Mp3Compression", backend="fast-mp3-augment"),
                              {"min_bitrate": 32, "max_bitrate": 48},
                              {"min_bitrate": 8, "max_bitrate": 16}),
    "tanh_distortion": Recipe(_am("TanhDistortion"),
                              {"min_distortion": 0.1, "max_distortion": 0.3},
                              {"min_distortion": 0.7, "max_distortion": 0.9}),
    "fast_resample": Recipe(_am("Resample"),
                            {"min_sample_rate": 13_300, "max_sample_rate": 14_500},
                            {"min_sample_rate": 10_000, "max_sample_rate": 11_400}),
    "slow_resample": Recipe(_am("Resample"),
                            {"min_sample_rate": 17_800, "max_sample_rate": 18_800},
                            {"min_sample_rate": 22_900, "max_sample_rate": 26_600}),
    "time_stretch_fast": Recipe(_stretch,
                                {"min_rate": 1.1, "max_rate": 1.2},
                                {"min_rate": 1.4, "max_rate": 1.6}),
    "time_stretch_slow": Recipe(_stretch,
                                {"min_rate": 0.85, "max_rate": 0.9},
                                {"min_rate": 0.6, "max_rate": 0.7}),
    "pitch_shift": Recipe(_pitch_shift_either_way,
                          {"min_semitones": 1.0, "max_semitones": 2.0},
                          {"min_semitones": 4.0, "max_semitones": 6.0}),
    "gain_transition": Recipe(_am("GainTransition", duration_unit="fraction"),
                              {"min_gain_db": -12.0, "max_gain_db": 0.0,
                               "min_duration": 0.2, "max_duration": 0.5},
                              {"min_gain_db": -36.0, "max_gain_db": -12.0,
                               "min_duration": 0.2, "max_duration": 0.5}),
    "repeat_part": Recipe(_am("RepeatPart", mode="insert"),
                          {"min_repeats": 1, "max_repeats": 1,
                           "min_part_duration": 0.15, "max_part_duration": 0.3},
                          {"min_repeats": 2, "max_repeats": 3,
                           "min_part_duration": 0.4, "max_part_duration": 0.7}),
    "time_mask": Recipe(_am("TimeMask", mask_location="random"),
                        {"min_band_part": 0.05, "max_band_part": 0.1},
                        {"min_band_part": 0.2, "max_band_part": 0.3}),
}


def transform_for(corruption: str, severity: str) -> Transform:
    """A fresh transform for one table cell (fresh, so no drawn parameters carry over)."""
    recipe = SEVERITY[corruption]
    return recipe.make(**getattr(recipe, severity), p=1.0)


def corrupt(samples: np.ndarray, corruption: str, severity: str, seed: int) -> np.ndarray:
    """16 kHz float32 mono speech, corrupted: a pure function of its arguments."""
    transform = transform_for(corruption, severity)
    with seeded_globals(seed):
        out = transform(samples, RATE)
    if out.size == 0 or not np.all(np.isfinite(out)):
        raise OpError(Problem(f"{corruption} ({severity}) produced no usable audio "
                              f"from {samples.size} samples", key="params.corruption"))
    if np.array_equal(out, samples):  # e.g. RepeatPart on a clip shorter than its part
        raise OpError(Problem(f"{corruption} ({severity}) left the audio unchanged",
                              key="params.corruption",
                              hint=f"the input is {samples.size / RATE:.2f} s long; silent or very "
                                   "short audio cannot be corrupted this way"))
    return out


# --- the op -----------------------------------------------------------------------------------

def load_16k(data: bytes) -> np.ndarray:
    """16-bit PCM WAV bytes -> float32 mono samples at 16 kHz (soxr HQ from any other rate)."""
    pcm, rate = read_wav(data)
    if pcm.size == 0:
        raise OpError(Problem("the input audio has no samples"))
    samples = pcm.astype(np.float32) / 32768.0
    if rate != RATE:
        samples = soxr.resample(samples, rate, RATE, quality="HQ").astype(np.float32)
    return samples


class Params(OpParams):
    corruption: Corruption | Literal["clean"] = Field(
        description="one of MMCBench's 16 speech corruptions, or 'clean': the speech unchanged (at "
                    "16 kHz), the unperturbed reference item of a consistency metric")
    severity: Severity = Field("light", description="MMCBench's degree; ranges in SEVERITY")


AudioCorruptParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@OPS.add("audio.corrupt")
class AudioCorrupt(Op):
    """Corrupt 16 kHz speech with one of MMCBench's 16 corruptions, light or heavy (MMCBench)."""

    reads_record = False
    version = "1.1.0"  # 1.1: corruption = "clean"
    Params = Params
    input_kind = "audio"
    libraries = ("audiomentations", "fast-mp3-augment", "librosa", "numpy", "numpy-minmax",
                 "numpy-rms", "python-stretch", "scipy", "soxr")

    def apply(self, value: Value | None, params: AudioCorruptParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.media is not None
        samples = load_16k(ctx.store.get(value.media))
        if params.corruption == "clean":
            return OpOutput(Value("audio", media=ctx.store.put(wav_bytes(samples, RATE), "audio")))
        out = corrupt(samples, params.corruption, params.severity, int(ctx.rng.integers(2**32)))
        return OpOutput(Value("audio", media=ctx.store.put(wav_bytes(out, RATE), "audio")))

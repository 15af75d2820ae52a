"""The general audio transforms (audio.speed, audio.pitch, audio.noise, audio.gain,
audio.resample): what each does to a synthetic tone, and its output pinned by digest.

Every op's output on a fixed synthetic input is pinned by the sha256 of its WAV, so an upgrade of
numpy, soxr, librosa or scipy that changes samples fails here instead of silently changing a
benchmark. To change a digest, bump the op's version and record the new digest beside the old.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import OpError
from benchc.compiler.media import read_wav, wav_bytes
from benchc.compiler.ops import OPS, OpContext, OpOutput, audio_transform
from benchc.compiler.seeds import rng_for
from benchc.compiler.values import Record, Value

RATE = 16_000
TONE = "a77280a67a216c56e50a13d37d2687fe6eed1701c077ef0e343494ee4f55714c"
# To change a digest, bump the op's version and record the new digest beside the old one.
GOLDEN = {  # every op at 1.0.0 on tone_wav(), OpContext rng_for(7)
    ("audio.speed", (("factor", 2.0),)):
        "28949a220b4bdfb38b25de3a67d1f368828321d4b4469bd03942071ce6bf838b",
    ("audio.speed", (("factor", 0.5),)):
        "5071824d432a33f38014cbb096194d48102b8c243f79010de9d6478fb10b9842",
    ("audio.pitch", (("semitones", 12.0),)):
        "e4941a3ec413eee2264b99dac8c9ccaaca34d29cb18fa065be297ee43e55c777",
    ("audio.pitch", (("semitones", -3.5),)):
        "a9135f232b4231fb589b452d1b5490fc7b26b7745c57ea06b926e0478eb35a2f",
    ("audio.noise", (("snr_db", 10.0),)):
        "889d7bb477304a5bce2bbd6c1e35bbb2e7da8577698f83036a70caf2063d41e3",
    ("audio.gain", (("db", 6.0),)):
        "477b5335c8a55da3b2fa84f6994046e748d60784e33b66c8bb0381e3c777d004",
    ("audio.gain", (("db", 20.0),)):
        "932b8d4f87ffca600acf185a54db35ba82cfc937d5b0facbfa438aed71b4788c",
    ("audio.resample", (("rate", 4000),)):
        "58e278e10110fce598130e5102053562fa281689a40723d2c9f4864f99e66039",
    ("audio.resample", (("rate", 4000), ("restore", False))):
        "3a1a9a551e0fbc31e702749a8ae4290d4c1c09c9c0e13edfb9030f7a5d174735",
}
NAMES = ("audio.speed", "audio.pitch", "audio.noise", "audio.gain", "audio.resample")
SOME_PARAMS: dict[str, dict[str, Any]] = {  # a setting that changes the audio, per op
    "audio.speed": {"factor": 1.5}, "audio.pitch": {"semitones": 2}, "audio.noise": {"snr_db": 20},
    "audio.gain": {"db": -6}, "audio.resample": {"rate": 8000},
}
IDENTITY: dict[str, dict[str, Any]] = {  # a setting that returns the input samples exactly
    "audio.speed": {"factor": 1.0}, "audio.pitch": {"semitones": 0}, "audio.gain": {"db": 0},
    "audio.resample": {"rate": RATE},
}


def tone(freqs: tuple[float, ...] = (440.0,), rate: int = RATE, amp: float = 0.5) -> np.ndarray:
    """One second of equal-amplitude sines whose sum peaks at ``amp`` at most."""
    t = np.arange(rate) / rate
    return amp * sum(np.sin(2 * np.pi * f * t) for f in freqs) / len(freqs)


def tone_wav() -> bytes:
    return wav_bytes(tone(), RATE)


def floats(data: bytes) -> np.ndarray:
    return read_wav(data)[0].astype(np.float64) / 32768.0


def run_op(name: str, value: Value, store: ContentStore, seed: int = 7, **params: Any) -> OpOutput:
    op = OPS.get(name)
    ctx = OpContext(Record("r", {}), rng_for(seed), store)
    return op.apply(value, op.Params(**params), ctx)


def transform(store: ContentStore, name: str, data: bytes, **params: Any) -> OpOutput:
    """``name`` applied to the WAV ``data`` (put in ``store``) with seed 7."""
    return run_op(name, Value("audio", media=store.put(data, "audio")), store, **params)


def samples(store: ContentStore, name: str, data: bytes = b"",
            **params: Any) -> tuple[np.ndarray, int]:
    """The output samples (floats) and rate of ``name`` on ``data`` (default: the tone)."""
    out = store.get(transform(store, name, data or tone_wav(), **params).value.media)
    return floats(out), read_wav(out)[1]


def peak_hz(x: np.ndarray, rate: int) -> float:
    """The frequency of the largest bin of the Hann-windowed FFT."""
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    return float(np.fft.rfftfreq(x.size, 1 / rate)[np.argmax(spectrum)])


def high_share(x: np.ndarray, rate: int, above: float = 2000.0) -> float:
    """The share of the power (Hann-windowed FFT) above ``above`` Hz."""
    power = np.abs(np.fft.rfft(x * np.hanning(x.size))) ** 2
    return float(power[np.fft.rfftfreq(x.size, 1 / rate) > above].sum() / power.sum())


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


# --- registration and golden outputs ----------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_ops_are_registered_audio_to_audio(name: str) -> None:
    op = OPS.get(name)
    assert (op.version, op.input_kind, op.output_kind) == ("1.0.0", "audio", "audio")
    assert op.reads_record is False and op.describe() and op.libraries
    assert all(field.description for field in op.Params.model_fields.values())


def test_the_input_tone_is_pinned() -> None:
    assert hashlib.sha256(tone_wav()).hexdigest() == TONE


def _golden_id(key: tuple[str, tuple[tuple[str, Any], ...]]) -> str:
    return key[0] + "-" + "-".join(f"{n}={v}" for n, v in key[1])


@pytest.mark.parametrize("key", GOLDEN, ids=_golden_id)
def test_outputs_are_pinned(tmp_path: Path, key: tuple[str, tuple[tuple[str, Any], ...]]) -> None:
    name, params = key
    out = transform(ContentStore(tmp_path), name, tone_wav(), **dict(params))
    assert out.attrs == {} and out.drop is None
    assert out.value.media.sha256 == GOLDEN[key]


# --- semantics --------------------------------------------------------------------------------

def test_speed_2_halves_the_duration_and_doubles_the_frequency(tmp_path: Path) -> None:
    out, rate = samples(ContentStore(tmp_path), "audio.speed", factor=2.0)
    assert rate == RATE and out.size == RATE // 2
    assert abs(peak_hz(out, rate) - 880) <= 4


def test_speed_half_doubles_the_duration_and_halves_the_frequency(tmp_path: Path) -> None:
    out, rate = samples(ContentStore(tmp_path), "audio.speed", factor=0.5)
    assert rate == RATE and out.size == 2 * RATE
    assert abs(peak_hz(out, rate) - 220) <= 2


def test_pitch_up_an_octave_keeps_the_duration(tmp_path: Path) -> None:
    out, rate = samples(ContentStore(tmp_path), "audio.pitch", semitones=12)
    assert rate == RATE and out.size == RATE
    assert abs(peak_hz(out, rate) - 880) <= 5


def test_pitch_down_three_semitones(tmp_path: Path) -> None:
    out, rate = samples(ContentStore(tmp_path), "audio.pitch", semitones=-3)
    assert out.size == RATE and abs(peak_hz(out, rate) - 440 * 2 ** (-3 / 12)) <= 5


@pytest.mark.parametrize("snr_db", [-5.0, 10.0, 30.0])
def test_noise_is_at_the_requested_snr(tmp_path: Path, snr_db: float) -> None:
    # a quiet tone below 0 dB SNR, so that the louder noise does not clip
    source = tone_wav() if snr_db > 0 else wav_bytes(tone(amp=0.05), RATE)
    clean = floats(source)
    out, rate = samples(ContentStore(tmp_path), "audio.noise", source, snr_db=snr_db)
    assert rate == RATE and out.size == clean.size
    assert abs(20 * math.log10(rms(clean) / rms(out - clean)) - snr_db) <= 0.5


def test_noise_depends_on_the_seed_only(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    source = Value("audio", media=store.put(tone_wav(), "audio"))
    digests = [run_op("audio.noise", source, store, seed=seed, snr_db=10).value.media.sha256
               for seed in (1, 1, 2)]
    assert digests[0] == digests[1] != digests[2]


def test_noise_on_silence_stays_silent(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    silence = wav_bytes(np.zeros(RATE, np.int16), RATE)
    out = transform(store, "audio.noise", silence, snr_db=0)
    assert store.get(out.value.media) == silence


def test_gain_6db_doubles_the_rms(tmp_path: Path) -> None:
    out, _ = samples(ContentStore(tmp_path), "audio.gain", db=6.0)
    ratio = rms(out) / rms(floats(tone_wav()))
    assert abs(ratio - 10 ** (6 / 20)) < 1e-3 and abs(ratio - 2) < 0.01


def test_gain_past_full_scale_clips(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    pcm = read_wav(store.get(transform(store, "audio.gain", tone_wav(), db=20.0).value.media))[0]
    assert pcm.max() == 32767 and pcm.min() == -32768
    assert np.mean(np.abs(pcm.astype(np.int32)) >= 32767) > 0.8  # |5 sin| > 1 for 87% of a period


def test_resample_to_4k_removes_everything_above_2khz(tmp_path: Path) -> None:
    three = wav_bytes(tone((440.0, 3000.0, 6000.0)), RATE)
    out, rate = samples(ContentStore(tmp_path), "audio.resample", three, rate=4000)
    assert rate == RATE and out.size == RATE
    assert high_share(floats(three), RATE) > 0.6
    assert high_share(out, rate) < 1e-6  # about -83 dB: int16 rounding noise
    assert abs(peak_hz(out, rate) - 440) <= 1 and rms(out) > 0.1


def test_resample_without_restore_keeps_the_new_rate(tmp_path: Path) -> None:
    out, rate = samples(ContentStore(tmp_path), "audio.resample", rate=8000, restore=False)
    assert (rate, out.size) == (8000, 8000) and abs(peak_hz(out, rate) - 440) <= 1


@pytest.mark.parametrize("name", IDENTITY)
def test_identity_settings_return_the_input_samples(tmp_path: Path, name: str) -> None:
    out = transform(ContentStore(tmp_path), name, tone_wav(), **IDENTITY[name])
    assert out.value.media.sha256 == TONE


@pytest.mark.parametrize("name", NAMES)
def test_other_rates_are_kept_and_outputs_are_deterministic(tmp_path: Path, name: str) -> None:
    store = ContentStore(tmp_path)
    source = Value("audio", media=store.put(wav_bytes(tone(rate=22_050), 22_050), "audio"))
    first, second = (run_op(name, source, store, **SOME_PARAMS[name]) for _ in range(2))
    assert first.value.media == second.value.media != source.media
    assert read_wav(store.get(first.value.media))[1] == 22_050


@pytest.mark.parametrize("name", NAMES)
def test_empty_audio_is_refused(tmp_path: Path, name: str) -> None:
    empty = wav_bytes(np.zeros(0, np.float32), RATE)
    with pytest.raises(OpError, match="no samples"):
        transform(ContentStore(tmp_path), name, empty, **SOME_PARAMS[name])


# --- validation -------------------------------------------------------------------------------

def test_speed_factor_zero_is_refused() -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 0.25"):
        OPS.get("audio.speed").Params.model_validate({"factor": 0})


@pytest.mark.parametrize("name,params", [
    ("audio.speed", {"factor": 4.01}), ("audio.speed", {"factor": float("nan")}),
    ("audio.pitch", {"semitones": 12.5}), ("audio.pitch", {"semitones": -13}),
    ("audio.noise", {"snr_db": -20.1}), ("audio.noise", {"snr_db": 61}),
    ("audio.gain", {"db": 60.5}), ("audio.gain", {"db": -61}),
    ("audio.gain", {"db": float("inf")}), ("audio.resample", {"rate": 1999}),
    ("audio.resample", {"rate": 48001}), ("audio.resample", {"rate": 8000.5}),
])
def test_out_of_range_values_are_refused(name: str, params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        OPS.get(name).Params.model_validate(params)


@pytest.mark.parametrize("name,params", [
    ("audio.speed", {"speed": 2.0}), ("audio.speed", {"factor": 2.0, "rate": 2.0}),
    ("audio.pitch", {"semitones": 1, "steps": 1}), ("audio.noise", {"snr": 10}),
    ("audio.gain", {"gain_db": 6}), ("audio.resample", {"rate": 8000, "restored": False}),
])
def test_unknown_param_names_are_refused(name: str, params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        OPS.get(name).Params.model_validate(params)


@pytest.mark.parametrize("name", NAMES)
def test_the_magnitude_is_required(name: str) -> None:
    with pytest.raises(ValidationError, match="Field required"):
        OPS.get(name).Params.model_validate({})


def test_the_module_docstring_states_every_ops_range() -> None:
    doc = audio_transform.__doc__ or ""
    for name in NAMES:
        field_name, field = next(iter(OPS.get(name).Params.model_fields.items()))
        ge, le = (next(getattr(m, bound) for m in field.metadata if hasattr(m, bound))
                  for bound in ("ge", "le"))
        assert f"``{name}`` ({field_name}, {ge:g}..{le:g}" in doc, name

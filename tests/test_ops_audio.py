"""The audio ops: MMCBench's 16 speech corruptions (audio.corrupt) and espeak-ng speech (audio.tts).

Every corruption x severity is pinned by the sha256 of its output WAV on a fixed synthetic
signal, so an upgrade of audiomentations, scipy, soxr, LAME or signalsmith that changes samples
fails here instead of silently changing a benchmark. To change them, bump the op's version and
record the new digests beside the old ones. TTS output depends on the Debian espeak-ng package,
so it is checked for shape and determinism, never pinned.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest
import soxr
from scipy.signal import welch

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import OpError
from benchc.compiler.media import read_wav, wav_bytes
from benchc.compiler.ops import OPS, OpContext, audio_corrupt, speech
from benchc.compiler.ops.audio_corrupt import CORRUPTIONS, RATE, SEVERITY, corrupt
from benchc.compiler.seeds import rng_for
from benchc.compiler.values import MediaRef, Record, Value
from conftest import ROOT, cli

SEVERITIES = ("light", "heavy")
SIGNAL = "d56d00f1b61cdd6e96646a9909214ee27218cb2903ece08a2fb71a7755e5f8e1"
GOLDEN = {  # audio.corrupt 1.1.0 (samples as in 1.0.0) on signal_wav(), OpContext rng_for(7)
    "gaussian_noise/light": "2dd3bf82984dc10bb7b47addf14803439974546bcc3ab05427388ddf7243c68b",
    "gaussian_noise/heavy": "7b937c0824cee44872b45af7a1c04a71e72d28afadb931e4a3ce15990a866c37",
    "short_noises/light": "7155c922d099c3782c11164f1e20d51bd335891428515c2ff19131cc422ee5f2",
    "short_noises/heavy": "3957ed492e93c05574a7ce4054806c87dab3c332df71b9c370f92caac861918f",
    "gaussian_snr/light": "cd3ca3c049aa87a90048aedbdeaed81e3c03fa70afc6cc7f4652d50cbc4e660a",
    "gaussian_snr/heavy": "43494649d7ea69a1de52e2e1833b226a28d2689ba29f3d84b0d206fa000d4e62",
    "bandpass_filter/light": "eb55c0d36f7da86e36e8c7e79ed5b15919f42e08218a0543d43097eb4cf9bd60",
    "bandpass_filter/heavy": "e0e0aa3aa780a2c41b9c3dbb03fad6ec62aceaa41388046fbab33de4c2c978fd",
    "low_pass_filter/light": "44cca295e24f62755f71ac9deb3b80e06b243c560081c7b98a1fcfb896a537ce",
    "low_pass_filter/heavy": "f4eedc8946d7cae5e6010dab0d1ddd911a66726caef90649e3f30edc243af85f",
    "clipping_distortion/light": "69acf7d5de10f3d43a81a8a35c5a7d9521c460deaa3f83fdb9fe6d5461b875f5",
    "clipping_distortion/heavy": "630fd0ee9a3c6cdb9cf63eec8cd64f5f1c80c3d70ef7bae1be63c93b570fb708",
    "mp3_compression/light": "63eb98f7467e3893835a5eec960d21db33be8de56914eaad95ac9cf12cbeb20c",
    "mp3_compression/heavy": "5ff681b2a72eaf8fae560df83f588a68338bf903b45e045fbb479e2d4ab4773d",
    "tanh_distortion/light": "00837d5e3b1e2fdf077da404a9e333a28e99d06818358d32b580a7bb582967cb",
    "tanh_distortion/heavy": "a7f58b574981d57c94571123c9ffc184bca533c16076c63e076ec1060cfb6d4b",
    "fast_resample/light": "6a72a619742461be75e166e8a1c7e803169fbcef3fd2fc431259f69384bac621",
    "fast_resample/heavy": "2c4e733c81239ecd7e3e9fdd3a011cb9b5fed543b25ad8308f78d6778d31b04f",
    "slow_resample/light": "81d9cbbc4a203c1842a1860d5cf102bad1f0308765424d4d2bf05b24a3e7af69",
    "slow_resample/heavy": "1783ce6c2066ce10af38dc74d2bb6d17bd9752fe50fc5efac992401a92557f85",
    "time_stretch_fast/light": "9136797997ab263ac6d96506ac42ec9553a04a2c99b8f29bc8e5b7d9c1088b0d",
    "time_stretch_fast/heavy": "a65de596f4364cdc2c3991e3665d503371c45a470c5009e2a6e4f45759d259f8",
    "time_stretch_slow/light": "c206fc8bbe8eef33a05851937551e30268c32d5a56878d6393ba9baeba2c4d84",
    "time_stretch_slow/heavy": "0892be42f5e70264d7c671e0b58aed6525be3c2a77585a871b0393e048d79a57",
    "pitch_shift/light": "77510c5af05e6c48688c8e633de8be59beebabcbdad0ccde3025dedff891b1f5",
    "pitch_shift/heavy": "8df3fbcfcdf702ea89822cd538388eed3364393b8884e9c6b6350a5bb98e2f48",
    "gain_transition/light": "31261179945fe2c8dd9a886f18b51bf3c1b08e0fbd8472df65979df80ce042e2",
    "gain_transition/heavy": "6ffcd5259cec1a8344613e14331f0ea1aff5617e351c30ebe7be8d5c996da2e2",
    "repeat_part/light": "cdbd1932884fbc582f8e432d31884963022e6fdf63c3f2c5ae2ecee784b58b96",
    "repeat_part/heavy": "c356cae3b587501e09fcddd05a6a047bc4b841bea774d8fca2d3ffbaaed15074",
    "time_mask/light": "4c2eb941bbd5c71b5e213fc6f6aa5558c584533a336ccae765c675cbcf4a3c16",
    "time_mask/heavy": "9c550bca780c5dbb31f395d9195c5a8e195d3108981669dda7ea7cf4f9ca2817",
}
HAS_ESPEAK = shutil.which("espeak-ng") is not None


def signal() -> np.ndarray:
    """One second of a harmonic chirp (220 -> 880 Hz) with a 4 Hz envelope: speech-like enough
    for every corruption to act on it, and independent of any TTS engine."""
    t = np.arange(RATE) / RATE
    phase = 2 * np.pi * (220 * t + 330 * t**2)
    tone = sum(np.sin(k * phase) / k for k in (1, 2, 3, 5))
    envelope = 0.55 - 0.45 * np.cos(2 * np.pi * 4 * t)
    return 0.25 * envelope * tone / np.abs(tone).max()


def signal_wav() -> bytes:
    return wav_bytes(signal(), RATE)


@pytest.fixture(autouse=True)
def assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Short-noise clips go to a fresh folder, never the user's cache."""
    folder = tmp_path / "assets"
    monkeypatch.setenv("BENCHC_AUDIO_ASSETS", str(folder))
    return folder


def run_op(name: str, value: Value, store: ContentStore, seed: int = 7, **params):
    op = OPS.get(name)
    return op.apply(value, op.Params(**params), OpContext(Record("r", {}), rng_for(seed), store))


def corrupt_signal(store: ContentStore, corruption: str, severity: str, seed: int = 7) -> MediaRef:
    source = Value("audio", media=store.put(signal_wav(), "audio"))
    out = run_op("audio.corrupt", source, store, seed, corruption=corruption, severity=severity)
    return out.value.media


def golden_digests(store: ContentStore) -> dict[str, str]:
    """The sha256 of every corruption x severity's output WAV (also run in a subprocess)."""
    return {f"{c}/{s}": corrupt_signal(store, c, s).sha256 for c in CORRUPTIONS for s in SEVERITIES}


# --- audio.corrupt ----------------------------------------------------------------------------

def test_the_input_signal_is_pinned() -> None:
    assert hashlib.sha256(signal_wav()).hexdigest() == SIGNAL


def test_every_corruption_and_severity_is_pinned(tmp_path: Path) -> None:
    assert OPS.get("audio.corrupt").version == "1.1.0"
    assert golden_digests(ContentStore(tmp_path / "store")) == GOLDEN
    assert SIGNAL not in GOLDEN.values()  # every corruption changes the signal


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_output_is_16k_mono_16bit_wav(tmp_path: Path, corruption: str) -> None:
    store = ContentStore(tmp_path)
    for severity in SEVERITIES:
        with wave.open(io.BytesIO(store.get(corrupt_signal(store, corruption, severity)))) as w:
            assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, RATE)
            assert w.getnframes() > RATE // 2


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_different_seeds_give_different_audio(tmp_path: Path, corruption: str) -> None:
    store = ContentStore(tmp_path)
    for severity in SEVERITIES:
        assert len({corrupt_signal(store, corruption, severity, seed) for seed in (1, 2, 3)}) > 1


def _spectral_distance(clean: np.ndarray, out: np.ndarray) -> float:
    """Log-spectral distance (dB) of the mean power spectra: it sees noise, filtering, pitch and
    level changes alike and, unlike a waveform SNR, ignores phase and length."""
    db_clean, db_out = (10 * np.log10(welch(x, RATE, nperseg=512)[1] + 1e-12) for x in (clean, out))
    return float(np.sqrt(np.mean((db_clean - db_out) ** 2)))


def _damage(clean: np.ndarray, out: np.ndarray) -> float:
    """Spectral distance plus the change of duration, for the corruptions that change tempo."""
    return _spectral_distance(clean, out) + 10 * abs(np.log(out.size / clean.size))


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_heavy_damages_more_than_light(corruption: str) -> None:
    clean = signal().astype(np.float32)
    mean = {s: np.mean([_damage(clean, corrupt(clean, corruption, s, seed)) for seed in range(3)])
            for s in SEVERITIES}
    assert mean["heavy"] > mean["light"] > 0


def test_other_sample_rates_are_resampled_to_16k(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    at_22k = wav_bytes(soxr.resample(signal(), RATE, 22_050), 22_050)
    out = run_op("audio.corrupt", Value("audio", media=store.put(at_22k, "audio")), store,
                 corruption="gaussian_snr", severity="light")
    samples, rate = read_wav(store.get(out.value.media))
    assert rate == RATE and abs(samples.size - RATE) <= 1


@pytest.mark.slow
def test_same_bytes_in_another_process_with_another_hash_seed(tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from pathlib import Path\n"
        "from benchc.compiler.cas import ContentStore\n"
        "from test_ops_audio import golden_digests\n"
        "print(json.dumps(golden_digests(ContentStore(Path(sys.argv[2])))))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "4242", "BENCHC_AUDIO_ASSETS": str(tmp_path / "other")}
    done = subprocess.run([sys.executable, "-c", script, str(ROOT / "tests"), str(tmp_path / "s")],
                          env=env, capture_output=True, text=True, check=True, timeout=300)
    assert json.loads(done.stdout) == golden_digests(ContentStore(tmp_path / "here"))


def test_noise_clips_are_written_once_and_repaired(assets: Path) -> None:
    paths = audio_corrupt.noise_clip_paths()
    assert [p.parent for p in paths] == [assets / "short_noises"] * 5
    stamps = [p.stat().st_mtime_ns for p in paths]
    assert [p.stat().st_mtime_ns for p in audio_corrupt.noise_clip_paths()] == stamps
    paths[0].write_bytes(b"not a wav")
    audio_corrupt.noise_clip_paths()
    assert paths[0].read_bytes() == audio_corrupt.noise_clips()[paths[0].name]


def test_the_severity_table_is_the_documented_one() -> None:
    """Each corruption's row of the module docstring shows every number of its light and heavy
    arguments, so the documentation cannot drift from SEVERITY."""
    doc = audio_corrupt.__doc__ or ""
    rows = {}
    for name in CORRUPTIONS:
        start = doc.index(f"\n  {name} ")
        later = [doc.index(f"\n  {n} ") for n in CORRUPTIONS if doc.index(f"\n  {n} ") > start]
        rows[name] = doc[start: min(later, default=doc.index("\n\n", start))]
    for name, recipe in SEVERITY.items():
        for kwargs in (recipe.light, recipe.heavy):
            for key, number in kwargs.items():
                assert f"{number:g}" in rows[name], (name, key, number)


def test_empty_audio_is_refused(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    empty = Value("audio", media=store.put(wav_bytes(np.zeros(0, np.float32), RATE), "audio"))
    with pytest.raises(OpError, match="no samples"):
        run_op("audio.corrupt", empty, store, corruption="time_mask")


def test_a_corruption_that_cannot_act_is_an_error_not_a_clean_item() -> None:
    too_short = signal()[: RATE // 4].astype(np.float32)  # shorter than heavy RepeatPart's part
    with pytest.warns(UserWarning, match="not long enough"), \
            pytest.raises(OpError, match="left the audio unchanged"):
        corrupt(too_short, "repeat_part", "heavy", seed=1)


# --- audio.tts --------------------------------------------------------------------------------

SENTENCE = "The quick brown fox jumps over the lazy dog near the bank of the river."


@pytest.mark.skipif(not HAS_ESPEAK, reason="espeak-ng is not installed")
def test_tts_speaks_a_sentence_at_16k_deterministically(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    first = run_op("audio.tts", Value("text", text=SENTENCE), store)
    second = run_op("audio.tts", Value("text", text=SENTENCE), store, seed=99)
    assert first.value.media == second.value.media
    samples, rate = read_wav(store.get(first.value.media))
    assert rate == RATE and 2.0 < samples.size / RATE < 8.0  # 15 words at 175 words a minute
    assert np.abs(samples).max() > 3000
    assert first.attrs["tts_engine"].startswith("eSpeak NG")


@pytest.mark.skipif(not HAS_ESPEAK, reason="espeak-ng is not installed")
def test_tts_text_goes_through_stdin_and_params_matter() -> None:
    leading_dash = speech.synthesize("-v is text, not an option")
    assert read_wav(leading_dash)[0].size > RATE // 2
    assert speech.synthesize("Hello there.", speed=120) != speech.synthesize("Hello there.")
    with pytest.raises(OpError, match="espeak-ng failed"):
        speech.synthesize("Hello there.", voice="nosuchvoice")


def test_tts_without_espeak_is_a_clear_op_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(speech.shutil, "which", lambda name: None)
    speech.engine.cache_clear()  # a failed lookup is not cached, so later tests find espeak-ng
    with pytest.raises(OpError, match="espeak-ng is not installed"):
        speech.synthesize("Hello there.")


def test_ops_command_lists_the_audio_ops() -> None:
    out = cli("ops", check=True).stdout
    assert "audio.corrupt v1.1.0  (audio -> audio)" in out
    assert "audio.tts v1.0.0  (text -> audio)" in out and "speed: int = 175" in out

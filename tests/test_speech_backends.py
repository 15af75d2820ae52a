"""The hf-asr and hf-tts backends on tiny random Whisper and VITS models built offline: answers,
reproducible seeding, fingerprints that cover what can change an answer, and every
misconfiguration refused before any request."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from benchc.compiler.errors import BackendError
from benchc.compiler.media import read_wav, wav_bytes
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import Request, make_backend

from support.model_folders import copy_with
from support.tiny_speech import WHISPER_WINDOW_S, build_tiny_vits, build_tiny_wav2vec2, build_tiny_whisper
from support.refusals import assert_refused

pytestmark = pytest.mark.slow  # builds and loads (tiny) models

GREEDY = Generation()


@pytest.fixture(scope="module")
def whisper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_whisper(tmp_path_factory.mktemp("whisper"), seed=0)


@pytest.fixture(scope="module")
def vits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_vits(tmp_path_factory.mktemp("vits"), seed=0)


def _noise(seconds: float, rate: int, seed: int) -> bytes:
    samples = np.random.default_rng(seed).standard_normal(int(seconds * rate)).astype(np.float32) * 0.3
    return wav_bytes(samples, rate)


CLIPS = {"a": _noise(1.0, 16_000, 1), "b": _noise(0.5, 8_000, 2), "c": _noise(1.5, 44_100, 3),
         "long": _noise(WHISPER_WINDOW_S + 0.5, 16_000, 4)}


def _load(kind: str, sha: str) -> bytes:
    assert kind == "audio"
    return CLIPS[sha]


def _asr_requests(*names: str) -> list[Request]:
    return [Request(f"k-{n}", "speech-to-text", "", media=(("audio", n),)) for n in names]


# -- hf-asr ------------------------------------------------------------------------------------

def test_asr_transcribes_batches_greedily_and_reproducibly(whisper: Path) -> None:
    backend = make_backend(f"hf-asr:{whisper},max_new_tokens=6,batch_size=3", GREEDY, "speech-to-text")
    before = torch.random.get_rng_state()
    first = backend.run_batch(_asr_requests("a", "b", "c"), _load)
    assert torch.equal(before, torch.random.get_rng_state())
    assert [r.kind for r in first] == ["text"] * 3 and all(r.text for r in first)
    assert all(len(r.text) <= 6 * 3 for r in first)  # max_new_tokens holds (tokens of <= 3 bytes)
    assert len({r.text for r in first}) > 1  # the answer depends on the audio
    again = make_backend(f"hf-asr:{whisper},max_new_tokens=6,batch_size=3", GREEDY, "speech-to-text")
    assert [r.text for r in again.run_batch(_asr_requests("a", "b", "c"), _load)] == [r.text for r in first]
    whisper_args = make_backend(f"hf-asr:{whisper},max_new_tokens=6,language=en,task=transcribe", GREEDY,
                                "speech-to-text")
    assert all(r.text for r in whisper_args.run_batch(_asr_requests("a"), _load))


def test_asr_runs_ctc_models_a_clip_at_a_time(tmp_path: Path) -> None:
    wav2vec2 = build_tiny_wav2vec2(tmp_path / "wav2vec2", seed=0)
    backend = make_backend(f"hf-asr:{wav2vec2}", GREEDY, "speech-to-text")
    batch = [r.text for r in backend.run_batch(_asr_requests("a", "b", "c", "long"), _load)]
    assert all(batch) and len(set(batch)) == 4  # no window: the 2.5 s clip is read whole
    alone = [backend.run_batch(_asr_requests(n), _load)[0].text for n in ("a", "b", "c", "long")]
    assert alone == batch  # no padding: a transcript does not depend on its batch
    with pytest.raises(BackendError, match="language='en' is not valid"):
        make_backend(f"hf-asr:{wav2vec2},language=en", GREEDY, "speech-to-text").prepare()


def test_asr_resamples_every_clip_to_the_feature_extractors_rate(whisper: Path) -> None:
    backend = make_backend(f"hf-asr:{whisper}", GREEDY, "speech-to-text")
    backend.prepare()
    for name, seconds in (("a", 1.0), ("b", 0.5), ("c", 1.5)):
        audio = backend._audio(name, _load)
        assert audio.dtype == np.float32 and abs(len(audio) - seconds * 16_000) <= 1
    samples, _ = read_wav(CLIPS["a"])  # already at 16 kHz: only scaled to [-1, 1)
    assert np.array_equal(backend._audio("a", _load), samples / np.float32(32768))


def test_asr_refuses_clips_it_cannot_read_whole(whisper: Path) -> None:
    backend = make_backend(f"hf-asr:{whisper}", GREEDY, "speech-to-text")
    with pytest.raises(BackendError, match=r"lasts 2\.5 s, longer than the model's 2 s window"):
        backend.run_batch(_asr_requests("a", "long"), _load)
    with pytest.raises(BackendError, match="exactly one audio input"):
        backend.run_batch([Request("k", "speech-to-text", "hello")], _load)


def test_asr_fingerprint_covers_weights_processor_and_decoding(whisper: Path, tmp_path: Path) -> None:
    base = make_backend(f"hf-asr:{whisper}", GREEDY, "speech-to-text").fingerprint()
    assert base["device"] == "cpu" and base["dtype"] == "float32"
    assert base["transformers"] and base["torch"].startswith(torch.__version__.split("+")[0])
    assert base["batch_size"] == 8 and base["decoding"]["greedy"] is True
    others = [f"hf-asr:{whisper},{option}" for option in
              ("max_new_tokens=5", "language=en", "task=translate", "batch_size=2", "dtype=bfloat16")]
    others += [f"hf-asr:{build_tiny_whisper(tmp_path / 'seed1', seed=1)}",
               f"hf-asr:{copy_with(whisper, tmp_path / 'proc', 'preprocessor_config.json', padding_value=0.5)}"]
    prints = [make_backend(spec, GREEDY, "speech-to-text").fingerprint() for spec in others]
    assert all(p != base for p in prints) and len({json.dumps(p, sort_keys=True) for p in prints}) == len(prints)
    # the spec's generation settings are for generate stages: greedy ASR does not read them
    backend = make_backend(f"hf-asr:{whisper}", Generation(temperature=1.0, seed=3), "speech-to-text")
    assert backend.fingerprint() == base


def test_asr_fails_before_any_request(whisper: Path, vits: Path, tmp_path: Path) -> None:
    refused = {f"hf-asr:{tmp_path / 'nowhere'}": "no model folder with config.json",
               f"hf-asr:{whisper},beams=2": "unknown option",
               f"hf-asr:{whisper},device=tpu": "device='tpu' is not valid",
               f"hf-asr:{whisper},device=cuda:7": "device='cuda:7' is not valid",
               f"hf-asr:{whisper},task=summarise": "task='summarise' is not valid",
               f"hf-asr:{whisper},batch_size=0": "batch_size='0' is not valid"}
    assert_refused(refused, GREEDY, "speech-to-text")
    with pytest.raises(BackendError, match="cannot do 'text-to-speech'"):
        make_backend(f"hf-asr:{whisper}", GREEDY, "text-to-speech")
    with pytest.raises(BackendError, match="is a 'vits' model, not a speech-to-text"):
        make_backend(f"hf-asr:{vits}", GREEDY, "speech-to-text").prepare()
    with pytest.raises(BackendError, match="max_new_tokens='445' is not valid"):
        make_backend(f"hf-asr:{whisper},max_new_tokens=445", GREEDY, "speech-to-text").prepare()
    with pytest.raises(BackendError, match=r"language='de' is not valid.*\n.*hint: .*\(en, fr\)"):
        make_backend(f"hf-asr:{whisper},language=de", GREEDY, "speech-to-text").prepare()
    make_backend(f"hf-asr:{whisper},language=french", GREEDY, "speech-to-text").prepare()  # names work too


# -- hf-tts ------------------------------------------------------------------------------------

def _tts_requests(*texts: str, seed: int | None = None) -> list[Request]:
    return [Request(f"k{i}", "text-to-speech", t, seed=seed) for i, t in enumerate(texts)]


def test_tts_speaks_16_bit_16_khz_wav_reproducibly(vits: Path) -> None:
    backend = make_backend(f"hf-tts:{vits}", GREEDY, "text-to-speech")
    before = torch.random.get_rng_state()
    answers = backend.run_batch(_tts_requests("hello world", "the cat sat on the mat", "", "???"), None)
    assert torch.equal(before, torch.random.get_rng_state())
    assert [a.kind for a in answers] == ["audio"] * 4
    decoded = [read_wav(a.data) for a in answers]
    assert {rate for _, rate in decoded} == {16_000}
    assert len(decoded[0][0]) > 0 and len(decoded[1][0]) > len(decoded[0][0])
    assert len(decoded[2][0]) == 0  # nothing to say: an empty clip, not an error
    # the same request gives the same bytes, alone, in another batch, in another backend
    alone = make_backend(f"hf-tts:{vits}", GREEDY, "text-to-speech").run_batch(_tts_requests("hello world"), None)
    assert alone[0].data == answers[0].data
    shuffled = backend.run_batch(_tts_requests("hello world", "hello world"), None)
    assert shuffled[0].data == shuffled[1].data == answers[0].data


def test_tts_noise_is_seeded_per_request(vits: Path) -> None:
    base = make_backend(f"hf-tts:{vits}", GREEDY, "text-to-speech")
    reseeded = make_backend(f"hf-tts:{vits}", Generation(seed=7), "text-to-speech")
    text = "a much longer sentence to say"
    plain = base.run_batch(_tts_requests(text), None)[0].data
    assert reseeded.run_batch(_tts_requests(text), None)[0].data != plain
    assert base.run_batch(_tts_requests(text, seed=5), None)[0].data != plain  # a request's own seed
    assert base.fingerprint() != reseeded.fingerprint()  # the seed base is not in a TTS request key


def test_tts_fingerprint_and_early_failures(vits: Path, whisper: Path, tmp_path: Path) -> None:
    base = make_backend(f"hf-tts:{vits}", GREEDY, "text-to-speech").fingerprint()
    assert base["rate"] == 16_000 and base["resampler"].startswith("soxr ")
    assert make_backend(f"hf-tts:{build_tiny_vits(tmp_path / 'seed1', seed=1)}", GREEDY,
                        "text-to-speech").fingerprint() != base
    tokenizer_changed = copy_with(vits, tmp_path / "tok", "tokenizer_config.json", add_blank=False)
    assert make_backend(f"hf-tts:{tokenizer_changed}", GREEDY, "text-to-speech").fingerprint() != base
    assert make_backend(f"hf-tts:{vits},dtype=bfloat16", GREEDY, "text-to-speech").fingerprint() != base
    with pytest.raises(BackendError, match="no model folder with config.json"):
        make_backend(f"hf-tts:{tmp_path / 'nowhere'}", GREEDY, "text-to-speech")
    with pytest.raises(BackendError, match="unknown option"):
        make_backend(f"hf-tts:{vits},voice=en", GREEDY, "text-to-speech")
    with pytest.raises(BackendError, match="is a 'whisper' model, not a VITS"):
        make_backend(f"hf-tts:{whisper}", GREEDY, "text-to-speech").prepare()

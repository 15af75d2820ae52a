"""Backends: real engines, clear failures before any request, fingerprints that split the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchc.compiler.errors import BackendError
from benchc.compiler.media import read_wav
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import BackendSpec, Request, make_backend
from conftest import cli
from specfiles import write_mini


def test_backend_strings_parse() -> None:
    spec = BackendSpec.parse("hf:/models/llava,dtype=bfloat16,batch_size=4")
    assert spec.name == "hf" and spec.target == "/models/llava"
    assert dict(spec.options) == {"dtype": "bfloat16", "batch_size": "4"}
    assert str(BackendSpec.parse(str(spec))) == str(spec)


def test_unknown_backend_gets_a_suggestion() -> None:
    with pytest.raises(BackendError, match="did you mean 'espeak'"):
        make_backend("espeek", Generation())


def test_backend_refuses_a_task_it_cannot_do() -> None:
    with pytest.raises(BackendError, match="cannot do 'generate'"):
        make_backend("espeak", Generation(), "generate")


def test_unknown_backend_option_is_refused() -> None:
    with pytest.raises(BackendError, match="unknown option"):
        make_backend("espeak:volume=3", Generation())


def test_espeak_speaks_16khz_mono_and_pocketsphinx_hears_it() -> None:
    tts = make_backend("espeak", Generation(), "text-to-speech")
    [speech] = tts.run_batch([Request("k", "text-to-speech", "a dog and two cats are sitting on the sofa")],
                             lambda kind, sha: b"")
    samples, rate = read_wav(speech.data)
    assert rate == 16000 and len(samples) > 16000
    asr = make_backend("pocketsphinx", Generation(), "speech-to-text")
    request = Request("k2", "speech-to-text", "", media=(("audio", "x"),))
    [text] = asr.run_batch([request], lambda kind, sha: speech.data)
    [again] = asr.run_batch([request], lambda kind, sha: speech.data)
    # pocketsphinx's default language model is a weak judge of espeak speech (a 3-LSB change of
    # the samples can change the words), so only non-emptiness and determinism are asserted.
    assert text.text and text.text == again.text


def test_pocketsphinx_beam_is_opt_in_and_enters_the_fingerprint() -> None:
    default = make_backend("pocketsphinx", Generation(), "speech-to-text")
    # without the option, the fingerprint (and so every stored answer's key) is the one before it
    assert set(default.fingerprint()) == {"backend", "version", "model", "rate", "stateless"}
    narrow = make_backend("pocketsphinx:beam=1e-30", Generation(), "speech-to-text")
    assert narrow.fingerprint() == {**default.fingerprint(), "beam": 1e-30}
    same = make_backend("pocketsphinx:beam=1.0E-30", Generation(), "speech-to-text")
    assert same.fingerprint() == narrow.fingerprint()  # one number, however it is written
    assert narrow._get_decoder().config["beam"] == 1e-30
    assert default._get_decoder().config["beam"] == 1e-48  # pocketsphinx's own default


@pytest.mark.parametrize("value", ["0", "1", "2", "-1e-30", "wide", "1e-10", "1.1e-20"])
def test_pocketsphinx_beam_out_of_range_is_refused(value: str) -> None:
    # from 1e-11 up pocketsphinx itself dies of SIGFPE, taking the process with it
    with pytest.raises(BackendError, match=r"beam must be a number in \(0, 1e-20\]"):
        make_backend(f"pocketsphinx:beam={value}", Generation(), "speech-to-text")


def test_pocketsphinx_with_a_narrow_beam_hears_speech_the_same_way_each_time() -> None:
    tts = make_backend("espeak", Generation(), "text-to-speech")
    clips = {text: tts.speak(text) for text in ("a dog and two cats are sitting on the sofa", "go forward ten meters")}
    asr = make_backend("pocketsphinx:beam=1e-30", Generation(), "speech-to-text")
    first = [asr.transcribe(wav) for wav in clips.values()]
    again = [asr.transcribe(wav) for wav in reversed(clips.values())][::-1]  # other clips before each
    assert all(first) and first == again


def test_espeak_options_change_the_fingerprint() -> None:
    slow = make_backend("espeak:speed=120", Generation())
    default = make_backend("espeak", Generation())
    assert slow.fingerprint() != default.fingerprint()


@pytest.mark.parametrize("model,fragment", [
    ("hf:/nonexistent/model", "cannot do 'text-to-speech'"),
    ("espeek", "did you mean 'espeak'"),
    (None, "no model was given"),
])
def test_run_fails_before_any_request(tmp_path: Path, model: str | None, fragment: str) -> None:
    spec = write_mini(tmp_path, n=1)
    cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    args = ["run", tmp_path / "m", "-o", tmp_path / "r", "--cache", tmp_path / "c", "--store", tmp_path / "s"]
    done = cli(*args, *(["--model", model] if model else []))
    assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()

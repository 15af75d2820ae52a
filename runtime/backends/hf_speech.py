"""Speech models through transformers, from a local folder: ``hf-asr`` and ``hf-tts``.

``hf-asr:/models/whisper-small`` (task ``speech-to-text``) loads ``AutoProcessor`` and
``AutoModelForSpeechSeq2Seq`` (Whisper-class models) with ``local_files_only=True``, or
``AutoModelForCTC`` for CTC models (wav2vec2-class, e.g. facebook/wav2vec2-base-960h, MMCBench's
speech judge). Each request's WAV is resampled (soxr HQ) to the rate of the processor's feature
extractor (16 kHz for both) and transcribed greedily: seq2seq models with ``do_sample=False`` and
one beam, in batches; CTC models by the argmax of each frame, one clip at a time (wav2vec2-base
takes no attention mask, so padding would change a clip's transcript). A clip longer than the
feature extractor's window (30 s for Whisper) is refused rather than silently cut. Options:
``batch_size`` (8), ``device``, ``dtype``, ``max_new_tokens`` (128), and for multilingual Whisper
``language`` (e.g. ``en`` or ``english``; default: the model detects it) and ``task``
(``transcribe`` or ``translate``); a language or task the model lacks fails in ``prepare()``.

``hf-tts:/models/mms-tts-eng`` (task ``text-to-speech``) loads ``AutoTokenizer`` and
``AutoModelForTextToWaveform`` for VITS-class models (MMS-TTS) and returns 16-bit mono WAV at
16 kHz (the rate of the espeak backend; soxr HQ resampling when the model speaks at another).
VITS draws noise (durations and the latent), so each request runs alone under a seed derived
from its content and ``generation.seed`` (as the hf backend's sampled requests do): an answer is
reproducible and depends neither on its batch nor on the batch size.

Fingerprints: what can change an answer. For both, the model folder's digest (weights, config,
and the processor / tokenizer / feature-extractor configs, which are files of the folder), the
transformers and torch versions, dtype and device (with the GPU model on CUDA). ``hf-asr`` adds
its decoding settings (greedy, ``max_new_tokens``, language, task), the batch size (rows of a
batch are decoded together: another batch size changes the shapes of the matrix products, hence
their rounding, which can flip an argmax) and the resampler. ``hf-tts`` adds the seed base and
the output rate and resampler. A speech stage's request key holds no generation settings, so
everything of ``generation`` a backend uses (the TTS seed base) is in its fingerprint.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import soxr
from pydantic import Field

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.media import read_wav, wav_bytes
from benchc.compiler.ops.speech import OUTPUT_RATE
from benchc.compiler.spec.models import Generation

from .base import BACKENDS, BackendSpec, MediaLoader, Request, Response
from .devices import private_rng, to_device
from .local_model import BatchedTorchOptions, LocalTorchBackend, package_version, request_seed


def _resampler() -> str:
    return f"soxr {package_version('soxr')} HQ"


def pcm_to_float(samples: np.ndarray) -> np.ndarray:
    """int16 samples -> float32 in [-1, 1)."""
    return (samples.astype(np.float32) / 32768.0).astype(np.float32)


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    """Float samples at ``rate`` -> float32 at ``target`` (soxr HQ); unchanged when equal."""
    if rate == target:
        return samples.astype(np.float32)
    return soxr.resample(samples.astype(np.float64), rate, target, quality="HQ").astype(np.float32)


def one_audio(backend: str, request: Request) -> str:
    """The sha256 of a request's single audio input."""
    audio = [sha for kind, sha in request.media if kind == "audio"]
    if len(audio) != 1:
        raise BackendError(Problem(f"{backend} needs exactly one audio input per request, got {len(audio)}",
                                   hint="a speech-to-text stage reads the audio of an item or an earlier stage"))
    return audio[0]


def _model_class(config: Any) -> tuple[Any, bool]:
    """(AutoModelForSpeechSeq2Seq or AutoModelForCTC, whether CTC) for a config; (None, False)
    when transformers knows it as neither."""
    from transformers import AutoModelForCTC, AutoModelForSpeechSeq2Seq
    from transformers.models.auto.modeling_auto import MODEL_FOR_CTC_MAPPING, MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING

    if type(config) in MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING:
        return AutoModelForSpeechSeq2Seq, False
    if type(config) in MODEL_FOR_CTC_MAPPING:
        return AutoModelForCTC, True
    return None, False


class ASROptions(BatchedTorchOptions):
    max_new_tokens: int = Field(128, ge=1, description="longest transcript in tokens (at most what the model's "
                                                       "decoder holds)")
    language: str | None = Field(None, description="multilingual Whisper: the language spoken, e.g. en or english "
                                                   "(default: the model detects it)")
    task: Literal["transcribe", "translate"] | None = Field(
        None, description="multilingual Whisper: transcribe, or translate into English (default: the model's)")


@BACKENDS.add("hf-asr")
class HFSpeechToText(LocalTorchBackend):
    """Speech-to-text through transformers, from a local folder."""

    tasks = frozenset({"speech-to-text"})
    target_help = "/path/to/model (a Whisper-class seq2seq or wav2vec2-class CTC model)"
    Options = ASROptions
    opts: ASROptions
    USAGE = "hf-asr:/path/to/whisper (a speech seq2seq model saved with save_pretrained)"

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        super().__init__(spec, generation)
        self.batch_size = self.opts.batch_size
        self.max_new_tokens = self.opts.max_new_tokens
        self.language = self.opts.language or None
        self.whisper_task = self.opts.task

    def fingerprint(self) -> dict[str, Any]:
        return {**self.base_fingerprint(), "transformers": package_version("transformers"),
                "decoding": {"greedy": True, "max_new_tokens": self.max_new_tokens,
                             "language": self.language, "task": self.whisper_task},
                "batch_size": self.batch_size, "resampler": _resampler()}

    def _load(self) -> None:
        from transformers import AutoConfig, AutoProcessor

        hint = "hf-asr runs speech seq2seq (Whisper-class) and CTC (wav2vec2-class) models saved with save_pretrained"
        try:
            config = AutoConfig.from_pretrained(self.path, local_files_only=True)
            model_class, self.ctc = _model_class(config)
            if model_class is None:
                raise BackendError(Problem(f"hf-asr: {self.path} is a {config.model_type!r} model, not a "
                                           "speech-to-text (speech seq2seq or CTC) one", hint=hint))
            self.processor = AutoProcessor.from_pretrained(self.path, local_files_only=True)
            self.model = model_class.from_pretrained(self.path, local_files_only=True, dtype=self.dtype)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self.load_failed(exc, hint) from None
        self.model.to(self.device).eval()
        self.extractor = getattr(self.processor, "feature_extractor", self.processor)
        self.rate = int(self.extractor.sampling_rate)
        self._check_length_limit(config)
        self._check_whisper_options(getattr(self.model, "generation_config", None))

    def _check_length_limit(self, config: Any) -> None:
        """max_new_tokens must fit the decoder (Whisper: 448 positions, a few for its prompt)."""
        limit = getattr(config, "max_target_positions", None)
        if limit is not None and self.max_new_tokens > limit - 4:
            raise self.bad_option("max_new_tokens", str(self.max_new_tokens),
                                  f"at most {limit - 4} for this model (its decoder has {limit} positions)")

    def _check_whisper_options(self, generation_config: Any) -> None:
        """language and task only for models that know them (multilingual Whisper), so that a
        wrong one fails before any request rather than in ``generate``."""
        from transformers.models.whisper.tokenization_whisper import TO_LANGUAGE_CODE

        if self.language is not None:
            known = getattr(generation_config, "lang_to_id", None) or {}
            code = TO_LANGUAGE_CODE.get(self.language.lower(), self.language.lower())
            if f"<|{code}|>" not in known:
                codes = ", ".join(sorted(k.strip("<|>") for k in known)) or "none: leave language out"
                raise self.bad_option("language", self.language, f"a language of this model ({codes})")
        if self.whisper_task is not None and not getattr(generation_config, "task_to_id", None):
            raise self.bad_option("task", self.whisper_task, "left out: this model has no Whisper tasks")

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        self.prepare()
        audio = [self._audio(one_audio(self.name, r), load_media) for r in requests]
        return [Response("text", text=t) for t in self.transcribe(audio)]

    def _audio(self, sha256: str, load_media: MediaLoader) -> np.ndarray:
        """A request's WAV as float32 at the model's rate; longer than the window: refused."""
        try:
            samples, rate = read_wav(load_media("audio", sha256))
        except (ValueError, EOFError) as exc:
            raise BackendError(Problem(f"hf-asr: audio {sha256[:12]} is not a 16-bit PCM WAV: {exc}")) from None
        audio = resample(pcm_to_float(samples), rate, self.rate)
        window = getattr(self.extractor, "n_samples", None)
        if window is not None and len(audio) > window:
            raise BackendError(Problem(
                f"hf-asr: audio {sha256[:12]} lasts {len(audio) / self.rate:.1f} s, longer than the "
                f"model's {window / self.rate:.0f} s window", hint="split long recordings before transcribing"))
        return audio

    def transcribe(self, audio: list[np.ndarray]) -> list[str]:
        """Greedy transcripts of float32 clips at the model's rate: seq2seq models decode the
        batch together with ``generate``; CTC models take one clip at a time (see ``_ctc``)."""
        if self.ctc:
            return [self._ctc(clip) for clip in audio]
        features = self.processor(audio, sampling_rate=self.rate, return_tensors="pt")  # padded to the window
        inputs = {k: self._to_device(v) for k, v in features.items()}
        with self.torch.inference_mode(), private_rng(self.torch, self.device):
            out = self.model.generate(**inputs, **self._generate_kwargs())
        return [t.strip() for t in self.processor.batch_decode(out, skip_special_tokens=True)]

    def _ctc(self, clip: np.ndarray) -> str:
        """The argmax of each frame, then the tokenizer's CTC decoding (repeats merged, blanks
        dropped), as MMCBench's wav2vec2 judge does. One clip at a time: wav2vec2-base takes no
        attention mask, so padding a batch to its longest clip would change every shorter one's
        normalisation and frames, and with them its transcript."""
        features = self.processor(clip, sampling_rate=self.rate, return_tensors="pt")
        inputs = {k: self._to_device(v) for k, v in features.items()}
        with self.torch.inference_mode():
            ids = self.model(**inputs).logits.argmax(dim=-1)
        return str(self.processor.batch_decode(ids)[0]).strip()

    def _to_device(self, tensor: Any) -> Any:
        """A feature tensor on the device; floating-point ones (audio features) in the dtype."""
        return to_device(self.torch, tensor, self.device, self.dtype)

    def _generate_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"do_sample": False, "num_beams": 1, "max_new_tokens": self.max_new_tokens}
        if self.language is not None:  # Whisper's own arguments: other models take none
            kwargs["language"] = self.language
        if self.whisper_task is not None:
            kwargs["task"] = self.whisper_task
        return kwargs


@BACKENDS.add("hf-tts")
class HFTextToSpeech(LocalTorchBackend):
    """Text-to-speech through transformers, from a local folder."""

    tasks = frozenset({"text-to-speech"})
    target_help = "/path/to/model (a VITS model such as MMS-TTS)"
    batch_size = 8
    USAGE = "hf-tts:/path/to/mms-tts (a VITS model saved with save_pretrained)"
    SUPPORTED = ("vits",)

    def fingerprint(self) -> dict[str, Any]:
        return {**self.base_fingerprint(), "transformers": package_version("transformers"),
                "seed": self.generation.seed, "rate": OUTPUT_RATE, "resampler": _resampler()}

    def _load(self) -> None:
        from transformers import AutoConfig, AutoModelForTextToWaveform, AutoTokenizer

        hint = "hf-tts runs VITS-class text-to-speech models (e.g. facebook/mms-tts-eng) saved with save_pretrained"
        try:
            config = AutoConfig.from_pretrained(self.path, local_files_only=True)
            if config.model_type not in self.SUPPORTED:
                raise BackendError(Problem(f"hf-tts: {self.path} is a {config.model_type!r} model, not a "
                                           "VITS text-to-speech one", hint=hint))
            self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            self.model = AutoModelForTextToWaveform.from_pretrained(self.path, local_files_only=True,
                                                                    dtype=self.dtype)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self.load_failed(exc, hint) from None
        self.model.to(self.device).eval()
        self.rate = int(self.model.config.sampling_rate)

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        self.prepare()
        return [Response("audio", data=self.speak(r.prompt, request_seed(r, self.generation.seed)))
                for r in requests]

    def speak(self, text: str, seed: int) -> bytes:
        """16 kHz 16-bit WAV of ``text``; a text with nothing the tokenizer can spell: no samples."""
        inputs = self.tokenizer(text, return_tensors="pt")
        if inputs["input_ids"].shape[-1] == 0:
            return wav_bytes(np.zeros(0, dtype=np.float32), OUTPUT_RATE)
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with self.torch.inference_mode(), private_rng(self.torch, self.device, seed):
            waveform = self.model(**inputs).waveform[0]
        samples = waveform.float().cpu().numpy()
        return wav_bytes(resample(samples, self.rate, OUTPUT_RATE), OUTPUT_RATE)


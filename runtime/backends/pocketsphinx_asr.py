"""Speech-to-text with pocketsphinx and the US-English model its PyPI package ships.

The backend is stateless: a clip's transcript does not depend on what the decoder heard before,
because a request key (the clip's digest and this backend's fingerprint) cannot name that history.
A reused pocketsphinx decoder is not stateless by itself. The model's feat.params turns on
``-remove_noise yes``, and the front end's noise statistics (the running noise floor behind its
spectral noise subtraction) carry over from one utterance to the next: ``start_utt`` resets the
frame overflow buffer and pre-emphasis, not those. A clip was therefore transcribed differently
after different clips, so ``--workers 1`` and ``--workers 2`` (other clips before it in each
worker's decoder) disagreed and a kill+resume changed scores. CMN is not the culprit: feat.params
also sets ``-cmn batch``, so each clip is normalised by its own cepstral mean. (feat.params wins
over the Decoder's keyword arguments: ``Decoder(cmn=..., remove_noise=...)`` changes nothing.)

Before every clip ``Decoder.reinit_feat()`` rebuilds the front end and feature computation from
the config: noise statistics, CMN (back to ``cmninit``), AGC and frame buffers start as in a new
Decoder. It costs well under a millisecond; a new Decoder per clip (which reloads the acoustic
model, dictionary and language model) costs about 0.35 s of CPU, a quarter of a typical decode.
It keeps the model's own front end, noise removal included. The rest of what a decoder keeps
between clips (the search's buffers, the acoustic model's top-N Gaussians of the last frame,
which only seed an exact top-N search) did not change any transcript in our checks, where a
reused decoder matched a fresh one on every clip in every order (tests/test_stateless_asr.py).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.identity import folder_digest
from benchc.compiler.media import read_wav

from .base import BACKENDS, Backend, BackendSpec, MediaLoader, Request, Response

RATE = 16_000


@BACKENDS.add("pocketsphinx")
class PocketSphinx(Backend):
    """Speech-to-text with pocketsphinx's bundled US-English model.

    Stateless: every clip starts from a fresh front end (see the module docstring). No options."""

    tasks = frozenset({"speech-to-text"})
    batch_size = 4
    process_parallel = True

    def __init__(self, spec: BackendSpec, generation: Any) -> None:
        super().__init__(spec, generation)
        try:
            import pocketsphinx
        except ImportError:
            raise BackendError(Problem("pocketsphinx is not installed", hint="pip install pocketsphinx")) from None
        self._ps = pocketsphinx
        self.model_dir = pocketsphinx.get_model_path()
        self._decoder = None

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "version": metadata.version("pocketsphinx"),
                "model": folder_digest(Path(self.model_dir)), "rate": RATE,
                # transcripts made with a front end that carried state across clips are never
                # served again: each clip now starts from a fresh front end
                "stateless": 1}

    def _get_decoder(self):
        if self._decoder is None:
            self._decoder = self._ps.Decoder(samprate=RATE, loglevel="FATAL")
        return self._decoder

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        out = []
        for request in requests:
            audio = [sha for kind, sha in request.media if kind == "audio"]
            if len(audio) != 1:
                raise BackendError(Problem(f"pocketsphinx needs exactly one audio input, got {len(audio)}"))
            out.append(Response("text", text=self.transcribe(load_media("audio", audio[0]))))
        return out

    def transcribe(self, wav: bytes) -> str:
        samples, rate = read_wav(wav)
        if rate != RATE:
            samples = np.round(soxr.resample(samples.astype(np.float64), rate, RATE, quality="HQ")).astype("<i2")
        decoder = self._get_decoder()
        decoder.reinit_feat()  # forget what earlier clips left in the front end (module doc)
        decoder.start_utt()
        decoder.process_raw(samples.astype("<i2").tobytes(), full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        return hyp.hypstr if hyp is not None else ""


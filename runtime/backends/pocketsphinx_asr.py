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

Where the time goes: nearly all of it is the decoder's first pass (fwdtree, about 85% of a
clip's CPU; fwdflat about 10%, bestpath under 1%) over the full 134k-word dictionary and trigram
language model, at about 0.6x real time: an 8-second espeak sentence costs about 3 s of CPU. The
decoder is built once per backend (per pool worker), not per request or batch; espeak's speech
is already 16 kHz, so nothing is resampled. No setting that keeps every transcript makes the
search much cheaper, so the speed-up is opt-in: ``beam`` (pocketsphinx's ``-beam``, default
1e-48) narrows the first pass. On the demo's 192 clips (``make demo``), ``beam=1e-30`` took about
a fifth of the default's CPU per clip (benchmarks/demo_profile.py), changed 186 of the 192
transcripts, and did not make them worse: word error rate against the spoken text 1.01, against
1.21 with the default beam (this model hears espeak's voice poorly either way). A beam that is given
enters the fingerprint, so its answers are stored apart from the default decoder's; without one
the fingerprint (and every stored answer) is as before. ``make demo`` uses it.
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

from pydantic import Field

from .base import BACKENDS, Backend, BackendOptions, BackendSpec, MediaLoader, Request, Response

RATE = 16_000


class PocketSphinxOptions(BackendOptions):
    # At most 1e-20: pocketsphinx 5 dies of SIGFPE (the whole process, or a pool worker) on
    # espeak clips from beam=1e-11 up (measured on the demo's clips; 1e-12 still decoded them),
    # and a wider beam saves little more time (1e-20 about 25% less than 1e-30).
    beam: float | None = Field(None, gt=0, le=1e-20, description="the first pass's beam width, as pocketsphinx's "
                               "-beam: a larger one (1e-30) prunes more, decodes several times faster and "
                               "changes transcripts; recorded in the fingerprint "
                               "(default: pocketsphinx's, 1e-48)")


@BACKENDS.add("pocketsphinx")
class PocketSphinx(Backend):
    """Speech-to-text with pocketsphinx's bundled US-English model.

    Stateless: every clip starts from a fresh front end (see the module docstring)."""

    tasks = frozenset({"speech-to-text"})
    batch_size = 4
    process_parallel = True
    Options = PocketSphinxOptions
    opts: PocketSphinxOptions

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
        # transcripts made with a front end that carried state across clips are never served
        # again: each clip now starts from a fresh front end ("stateless")
        found = {"backend": self.name, "version": metadata.version("pocketsphinx"),
                 "model": folder_digest(Path(self.model_dir)), "rate": RATE, "stateless": 1}
        # only a given beam is recorded: the default decoder's fingerprint, and so the keys of
        # every answer stored before the option existed, stay as they were
        return found | self._settings()

    def _settings(self) -> dict[str, Any]:
        """The decoder settings given as options (they change transcripts)."""
        return {} if self.opts.beam is None else {"beam": self.opts.beam}

    def _get_decoder(self) -> Any:
        if self._decoder is None:
            self._decoder = self._ps.Decoder(samprate=RATE, loglevel="FATAL", **self._settings())
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


"""Model backends, registered by name. Importing this package registers the built-in ones."""

from .base import BACKENDS, Backend, BackendSpec, Request, Response, make_backend  # noqa: F401
from . import (  # noqa: F401  (registration; diffusers and vllm are import-guarded)
    diffusers_t2i, echo, espeak, hf, hf_speech, openai_compat, pocketsphinx_asr, vllm_engine,
)

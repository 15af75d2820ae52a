"""Model backends, registered by name. Importing this package registers the built-in ones."""

from .base import BACKENDS, Backend, BackendSpec, Request, Response, make_backend  # noqa: F401
from . import espeak, hf, openai_compat, pocketsphinx_asr  # noqa: F401  (registration)

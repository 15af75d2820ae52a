"""Model backends, registered by name with ``@BACKENDS.add``. Every module of this package is
imported (and so registers its backends) when the package is imported (compiler/plugins.py);
backends whose engines are optional (diffusers, vllm) guard their imports."""

import sys

from benchc.compiler.plugins import import_all

from .base import BACKENDS, Backend, BackendSpec, Request, Response, make_backend

__all__ = ["BACKENDS", "Backend", "BackendSpec", "Request", "Response", "make_backend"]

import_all(sys.modules[__name__])

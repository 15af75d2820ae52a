"""Source loaders, registered by name. Every module of this package is imported (and so
registers its loaders) when the package is imported."""

import sys

from ..plugins import import_all
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader

__all__ = ["SOURCES", "LoadedSource", "SourceContext", "SourceLoader"]

import_all(sys.modules[__name__])

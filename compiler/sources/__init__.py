"""Source loaders, registered by name. Importing this package registers the built-in ones."""

from .base import SOURCES, LoadedSource, SourceContext, SourceLoader  # noqa: F401
from . import mmcbench_table, scenes  # noqa: F401  (registration)

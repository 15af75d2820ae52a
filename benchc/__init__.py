"""benchc: a declarative, spec-driven compiler for consistency benchmarks of multimodal models."""

from .mathpaths import pin as _pin_math_paths

__version__ = "0.1.0"

LOADED_BEFORE_BENCHC = _pin_math_paths()
"""Math libraries imported before benchc, whose code paths are this CPU's (benchc/mathpaths.py)."""

"""benchc: a declarative, spec-driven compiler for consistency benchmarks of multimodal models."""

__version__ = "0.1.0"

"""Metric implementations, registered under the names of the compiler's metric schemas."""

from .base import METRICS, MetricInput, MetricResult  # noqa: F401
from . import mmcbench, mmr3  # noqa: F401  (registration)

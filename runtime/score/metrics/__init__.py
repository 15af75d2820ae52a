"""Metric implementations, registered by name with ``@metric``. Every module of this package is
imported (and so registers its metrics) when the package is imported (compiler/plugins.py)."""

import sys

from benchc.compiler.plugins import import_all

from .base import METRICS, Metric, MetricInput, MetricResult, metric

__all__ = ["METRICS", "Metric", "MetricInput", "MetricResult", "metric"]

import_all(sys.modules[__name__])

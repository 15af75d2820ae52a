"""Perturbation ops, registered by name. Every module of this package is imported (and so
registers its ops) when the package is imported."""

import sys

from ..plugins import import_all
from .base import OPS, ModelOp, ModelStepParams, Op, OpContext, OpOutput, OpParams

__all__ = ["OPS", "ModelOp", "ModelStepParams", "Op", "OpContext", "OpOutput", "OpParams"]

import_all(sys.modules[__name__])

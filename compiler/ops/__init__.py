"""Perturbation ops, registered by name. Importing this package registers the built-in ones."""

from .base import OPS, Op, OpContext, OpOutput, OpParams  # noqa: F401
from . import image_mask, text_table  # noqa: F401  (registration)

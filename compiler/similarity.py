"""Cosine similarities and means whose results do not move with the CPU's math paths.

Embedders run in float32, and their last bits depend on the kernels the CPU takes (AVX-512,
AVX2 or the default path of torch, MKL's code path, the thread count): the same sentence gives
a vector that differs by about 1e-7 on another machine. Three rules keep that noise from
reaching a number a paper prints:

* two identical inputs (the same text, the same image bytes) have similarity exactly 1.0; they
  are never embedded against each other (an oracle whose every answer equals its reference
  scores exactly the maximum, not 2300.0003);
* other cosines are taken in float64 over rows renormalised in float64;
* means are ``math.fsum`` sums (correctly rounded, so independent of the order of the values)
  divided by the count.

What is left (a last-bit difference between two different texts' cosines) is removed where a
number is printed: paper tables and figures are rounded to their declared precision before they
are written and hashed (``report.tables.Table.rounded``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

IDENTICAL = 1.0
"""The similarity of two identical inputs, by definition rather than by embedding."""


def unit64(vectors: np.ndarray) -> np.ndarray:
    """Rows as float64 scaled to unit length (zero rows stay zero)."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.ndim == 1:
        norm = float(np.linalg.norm(rows))
        return rows / norm if norm > 0 else rows
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def cosine(u: np.ndarray, v: np.ndarray, same: bool = False) -> float:
    """The cosine of two vectors in float64; exactly 1.0 when ``same`` (identical inputs)."""
    if same:
        return IDENTICAL
    return float(np.dot(unit64(u), unit64(v)))


def row_cosines(left: np.ndarray, right: np.ndarray, same: Sequence[bool] | np.ndarray) -> np.ndarray:
    """Row-wise cosines of two equally long stacks (float64); exactly 1.0 where ``same``."""
    if len(left) == 0:
        return np.zeros(0, dtype=np.float64)
    out = np.einsum("ij,ij->i", unit64(left), unit64(right))
    return np.where(np.asarray(same, dtype=bool), IDENTICAL, out)


def fmean(values: Iterable[float]) -> float:
    """The mean as ``math.fsum`` / n: the same bits whatever the order of ``values``."""
    values = list(values)
    if not values:
        raise ValueError("the mean of no values")
    return math.fsum(values) / len(values)

"""Random weights that a seed fixes, and saving them, for the tiny test models."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def seeded(make: Callable[[], T], seed: int) -> T:
    """``make()`` under ``torch.manual_seed(seed)`` inside ``fork_rng``: the same seed gives the
    same weights, and the caller's global RNG is left alone."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def save(out_dir: pathlib.Path, model: Any, *parts: Any) -> pathlib.Path:
    """Save ``model`` (safetensors), then each of ``parts`` (its processor, tokenizer), to
    ``out_dir``; return ``out_dir``."""
    model.save_pretrained(out_dir, safe_serialization=True)
    for part in parts:
        part.save_pretrained(out_dir)
    return out_dir

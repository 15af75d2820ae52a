"""Run a library that draws from global RNGs (python ``random``, numpy's legacy global state,
torch) as a pure function of our derived seed.

imagecorruptions, audiomentations, textattack and nlpaug draw from those globals. Inside
``seeded_globals(seed)`` the globals are seeded from ``seed`` under one process-wide lock and
restored afterwards, so an op's output depends only on its seed, two threads cannot interleave
their draws, and the caller's RNG state is left as it was. (Processes have their own globals.)
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
from importlib.util import find_spec

if TYPE_CHECKING:
    import torch

_LOCK = threading.RLock()


@contextmanager
def seeded_globals(seed: int) -> Iterator[None]:
    seed32 = seed % (2**32)
    with _LOCK:
        py_state = random.getstate()
        np_state = np.random.get_state()
        torch_state = _torch_state()
        random.seed(seed32)
        np.random.seed(seed32)
        if torch_state is not None:
            import torch

            torch.manual_seed(seed32)
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
            if torch_state is not None:
                import torch

                torch.random.set_rng_state(torch_state)


def _torch_state() -> torch.Tensor | None:
    """torch's CPU RNG state when torch is installed. It is imported here if needed: a library
    that imports torch lazily inside the block would otherwise draw from an unseeded generator."""
    if find_spec("torch") is None:
        return None
    import torch

    return torch.random.get_rng_state()

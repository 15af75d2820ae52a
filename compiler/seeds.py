"""Seeds derived from (spec seed, item id, node id, variant): no global RNG, no order dependence."""

from __future__ import annotations

import numpy as np

from .canonical import digest


def derive_seed(spec_seed: int, record_id: str, node_id: str, variant: int = 0) -> int:
    """A 64-bit seed that depends only on its arguments."""
    return int(digest(["seed", spec_seed, record_id, node_id, variant])[:16], 16)


def rng_for(seed: int) -> np.random.Generator:
    """A private generator; library global RNGs are never touched."""
    return np.random.Generator(np.random.PCG64(seed))

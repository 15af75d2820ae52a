"""Seeds derived from (spec seed, item id, node id, variant): no global RNG, no order dependence."""

from __future__ import annotations

import numpy as np

from .canonical import SEED_RECIPE_VERSION, digest


def derive_seed(spec_seed: int, record_id: str, node_id: str, variant: int = 0) -> int:
    """A 64-bit seed that depends only on its arguments."""
    return seed_from(["seed", spec_seed, record_id, node_id, variant])


def seed_from(parts: list[object]) -> int:
    """A 64-bit seed from JSON-able parts, by the seed recipe (stable across key-recipe bumps)."""
    return int(digest(parts, recipe=SEED_RECIPE_VERSION)[:16], 16)


def rng_for(seed: int) -> np.random.Generator:
    """A private generator; library global RNGs are never touched."""
    return np.random.Generator(np.random.PCG64(seed))

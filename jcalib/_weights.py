"""Sample weights as an empirical measure (shared by the decision metric and recalibrator)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._validation import to_device

__all__ = ["normalised_weights"]


def normalised_weights(sample_weight: Float[Array, " n"] | None, n: int, dtype) -> Float[Array, " n"]:
    """Weights summing to 1: ``1/n`` each when ``sample_weight`` is None, else ``w / Σ w``.

    Traced, or for ``None`` made on the host (``jnp.full`` would compile a program per shape);
    the caller validates ``sample_weight`` (non-negative, finite, not all zero).
    """
    if sample_weight is None:
        return to_device(np.full((n,), 1.0 / n, dtype))
    sw = sample_weight.astype(dtype)
    return sw / jnp.sum(sw)

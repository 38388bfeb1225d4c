"""Sample weights as an empirical measure (shared by the decision metric and recalibrator)."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

from ._validation import full

__all__ = ["normalised_weights"]


def normalised_weights(sample_weight: Float[Array, " n"] | None, probs: Array) -> Float[Array, " n"]:
    """Weights summing to 1, in the dtype of the forecasts ``probs`` (one row per sample):
    ``1/n`` each when ``sample_weight`` is None (made on the host for concrete ``probs``, see
    :func:`jcalib._validation.full`), else ``w / Σ w``.

    The caller validates ``sample_weight`` (non-negative, finite, not all zero).
    """
    n = probs.shape[0]
    if sample_weight is None:
        return full((n,), 1.0 / n, probs.dtype, probs)
    sw = sample_weight.astype(probs.dtype)
    return sw / jnp.sum(sw)

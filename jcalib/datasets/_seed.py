"""The seed a host-side generator (NumPy's, River's) gets from a JAX PRNG key."""

from __future__ import annotations

import jax
import numpy as np

from .._validation import Custom, check_key

__all__ = ["host_seed", "KEY"]


def _single_key(key, name: str = "key", bound=None):
    """A single JAX PRNG key (:func:`~jcalib._validation.check_key`); a batch of keys raises a
    ``TypeError`` naming ``name``."""
    key = check_key(key, name)
    if getattr(key, "ndim", 0) != (0 if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else 1):
        raise TypeError(f"{name} must be a single JAX PRNG key, got a batch of keys of shape {tuple(key.shape)}")
    return key


#: The declared ``key`` of the data sets drawn on the host: one JAX PRNG key.
KEY = Custom(_single_key, "a single JAX PRNG key")


def host_seed(key) -> int:
    """A 32-bit seed for the NumPy generator or River model that draws on the host, from both
    32-bit words ``(hi, lo)`` of the key: ``lo XOR (hi * 0x9E3779B1 mod 2**32)``. A key made by
    ``jax.random.key(s)`` has ``hi = 0`` and gives ``s`` itself, so ``key=jax.random.key(s)``
    reproduces what the integer seed ``s`` gave."""
    key = _single_key(key)
    data = [int(w) for w in np.asarray(jax.random.key_data(key), dtype=np.uint64).ravel()]
    hi, lo = data[0], data[1]
    for w in data[2:]:  # a key of another implementation (rbg: four words) folds its other words in
        hi, lo = lo, (w ^ (hi * 0x9E3779B1 % 2**32))
    return lo ^ (hi * 0x9E3779B1 % 2**32)

"""The seed a host-side generator (NumPy's, River's) gets from a JAX PRNG key."""

from __future__ import annotations

import jax
import numpy as np

from .._validation import check_key

__all__ = ["host_seed"]


def host_seed(key) -> int:
    """A 32-bit seed for the NumPy generator or River model that draws on the host, from both
    32-bit words ``(hi, lo)`` of the key: ``lo XOR (hi * 0x9E3779B1 mod 2**32)``. A key made by
    ``jax.random.key(s)`` has ``hi = 0`` and gives ``s`` itself, so ``key=jax.random.key(s)``
    reproduces what the integer seed ``s`` gave."""
    data = np.asarray(jax.random.key_data(check_key(key)), dtype=np.uint64).ravel()
    if data.size != 2:
        raise TypeError(f"key must be a single JAX PRNG key of two 32-bit words, got key data of shape {data.shape}")
    hi, lo = int(data[0]), int(data[1])
    return lo ^ (hi * 0x9E3779B1 % 2**32)

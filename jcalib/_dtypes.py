"""The float dtype every module computes in (DESIGN.md, "Numbers")."""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["float_dtype"]


def float_dtype(*xs) -> jnp.dtype:
    """JAX's default float dtype (float32, or float64 under ``jax_enable_x64``); with arguments,
    the promotion of a Python float with their floating dtypes (integer and boolean arguments
    are ignored): a float64 array gives float64, a float16 array keeps float16."""
    floats = [jnp.result_type(x) for x in xs]
    return jnp.result_type(float, *[d for d in floats if jnp.issubdtype(d, jnp.floating)])

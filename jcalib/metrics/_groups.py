"""Exact sums over groups of equal values, jit-able (shared by the binary metrics)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

__all__ = ["group_sums"]


def group_sums(v: Float[Array, " n"], *values: Float[Array, " n"]):
    """Sums of ``values`` over groups of equal ``v`` (exact grouping, static output size n).

    Returns the sorted values, a mask of the first element of each group, and for each of
    ``values`` an array whose entry at a group's first position holds the group total (zero
    elsewhere). Sort-based segment sums: jit-able, no dynamic shapes.
    """
    n = v.shape[0]
    order = jnp.argsort(v)
    vs = v[order]
    first = jnp.concatenate([jnp.ones((1,), bool), vs[1:] != vs[:-1]])
    seg = jnp.cumsum(first.astype(jnp.int32)) - 1  # group index of each sorted element
    head = jnp.nonzero(first, size=n, fill_value=n)[0]  # position of each group's first element
    out = []
    for x in values:
        tot = jax.ops.segment_sum(x[order], seg, num_segments=n)
        out.append(jnp.zeros_like(x).at[head].set(tot, mode="drop"))
    return vs, first, out

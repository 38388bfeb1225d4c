"""The round-key scheme: which random bits each round of a run sees.

The run key is split once into (forecaster-init, nature-init) and four round streams
(context, forecast, outcome, nature-update). Each stream's random bits come in blocks aligned
to absolute round indices: block ``b`` (rounds ``[b·BLOCK, (b+1)·BLOCK)``) is ``BLOCK`` threefry
hashes under ``fold_in(stream, b)``, and round ``t`` gets one hash's two words as its key (of
:data:`ROUND_KEY_IMPL`, whose first small draw reads those words without hashing again). So a
run's numbers do not depend on how it is chunked, nor on how many devices or processes share a
sweep.
"""

from __future__ import annotations

import math

import jax
import jax.extend.random
import jax.numpy as jnp

from .._threefry import fold_in, split, threefry2x32
from .._validation import check_static_int

__all__ = ["BLOCK", "MAX_ROUNDS", "ROUND_KEY_IMPL", "block_keys", "check_horizon", "split_run_key"]

BLOCK = 128
"""Rounds per block of random bits: block ``b`` of a stream covers rounds ``[b·BLOCK, (b+1)·BLOCK)``."""

MAX_ROUNDS = 2**31 - BLOCK
"""The longest horizon ``T``: round indices (and the block index of the last round) are int32."""


def check_horizon(T, name: str = "T") -> int:
    """A horizon as a Python ``int`` in ``[1, MAX_ROUNDS]`` (NumPy integers accepted; a traced
    value refused as non-static)."""
    T = check_static_int(T, name, 1)
    if T > MAX_ROUNDS:
        raise ValueError(f"{name}={T} exceeds 2**31 - {BLOCK} = {MAX_ROUNDS}: a run's round indices are int32 counters")
    return T

_THREEFRY = jax.extend.random.threefry_prng_impl


def _round_random_bits(key, bit_width: int, shape):
    # A round key's two words are themselves uniform threefry output (see block_keys), so a
    # draw of at most 64 bits (a Bernoulli or a uniform, in float32 or float64) reads them as
    # they are; a larger draw hashes them as a threefry key.
    size = math.prod(shape)
    if bit_width == 64 and size == 1:
        hi, lo = (jax.lax.convert_element_type(w, jnp.uint64) for w in (key[0], key[1]))
        return ((hi << jnp.uint64(32)) | lo).reshape(shape)
    if bit_width <= 32 and size == 1:
        return jax.lax.convert_element_type(key[0], jnp.dtype(f"uint{bit_width}")).reshape(shape)
    if bit_width == 32 and size == 2:
        return key.reshape(shape)
    return _THREEFRY.random_bits(key, bit_width, shape)


ROUND_KEY_IMPL = jax.extend.random.define_prng_impl(
    key_shape=(2,),
    seed=_THREEFRY.seed,
    split=_THREEFRY.split,
    random_bits=_round_random_bits,
    fold_in=_THREEFRY.fold_in,
    name="jcalib_round",
    tag="rnd",
)
"""The PRNG implementation of the per-round keys that ``play``/``sweep`` hand to the players.

A round key holds 64 bits of threefry output. Its first draw of at most 64 bits (e.g.
``jax.random.bernoulli(key, p)``, ``jax.random.uniform(key)``) *is* those bits, without another
hash; ``split``, ``fold_in`` and larger draws are threefry's, keyed by the two words. So the
common case — one Bernoulli outcome per round — costs half a threefry hash per round (drawn in
blocks) instead of two hashes per round (a ``fold_in`` and the draw). ``jax.random.poisson``
accepts only threefry keys: there, use ``jax.random.wrap_key_data(jax.random.key_data(key))``.
"""


def split_run_key(key):
    """A run key's (forecaster-init key, nature-init key, round streams).

    The round streams are stacked in the order (context, forecast, outcome, nature-update).
    """
    keys = split(key, 6)
    return keys[0], keys[1], keys[2:]


def _two_words(kd):
    """A key's data as threefry's two ``uint32`` words: a run key of another implementation
    (``jax.random.key(0, impl="rbg")``: four words) is hashed down, pair by pair, with threefry."""
    kd = kd.reshape(-1)
    if kd.shape[0] == 2:
        return kd
    if kd.shape[0] % 2:
        kd = jnp.concatenate([kd, jnp.zeros((1,), kd.dtype)])
    out = kd[:2]
    for i in range(2, kd.shape[0], 2):
        out = jnp.stack(threefry2x32(out[0], out[1], kd[i], kd[i + 1]))
    return out


def block_keys(stream, b):
    """The round keys of block ``b`` of ``stream``: ``BLOCK`` keys from ``BLOCK`` threefry hashes.

    Block ``b`` hashes the counters ``0..2·BLOCK-1`` under ``fold_in(stream, b)``; round
    ``b·BLOCK + i`` gets the two output words of the ``i``-th hash. A round's key depends only on
    the stream and the round's absolute index, never on chunking, batching or devices.
    """
    kd = _two_words(jax.random.key_data(fold_in(stream, b)))
    counters = jnp.arange(BLOCK, dtype=jnp.uint32)
    words = threefry2x32(kd[0], kd[1], counters, counters + jnp.uint32(BLOCK))
    return jax.random.wrap_key_data(jnp.stack(words, axis=-1), impl=ROUND_KEY_IMPL)

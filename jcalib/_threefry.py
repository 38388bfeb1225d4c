"""Threefry-2x32 written out in array operations: ``jax.random``'s split and fold-in, bit for bit.

JAX's own Threefry is a primitive of its own, which JAX (before its pull request 37872) lowers
on a CPU to a rolled loop that XLA compiles slowly (about 0.1 s per call site; a ``play`` chunk
derives its round keys at eight). The same twenty rounds of additions, rotations and
exclusive-ors written as ``lax`` operations compile in less than half the time (a sweep's round
keys: 0.2 s against 0.5 s); with NumPy, concrete keys are split on the host without compiling
at all.

:func:`split` and :func:`fold_in` return exactly ``jax.random.split`` and ``jax.random.fold_in``
for keys of the default ``threefry2x32`` implementation under ``jax_threefry_partitionable``
(JAX's default); for any other key (``rbg``, ``unsafe_rbg``, a custom implementation) or
setting they call ``jax.random`` itself.

Importing jcalib also gives JAX's own Threefry its unrolled lowering on a CPU
(:func:`unroll_jax_threefry_on_cpu`): every ``jax.random`` draw in the process, jcalib's and the
user's, then compiles in about half the time and runs about 3x faster, with the same bits. This
is the lowering JAX uses on other platforms, and on CPUs too from its change "threefry2x32: use
unrolled loops in CPU lowering" (jax-ml/jax pull request 37872) on; a JAX that has it is left
as it is. ``JCALIB_THREEFRY_CPU=rolled`` keeps JAX's rolled loop.

Reference: Salmon, Moraes, Dror and Shaw (2011), "Parallel random numbers: as easy as 1, 2, 3",
SC '11 (the Threefry-2x32 cipher with 20 rounds).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._validation import to_device

__all__ = ["fold_in", "key_data", "keys_like", "split", "split_into", "threefry2x32", "unroll_jax_threefry_on_cpu"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32-20 of the counter words ``(x0, x1)`` under the key ``(k0, k1)``.

    ``uint32`` arrays (broadcast together) of ``jax.numpy`` or, all four concrete, NumPy (the
    result is then NumPy too). This is the cipher of ``jax.extend.random.threefry_2x32``.
    """
    if all(isinstance(a, (np.ndarray, np.generic)) for a in (k0, k1, x0, x1)):
        words = np.broadcast_arrays(*(np.asarray(a, np.uint32) for a in (k0, k1, x0, x1)))
        with np.errstate(over="ignore"):  # NumPy's uint32 scalars warn where they wrap; the cipher wraps
            return _cipher(np.add, np.bitwise_xor, np.bitwise_or, np.left_shift, np.right_shift, np.uint32, *words)
    return _traced(k0, k1, x0, x1)


@jax.jit
def _traced(k0, k1, x0, x1):
    # lax, not jax.numpy, and jitted: inside a vmap each call is one primitive, and the calls of
    # one shape (a chunk's four round streams) trace the cipher once
    words = jnp.broadcast_arrays(*(jnp.asarray(a, jnp.uint32) for a in (k0, k1, x0, x1)))
    return _cipher(lax.add, lax.bitwise_xor, lax.bitwise_or, lax.shift_left, lax.shift_right_logical,
                   lambda v: lax.full(words[0].shape, v, jnp.uint32), *words)


def _cipher(add, xor, or_, shl, shr, const, k0, k1, x0, x1):
    """The twenty rounds, in the given ``uint32`` operations (wrapping addition, shifts)."""
    ks = (k0, k1, xor(xor(k0, k1), const(_PARITY)))
    x0, x1 = add(x0, ks[0]), add(x1, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = add(x0, x1)
            x1 = xor(or_(shl(x1, const(r)), shr(x1, const(32 - r))), x0)
        x0 = add(x0, ks[(i + 1) % 3])
        x1 = add(add(x1, ks[(i + 2) % 3]), const(i + 1))
    return x0, x1


def _plain(key) -> bool:
    """Whether ``key`` is one threefry key (typed, or raw ``uint32`` data of shape ``(2,)``) that
    :func:`split` and :func:`fold_in` write out; anything else goes to ``jax.random``, whose
    errors (a batch of keys, an int seed) are then the user's."""
    if not jax.config.jax_threefry_partitionable or not hasattr(key, "dtype"):
        return False
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key.shape == () and str(jax.random.key_impl(key)) == "threefry2x32"
    return key.dtype == jnp.uint32 and key.shape == (2,) and str(jax.config.jax_default_prng_impl) == "threefry2x32"


def _words(key):
    """``(k0, k1)``: a threefry key's two words (host arrays when concrete)."""
    data = key_data(key)
    return data[..., 0], data[..., 1]


def key_data(keys):
    """The data of a key array (typed or raw): a host array when concrete."""
    data = jax.random.key_data(keys) if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key) else keys
    return data if isinstance(data, jax.core.Tracer) else np.asarray(data)


def keys_like(data, like):
    """Key data (words along the last axis; NumPy, put on the device without compiling, or
    traced) as keys of ``like``'s kind: typed keys of its implementation, or raw data."""
    if isinstance(data, (np.ndarray, np.generic)):
        data = to_device(data)
    if jax.dtypes.issubdtype(like.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(like))
    return data


def _wrap(k0, k1, like):
    xp = np if isinstance(k0, (np.ndarray, np.generic)) else jnp
    return keys_like(xp.stack([k0, k1], axis=-1), like)


def split(key, num: int = 2):
    """``jax.random.split(key, num)``, bit for bit."""
    if not (_plain(key) and isinstance(num, (int, np.integer))):
        return jax.random.split(key, num)
    return _wrap(*_split_words(key, num), key)


def split_into(key, num: int = 2) -> tuple:
    """``tuple(jax.random.split(key, num))``: for a concrete key, each key put on the device by
    itself (unpacking or indexing a device array of keys compiles a program per shape)."""
    if not (_plain(key) and isinstance(num, (int, np.integer))) or isinstance(key, jax.core.Tracer):
        return tuple(split(key, num))
    hi, lo = _split_words(key, num)
    return tuple(_wrap(h, l, key) for h, l in zip(hi, lo))


def _split_words(key, num: int):
    """The ``num`` keys of a split as their two words: the partitionable split hashes the
    counters ``(0, i)``."""
    k0, k1 = _words(key)
    return threefry2x32(k0, k1, np.zeros(num, np.uint32), np.arange(num, dtype=np.uint32))


def fold_in(key, data):
    """``jax.random.fold_in(key, data)``, bit for bit (``data`` an integer scalar, taken as
    ``uint32`` as JAX takes it)."""
    integer = np.issubdtype(np.dtype(getattr(data, "dtype", type(data))), np.integer) and not isinstance(data, bool)
    if not (_plain(key) and integer and np.ndim(data) == 0):
        return jax.random.fold_in(key, data)
    k0, k1 = _words(key)
    if isinstance(k0, (np.ndarray, np.generic)) and not isinstance(data, jax.core.Tracer):
        xp, word = np, (np.asarray(data, np.uint32) if isinstance(data, int) else np.asarray(data).astype(np.uint32))
    else:
        xp, word = jnp, jnp.asarray(data, jnp.uint32)
    hi, lo = threefry2x32(k0, k1, xp.zeros_like(word), word)  # JAX's seed of an integer: the words (0, data)
    return _wrap(hi, lo, key)


THREEFRY_CPU_ENV = "JCALIB_THREEFRY_CPU"
"""``rolled`` keeps JAX's rolled-loop lowering of its Threefry on a CPU (read at import)."""


def unroll_jax_threefry_on_cpu() -> bool:
    """Lower JAX's ``threefry2x32`` primitive on a CPU as on other platforms: its twenty rounds
    written out, instead of a loop of five steps of four rounds. The same operations on the same
    words, so every draw keeps its bits; XLA compiles the unrolled form in about half the time
    and runs it about 3x faster (``jax.random.uniform`` of 2048 x 128: 74 ms against 144-180 ms
    to compile, 0.5 ms against 2.0-2.4 ms to run, on a 2-core CPU).

    Done at import unless ``JCALIB_THREEFRY_CPU=rolled``; only where this JAX lowers the
    primitive on a CPU by its rolled rule (a JAX that already unrolls it, or whose internals
    differ, is left as it is). Returns whether the lowering was changed."""
    if os.environ.get(THREEFRY_CPU_ENV, "").strip().lower() == "rolled":
        return False
    try:
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32 as jax_threefry
    except ImportError:  # another layout of JAX's internals
        return False
    rolled = getattr(jax_threefry, "_threefry2x32_cpu_lowering_rule", None)
    unrolled = getattr(jax_threefry, "_threefry2x32_lowering_rule", None)
    cpu_rules = getattr(mlir, "_platform_specific_lowerings", {}).get("cpu", {})
    current = cpu_rules.get(getattr(jax_threefry, "threefry2x32_p", None))
    if rolled is None or unrolled is None or getattr(current, "rule", None) is not rolled:
        return False
    mlir.register_lowering(jax_threefry.threefry2x32_p, unrolled, platform="cpu")
    return True


unroll_jax_threefry_on_cpu()

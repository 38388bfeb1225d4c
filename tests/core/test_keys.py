"""The round-key scheme, against its description written with jax.random: a run key splits into
six (two inits, four round streams), block b of a stream is 2·BLOCK threefry counters hashed under
fold_in(stream, b), and round b·BLOCK + i gets the i-th hash's two words. The scheme's hashes
compile as plain integer arithmetic, not as JAX's Threefry primitive."""

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.core.keys import BLOCK, ROUND_KEY_IMPL, block_keys, split_run_key


def _reference_block(stream, b):
    """Block ``b`` of ``stream`` as the scheme describes it, in jax.random's own functions."""
    kd = jax.random.key_data(jax.random.fold_in(stream, b)).reshape(-1)
    while kd.shape[0] > 2:  # a key of another implementation is hashed down to two words
        kd = jnp.concatenate([jax.extend.random.threefry_2x32(kd[:2], kd[2:4]), kd[4:]])
    words = jax.extend.random.threefry_2x32(kd, jnp.arange(2 * BLOCK, dtype=jnp.uint32))
    return np.asarray(words).reshape(2, BLOCK).T


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
@pytest.mark.parametrize("b", [0, 5, 2**20 + 3])
def test_block_keys_are_the_described_hashes(impl, b):
    stream = jax.random.key(11, impl=impl)
    keys = block_keys(stream, b)
    assert keys.shape == (BLOCK,) and jax.random.key_impl(keys) == ROUND_KEY_IMPL
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(keys)), _reference_block(stream, b))
    traced = jax.jit(block_keys)(stream, jnp.int32(b))
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(traced)), _reference_block(stream, b))


@pytest.mark.parametrize("key", [jax.random.key(4), jax.random.PRNGKey(4)], ids=["typed", "raw"])
def test_a_run_key_splits_as_jax_random_splits_it(key):
    kf, kn, streams = split_run_key(key)
    ref = jax.random.split(key, 6)

    def data(k):
        return np.asarray(jax.random.key_data(k) if jax.dtypes.issubdtype(k.dtype, jax.dtypes.prng_key) else k)

    np.testing.assert_array_equal(data(kf), data(ref[0]))
    np.testing.assert_array_equal(data(kn), data(ref[1]))
    np.testing.assert_array_equal(data(streams), data(ref[2:]))


def test_the_scheme_compiles_no_threefry_primitive():
    """JAX's Threefry lowers to a loop that a CPU compiles slowly; the scheme's hashes are
    written out (the per-seed streams of a sweep and a block of each)."""
    keys = jax.random.split(jax.random.key(0), 8)

    def blocks(keys, b):
        streams = jax.vmap(lambda k: split_run_key(k)[2])(keys)
        return jax.vmap(jax.vmap(lambda s: block_keys(s, b)))(streams)

    lowered = jax.jit(blocks).lower(keys, jnp.int32(3)).as_text()
    assert "@threefry2x32" not in lowered and "stablehlo.while" not in lowered
    out = jax.jit(blocks)(keys, jnp.int32(3))
    assert out.shape == (8, 4, BLOCK)
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(out[5, 2])),
                                  _reference_block(jax.random.split(jax.random.split(jax.random.key(0), 8)[5], 6)[4], 3))

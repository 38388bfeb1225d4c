"""jcalib._threefry: the cipher, split and fold-in equal JAX's bit for bit (concrete keys on the
host, traced keys in the graph, under jit and vmap), other keys and settings go to jax.random,
and neither a concrete split nor a traced one compiles JAX's own Threefry."""

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import count_compilations

from jcalib._threefry import fold_in, split, split_into, threefry2x32


def _data(keys):
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(keys))
    return np.asarray(keys)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(_data(a), _data(b))


KEYS = {
    "typed": lambda s: jax.random.key(s),
    "raw": lambda s: jax.random.PRNGKey(s),
}


def _compiles(run):
    with count_compilations() as c:
        jax.block_until_ready(run())
    return c.n


@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax"])
def test_cipher_is_jax_threefry(xp):
    rng = np.random.default_rng(0)
    key = rng.integers(0, 2**32, 2, dtype=np.uint32)
    x = rng.integers(0, 2**32, 2000, dtype=np.uint32)
    a, b = threefry2x32(*(xp.asarray(v) for v in (key[0], key[1], x[:1000], x[1000:])))
    assert isinstance(a, np.ndarray) == (xp is np)
    ref = jax.extend.random.threefry_2x32(jnp.asarray(key), jnp.asarray(x))
    np.testing.assert_array_equal(np.concatenate([a, b]), np.asarray(ref))


@pytest.mark.parametrize("kind", KEYS)
@pytest.mark.parametrize("seed", [0, 7, 2**31 + 3])
def test_split_and_fold_in_are_jax_s(kind, seed):
    key = KEYS[kind](seed)
    for num in (1, 2, 6, 1000):
        _same(split(key, num), jax.random.split(key, num))
        _same(jax.jit(split, static_argnums=1)(key, num), jax.random.split(key, num))
    for data in (0, 3, 2**32 - 1, np.uint32(5), np.int32(-3), np.int64(2**40 + 9), jnp.int32(11)):
        _same(fold_in(key, data), jax.random.fold_in(key, data))
    js = jnp.arange(-3, 60, dtype=jnp.int32)
    _same(jax.vmap(lambda j: fold_in(key, j))(js), jax.vmap(lambda j: jax.random.fold_in(key, j))(js))
    _same(jax.vmap(lambda k: split(k, 3))(jax.random.split(key, 4)),
          jax.vmap(lambda k: jax.random.split(k, 3))(jax.random.split(key, 4)))


def test_other_keys_and_settings_go_to_jax_random():
    rbg = jax.random.key(3, impl="rbg")
    _same(split(rbg, 5), jax.random.split(rbg, 5))
    _same(fold_in(rbg, 9), jax.random.fold_in(rbg, 9))
    key = jax.random.key(3)
    default = split(key, 5)
    with jax.threefry_partitionable(False):  # JAX's older split draws other keys
        _same(split(key, 5), jax.random.split(key, 5))
        assert not np.array_equal(_data(split(key, 5)), _data(default))
    with pytest.raises(ValueError, match="single key"):  # jax.random's own error for a batch
        split(jax.random.split(key, 3))
    with pytest.raises(OverflowError):  # as jax.random.fold_in: data are uint32
        fold_in(key, -1)


def test_concrete_keys_split_on_the_host_and_traced_ones_without_jax_cipher():
    key = jax.random.key(12)
    jax.block_until_ready(key)
    assert _compiles(lambda: split(key, 17)) == 0
    assert _compiles(lambda: fold_in(key, 4)) == 0
    ours = jax.jit(lambda k, j: (split(k, 8), fold_in(k, j))).lower(key, jnp.int32(2)).as_text()
    jaxs = jax.jit(lambda k: jax.random.split(k, 8)).lower(key).as_text()
    assert "@threefry2x32" in jaxs and "stablehlo.while" in jaxs  # JAX's cipher: a function, a loop
    assert "@threefry2x32" not in ours and "stablehlo.while" not in ours


@pytest.mark.parametrize("kind", KEYS)
def test_split_into_is_the_split_s_rows_without_compiling(kind):
    key = KEYS[kind](5)
    jax.block_until_ready(key)
    parts = []
    assert _compiles(lambda: parts.extend(split_into(key, 3))) == 0
    ref = jax.random.split(key, 3)
    for i, k in enumerate(parts):
        _same(k, ref[i])
    traced = jax.jit(lambda k: split_into(k, 3))(key)
    for i, k in enumerate(traced):
        _same(k, ref[i])

"""A sweep's seeds: seed s runs jax.random.split(key, n_seeds)[s] whatever the key's kind, and a
concrete threefry key is split on the host, without compiling a program."""

import jax
import numpy as np
import pytest
from conformance import count_compilations

from jcalib.core.sharding import shard_seeds, split_keys


def _data(k):
    return np.asarray(jax.random.key_data(k) if jax.dtypes.issubdtype(k.dtype, jax.dtypes.prng_key) else k)


@pytest.mark.parametrize("make", [lambda: jax.random.key(9), lambda: jax.random.PRNGKey(9),
                                  lambda: jax.random.key(9, impl="rbg")], ids=["typed", "raw", "rbg"])
@pytest.mark.parametrize("n_seeds", [1, 3, 64])
def test_seed_s_runs_the_s_th_key_of_jax_split(make, n_seeds):
    key = make()
    shard = shard_seeds(key, n_seeds)
    assert (shard.n_local, shard.n_proc, shard.proc) == (n_seeds, 1, 0)  # one process, one device
    ref = jax.random.split(key, n_seeds)
    assert shard.keys.dtype == ref.dtype and shard.keys.shape == ref.shape
    np.testing.assert_array_equal(_data(shard.keys), _data(ref))


def test_a_concrete_key_splits_without_compiling():
    key = jax.random.key(21)
    jax.block_until_ready(key)
    with count_compilations() as c:
        jax.block_until_ready(shard_seeds(key, 37).keys)
    assert c.n == 0


def test_split_keys_pads_with_the_first_key():
    keys = jax.random.split(jax.random.key(2), 5)
    parts = split_keys(keys, 2)
    assert [p.shape for p in parts] == [(3,), (3,)]
    np.testing.assert_array_equal(_data(parts[1][2]), _data(keys[0]))
    np.testing.assert_array_equal(_data(parts[0]), _data(keys[:3]))

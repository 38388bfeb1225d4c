"""jcalib._threefry: the cipher, split and fold-in equal JAX's bit for bit (concrete keys on the
host, traced keys in the graph, under jit and vmap), other keys and settings go to jax.random,
and neither a concrete split nor a traced one compiles JAX's own Threefry; JAX's own Threefry is
unrolled on a CPU (jcalib's import) and keeps every bit."""

import os
import subprocess
import sys

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import count_compilations

from jcalib import _threefry
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
    # neither JAX's cipher (a function of its own) nor a loop (its CPU lowering, when rolled)
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


# draws of every kind JAX builds on its Threefry's bits (widths 8 to 64, floats, integers,
# permutations, keys), also under vmap over keys, hashed
_DRAWS = """
import hashlib, jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import jcalib
k = jax.random.key(7)
ks = jax.random.split(k, 3)
out = [jax.random.bits(k, (5, 3), d) for d in (jnp.uint8, jnp.uint16, jnp.uint32, jnp.uint64)]
out += [jax.random.uniform(k, (1000,)), jax.random.normal(k, (7, 3, 5), jnp.float64),
        jax.random.randint(k, (999,), 0, 17), jax.random.gumbel(k, (40, 2)), jax.random.permutation(k, 100),
        jax.random.bernoulli(k, 0.3, (64,)), jax.random.key_data(jax.random.split(k, 5)),
        jax.jit(jax.vmap(lambda q: jax.random.normal(q, (4,))))(ks)]
print(hashlib.sha256(b"".join(np.asarray(o).tobytes() for o in out)).hexdigest())
lowered = jax.jit(lambda q: jax.random.uniform(q, (8,))).lower(k).as_text()
print("while" in lowered)
"""


def _draws(threefry_cpu):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", _threefry.THREEFRY_CPU_ENV: threefry_cpu}
    out = subprocess.run([sys.executable, "-c", _DRAWS], env=env, capture_output=True, text=True, check=True)
    digest, has_loop = out.stdout.split()
    return digest, has_loop == "True"


def test_jax_threefry_is_unrolled_on_cpu_and_every_draw_keeps_its_bits():
    """Importing jcalib lowers JAX's Threefry without its rolled loop on a CPU (unless
    ``JCALIB_THREEFRY_CPU=rolled``); draws of every kind are the same bytes either way."""
    unrolled, rolled = _draws("unrolled"), _draws("rolled")
    if rolled[1]:  # this JAX lowers its Threefry by a rolled loop on a CPU: jcalib unrolls it
        assert not unrolled[1]
    assert unrolled[0] == rolled[0]
    assert not _threefry.unroll_jax_threefry_on_cpu()  # done once, at import

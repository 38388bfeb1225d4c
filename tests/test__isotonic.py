"""Tests of jcalib._isotonic: the batched PAV on units' sums (``pav_block_sums``) against the
library's one-at-a-time PAV, with integer and real sums, units of weight 0 (leading ones
included) and every cut of the array exercised; its exact 64-bit comparison of products; jit
without retracing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import count_compilations

from jcalib._isotonic import mul_wide, pav_block_sums, products_ge
from jcalib.recalibration import pav


def _brier_value(w, wy):
    # Y (1 - r)^2 + (W - Y) r^2 = Y - Y^2 / W for a block of mean r = Y / W; 0 for weight 0
    w, wy = w.astype(jnp.float64), wy.astype(jnp.float64)
    return jnp.where(w > 0, wy - wy * wy / jnp.where(w > 0, w, 1), 0)


def _expected(w, wy):
    w, wy = np.asarray(w, np.float64), np.asarray(wy, np.float64)
    if not w.any():
        return 0.0
    fit = np.asarray(pav(jnp.asarray(np.where(w > 0, wy / np.maximum(w, 1e-300), 0)), jnp.asarray(w)))
    return float(np.sum(np.where(w > 0, wy * (1 - fit) ** 2 + (w - wy) * fit**2, 0)))


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("u,min_size", [(1, 64), (7, 64), (200, 8), (200, 64), (1000, 16)])
def test_block_sums_match_the_library_pav(x64, integer, u, min_size):
    rng = np.random.default_rng(u + min_size)
    w = rng.integers(0, 4, (6, u))
    w[1, : u // 3] = 0  # leading units of weight 0
    w[2] = 0
    w[2, -1] = 2  # one unit of weight, last
    wy = rng.binomial(w, rng.uniform(size=(6, u)) ** 0.5)
    if integer:
        W, Y = jnp.asarray(w, jnp.int32), jnp.asarray(wy, jnp.int32)
    else:  # real weights: the same problems scaled by 0.37
        W, Y = jnp.asarray(0.37 * w), jnp.asarray(0.37 * wy)
    got = pav_block_sums(W, Y, _brier_value, min_size=min_size)
    for b in range(6):
        scale = 1.0 if integer else 0.37
        assert float(got[b]) == pytest.approx(scale * _expected(w[b], wy[b]), abs=1e-9)  # float64 rounding


def test_products_compared_exactly_in_32_bits():
    # 64-bit products from 16-bit limbs when jax_enable_x64 is off: ties and near-ties of
    # products far above float32's 2^24
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.integers(0, 2**31, 2000) for _ in range(4))
    c[:500], d[:500] = b[:500], a[:500]  # ties: a b = b a
    d[500:1000] = (a[500:1000] * b[500:1000]) // np.maximum(c[500:1000], 1)  # c d just below or at a b
    c[500:1000] = np.maximum(c[500:1000], 1)
    ok = (d >= 0) & (d < 2**31)
    a, b, c, d = a[ok], b[ok], c[ok], d[ok]
    got = products_ge(*(jnp.asarray(v, jnp.int32) for v in (a, b, c, d)))
    expected = np.array([int(x) * int(y) >= int(z) * int(t) for x, y, z, t in zip(a, b, c, d)])
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_wide_products_of_any_32_bit_words():
    # the carries of the limbs' middle sum and of the low word, up to (2^32 - 1)^2
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.integers(0, 2**32, 3000, dtype=np.uint64), np.array([2**32 - 1, 131071, 0], np.uint64)])
    b = np.concatenate([rng.integers(0, 2**32, 3000, dtype=np.uint64), np.array([2**32 - 1, 2**32 - 1, 5], np.uint64)])
    a[:1000] |= np.uint64(0xFFFF)  # limbs at their largest: the middle sum overflows 32 bits
    b[:1000] |= np.uint64(0xFFFF0000)
    hi, lo = mul_wide(jnp.asarray(a.astype(np.uint32)), jnp.asarray(b.astype(np.uint32)))
    got = [(int(h) << 32) | int(x) for h, x in zip(np.asarray(hi), np.asarray(lo))]
    assert got == [int(x) * int(y) for x, y in zip(a, b)]


def test_jit_without_retracing():
    rng = np.random.default_rng(1)
    w = jnp.asarray(rng.integers(1, 3, (4, 50)), jnp.int32)
    wy = jnp.asarray(rng.integers(0, 2, (4, 50)), jnp.int32)

    def value(bw, by):
        bw, by = bw.astype(jnp.float32), by.astype(jnp.float32)
        return jnp.where(bw > 0, by - by * by / jnp.maximum(bw, 1), 0)
    f = jax.jit(lambda a, b: pav_block_sums(a, b, value))
    f(w, wy)
    w2, wy2 = jax.block_until_ready((w[::-1], wy[::-1]))
    with count_compilations() as c:
        f(w2, wy2)
    assert c.n == 0

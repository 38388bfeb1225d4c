"""Streaming binned and smooth ECE: folding chunks gives the one-shot metric (float64
round-off), in any chunking and order, with weights; the smooth accumulator equals the
one-shot smooth ECE of the grid-rounded data (NumPy reference split), and the one-shot smooth
ECE itself when the forecasts lie on the grid; compensated sums keep float32 state exact past
2^24 rounds; conformance (jit, vmap, scan, no retrace) and input errors."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import stats as ref

from jcalib.metrics import StreamingBinnedECE, StreamingSmoothECE, binned_ece, smooth_ece
from jcalib.metrics import streaming as module


def _data(seed, n):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return p, (rng.random(n) < p**1.2).astype(np.int32), rng.random(n) + 0.1


def _fold(acc, p, y, w=None, cuts=(0, 1000, 1001, 4321, 10_000)):
    s = acc.init()
    cuts = sorted({min(c, len(p)) for c in cuts} | {len(p)})
    for a, b in zip(cuts[:-1], cuts[1:]):
        if b > a:
            s = acc.step(s, p[a:b], y[a:b], sample_weight=None if w is None else w[a:b])
    return s


@pytest.mark.parametrize("p_exp", [1, 2])
def test_binned_equals_one_shot(x64, p_exp):
    p, y, w = _data(0, 12_000)
    acc = StreamingBinnedECE(n_bins=12, order=p_exp)
    for weights in (None, w):
        got = float(acc.finalise(_fold(acc, p, y, weights)))
        want = float(binned_ece(p, y, n_bins=12, sample_weight=weights, order=p_exp))
        assert got == pytest.approx(want, rel=1e-12)
    order = np.random.default_rng(1).permutation(12_000)  # order of arrival does not matter
    assert float(acc.finalise(_fold(acc, p[order], y[order]))) == pytest.approx(float(binned_ece(p, y, n_bins=12, order=p_exp)), rel=1e-12)


def test_smooth_equals_one_shot_on_the_grid(x64):
    G = 1001
    p, y, w = _data(2, 6000)
    pg = np.round(p * (G - 1)) / (G - 1)  # forecasts on the accumulator's grid
    acc = StreamingSmoothECE(n_grid=G)
    for weights in (None, w):
        got, sig = acc.finalise(_fold(acc, pg, y, weights), return_bandwidth=True)
        want, wsig = smooth_ece(pg, y, sample_weight=weights, return_bandwidth=True)
        assert float(sig) == float(wsig)
        assert float(got) == pytest.approx(float(want), rel=1e-10)


def test_smooth_equals_one_shot_of_the_grid_rounded_data(x64):
    G = 257
    p, y, w = _data(3, 3000)
    acc = StreamingSmoothECE(n_grid=G)
    got = float(acc.finalise(_fold(acc, p, y, w, cuts=(0, 1000, 2000))))
    gp, gy, gw = ref.grid_split(p, y, w, G)  # each mass split linearly, by an explicit loop
    assert got == pytest.approx(float(smooth_ece(gp, gy.astype(np.int32), sample_weight=gw)), rel=1e-10)
    # and the rounding moves the default-grid value little from the raw-data value
    fine = StreamingSmoothECE()
    assert abs(float(fine.finalise(_fold(fine, p, y, w))) - float(smooth_ece(p, y, sample_weight=w))) < 1e-4


def test_float32_state_counts_past_2_to_the_24():
    # 2^25 + 3 unit-weight rounds, fed as 8193 chunks of 4096 identical forecasts, in float32:
    # uncompensated float32 sums stop at 2^24; the compensated state keeps every round
    acc = StreamingBinnedECE(n_bins=2)
    p = jnp.full((4096,), 0.25, jnp.float32)
    y = jnp.zeros((4096,), jnp.int32)

    def body(s, _):
        return acc.step(s, p, y), None

    s, _ = jax.lax.scan(body, acc.init(jnp.float32), None, length=8193)
    s = acc.step(s, p[:3], y[:3])
    total = float(s.totals[0, 0]) + float(s.compensation[0, 0])
    assert total == 8193 * 4096 + 3
    assert float(acc.finalise(s)) == pytest.approx(0.25, rel=1e-6)


def test_conformance():
    acc = StreamingSmoothECE(n_grid=65)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(s, p, y):
        return acc.step(s, p, y)

    s = acc.init()
    for seed in range(3):
        p, y, _ = _data(seed, 128)
        s = step(s, jnp.asarray(p, jnp.float32), jnp.asarray(y))
    assert jnp.isfinite(acc.finalise(s))
    bacc = StreamingBinnedECE(n_bins=5)
    P = jax.random.uniform(jax.random.key(0), (4, 100))
    Y = (P > 0.5).astype(jnp.int32)
    states = jax.vmap(lambda p, y: bacc.step(bacc.init(), p, y))(P, Y)
    assert jax.vmap(bacc.finalise)(states).shape == (4,)


def test_bad_inputs():
    with pytest.raises(ValueError, match="n_bins"):
        StreamingBinnedECE(n_bins=0)
    with pytest.raises(ValueError, match="order must"):
        StreamingBinnedECE(order=0.5)
    with pytest.raises(ValueError, match="n_grid"):
        StreamingSmoothECE(n_grid=1)
    acc = StreamingBinnedECE()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        acc.step(acc.init(), np.array([1.5]), np.array([1]))
    sm = StreamingSmoothECE(n_grid=11)
    with pytest.raises(ValueError, match="sums to zero"):
        sm.finalise(sm.init())  # nothing folded in yet


def test_docstring_examples():
    assert doctest.testmod(module, raise_on_error=True).attempted > 0

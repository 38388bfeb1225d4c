"""Adaptive natures: the contrarian's rule, the max-calibration-error adversary's greedy choice
against a brute-force computation, and the random mixture's modes."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.forecasters import ece

import jcalib
from jcalib.core import Forecast, Mixture
from jcalib.forecasters import AlmostOneStepAhead, Constant
from jcalib.natures import Contrarian, MaxCalibrationError, RandomMixture
from jcalib.natures.adaptive import BiasState

KEY = jax.random.key(0)


@pytest.mark.parametrize(
    "public,y",
    [
        (jnp.float32(0.3), 1),
        (jnp.float32(0.5), 0),
        (jnp.float32(0.7), 0),
        (Mixture(jnp.array([0.4, 0.7]), jnp.array([0.5, 0.5])), 0),
        (Mixture(jnp.array([0.2, 0.7]), jnp.array([0.5, 0.5])), 1),
    ],
)
def test_contrarian_rule(public, y):
    assert int(Contrarian().outcome(Contrarian().init(KEY), None, public, KEY)) == y


def brute_force_choice(bias, support, probs, n):
    """argmax_y of E[sum_k |b_k|] after the round, by explicit bucketing (ties -> 0)."""
    vals = []
    for y in (0, 1):
        total = 0.0
        for s, w in zip(support, probs):
            b = np.array(bias, float)
            b[int(np.clip(np.round(s * n), 0, n))] += s - y
            total += w * np.abs(b).sum()
        vals.append(total)
    return int(vals[1] > vals[0] + 1e-12), vals


def test_max_error_choice_matches_brute_force(x64):
    rng = np.random.default_rng(0)
    n = 6
    nat = MaxCalibrationError(n_bins=n)
    for _ in range(200):
        bias = rng.normal(scale=0.7, size=n + 1)
        k = rng.integers(1, 4)
        support = rng.choice(np.arange(n + 1) / n, size=k) if rng.random() < 0.5 else rng.uniform(0, 1, k)
        probs = rng.dirichlet(np.ones(k))
        want, vals = brute_force_choice(bias, support, probs, n)
        if abs(vals[1] - vals[0]) < 1e-9:
            continue  # a tie: either answer maximises
        public = Mixture(jnp.asarray(support), jnp.asarray(probs))
        assert int(nat.outcome(BiasState(jnp.asarray(bias)), None, public, KEY)) == want


def test_max_error_bookkeeping_is_the_ece_of_a_grid_forecaster(x64):
    m, T = 8, 200
    f, nat = AlmostOneStepAhead(n_bins=m), MaxCalibrationError(n_bins=m)

    def step(carry, t):
        fs, ns = carry
        fc = f.predict(fs, None, KEY)
        y = nat.outcome(ns, None, fc.public, KEY)
        return (f.update(fs, None, fc, y), nat.update(ns, None, fc, y, KEY)), (fc.value, y)

    (_, ns), (p, y) = jax.lax.scan(step, (f.init(KEY), nat.init(KEY)), jnp.arange(T))
    assert float(jnp.sum(jnp.abs(ns.bias))) == pytest.approx(ece(np.asarray(p), np.asarray(y)), abs=1e-9)
    # and the greedy adversary does hurt AOSA's ECE (not its distance to calibration)
    assert ece(np.asarray(p), np.asarray(y)) > 0.3 * T


def test_max_error_sees_only_the_mixture_not_the_draw():
    nat = MaxCalibrationError(n_bins=4)
    state = nat.init(KEY)
    mix = Mixture(jnp.array([0.25, 0.5]), jnp.array([0.3, 0.7]))
    y = nat.outcome(state, None, mix, KEY)
    # the update uses the realised value, whichever it was
    for v in (0.25, 0.5):
        s = nat.update(state, None, Forecast(jnp.float32(v), mix), y, KEY)
        assert float(s.bias[int(round(v * 4))]) == pytest.approx(v - float(y))


@pytest.mark.parametrize(
    "kw",
    [
        dict(contrarian=-1.0),
        dict(contrarian=0.0, max_error=0.0, bernoulli=0.0),
        dict(bernoulli=np.nan),
        dict(rate=1.5),
        dict(n_bins=0),
    ],
)
def test_random_mixture_bad_settings_raise(kw):
    with pytest.raises(ValueError):
        RandomMixture(**kw)


def test_max_error_bad_n_bins_raises():
    with pytest.raises(ValueError):
        MaxCalibrationError(n_bins=0)


@pytest.mark.parametrize("which", ["contrarian", "max_error"])
def test_random_mixture_one_hot_is_the_pure_nature(which):
    T, m = 150, 10
    f = AlmostOneStepAhead(n_bins=m)
    pure = Contrarian() if which == "contrarian" else MaxCalibrationError(n_bins=m)
    weights = dict(contrarian=0.0, max_error=0.0, bernoulli=0.0)
    weights[which] = 1.0
    mixed = RandomMixture(**weights, n_bins=m)
    a = jcalib.core.play(f, pure, T, key=KEY)
    b = jcalib.core.play(f, mixed, T, key=jax.random.key(7))
    np.testing.assert_array_equal(np.asarray(a.y), np.asarray(b.y))


def test_random_mixture_mode_frequencies():
    # against the constant 1/2 the contrarian says 0 and Bernoulli(1) says 1, so P(y = 1) is the
    # Bernoulli weight's share; the zero-weight max-error mode is never drawn
    nat = RandomMixture(contrarian=1.0, max_error=0.0, bernoulli=3.0, rate=1.0, n_bins=4)
    y = np.asarray(jcalib.core.sweep(Constant(0.5), nat, 250, key=KEY, n_seeds=16).y)
    assert abs(y.mean() - 0.75) <= 5 * np.sqrt(0.75 * 0.25 / y.size)


def test_adaptive_natures_accept_point_and_mixture_forecasts():
    for nat, public in itertools.product(
        [Contrarian(), MaxCalibrationError(5), RandomMixture(n_bins=5)],
        [jnp.float32(0.4), Mixture(jnp.array([0.2, 0.4]), jnp.array([0.5, 0.5]))],
    ):
        y = nat.outcome(nat.init(KEY), None, public, KEY)
        assert y.dtype == jnp.int32 and y.shape == () and int(y) in (0, 1)

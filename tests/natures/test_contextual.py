"""Model natures: the context is the model's forecast q_t, the outcome follows the truth p*_t,
and the calibrated recalibration map is the one each docstring states."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.forecasters import Constant
from jcalib.natures import DistortedModel, DriftingModel, TwoLevelModel

KEY = jax.random.key(0)


def within(freq, p, n, sds=4.0):
    """A frequency of n Bernoulli(p) draws lies within `sds` standard deviations of p."""
    return abs(freq - p) <= sds * np.sqrt(p * (1 - p) / n) + 1e-12


def play_many(nature, T=4000, seeds=8):
    out = jcalib.core.sweep(Constant(0.5), nature, T, key=KEY, n_seeds=seeds)
    return np.asarray(out.x).ravel(), np.asarray(out.y).ravel()


def test_two_level_model_truth_behind_each_forecast():
    x, y = play_many(TwoLevelModel())
    np.testing.assert_allclose(np.unique(x), [0.2, 0.8], rtol=1e-6)
    lo, hi = y[np.isclose(x, 0.2)], y[np.isclose(x, 0.8)]
    assert within(lo.mean(), 0.35, lo.size) and within(hi.mean(), 0.65, hi.size)
    assert within(np.isclose(x, 0.8).mean(), 0.5, x.size)


@pytest.mark.parametrize("slope, shift", [(2.0, 0.0), (0.5, 0.7)])
def test_distorted_model_is_calibrated_after_inverting_g(slope, shift):
    nat = DistortedModel(slope, shift)
    x, y = play_many(nat)
    p_star = jax.nn.sigmoid((jnp.log(x) - jnp.log1p(-x) - shift) / slope)  # g^{-1}(q)
    p_star = np.asarray(p_star)
    for lo in np.arange(0.1, 0.9, 0.2):
        sel = (p_star >= lo) & (p_star < lo + 0.2)
        assert within(y[sel].mean(), p_star[sel].mean(), sel.sum())
    # and the model itself is miscalibrated: in its top decile it overstates (slope > 1)
    top = x > np.quantile(x, 0.9)
    gap = x[top].mean() - y[top].mean()
    assert (gap > 0.03) if slope > 1 else True


def test_drifting_model_bias_moves():
    nat = DriftingModel(-1.5, 1.5, 1000.0)
    out = jcalib.core.sweep(Constant(0.5), nat, 2000, key=KEY, n_seeds=16)
    x, y = np.asarray(out.x)[0], np.asarray(out.y)[0]  # axes (nature, seed, round)
    early, late = (x[:, :300] - y[:, :300]).mean(), (x[:, 1000:] - y[:, 1000:]).mean()
    assert early < -0.1 and late > 0.1  # under- then over-forecasting
    np.testing.assert_allclose(float(nat.bias(jnp.int32(500))), 0.0, atol=1e-6)


def test_context_and_outcome_see_the_same_latent():
    """A latent drawn in update() serves the next round's context and outcome alike: with
    truth rates 0 and 1 the outcome is a deterministic function of the context."""
    nat = TwoLevelModel(0.3, 0.7, 0.0, 1.0)
    x, y = play_many(nat, T=500, seeds=2)
    np.testing.assert_array_equal(y, (x > 0.5).astype(np.int32))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: TwoLevelModel(says_low=1.2), "says_low"),
        (lambda: DistortedModel(slope=0.0), "slope"),
        (lambda: DistortedModel(low=0.6, high=0.4), "low < high"),
        (lambda: DistortedModel(shift=float("nan")), "shift"),
        (lambda: DriftingModel(horizon=-1.0), "horizon"),
        (lambda: DriftingModel(start=float("inf")), "start"),
    ],
)
def test_bad_settings_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()

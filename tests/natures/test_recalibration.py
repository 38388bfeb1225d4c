"""The recalibration adversary: sees the published mixture (not the draw), picks the outcome that
hurts calibration or regret most, keeps its bias exactly; conformance."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import check_nature

import jcalib
from jcalib.core import Forecast, Mixture
from jcalib.forecasters import ApproachabilityRecalibrator, Constant
from jcalib.natures import RecalibrationAdversary


def _public(s, w):
    return Mixture(support=jnp.asarray(s, jnp.float32), probs=jnp.asarray(w, jnp.float32))


def test_regret_adversary_picks_the_outcome_the_model_predicts_better():
    nat = RecalibrationAdversary(4, alpha=0.0)
    st = nat.init(jax.random.key(0))
    # forecaster says 0.5, the model says 0.9: y = 0 costs the forecaster 0.25 vs the model 0.81
    assert int(nat.outcome(st, jnp.float32(0.9), _public([0.5, 0.75], [1.0, 0.0]), jax.random.key(1))) == 1
    assert int(nat.outcome(st, jnp.float32(0.1), _public([0.5, 0.75], [1.0, 0.0]), jax.random.key(1))) == 0


def test_calibration_adversary_grows_the_bias():
    nat = RecalibrationAdversary(4, alpha=1.0)
    st = nat.init(jax.random.key(0))
    st = st._replace(bias=st.bias.at[2].set(0.3))  # bucket 0.5 already over-forecasts
    # pushing y = 0 on a forecast of 0.5 adds 0.5 to an already positive bias
    assert int(nat.outcome(st, jnp.float32(0.5), _public([0.5, 0.75], [1.0, 0.0]), jax.random.key(1))) == 0
    st = st._replace(bias=st.bias.at[2].set(-0.3))
    assert int(nat.outcome(st, jnp.float32(0.5), _public([0.5, 0.75], [1.0, 0.0]), jax.random.key(1))) == 1


def test_bias_is_the_negated_expected_calibration_vector():
    T, m = 500, 6
    f = ApproachabilityRecalibrator(n_bins=m, step_size=0.2)
    nat = RecalibrationAdversary(m, alpha=0.7, low=0.2, high=0.9)
    traj = jcalib.core.play(f, nat, T, key=jax.random.key(0), record=jcalib.recorders.History(mixtures=True))
    sup, w, y = np.asarray(traj.public.support), np.asarray(traj.public.probs), np.asarray(traj.y)
    bias = np.zeros(m + 1)
    np.add.at(bias, np.rint(sup * m).astype(int).ravel(), (w * (sup - y[:, None])).ravel())
    # replay the nature's own state update over the recorded rounds
    st = nat.init(jax.random.key(0))
    for t in range(T):
        st = nat.update(st, traj.x[t], Forecast(traj.forecast[t], Mixture(traj.public.support[t], traj.public.probs[t])), traj.y[t], jax.random.key(0))
    np.testing.assert_allclose(np.asarray(st.bias), bias, atol=1e-4)  # float32 sums of 500 terms
    assert np.all((traj.x >= 0.2) & (traj.x <= 0.9))


def test_calibration_adversary_drives_a_constant_forecaster_to_error_one_half():
    """Against a point mass at 0.5 every outcome moves the bucket's bias by 0.5 away from the
    side it is on: the adversary keeps the sign (ties: y = 0), so y = 0 throughout and the
    calibration error is 0.5, the most a forecast of 0.5 can have."""
    T = 2000
    s = jcalib.core.sweep(Constant(0.5), [RecalibrationAdversary(10, alpha=1.0)], T, key=jax.random.key(0))
    assert float(jnp.mean(s.y)) == 0.0


def test_conformance():
    f = ApproachabilityRecalibrator.for_horizon(500)
    check_nature((RecalibrationAdversary(f.n_bins, alpha=0.2), RecalibrationAdversary(f.n_bins, alpha=0.9, low=0.1, high=0.6)), Constant(0.3), other_forecaster=f)


def test_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        RecalibrationAdversary(4, alpha=1.5)
    with pytest.raises(ValueError, match="n_bins"):
        RecalibrationAdversary(0)
    with pytest.raises(ValueError, match="low <= high"):
        RecalibrationAdversary(4, low=0.8, high=0.2)

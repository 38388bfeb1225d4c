"""Lee et al.'s multi-objective MW (Okoroafor et al. 2024, §6): closed form vs the paper's dynamic
programme and brute force, parity with a NumPy run, the MW guarantee on adaptive natures,
conformance."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import check_forecaster
from reference.recalibration import brier, lee_run, lee_weights_brute, lee_weights_dp

import jcalib
from jcalib.forecasters import LeeMultiObjectiveMW, lee_weights
from jcalib.natures import DistortedModel, RecalibrationAdversary, TwoLevelModel
from jcalib.recorders import RecalibrationCounts
from jcalib.scoring import LogScore


@pytest.mark.parametrize("m", [1, 3, 6])
def test_closed_form_matches_dp_and_brute_force(m, x64):
    rng = np.random.default_rng(m)
    for _ in range(20):
        U = rng.normal(0, 3, m + 1)
        Ureg = rng.normal(0, 3)
        eta = rng.uniform(0.05, 1.0)
        th, lam = lee_weights(jnp.asarray(U), Ureg, eta)
        th_dp, lam_dp = lee_weights_dp(U, Ureg, eta)
        th_b, lam_b = lee_weights_brute(U, Ureg, eta)
        np.testing.assert_allclose(th_dp, th_b, rtol=1e-10)
        np.testing.assert_allclose(lam_dp, lam_b, rtol=1e-10)
        np.testing.assert_allclose(np.asarray(th), th_dp, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(float(lam), lam_dp, rtol=1e-10)


def test_log_space_does_not_overflow():
    """Large cumulative losses: a direct product of 2cosh overflows float32, the log form does not."""
    U = jnp.full((200,), 50.0)
    th, lam = lee_weights(U, 30.0, 1.0)
    assert bool(jnp.all(jnp.isfinite(th))) and bool(jnp.isfinite(lam)) and float(lam) >= 0


def test_parity_with_numpy_reference(x64):
    f = LeeMultiObjectiveMW(n_bins=6, learning_rate=0.2)
    traj = jcalib.core.play(f, DistortedModel(slope=2.5, shift=0.5), 300, key=jax.random.key(2), record=jcalib.recorders.History(mixtures=True))
    idx, w = lee_run(np.asarray(traj.x), np.asarray(traj.y), 6, 0.2, brier, 2.0)
    sup = np.asarray(traj.public.support)
    np.testing.assert_array_equal(np.rint(sup[:, 0] * 6).astype(int), idx)
    np.testing.assert_allclose(np.asarray(traj.public.probs)[:, 0], w, atol=1e-9)


def test_mw_guarantee_on_adaptive_and_oblivious_natures():
    """Both calibration (l1, grid, in expectation) and regret are at most
    ln d/(eta T) + eps/2 + eta C^2 (the MW potential argument with the oracle's value <= eps/2)."""
    T = 2000
    f = LeeMultiObjectiveMW.for_horizon(T)
    m, eta, C = f.n_bins, f.learning_rate, 2.0
    natures = [RecalibrationAdversary(m, alpha=a) for a in (0.0, 0.5, 1.0)]
    s = jcalib.core.sweep(f, natures, T, key=jax.random.key(0), n_seeds=2, record=RecalibrationCounts(m))
    cal = np.asarray(jax.vmap(jax.vmap(lambda z: z.calibration()))(s))
    reg = np.asarray(jax.vmap(jax.vmap(lambda z: z.regret()))(s))
    ln_d = (m + 1) * math.log(2) + math.log1p(2.0 ** -(m + 1))
    bound = ln_d / (eta * T) + 0.5 / m + eta * C**2
    assert cal.max() <= bound, (cal, bound)
    assert reg.max() <= bound, (reg, bound)
    # the adversary is not toothless: the pure-calibration one keeps calibration error positive
    assert cal[2].min() > 0.01


def test_conformance():
    f = LeeMultiObjectiveMW.for_horizon(1000)
    check_forecaster((f, LeeMultiObjectiveMW(n_bins=f.n_bins, learning_rate=0.3)), TwoLevelModel())


def test_bad_input():
    with pytest.raises(ValueError, match="n_bins"):
        LeeMultiObjectiveMW(n_bins=0, learning_rate=0.1)
    with pytest.raises(ValueError, match="learning_rate"):
        LeeMultiObjectiveMW(n_bins=3, learning_rate=0.0)
    with pytest.raises(ValueError, match="Lipschitz"):
        LeeMultiObjectiveMW(n_bins=3, learning_rate=0.1, scoring=LogScore())
    f = LeeMultiObjectiveMW(n_bins=3, learning_rate=0.1)
    with pytest.raises(Exception, match="probability in"):
        jax.block_until_ready(jax.jit(f.predict)(f.init(jax.random.key(0)), jnp.asarray(float("nan")), jax.random.key(1)))


def test_lee_weights_checks_its_inputs():
    from jcalib.forecasters import lee_weights

    assert float(lee_weights(jnp.zeros(3), np.float32(0.0), np.float64(1.0))[1]) == pytest.approx(0.125)
    for args, match in (((jnp.zeros(3), float("nan"), 1.0), "U_reg must be finite"), ((jnp.zeros(3), 0.0, "a"), "eta must be a real scalar"),
                        ((jnp.array([0.0, np.nan]), 0.0, 1.0), "U contains NaN"), ((jnp.zeros(3), 0.0, -1.0), "eta must be finite")):
        with pytest.raises(ValueError, match=match):
            lee_weights(*args)

"""Paper 001's approachability recalibrator: oracle validity (LP), evaluation count, parity with
a NumPy reference, rates, and bad input."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import check_forecaster
from reference.recalibration import approachability_run, oracle, spherical, brier, worst_payoff
from scipy.optimize import linprog

import jcalib
from jcalib.forecasters import ApproachabilityRecalibrator, halfspace_oracle, tradeoff_parameters
from jcalib.forecasters.approachability import oracle_eval_bound
from jcalib.natures import DistortedModel, TwoLevelModel
from jcalib.recorders import RecalibrationCounts
from jcalib.scoring import Brier, LogScore, Spherical

RULES = {"brier": (Brier(), brier), "spherical": (Spherical(), spherical)}


def _instances(rng, m, n):
    theta = rng.uniform(-1, 1, (n, m + 1))
    # a third with entries pushed to the box's faces, where the bound is tightest
    theta[: n // 3] = np.sign(theta[: n // 3])
    lam = rng.uniform(0, 4, n)
    lam[n // 3 : n // 2] = 0.0  # lambda = 0: the Abernethy–Bartlett–Hazan calibration oracle
    q = rng.uniform(0, 1, n)
    q[-n // 5 :] = rng.integers(0, m + 1, n // 5) / m  # q on the grid
    return theta, lam, q


def _lp_value(theta, lam, q, m, s, L):
    """min over distributions w on the grid of max_y payoff, by linprog."""
    p = np.arange(m + 1) / m
    rows = [theta * (y - p) + lam * (np.array([s(pj, y) for pj in p]) - s(q, y)) / L for y in (0, 1)]
    A = np.hstack([np.array(rows), -np.ones((2, 1))])
    res = linprog(
        c=np.r_[np.zeros(m + 1), 1.0],
        A_ub=A,
        b_ub=np.zeros(2),
        A_eq=np.r_[np.ones(m + 1), 0.0][None],
        b_eq=[1.0],
        bounds=[(0, None)] * (m + 1) + [(None, None)],
    )
    assert res.success
    return res.fun


@pytest.mark.parametrize("rule", ["brier", "spherical"])
@pytest.mark.parametrize("m", [1, 2, 3, 7, 16, 33, 100])
def test_oracle_validity_against_lp(rule, m, x64):
    rng = np.random.default_rng(m)
    scoring, s = RULES[rule]
    L = scoring.lipschitz
    n = 300
    theta, lam, q = _instances(rng, m, n)
    res = jax.jit(jax.vmap(lambda th, la, qq: halfspace_oracle(th, la, qq, m, scoring)))(theta, lam, q)
    idx, w, n_evals = np.asarray(res.index), np.asarray(res.prob), np.asarray(res.n_evals)
    eps = 1 / m
    worst = np.array([worst_payoff(theta[k], lam[k], q[k], m, s, L, idx[k], w[k]) for k in range(n)])
    tinf = np.abs(theta).max(axis=1)
    bound = eps / 2 * tinf + (lam * eps**2 / 4 if rule == "brier" else eps / 2 * lam)
    assert np.all(worst <= bound + 1e-9), float((worst - bound).max())
    assert np.all(n_evals <= oracle_eval_bound(m))
    # the bound is not vacuous: some instances come close to it
    assert (worst / np.maximum(bound, 1e-12)).max() > 0.5
    # the LP optimum is no larger than the oracle's value and also within the bound
    for k in range(0, n, 10):
        lp = _lp_value(theta[k], lam[k], q[k], m, s, L)
        assert lp <= worst[k] + 1e-8
        assert lp <= bound[k] + 1e-8


@pytest.mark.parametrize("m", [1, 5, 64, 1000])
def test_oracle_matches_reference_and_counts_evaluations(m, x64):
    """Same mixture and the same number of (f, g) evaluations as a plain bisection that counts
    every distinct grid point it evaluates."""
    rng = np.random.default_rng(1)
    theta, lam, q = _instances(rng, m, 200)
    res = jax.vmap(lambda th, la, qq: halfspace_oracle(th, la, qq, m))(theta, lam, q)
    for k in range(200):
        i, w, n = oracle(theta[k], lam[k], q[k], m, brier, 2.0)
        assert int(res.index[k]) == i
        np.testing.assert_allclose(float(res.prob[k]), w, atol=1e-12)
        assert int(res.n_evals[k]) == n <= 2 + math.ceil(math.log2(max(m, 1))) if m > 1 else n == 2


def test_oracle_mixture_makes_payoff_independent_of_y(x64):
    """In the mixing case the two outcomes' payoffs coincide (the paper's eqs 30–31)."""
    rng = np.random.default_rng(3)
    m = 20
    theta, lam, q = _instances(rng, m, 200)
    res = jax.vmap(lambda th, la, qq: halfspace_oracle(th, la, qq, m))(theta, lam, q)
    mixed = (np.asarray(res.prob) > 0) & (np.asarray(res.prob) < 1)
    assert mixed.sum() > 20
    for k in np.flatnonzero(mixed):
        i, w = int(res.index[k]), float(res.prob[k])
        pay = [sum(wj * (theta[k][j] * (y - j / m) + lam[k] * (brier(j / m, y) - brier(q[k], y)) / 2) for j, wj in ((i, w), (i + 1, 1 - w))) for y in (0, 1)]
        np.testing.assert_allclose(pay[0], pay[1], atol=1e-12)


@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("follow", [True, False])
def test_parity_with_numpy_reference(norm, follow, x64):
    T = 400
    f = ApproachabilityRecalibrator(n_bins=9, step_size=0.3, Lambda=2.0, eps=0.08, norm=norm, follow_oracle=follow)
    traj = jcalib.play(f, DistortedModel(slope=2.5, shift=0.5), T, jax.random.key(5), record=jcalib.core.History(mixtures=True))
    q, y = np.asarray(traj.x), np.asarray(traj.y)
    idx, w = approachability_run(q, y, 9, 0.3, 2.0, 0.08, brier, 2.0, norm=norm, follow=follow)
    sup = np.asarray(traj.public.support)
    np.testing.assert_array_equal(np.rint(sup[:, 0] * 9).astype(int), idx)
    np.testing.assert_allclose(np.asarray(traj.public.probs)[:, 0], w, atol=1e-9)
    # the realised value is a draw from the published mixture
    assert np.all((traj.forecast == sup[:, 0]) | (traj.forecast == sup[:, 1]))


def test_conformance():
    f = ApproachabilityRecalibrator.for_horizon(1000)
    g = ApproachabilityRecalibrator(n_bins=f.n_bins, step_size=0.05, Lambda=3.0, eps=0.2)
    check_forecaster((f, g), TwoLevelModel())
    h = ApproachabilityRecalibrator(n_bins=5, step_size=0.1, norm="l2", scoring=Spherical())
    check_forecaster((h, eqx.tree_at(lambda z: z.step_size, h, 0.2)), DistortedModel())


def test_tradeoff_parameters():
    eps, lam = tradeoff_parameters(10**6, 1 / 3)
    assert eps == pytest.approx(0.01) and lam == pytest.approx(1.0)
    eps, lam = tradeoff_parameters(10**6, 0.5)
    assert eps == pytest.approx(1e-3) and lam == pytest.approx(10**1.5)
    for beta in (0.3, 0.51, float("nan")):
        with pytest.raises(ValueError, match="beta"):
            tradeoff_parameters(1000, beta)


def test_bad_input():
    with pytest.raises(ValueError, match="n_bins"):
        ApproachabilityRecalibrator(n_bins=0, step_size=0.1)
    with pytest.raises(ValueError, match="not Lipschitz"):
        ApproachabilityRecalibrator(n_bins=4, step_size=0.1, scoring=LogScore())
    ApproachabilityRecalibrator(n_bins=4, step_size=0.1, scoring=LogScore(), allow_unbounded=True)
    with pytest.raises(ValueError, match="norm"):
        ApproachabilityRecalibrator(n_bins=4, step_size=0.1, norm="l3")
    with pytest.raises(ValueError, match="step_size"):
        ApproachabilityRecalibrator(n_bins=4, step_size=-1.0)
    with pytest.raises(ValueError, match="beta"):
        ApproachabilityRecalibrator.for_horizon(100, beta=0.2)
    f = ApproachabilityRecalibrator(n_bins=4, step_size=0.1)
    s = f.init(jax.random.key(0))
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(Exception, match="probability in"):
            jax.block_until_ready(jax.jit(f.predict)(s, jnp.asarray(bad), jax.random.key(1)))


def _rates(f_of_T, natures, Ts, n_seeds=4):
    cal, reg = [], []
    for T in Ts:
        f = f_of_T(T)
        s = jcalib.sweep(f, natures, T, jax.random.key(T), n_seeds=n_seeds, record=RecalibrationCounts(f.n_bins))
        c = jax.vmap(jax.vmap(lambda z: z.calibration()))(s)
        r = jax.vmap(jax.vmap(lambda z: z.regret()))(s)
        cal.append(np.asarray(c).mean(axis=1))
        reg.append(np.asarray(r).mean(axis=1))
    return np.array(cal), np.array(reg)  # (len(Ts), N)


def _slope(Ts, v):
    return np.polyfit(np.log(Ts), np.log(v), 1)[0]


def test_rates_one_third():
    """eps = T^-1/3, Lambda = 1: T^{1/3} * calibration stays bounded and its log-log slope is
    <= -0.28 against a miscalibrated model; regret against a calibrated model (the only positive
    regret an oblivious model nature forces) is bounded by the same rate."""
    Ts = [1000, 4000, 16000, 64000]
    natures = [DistortedModel(slope=2.0), DistortedModel(slope=1.0, shift=0.0)]
    cal, reg = _rates(lambda T: ApproachabilityRecalibrator.for_horizon(T), natures, Ts)
    scaled = cal * np.array(Ts)[:, None] ** (1 / 3)
    assert scaled.max() < 3.0, scaled
    assert _slope(Ts, cal[:, 0]) <= -0.28, cal[:, 0]
    assert _slope(Ts, cal[:, 1]) <= -0.28, cal[:, 1]
    # regret/L <= (eps/2)(1+Lambda)/Lambda + ... : T^{1/3} regret bounded
    assert (reg * np.array(Ts)[:, None] ** (1 / 3)).max() < 2.0, reg

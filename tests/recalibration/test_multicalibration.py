"""HKRR multicalibration: the NumPy reference loop, the stopping rule, the validation check, the
``multicalibration`` package on identical inputs (held-out group errors), jit/vmap, checks."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.metrics import multicalibration_error
from jcalib.recalibration import FittedMulticalibration, Multicalibration, SklearnRecalibrator
from reference.multicalibration import hkrr_patch


def _data(n, seed=0, G=4):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, G))
    g = x < np.array([0.5, 0.3, 0.4, 0.6])[:G]  # overlapping groups
    p = rng.uniform(0.05, 0.95, n)
    truth = np.clip(p + 0.2 * g[:, 0] - 0.15 * g[:, 1], 0.01, 0.99)
    y = (rng.uniform(size=n) < truth).astype(np.int32)
    return p.astype(np.float32), y, g


def test_matches_reference_loop(x64):
    p, y, g = _data(600)
    p = p.astype(np.float64)
    fitted = Multicalibration(alpha=0.05, n_bins=5, max_rounds=40, validation_fraction=0.0).fit(p, y, groups=g)
    ref_p, patches = hkrr_patch(p, y, g, 5, 0.05, 40)
    made = np.asarray(fitted.history.patched)
    assert made.sum() == len(patches) and not made[len(patches):].any()
    np.testing.assert_array_equal(np.asarray(fitted.group)[: len(patches)], [j for j, _, _ in patches])
    np.testing.assert_array_equal(np.asarray(fitted.bin)[: len(patches)], [k for _, k, _ in patches])
    np.testing.assert_allclose(np.asarray(fitted.delta)[: len(patches)], [d for _, _, d in patches], rtol=1e-10)
    np.testing.assert_allclose(np.asarray(fitted(p, g)), ref_p, atol=1e-12)


def test_stopping_rule_reached_and_error_below_alpha_on_patched_data():
    p, y, g = _data(4000)
    alpha = 0.05
    fitted = Multicalibration(alpha=alpha, n_bins=5, max_rounds=200, validation_fraction=0.0).fit(p, y, groups=g)
    assert not bool(fitted.history.patched[-1])  # stopped before the budget ran out
    q = np.asarray(fitted(p, g))
    # every cell big enough to count is within alpha afterwards (HKRR's stopping condition)
    b = np.minimum(np.floor(q * 5).astype(int), 4)
    for j in range(g.shape[1]):
        for k in range(5):
            m = (b == k) & g[:, j]
            if m.sum() >= alpha * g[:, j].sum() / 5:
                assert abs(np.mean(y[m] - q[m])) <= alpha + 1e-5


def test_held_out_improvement_and_validation_cut():
    p, y, g = _data(6000, seed=1)
    pt, yt, gt = _data(6000, seed=2)
    before = float(multicalibration_error(pt, yt, gt, n_bins=5).worst)
    fitted = Multicalibration(alpha=0.02, n_bins=5, max_rounds=300).fit(p, y, groups=g)
    after = float(multicalibration_error(fitted(pt, gt), yt, gt, n_bins=5).worst)
    assert after < 0.5 * before
    # with a tiny alpha the patching overfits its part: the validation check cuts late rounds
    tiny = Multicalibration(alpha=1e-4, n_bins=5, max_rounds=300).fit(p[:1500], y[:1500], groups=g[:1500])
    kept = int(jnp.sum(tiny.delta != 0))
    assert kept < int(jnp.sum(tiny.history.patched))


def test_parity_with_multicalibration_package_held_out():
    """Same data, same groups, same bins: the package's HKRR (deterministic, no oracle noise) and
    ours reach comparable worst held-out group errors."""
    from multicalibration import MulticalibrationPredictor

    p, y, g = _data(1500, seed=4)
    pt, yt, gt = _data(1500, seed=5)
    np.random.seed(0)
    mcb = MulticalibrationPredictor("HKRR")
    params = {"alpha": 0.05, "lambda": 0.2, "max_iter": 30, "randomized": False, "use_oracle": False}
    subgroups = [list(np.flatnonzero(g[:, j])) for j in range(g.shape[1])]
    mcb.fit(p.astype(np.float64), y, subgroups, params)
    theirs = mcb.predict(pt.astype(np.float64), [set(np.flatnonzero(gt[:, j])) for j in range(gt.shape[1])])
    ours = Multicalibration(alpha=0.05, n_bins=5, max_rounds=100).fit(p, y, groups=g)(pt, gt)
    e_before = float(multicalibration_error(pt, yt, gt, n_bins=5).worst)
    e_theirs = float(multicalibration_error(theirs.astype(np.float32), yt, gt, n_bins=5).worst)
    e_ours = float(multicalibration_error(ours, yt, gt, n_bins=5).worst)
    assert e_ours < 0.6 * e_before and e_theirs < 0.6 * e_before
    assert e_ours <= e_theirs + 0.02  # within two points of the package, usually better


def test_shapes_two_columns_multiclass_and_adapter():
    p, y, g = _data(600)
    two = np.stack([1 - p, p], 1)
    f2 = Multicalibration(n_bins=5, max_rounds=20).fit(two, y, groups=g)
    f1 = Multicalibration(n_bins=5, max_rounds=20).fit(p, y, groups=g)
    np.testing.assert_allclose(np.asarray(f2(two, g))[:, 1], np.asarray(f1(p, g)), atol=1e-6)
    rng = np.random.default_rng(0)
    probs3 = rng.dirichlet(np.ones(3), 600).astype(np.float32)
    y3 = rng.integers(0, 3, 600)
    f3 = Multicalibration(n_bins=5, max_rounds=10).fit(probs3, y3, groups=g)
    out = np.asarray(f3(probs3, g))
    assert out.shape == (600, 3) and np.allclose(out.sum(1), 1, atol=1e-5)
    cal = SklearnRecalibrator(Multicalibration(n_bins=5, max_rounds=5)).fit(two, y)  # one group of everything
    assert cal.predict_proba(two).shape == (600, 2)


def test_jit_vmap_no_retrace():
    p, y, g = _data(512)
    method = Multicalibration(alpha=0.05, n_bins=5, max_rounds=8)
    fit = jax.jit(chex.assert_max_traces(lambda p, y, g: method.fit(p, y, groups=g), n=1))
    a = fit(p, y, g)
    fit(p[::-1].copy(), y, g)
    assert isinstance(a, FittedMulticalibration)
    ws = jax.random.uniform(jax.random.key(0), (3, 512), minval=0.5, maxval=1.5)
    fits = jax.vmap(lambda w: method.fit(p, y, groups=g, sample_weight=w))(ws)
    outs = jax.vmap(lambda f: f(p, g))(fits)
    assert outs.shape == (3, 512)
    one = method.fit(p, y, groups=g, sample_weight=ws[1])(p, g)
    np.testing.assert_allclose(np.asarray(outs[1]), np.asarray(one), atol=1e-6)


def test_checks():
    p, y, g = _data(100)
    with pytest.raises(ValueError, match="alpha"):
        Multicalibration(alpha=0.0)
    with pytest.raises(ValueError, match="validation_fraction"):
        Multicalibration(validation_fraction=0.9)
    with pytest.raises(TypeError, match="my_groups"):
        Multicalibration().fit(p, y, groups=lambda x: x)
    fitted = Multicalibration(n_bins=5, max_rounds=4).fit(p, y, groups=g)
    with pytest.raises(ValueError, match="groups is required"):
        fitted(p)
    with pytest.raises(ValueError, match="4 columns"):
        fitted(p, g[:, :2])
    with pytest.raises(ValueError, match="too few"):
        Multicalibration().fit(p[:3], y[:3])


def test_fitted_map_refuses_empty_forecasts_plain_and_under_jit():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, 200)
    y = (rng.uniform(size=200) < p).astype(np.int32)
    g = np.stack([p > 0.5, p <= 0.5], 1)
    fitted = Multicalibration(max_rounds=2, validation_fraction=0.0).fit(p, y, groups=g)
    for call in (fitted, jax.jit(lambda q, gr: fitted(q, gr))):
        with pytest.raises(ValueError, match="probs is empty"):
            call(p[:0], g[:0])

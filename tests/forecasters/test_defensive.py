"""Defensive forecasting with the grid tent kernel: parity with a from-scratch reference, the
kernel's properties, and the smooth-calibration guarantee sum_{s,t} K r_s r_t <= sum_t r_t^2."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.forecasters import defensive_phi, defensive_rule, interpolate
from reference.forecasters import grid_kernel as ref_grid_kernel
from reference.forecasters import tent

import jcalib
from jcalib.forecasters import DefensiveForecaster
from jcalib.forecasters.defensive import grid_kernel
from jcalib.natures import Contrarian, MaxCalibrationError, RandomMixture, Replay

KEY = jax.random.key(0)


def play_replays(f, ys):
    ys = np.asarray(ys)
    stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *[Replay(y) for y in ys])
    return eqx.filter_vmap(lambda n: jcalib.core.play(f, n, ys.shape[1], key=KEY))(stacked)


def kernel_matrix(p, n_grid, bandwidth):
    return np.asarray(grid_kernel(jnp.asarray(p), jnp.asarray(p), n_grid, bandwidth))


def check_guarantee(p, y, n_grid, bandwidth, rtol):
    """||f_T||^2 = r^T K r <= sum_t K(p_t,p_t) r_t^2 <= sum r^2, and max_j |Phi(j/N)| <= sqrt(sum r^2)."""
    r = np.asarray(y, float) - np.asarray(p, float)
    K = kernel_matrix(p, n_grid, bandwidth).astype(float)
    quad = r @ K @ r
    diag = np.sum(np.diag(K) * r**2)
    assert quad <= diag * (1 + rtol) + rtol
    assert diag <= np.sum(r**2) * (1 + rtol)
    g = np.arange(n_grid + 1) / n_grid
    phi = np.asarray(grid_kernel(jnp.asarray(g), jnp.asarray(p), n_grid, bandwidth)) @ r
    assert np.max(np.abs(phi)) <= np.sqrt(np.sum(r**2)) * (1 + rtol) + rtol


@pytest.mark.parametrize("kw", [dict(n_grid=0), dict(n_grid=2.5), dict(bandwidth=0.0), dict(bandwidth=-0.1), dict(bandwidth=np.nan)])
def test_bad_input_raises(kw):
    with pytest.raises(ValueError):
        DefensiveForecaster(**kw)


def test_grid_kernel_is_the_tent_on_the_grid_and_psd(x64):
    N, delta = 20, 0.15  # delta * N = 3
    g = np.arange(N + 1) / N
    x = np.random.default_rng(0).uniform(0, 1, 30)
    K = np.asarray(grid_kernel(jnp.asarray(x), jnp.asarray(g), N, delta))
    np.testing.assert_allclose(K, [[tent(a, b, delta) for b in g] for a in x], atol=1e-12)
    np.testing.assert_allclose(K[3, 5], ref_grid_kernel(x[3], g[5], N, delta), atol=1e-12)
    Kxx = np.asarray(grid_kernel(jnp.asarray(x), jnp.asarray(x), N, delta))
    np.testing.assert_allclose(Kxx, Kxx.T, atol=1e-12)
    assert np.linalg.eigvalsh(Kxx).min() > -1e-10
    for N2, d2 in [(10, 0.37), (7, 0.05)]:  # any bandwidth, even narrower than the grid
        assert np.linalg.eigvalsh(np.asarray(grid_kernel(jnp.asarray(x), jnp.asarray(x), N2, d2))).min() > -1e-10


@pytest.mark.parametrize("n_grid,bandwidth", [(10, 0.2), (16, 0.13)])
def test_parity_with_reference(x64, n_grid, bandwidth):
    """Round by round: jcalib's state equals Phi summed afresh over its own history, and its
    forecast is a defensive forecast for it. (Where Phi has a flat zero stretch any zero is valid
    and round-off decides which one bisection lands on, so forecasts are checked by the rule,
    and compared value for value only where the zero is unique.)"""
    f = DefensiveForecaster(n_grid=n_grid, bandwidth=bandwidth)
    ys = np.random.default_rng(n_grid).integers(0, 2, size=(3, 60))
    ys[0] = 1

    def step(state, yt):
        fc = f.predict(state, None, KEY)
        return f.update(state, None, fc, yt), (state.phi, fc.value)

    run = jax.jit(lambda y: jax.lax.scan(step, f.init(KEY), y))
    n_compared = 0
    for y in ys:
        final, (phis, p) = run(jnp.asarray(y, jnp.int32))
        phis, p = np.asarray(phis), np.asarray(p)
        for t in range(len(y)):
            V = defensive_phi(p[:t], y[:t], n_grid, bandwidth)
            np.testing.assert_allclose(phis[t], V, atol=1e-12)  # summation order differs
            if p[t] == 0.0:
                assert V[0] <= 1e-12
            elif p[t] == 1.0:
                assert V[-1] >= -1e-12
            else:
                assert abs(interpolate(V, p[t])) <= 1e-12
            # a grid value within round-off of 0 (other than an exact 0 in both) can flip a sign
            # test and send bisection to another, equally valid, zero
            ambiguous = np.any((np.abs(V) <= 1e-9) & ~((V == 0) & (phis[t] == 0)))
            if not ambiguous:
                assert p[t] == pytest.approx(defensive_rule(V), abs=1e-12)
                n_compared += 1
        np.testing.assert_allclose(np.asarray(final.phi), defensive_phi(p, y, n_grid, bandwidth), atol=1e-12)
    assert n_compared > 30


T_HYP = 64


@given(y=st.lists(st.integers(0, 1), min_size=T_HYP, max_size=T_HYP))
@settings(max_examples=30, deadline=None)
def test_guarantee_on_arbitrary_sequences(y):
    n_grid, bandwidth = 20, 0.1
    with jax.enable_x64(True):  # not the x64 fixture: hypothesis reruns the body, not fixtures
        traj = jcalib.core.play(DefensiveForecaster(n_grid, bandwidth), Replay(y), T_HYP, key=KEY)
        check_guarantee(np.asarray(traj.forecast), y, n_grid, bandwidth, rtol=1e-9)  # float64 round-off


@pytest.mark.parametrize("nature", [Contrarian(), MaxCalibrationError(20), RandomMixture(n_bins=20)], ids=lambda n: type(n).__name__)
def test_guarantee_against_adaptive_natures(nature):
    T, n_grid, bandwidth = 400, 50, 0.1
    traj = jcalib.core.play(DefensiveForecaster(n_grid, bandwidth), nature, T, key=jax.random.key(2))
    p, y = np.asarray(traj.forecast), np.asarray(traj.y)
    # 1e-4: float32 roots are zeros of Phi only up to round-off, |Phi(p_t)| r_t ~ 1e-6 per round
    check_guarantee(p, y, n_grid, bandwidth, rtol=1e-4)
    # smooth calibration: the kernel-weighted bias near every p is O(sqrt(T)), far below the
    # T/2 a deterministic non-defensive forecaster suffers against the contrarian
    assert np.sqrt(np.sum((y - p) ** 2)) <= np.sqrt(T)

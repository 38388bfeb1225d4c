"""Gupta–Ramdas interval forecasts (Arunachaleswaran et al. 2024, reconstructed): parity with a plain reference,
|D_j| <= 1 on arbitrary sequences and adaptive natures, the judged endpoints are One-Step-Ahead's,
and the scored midpoints sit 1/(2m) from them."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.forecasters import ece
from reference.forecasters import gupta_ramdas as ref_gr

import jcalib
from jcalib.forecasters import GuptaRamdas, one_step_ahead
from jcalib.metrics import distance_to_calibration
from jcalib.metrics.distance import atoms_from_counts
from jcalib.natures import Bernoulli, Contrarian, MaxCalibrationError, RandomMixture, Replay

KEY = jax.random.key(0)


def play_replays(f, ys):
    ys = np.asarray(ys)
    stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *[Replay(y) for y in ys])
    return eqx.filter_vmap(lambda n: jcalib.core.play(f, n, ys.shape[1], key=KEY))(stacked)


def max_abs_deficit(judged, y, m):
    """max over rounds and grid points of |D_j| (exact integers / m)."""
    j = np.rint(np.asarray(judged) * m).astype(np.int64)
    inc = np.zeros((len(j), m + 1), np.int64)
    inc[np.arange(len(j)), j] = m * np.asarray(y) - j
    return np.abs(np.cumsum(inc, axis=0)).max() / m


@pytest.mark.parametrize("bad", [0, -2, 0.5, None])
def test_bad_n_bins_raises(bad):
    with pytest.raises(ValueError, match="n_bins"):
        GuptaRamdas(n_bins=bad)


def test_for_horizon():
    for T in (1, 2, 50, 1000, 10**6):
        m = GuptaRamdas.for_horizon(T).n_bins
        assert T / (2 * m) + m + 1 <= math.sqrt(2 * T) + 2  # m = ceil(sqrt(T/2)) costs < 1


@pytest.mark.parametrize("m", [1, 2, 5, 12])
def test_parity_with_reference(x64, m):
    ys = np.random.default_rng(m).integers(0, 2, size=(8, 100))
    ys[0] = 0
    traj = play_replays(GuptaRamdas(n_bins=m), ys)
    for b, y in enumerate(ys):
        mids, judged, _ = ref_gr(y, m)
        np.testing.assert_array_equal(np.asarray(traj.forecast[b]), mids)
        np.testing.assert_array_equal(np.asarray(traj.info[b]), judged)
        # the judged endpoints are exactly One-Step-Ahead's look-ahead forecasts (Arunachaleswaran et al. 2024)
        np.testing.assert_array_equal(np.asarray(traj.info[b]), np.asarray(one_step_ahead(y, m)))


T_HYP = 64


@given(y=st.lists(st.integers(0, 1), min_size=T_HYP, max_size=T_HYP), m=st.sampled_from([1, 3, 8]))
@settings(max_examples=40, deadline=None)
def test_deficits_bounded_on_arbitrary_sequences(y, m):
    traj = jcalib.core.play(GuptaRamdas(n_bins=m), Replay(y), T_HYP, key=KEY)
    judged, p = np.asarray(traj.info), np.asarray(traj.forecast)
    assert max_abs_deficit(judged, y, m) <= 1  # every prefix, every grid point
    # the interval [p - 1/(2m), p + 1/(2m)] has the judged point as an endpoint
    np.testing.assert_allclose(np.abs(p - judged), 1 / (2 * m), rtol=1e-6)  # float32 grid values
    assert ece(judged, y) <= m + 1 + 1e-9


@pytest.mark.parametrize("nature", [Contrarian(), MaxCalibrationError(n_bins=20), RandomMixture(n_bins=20)], ids=lambda n: type(n).__name__)
def test_deficits_bounded_against_adaptive_natures(nature):
    T, m = 300, 10
    trajs = jax.vmap(lambda k: jcalib.core.play(GuptaRamdas(n_bins=m), nature, T, key=k))(jax.random.split(KEY, 3))
    for judged, p, y in zip(np.asarray(trajs.info), np.asarray(trajs.forecast), np.asarray(trajs.y)):
        assert max_abs_deficit(judged, y, m) <= 1
        # Theorem 1's triangle inequality for the midpoints: sum |p - p~| = T/(2m) exactly,
        # ECE(p~) <= m + 1, so CalDist(p) <= T/(2m) + m + 1
        assert np.abs(p - judged).sum() == pytest.approx(T / (2 * m), rel=1e-5)  # float32 sums
        assert ece(judged, y) <= m + 1 + 1e-9


@pytest.mark.parametrize("nature", [Bernoulli(0.3), MaxCalibrationError(n_bins=142)], ids=lambda n: type(n).__name__)
def test_midpoints_distance_to_calibration(nature):
    # CalDist(midpoints) <= sum |p - p~| + ECE(p~) <= T/(2m) + m + 1 (the argument of Arunachaleswaran et al. 2024)
    T = 10_000
    f = GuptaRamdas.for_horizon(T)
    m = f.n_bins
    s = jcalib.core.play(f, nature, T, key=jax.random.key(5), record="summary", n_bins=2 * m)
    assert int(s.counts.sum()) == T and int(s.off_grid) == 0  # midpoints on the 2m grid (tolerance 1e-3)
    p, y, w = atoms_from_counts(s.counts, s.ones, 2 * m)
    r = distance_to_calibration(p, y, sample_weight=w)
    assert r.lower <= r.upper <= T / (2 * m) + m + 1


def test_shares_aosa_state_machine():
    """Gupta–Ramdas runs AOSA's transition: after the same outcomes its state is AOSA's state
    (beta = -m D) and its interval's lower end is AOSA's "low" forecast."""
    m, y = 7, np.random.default_rng(3).integers(0, 2, 60)
    gr, aosa = GuptaRamdas(n_bins=m), jcalib.forecasters.AlmostOneStepAhead(n_bins=m)
    sg, sa = gr.init(KEY), aosa.init(KEY)
    for yt in y:
        fg, fa = gr.predict(sg, None, KEY), aosa.predict(sa, None, KEY)
        assert float(fg.value) == pytest.approx(float(fa.value) + 1 / (2 * m))
        sg, sa = gr.update(sg, None, fg, jnp.int32(yt)), aosa.update(sa, None, fa, jnp.int32(yt))
        np.testing.assert_array_equal(sg.beta, sa.beta)
    np.testing.assert_array_equal(sg.deficit, -sa.beta)
    assert int(np.abs(np.asarray(sg.deficit)).max()) <= m  # |D_j| <= 1

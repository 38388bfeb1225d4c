"""Almost-One-Step-Ahead and One-Step-Ahead (Arunachaleswaran et al. 2024): parity with a
plain-Python reference, Theorem 2 (|alpha| <= 1, ECE(p~) <= m+1), Theorem 1 (sum |p - p~| <= T/m;
CalDist <= T/m + m + 1)."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.forecasters import aosa as ref_aosa
from reference.forecasters import bisect_sign_change, ece

import jcalib
from jcalib.forecasters import AlmostOneStepAhead, aosa_bins, aosa_bound, one_step_ahead
from jcalib._grid import sign_change_index
from jcalib.forecasters.aosa import AOSAState
from jcalib.metrics import distance_to_calibration, ece_from_counts
from jcalib.metrics.distance import atoms_from_counts
from jcalib.natures import Bernoulli, Contrarian, MaxCalibrationError, RandomMixture, Replay

KEY = jax.random.key(0)


def play_replays(f, ys):
    """Play ``f`` against Replay(y) for every row of ``ys`` (one compilation per shape)."""
    ys = np.asarray(ys)
    stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *[Replay(y) for y in ys])
    return eqx.filter_vmap(lambda n: jcalib.core.play(f, n, ys.shape[1], key=KEY))(stacked)


def running_max_abs_bias(pt, y, m):
    """max over rounds t and grid points i of |alpha_{1:t}(i/m)| (exact: integers / m)."""
    j = np.rint(np.asarray(pt) * m).astype(np.int64)
    inc = np.zeros((len(j), m + 1), np.int64)
    inc[np.arange(len(j)), j] = j - m * np.asarray(y)
    return np.abs(np.cumsum(inc, axis=0)).max() / m


# --- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", None, True])
def test_bad_n_bins_raises(bad):
    with pytest.raises(ValueError, match="n_bins"):
        AlmostOneStepAhead(n_bins=bad)


def test_bad_tie_raises():
    with pytest.raises(ValueError, match="tie"):
        AlmostOneStepAhead(n_bins=4, tie="middle")


@pytest.mark.parametrize("y", [[0, 2, 1], [0.5, 1.0], [np.nan, 1.0], [[0, 1], [1, 0]]])
def test_one_step_ahead_bad_outcomes_raise(y):
    with pytest.raises(ValueError):
        one_step_ahead(y, 3)


def test_aosa_bins_is_exact_ceil_sqrt():
    T = np.arange(1, 200_001)
    got = np.array([aosa_bins(int(t)) for t in T[::97]])
    want = np.array([math.ceil(math.sqrt(int(t))) for t in T[::97]])
    np.testing.assert_array_equal(got, want)
    assert [aosa_bins(t) for t in (1, 2, 4, 5, 100, 101, 10**7)] == [1, 2, 2, 3, 10, 11, 3163]
    assert AlmostOneStepAhead.for_horizon(10_000).n_bins == 100
    with pytest.raises(ValueError):
        aosa_bins(0)


def test_aosa_bound():
    assert aosa_bound(10_000) == 2 * 100 + 1  # perfect square: exactly 2 sqrt(T) + 1
    for T in (2, 3, 10, 99, 1000, 12345):
        assert aosa_bound(T) < 2 * math.sqrt(T) + 2  # integer m costs less than 1
    assert aosa_bound(100, 5) == 100 / 5 + 5 + 1


# --- the bisection -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 33])
def test_sign_change_index_matches_reference(n):
    v = np.random.default_rng(n).integers(-3, 4, size=(300, n + 1))
    v[:, 0] = np.minimum(v[:, 0], 0)  # the precondition v_0 <= 0 <= v_n
    v[:, -1] = np.maximum(v[:, -1], 0)
    got = np.asarray(jax.jit(jax.vmap(sign_change_index))(jnp.asarray(v, jnp.int32)))
    for row, i in zip(v, got):
        assert row[i] <= 0 <= row[i + 1]
        assert i == bisect_sign_change(list(row))


# --- parity with the reference -----------------------------------------------------------------


@pytest.mark.parametrize("m,tie", [(1, "low"), (2, "low"), (7, "low"), (7, "high"), (15, "high")])
def test_parity_with_reference(x64, m, tie):
    ys = np.random.default_rng(m).integers(0, 2, size=(12, 150))
    ys[0] = 1  # constant sequences reach the grid ends
    ys[1] = 0
    traj = play_replays(AlmostOneStepAhead(n_bins=m, tie=tie), ys)
    for b, y in enumerate(ys):
        p, pt, alpha = ref_aosa(y, m, tie)
        np.testing.assert_array_equal(np.asarray(traj.forecast[b]), p)
        np.testing.assert_array_equal(np.asarray(traj.info[b]), pt)
        np.testing.assert_array_equal(np.asarray(one_step_ahead(y, m)), pt)


def test_state_is_the_exact_scaled_bias():
    y = np.random.default_rng(1).integers(0, 2, 300)
    m = 9
    f = AlmostOneStepAhead(n_bins=m)

    def step(state, yt):
        return f.update(state, None, f.predict(state, None, KEY), yt), None

    state, _ = jax.lax.scan(step, f.init(KEY), jnp.asarray(y, jnp.int32))
    assert isinstance(state, AOSAState) and state.beta.dtype == jnp.int32
    _, _, alpha = ref_aosa(y, m)
    np.testing.assert_array_equal(np.asarray(state.beta), [int(a * m) for a in alpha])


def test_grid_values_are_correctly_rounded(x64):
    m = 49  # 49 * (1/49) != 1 in float64: a division rewritten as a product would miss
    traj = jcalib.core.play(AlmostOneStepAhead(n_bins=m, tie="high"), Replay([1, 1]), 2, key=KEY)
    assert float(traj.forecast[0]) == 1.0 and float(traj.info[0]) == 1.0
    pt = np.asarray(one_step_ahead(np.r_[np.zeros(2 * m, int), np.ones(2 * m, int)], m))
    assert set(pt.tolist()) <= {i / m for i in range(m + 1)}
    assert len(set(pt.tolist())) > m // 2


def test_one_step_ahead_docstring_example():
    assert one_step_ahead(jnp.array([1, 1, 0, 1]), 2).tolist() == [1.0, 1.0, 0.5, 0.5]


# --- Theorem 2 and Theorem 1 on arbitrary sequences --------------------------------------------

T_ALL = 14  # every prefix is checked, so this covers every binary sequence of length <= 14
ALL_SEQUENCES = ((np.arange(2**T_ALL)[:, None] >> np.arange(T_ALL)[None, :]) & 1).astype(np.int32)


def play_all(f, ys):
    """Play ``f`` against Replay(y) for every row of ``ys``: one jitted vmap over the rows."""
    return jax.jit(jax.vmap(lambda y: jcalib.core.play(f, Replay(y), ys.shape[1], key=KEY)))(jnp.asarray(ys))


def running_bias_batch(pt, y, m):
    """max over rounds and grid points of |alpha_{1:t}(i/m)| for every row (exact integers / m)."""
    j = np.rint(pt * m).astype(np.int64)
    inc = (j - m * y)[:, :, None] * (j[:, :, None] == np.arange(m + 1))
    return np.abs(np.cumsum(inc, axis=1)).max(axis=(1, 2)) / m


@pytest.mark.parametrize("tie", ["low", "high"])
@pytest.mark.parametrize("m", [1, 2, 3, 8])
def test_guarantees_on_every_sequence_up_to_length_14(m, tie):
    """Theorems 2 and 1's first step on all 2^14 outcome sequences (and so all their prefixes)."""
    traj = play_all(AlmostOneStepAhead(n_bins=m, tie=tie), ALL_SEQUENCES)
    p, pt, yy = np.asarray(traj.forecast), np.asarray(traj.info), np.asarray(traj.y)
    np.testing.assert_array_equal(yy, ALL_SEQUENCES)
    # Theorem 2: |alpha(p_i)| <= 1 at every grid point after every round, so ECE(p~) <= m + 1
    assert running_bias_batch(pt, yy, m).max() <= 1
    # Theorem 1's first step: p is one of the two grid points adjacent to p~ (|p - p~| <= 1/m)
    steps = np.rint(p * m).astype(int) - np.rint(pt * m).astype(int)
    assert set(np.unique(steps).tolist()) <= {-1, 0, 1}
    assert np.all(np.abs(p * m - np.rint(p * m)) < 1e-4)  # forecasts are grid points
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(lambda y: one_step_ahead(y, m)))(ALL_SEQUENCES)), pt)


@given(
    y=st.lists(st.integers(0, 1), min_size=64, max_size=64),
    m=st.sampled_from([1, 2, 3, 8]),
    tie=st.sampled_from(["low", "high"]),
)
@settings(max_examples=40, deadline=None)
def test_guarantees_on_random_sequences_of_length_64(y, m, tie):
    """Longer sequences than the exhaustive test reaches, sampled (40 of the 2^64)."""
    traj = jcalib.core.play(AlmostOneStepAhead(n_bins=m, tie=tie), Replay(y), 64, key=KEY)
    p, pt, yy = np.asarray(traj.forecast), np.asarray(traj.info), np.asarray(traj.y)
    np.testing.assert_array_equal(yy, y)
    assert running_max_abs_bias(pt, yy, m) <= 1
    assert ece(pt, yy) <= m + 1 + 1e-9  # float sum of exact grid values
    assert set(np.rint(p * m).astype(int) - np.rint(pt * m).astype(int)) <= {-1, 0, 1}


@pytest.mark.parametrize("m", [1, 4, 9])
def test_one_step_ahead_bias_at_most_one_on_every_sequence_up_to_length_14(m):
    pt = np.asarray(jax.jit(jax.vmap(lambda y: one_step_ahead(y, m)))(ALL_SEQUENCES))
    assert running_bias_batch(pt, ALL_SEQUENCES, m).max() <= 1


# Oblivious natures only produce sequences, which the sequence tests above cover; the
# adaptive ones choose outcomes from the forecast.
NATURES = [Contrarian(), MaxCalibrationError(n_bins=16), RandomMixture(n_bins=16)]


@pytest.mark.parametrize("nature", NATURES, ids=lambda n: type(n).__name__)
def test_guarantees_against_natures(nature):
    T, m = 256, 16
    keys = jax.random.split(jax.random.key(3), 4)
    f = AlmostOneStepAhead(n_bins=m)
    trajs = jax.vmap(lambda k: jcalib.core.play(f, nature, T, key=k))(keys)
    for p, pt, y in zip(np.asarray(trajs.forecast), np.asarray(trajs.info), np.asarray(trajs.y)):
        assert running_max_abs_bias(pt, y, m) <= 1
        assert ece(pt, y) <= m + 1 + 1e-9
        assert np.abs(p - pt).sum() <= T / m + 1e-4  # 1e-4: T float32 roundings of k/m


# --- Theorem 1 itself: the distance to calibration ---------------------------------------------


@given(
    y=st.lists(st.integers(0, 1), min_size=49, max_size=49),
    tie=st.sampled_from(["low", "high"]),
)
@settings(max_examples=25, deadline=None)
def test_distance_to_calibration_exact_small_T(y, tie):
    T, m = 49, 7  # m = sqrt(T): the bound is 2 sqrt(T) + 1 = 15
    traj = jcalib.core.play(AlmostOneStepAhead(n_bins=m, tie=tie), Replay(y), T, key=KEY)
    r = distance_to_calibration(traj.forecast, traj.y, exact=True)
    assert r.exact
    assert r.value <= 2 * math.sqrt(T) + 1 + 1e-6  # 1e-6: float32 forecasts summed in float64


@pytest.mark.parametrize(
    "nature",
    [Bernoulli(0.3), Contrarian(), MaxCalibrationError(n_bins=100), RandomMixture(n_bins=100)],
    ids=lambda n: type(n).__name__,
)
def test_distance_to_calibration_certified_large_T(nature):
    T, m = 10_000, 100
    f, key = AlmostOneStepAhead(n_bins=m), jax.random.key(5)
    s = jcalib.core.play(f, nature, T, key=key, record="summary")
    assert int(s.off_grid) == 0  # every forecast on the grid (tolerance 1e-3/m)
    assert int(s.counts.sum()) == T and int(s.info_counts.sum()) == T
    p, y, w = atoms_from_counts(s.counts, s.ones, m)
    r = distance_to_calibration(p, y, sample_weight=w)
    assert r.lower <= r.upper
    # upper is the cost of a calibrated witness, so CalDist <= upper certifies Theorem 1
    assert r.upper <= 2 * math.sqrt(T) + 1
    # the triangle-inequality terms of the proof, from the summary: the integer grid steps
    # sum_t |i_t - j_t| equal a NumPy count on the full history, and are at most T (l1 <= T/m)
    full = jcalib.core.play(f, nature, T, key=key)
    steps = np.abs(np.rint(np.asarray(full.forecast, np.float64) * m).astype(np.int64)
                   - np.rint(np.asarray(full.info, np.float64) * m).astype(np.int64)).sum()
    assert int(s.info_steps) == steps <= T
    assert float(s.info_l1) == np.float32(steps) / np.float32(m)
    assert float(ece_from_counts(s.info_counts, s.info_ones, m)) <= m + 1 + 1e-3


def test_the_grid_size_is_a_static_int():
    # a NumPy or concrete JAX integer is an integer; a traced one cannot fix a shape
    for m in (np.int64(10), jnp.asarray(10)):
        f = AlmostOneStepAhead(m)
        assert type(f.n_bins) is int
        assert jcalib.core.play(f, jcalib.natures.Bernoulli(0.3), 20, key=jax.random.key(0)).y.shape == (20,)
    with pytest.raises(TypeError, match="`n_bins` must be a static Python int"):
        jax.jit(lambda m: AlmostOneStepAhead(m))(jnp.asarray(10))
    with pytest.raises(ValueError, match=r"n_bins=1000000000000 exceeds 4194304.*float32"):
        AlmostOneStepAhead(10**12)
    with pytest.raises(ValueError, match=r"T=1000000000000 exceeds 2\*\*31"):
        aosa_bins(10**12)

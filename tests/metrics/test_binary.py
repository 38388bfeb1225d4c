"""Tests of jcalib.metrics.binary: parity with plain references, the One-Step-Ahead ECE bound
(Arunachaleswaran et al. 2024, Theorem 2), grid summaries, conformance (jit, vmap, no retrace),
weights as multiplicities, and input validation."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import relplot.metrics
from reference import binary_metrics as ref
from reference import bins as bins_ref
from reference.forecasters import aosa
from sklearn.metrics import brier_score_loss
from sklearn.metrics import log_loss as sk_log_loss

from jcalib.metrics import binary as binary_module
from jcalib.metrics import (
    PrecisionWarning,
    ace,
    bin_index,
    binned_ece,
    brier,
    ece,
    ece_from_counts,
    log_loss,
    lp_calibration_error,
    mce,
)
from jcalib.metrics import multiclass as multiclass_metrics


def _data(seed, n=80, grid=None, weights=False):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, grid + 1, n) / grid if grid else rng.random(n)
    y = (rng.random(n) < np.clip(0.15 + 0.7 * p, 0, 1)).astype(np.int32)
    w = rng.uniform(0.0, 3.0, n) if weights else None
    return p, y, w


# ---------------------------------------------------------------------------------------------
# Parity with the references


@pytest.mark.parametrize("grid", [None, 6])
@pytest.mark.parametrize("weights", [False, True])
def test_ece_matches_reference(x64, grid, weights):
    p, y, w = _data(0, grid=grid, weights=weights)
    np.testing.assert_allclose(float(ece(p, y, sample_weight=w)), ref.ece(p, y, w), rtol=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("power", [1, 2])
@pytest.mark.parametrize("grid", [None, 9])
@pytest.mark.parametrize("weights", [False, True])
def test_binned_ece_matches_reference(x64, strategy, power, grid, weights):
    p, y, w = _data(1, grid=grid, weights=weights)
    got = binned_ece(p, y, n_bins=7, strategy=strategy, sample_weight=w, order=power)
    np.testing.assert_allclose(float(got), ref.binned_ece(p, y, 7, strategy, w, power), rtol=1e-12)


@pytest.mark.parametrize("eps", [0.1, 0.25, 1 / 3])
@pytest.mark.parametrize("power", [1, 2, 3])
@pytest.mark.parametrize("weights", [False, True])
def test_lp_calibration_error_matches_reference(x64, eps, power, weights):
    p, y, w = _data(2, grid=12, weights=weights)  # grid values sit on bucket edges
    got = lp_calibration_error(p, y, eps, order=power, sample_weight=w)
    np.testing.assert_allclose(float(got), ref.lp_calibration_error(p, y, eps, power, w), rtol=1e-12)


@pytest.mark.parametrize("weights", [False, True])
def test_brier_and_log_loss_match_sklearn(x64, weights):
    p, y, w = _data(3, weights=weights)
    np.testing.assert_allclose(float(brier(p, y, sample_weight=w)), brier_score_loss(y, p, sample_weight=w), rtol=1e-12)
    np.testing.assert_allclose(float(log_loss(p, y, sample_weight=w)), sk_log_loss(y, p, sample_weight=w), rtol=1e-12)


def test_log_loss_clips_confident_mistakes(x64):
    # sklearn clips at the dtype's machine epsilon too
    p, y = np.array([0.0, 1.0, 0.5]), np.array([1, 0, 1])
    got = float(log_loss(p, y))
    np.testing.assert_allclose(got, (2 * -np.log(np.finfo(np.float64).eps) + np.log(2)) / 3, rtol=1e-12)
    assert np.isfinite(float(log_loss(jnp.asarray(p, jnp.float32), y)))


def test_quantile_bins_hold_equal_mass(x64):
    # 60 distinct forecasts in 6 bins: each bin gets 10 of them, so a bin-by-bin check works
    rng = np.random.default_rng(4)
    p = np.sort(rng.random(60))
    y = rng.integers(0, 2, 60)
    got = float(binned_ece(p, y, n_bins=6, strategy="quantile"))
    want = sum(abs(np.sum(p[k * 10 : (k + 1) * 10] - y[k * 10 : (k + 1) * 10])) for k in range(6)) / 60
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_quantile_bins_keep_a_tie_at_an_edge_together(x64):
    # a tie across the equal-mass edge: the four 0.5s (weight 1 below them) all go to bin
    # floor(2 * 1/6) = 0 (weighted: floor(2 * 1/6.5) = 0) in any row order, labels and weights
    # moving with their rows
    p = np.array([0.1, 0.5, 0.5, 0.5, 0.5, 0.9])
    y = np.array([0, 1, 0, 1, 1, 0])
    w = np.array([1.0, 2.0, 1.0, 0.5, 1.0, 1.0])
    assert binary_module.quantile_bin_index(p, 2, sample_weight=np.ones(6)).tolist() == [0, 0, 0, 0, 0, 1]
    want = float(binned_ece(p, y, n_bins=2, strategy="quantile", sample_weight=w))
    bin0 = 0.1 + 2 * (0.5 - 1) + 1 * 0.5 + 0.5 * (0.5 - 1) + 1 * (0.5 - 1)  # sum of w (p - y)
    np.testing.assert_allclose(want, (abs(bin0) + 0.9) / 6.5, rtol=1e-12)
    for perm in np.random.default_rng(11).permutation(np.tile(np.arange(6), (5, 1)), axis=1):
        got = float(binned_ece(p[perm], y[perm], n_bins=2, strategy="quantile", sample_weight=w[perm]))
        np.testing.assert_allclose(got, want, rtol=1e-12)  # the bins are the same; sums reorder


def test_binned_ece_is_normalised_ece_of_binned_forecasts(x64):
    # For p = 1, binned ECE x T == unnormalised sequence ECE after replacing each forecast by
    # its bin's mean forecast (both are sum_b |sum_{t in b} (p_t - y_t)|).
    p, y, _ = _data(5, n=200)
    b = np.minimum((p * 10).astype(int), 9)
    means = np.array([p[b == k].mean() if np.any(b == k) else 0 for k in range(10)])
    np.testing.assert_allclose(float(binned_ece(p, y, n_bins=10)) * 200, ref.ece(means[b], y), rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# Paper claim and grid summaries


@pytest.mark.parametrize("seed", range(3))
def test_one_step_ahead_ece_at_most_m_plus_1(x64, seed):
    """Theorem 2 of Arunachaleswaran et al. (2024): the look-ahead forecasts have ECE <= m + 1,
    whatever the outcomes."""
    rng = np.random.default_rng(seed)
    T, m = 3000, 20
    y = (rng.random(T) < 0.5 + 0.45 * np.sin(np.arange(T) / (40 + 30 * seed))).astype(np.int32)
    p, pt, alpha = aosa(y, m)
    e = float(ece(pt, y))
    np.testing.assert_allclose(e, float(sum(abs(a) for a in alpha)), rtol=1e-9)
    assert e <= m + 1
    assert float(ece(p, y)) > m + 1  # AOSA's own forecasts are not ECE-calibrated (no vacuous test)


@pytest.mark.parametrize("dtype", ["int", "float"])
def test_ece_from_counts_equals_expanded_ece(x64, dtype):
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 2000)
    counts, ones = ref.aosa_counts(y, 30)
    if dtype == "float":
        counts, ones = counts.astype(float), ones.astype(float)
    p = np.repeat(np.arange(31) / 30, counts.astype(int))
    yy = np.concatenate([np.r_[np.ones(int(o)), np.zeros(int(c - o))] for c, o in zip(counts, ones)])
    np.testing.assert_allclose(float(ece_from_counts(counts, ones, 30)), ref.ece(p, yy), rtol=1e-10)


def test_ece_from_counts_keeps_precision_of_large_counts_in_float32():
    # 10^7 rounds at one grid point, bias = counts*i/m - ones = 3 exactly (beyond float32's
    # integer range only the split counts = q*m + r keeps it exact)
    m, i = 1000, 999
    counts = np.zeros(m + 1, np.int32)
    ones = np.zeros(m + 1, np.int32)
    counts[i] = 10_000_000
    ones[i] = 10_000_000 * i // m - 3
    assert float(ece_from_counts(counts, ones, m)) == 3.0


# ---------------------------------------------------------------------------------------------
# Conformance: jit, vmap over datasets, no retrace; weights as multiplicities

JITTABLE = {
    "ece": lambda p, y, w: ece(p, y, sample_weight=w),
    "binned_uniform": lambda p, y, w: binned_ece(p, y, n_bins=5, strategy="uniform", sample_weight=w),
    "binned_quantile_l2": lambda p, y, w: binned_ece(p, y, n_bins=5, strategy="quantile", sample_weight=w, order=2),
    "lp": lambda p, y, w: lp_calibration_error(p, y, 0.2, order=2, sample_weight=w),
    "brier": lambda p, y, w: brier(p, y, sample_weight=w),
    "log_loss": lambda p, y, w: log_loss(p, y, sample_weight=w),
    "mce": lambda p, y, w: mce(p, y, n_bins=5, strategy="uniform", sample_weight=w),
    "mce_quantile": lambda p, y, w: mce(p, y, n_bins=5, strategy="quantile", sample_weight=w),
    "ace": lambda p, y, w: ace(p, y, n_bins=4, sample_weight=w),
}


@pytest.mark.parametrize("name", sorted(JITTABLE))
def test_jit_vmap_no_retrace(name):
    fn = JITTABLE[name]
    data = [_data(s, n=40, grid=8, weights=True) for s in range(4)]
    P, Y, W = (jnp.asarray(np.stack(z)) for z in zip(*data))
    chex.clear_trace_counter()  # the counter is keyed by code: parametrised cases share it

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched(P, Y, W):
        return jax.vmap(fn)(P, Y, W)

    out = batched(P, Y, W)
    batched(P + 0.0, Y, W * 1.0)  # same shapes: no retrace
    chex.assert_shape(out, (4,))
    want = np.array([float(fn(jnp.asarray(p), jnp.asarray(y), jnp.asarray(w))) for p, y, w in data])
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5)  # float32 round-off, reordered sums


def test_ece_from_counts_vmaps():
    rng = np.random.default_rng(7)
    C = rng.integers(0, 50, (3, 11)).astype(np.int32)
    O = (C * rng.random((3, 11))).astype(np.int32)
    out = jax.jit(jax.vmap(lambda c, o: ece_from_counts(c, o, 10)))(C, O)
    np.testing.assert_allclose(np.asarray(out), [float(ece_from_counts(c, o, 10)) for c, o in zip(C, O)], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(JITTABLE))
def test_integer_weights_equal_repetition(x64, name):
    fn = JITTABLE[name]
    p, y, _ = _data(8, n=30, grid=6)
    reps = np.random.default_rng(8).integers(0, 4, 30)
    reps[0] = 1  # keep at least one round
    got = float(fn(jnp.asarray(p), jnp.asarray(y), jnp.asarray(reps.astype(float))))
    want = float(fn(jnp.asarray(np.repeat(p, reps)), jnp.asarray(np.repeat(y, reps)), None))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_binned_ece_is_differentiable():
    p, y, _ = _data(9, n=50)
    g = jax.grad(lambda q: binned_ece(q, y, n_bins=5))(jnp.asarray(p, jnp.float32))
    assert g.shape == (50,) and bool(jnp.all(jnp.isfinite(g))) and bool(jnp.any(g != 0))


# ---------------------------------------------------------------------------------------------
# Bad input

ALL = {
    "ece": lambda p, y, w=None: ece(p, y, sample_weight=w),
    "binned_ece": lambda p, y, w=None: binned_ece(p, y, sample_weight=w),
    "lp": lambda p, y, w=None: lp_calibration_error(p, y, 0.1, sample_weight=w),
    "brier": lambda p, y, w=None: brier(p, y, sample_weight=w),
    "log_loss": lambda p, y, w=None: log_loss(p, y, sample_weight=w),
    "mce": lambda p, y, w=None: mce(p, y, sample_weight=w),
    "ace": lambda p, y, w=None: ace(p, y, sample_weight=w),
}

BAD = {
    "nan": (np.array([0.2, np.nan]), np.array([0, 1]), None, "NaN"),
    "above_one": (np.array([0.2, 1.5]), np.array([0, 1]), None, r"\[0, 1\]"),
    "negative": (np.array([-0.1, 0.5]), np.array([0, 1]), None, r"\[0, 1\]"),
    "label_two": (np.array([0.2, 0.5]), np.array([0, 2]), None, "0 or 1"),
    "label_nan": (np.array([0.2, 0.5]), np.array([0.0, np.nan]), None, "NaN"),
    "mismatch": (np.array([0.2, 0.5, 0.1]), np.array([0, 1]), None, "mismatched"),
    "empty": (np.array([]), np.array([], np.int32), None, "empty"),
    "two_d": (np.array([[0.2, 0.5]]), np.array([[0, 1]]), None, "1-D"),
    "neg_weight": (np.array([0.2, 0.5]), np.array([0, 1]), np.array([1.0, -1.0]), "non-negative"),
    "zero_weight": (np.array([0.2, 0.5]), np.array([0, 1]), np.array([0.0, 0.0]), "zero"),
    "weight_shape": (np.array([0.2, 0.5]), np.array([0, 1]), np.array([1.0]), "shape"),
}


@pytest.mark.parametrize("fn", sorted(ALL))
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_raises(fn, case):
    p, y, w, msg = BAD[case]
    if fn == "ace" and case == "two_d":
        msg = "sum to 1"  # ace reads 2-D probs as multi-class rows
    with pytest.raises(ValueError, match=msg):
        ALL[fn](p, y, w)


def test_bad_settings_raise():
    p, y, _ = _data(10, n=10)
    with pytest.raises(ValueError, match="strategy"):
        binned_ece(p, y, strategy="kmeans")
    with pytest.raises(ValueError, match="n_bins"):
        binned_ece(p, y, n_bins=0)
    with pytest.raises(ValueError, match="order must"):
        binned_ece(p, y, order=0.5)
    with pytest.raises(ValueError, match="integer"):
        lp_calibration_error(p, y, 0.3)
    with pytest.raises(ValueError, match="epsilon"):
        lp_calibration_error(p, y, 0.0)
    with pytest.raises(ValueError, match="ones"):
        ece_from_counts(np.array([1, 1]), np.array([2, 0]), 1)
    with pytest.raises(ValueError, match="shape"):
        ece_from_counts(np.array([1, 1, 1]), np.array([0, 0, 0]), 1)


def test_docstring_examples():
    assert doctest.testmod(binary_module, raise_on_error=True).attempted > 0


def _exact_lp(j, m, y, k, power=1):
    """lp_calibration_error of forecasts j/m with K = k buckets, buckets from integer arithmetic."""
    return _lp_of_buckets(np.minimum(j * k // m, k - 1), y, k, power)


@pytest.mark.parametrize("m", [49, 1000])
def test_lp_calibration_error_buckets_float32_grid_points_by_value_or_by_index(m):
    """Without ``grid``, the float32 value of j/m is bucketed by the exact rule: it falls below
    bucket j where float32 rounds j/m down. With ``grid=m``, every j/m is in bucket j."""
    j = np.arange(m + 1)
    p = jnp.asarray(j / m, jnp.float32)
    by_value = bins_ref.exact_bin(np.asarray(p), m)
    assert np.sum(by_value < np.minimum(j, m - 1)) > 0  # the two readings differ here
    y = (j % 2).astype(np.int32)
    # 1e-6: float32 sums of m + 1 terms; a misplaced point moves the value by ~1/m.
    np.testing.assert_allclose(float(lp_calibration_error(p, y, 1 / m)), _lp_of_buckets(by_value, y, m), rtol=1e-6)
    np.testing.assert_allclose(float(lp_calibration_error(p, y, 1 / m, n_bins=m)), _exact_lp(j, m, y, m), rtol=1e-6)


def _lp_of_buckets(bucket, y, k, power=1):
    tot = 0.0
    for b in np.unique(bucket):
        s = bucket == b
        tot += s.mean() * abs(y[s].mean() - (b + 0.5) / k) ** power
    return tot ** (1 / power)


def test_lp_calibration_error_with_grid_index_buckets_coarser_than_the_grid():
    m, k = 1000, 7  # bucket edges i/7 are not grid points; grid points 143/1000 etc. are close
    j = np.random.default_rng(3).integers(0, m + 1, 5000)
    y = np.random.default_rng(4).integers(0, 2, 5000).astype(np.int32)
    p = jnp.asarray(j / m, jnp.float32)
    got = lp_calibration_error(p, y, 1 / k, order=2, n_bins=m)
    # 1e-6: float32 accumulation over 5000 rounds.
    np.testing.assert_allclose(float(got), _exact_lp(j, m, y, k, 2), rtol=1e-6)
    with pytest.raises(ValueError, match="grid"):
        lp_calibration_error(jnp.clip(p + 0.0004, 0.0, 1.0), y, 1 / k, n_bins=m)


# ---------------------------------------------------------------------------------------------
# One bin-edge rule: forecasts exactly on edges, against exact arithmetic, netcal and relplot

EDGE_KS = [3, 5, 7, 10, 15, 20, 49, 100, 1000]


def _edges(K, dtype):
    return (np.arange(K + 1) / K).astype(dtype)  # float(k/K) for every k: the nearest float


@pytest.mark.parametrize("K", EDGE_KS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bin_index_on_every_edge_is_exact(K, dtype):
    p = _edges(K, dtype)
    ctx = jax.enable_x64(dtype == "float64")
    with ctx:
        got = np.asarray(bin_index(jnp.asarray(p), K))
    want = bins_ref.exact_bin(p, K)
    np.testing.assert_array_equal(got, want)
    # and a hair either side of every edge
    for direction in (-np.inf, np.inf):
        q = np.clip(np.nextafter(p, np.array(direction, dtype)), 0, 1).astype(dtype)
        with jax.enable_x64(dtype == "float64"):
            np.testing.assert_array_equal(np.asarray(bin_index(jnp.asarray(q), K)), bins_ref.exact_bin(q, K))


@pytest.mark.parametrize("K", EDGE_KS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bin_edges_agree_with_netcal_and_relplot_where_they_are_exact(K, dtype):
    """netcal compares with np.linspace's edges and relplot truncates p / (1/K): both are exact
    at some edges and an ulp off at others. jcalib agrees with each of them on every edge where
    that library's rule agrees with exact arithmetic, and in float32 netcal (which compares
    float32 forecasts with float64 edges) is exact on every edge."""
    p = _edges(K, dtype)
    with jax.enable_x64(dtype == "float64"):
        got = np.asarray(bin_index(jnp.asarray(p), K))
    exact = bins_ref.exact_bin(p, K)
    for peer in (bins_ref.netcal_bin(p, K), bins_ref.relplot_bin(p, K)):
        same = peer == exact
        np.testing.assert_array_equal(got[same], peer[same])
    if dtype == "float32":
        np.testing.assert_array_equal(got, bins_ref.netcal_bin(p, K))
    if dtype == "float64" and K in (5, 10, 20):
        np.testing.assert_array_equal(got, bins_ref.netcal_bin(p, K))  # linspace is exact here


def test_binned_ece_at_edges_matches_netcal_and_relplot(x64):
    """The issue's example: float 0.3 lies below 3/10, so it shares bin 2 with 0.2."""
    p, y = np.array([0.2, 0.3]), np.array([0, 1])
    want = bins_ref.binned_gaps(p, y, bins_ref.netcal_bin(p, 10), 10)
    np.testing.assert_allclose(float(binned_ece(p, y, n_bins=10)), np.sum(want[0] * want[1]) / 2, rtol=1e-12)
    np.testing.assert_allclose(float(binned_ece(p, y, n_bins=10)), relplot.metrics.binnedECE(p, y, nbins=10), rtol=1e-12)
    np.testing.assert_allclose(float(binned_ece(p, y, n_bins=10)), 0.25, rtol=1e-12)


@pytest.mark.parametrize("K", [10, 20])
def test_every_binned_function_uses_the_one_rule(x64, K):
    """binned_ece, mce, lp_calibration_error and the multi-class ECEs bin edge forecasts alike."""
    p = np.tile(_edges(K, "float64"), 3)
    y = (np.arange(p.size) % 3 == 0).astype(np.int32)
    b = bins_ref.exact_bin(p, K)
    W, gap = bins_ref.binned_gaps(p, y, b, K)
    np.testing.assert_allclose(float(binned_ece(p, y, n_bins=K)), np.sum(W * gap) / p.size, rtol=1e-12)
    np.testing.assert_allclose(float(mce(p, y, n_bins=K)), gap[W > 0].max(), rtol=1e-12)
    np.testing.assert_allclose(float(lp_calibration_error(p, y, 1 / K)), ref.lp_calibration_error(p, y, 1 / K), rtol=1e-12)
    two = np.stack([1 - p, p], axis=1)
    cw = np.mean([
        np.sum(Wc * gc) / p.size
        for Wc, gc in (bins_ref.binned_gaps(two[:, c], (y == c), bins_ref.exact_bin(two[:, c], K), K) for c in (0, 1))
    ])
    np.testing.assert_allclose(float(multiclass_metrics.classwise_ece(two, y, n_bins=K)), cw, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# MCE and ACE


@pytest.mark.parametrize("weights", [False, True])
def test_mce_matches_reference(x64, weights):
    p, y, w = _data(11, n=300, weights=weights)
    np.testing.assert_allclose(float(mce(p, y, n_bins=10, sample_weight=w)), bins_ref.mce(p, y, 10, w), rtol=1e-12)


def test_mce_is_netcal_mce_off_edges(x64):
    """netcal's MCE: max over uniform bins (np.linspace edges) of |accuracy - confidence|."""
    p, y, _ = _data(12, n=500)
    idx = bins_ref.netcal_bin(p, 15)
    W, gap = bins_ref.binned_gaps(np.clip(p, np.finfo(float).eps, 1 - np.finfo(float).eps), y, idx, 15)
    np.testing.assert_allclose(float(mce(p, y)), gap.max(), rtol=1e-12)


def test_mce_bounds_ece_and_sees_one_bad_bin(x64):
    p, y, _ = _data(13, n=400)
    p = 0.9 * p  # the top bin [14/15, 1] stays empty
    assert float(mce(p, y)) >= float(binned_ece(p, y))
    # a single miscalibrated forecast in its own bin: ECE barely moves, MCE is its full gap
    p2, y2 = np.r_[p, 0.97], np.r_[y, 0]
    assert float(mce(p2, y2)) >= 0.97 - 1e-12 > 10 * (float(binned_ece(p2, y2)) - float(binned_ece(p, y)))


@pytest.mark.parametrize("weights", [False, True])
def test_ace_matches_reference_binary(x64, weights):
    p, y, w = _data(14, n=300, weights=weights)
    np.testing.assert_allclose(float(ace(p, y, n_bins=15, sample_weight=w)), bins_ref.ace(p, y, 15, w), rtol=1e-12)


def test_ace_matches_reference_multiclass(x64):
    rng = np.random.default_rng(15)
    v = rng.dirichlet(np.ones(4) * 0.7, 400)
    y = np.array([rng.choice(4, p=row) for row in v ** 1.5 / (v ** 1.5).sum(1, keepdims=True)])
    np.testing.assert_allclose(float(ace(v, y, n_bins=10)), bins_ref.ace(v, y, 10), rtol=1e-12)


def test_ace_counts_bins_equally():
    """ACE is an unweighted mean over equal-mass bins: with n = 4 and 2 bins, each bin counts 1/2."""
    got = ace(jnp.array([0.1, 0.2, 0.8, 0.9]), jnp.array([0, 1, 1, 1]), n_bins=2)
    np.testing.assert_allclose(float(got), (0.35 + 0.15) / 2, rtol=1e-6)  # float32


# ---------------------------------------------------------------------------------------------
# Precision: float64 inputs without x64


@pytest.fixture
def fresh_precision_warning(monkeypatch):
    monkeypatch.setattr(binary_module, "_PRECISION_WARNED", set())


def test_float64_input_without_x64_warns_once_when_a_bin_changes(fresh_precision_warning):
    p, y = np.array([0.2, 0.3]), np.array([0, 1])  # float32(0.3) lies above 3/10
    with pytest.warns(PrecisionWarning, match="bins") as record:
        got = float(binned_ece(p, y, n_bins=10))
    assert record[0].filename == __file__  # points at the caller, not into jcalib
    np.testing.assert_allclose(got, 0.45, rtol=1e-6)  # float32: 0.3 moved to bin 3
    binned_ece(p, y, n_bins=10)  # once per process: no second warning (warnings are errors)
    mce(p, y, n_bins=10)


def test_no_precision_warning_when_nothing_changes(fresh_precision_warning):
    binned_ece(np.array([0.25, 0.35]), np.array([0, 1]), n_bins=10)  # no edge crossed
    binned_ece(jnp.asarray([0.2, 0.3]), np.array([0, 1]), n_bins=10)  # already float32: no rounding here
    log_loss(np.array([0.01, 0.99]), np.array([1, 0]))
    with jax.enable_x64(True):
        binned_ece(np.array([0.2, 0.3]), np.array([0, 1]), n_bins=10)
        log_loss(np.array([0.0, 1.0]), np.array([1, 0]))


def test_log_loss_at_zero_and_one_warns_and_matches_sklearn_with_x64(fresh_precision_warning):
    p, y = np.array([0.0, 1.0, 0.5, 0.5, 0.5]), np.array([1, 0, 1, 0, 1])
    with pytest.warns(PrecisionWarning, match="epsilon"):
        f32 = float(log_loss(p, y))
    with jax.enable_x64(True):
        f64 = float(log_loss(p, y))
    np.testing.assert_allclose(f64, sk_log_loss(y, p), rtol=1e-12)
    np.testing.assert_allclose(f32, (2 * -np.log(np.finfo(np.float32).eps) + 3 * np.log(2)) / 5, rtol=1e-6)
    assert f64 > f32 + 8


def test_multiclass_ece_warns_on_float64_bin_change(fresh_precision_warning):
    v = np.array([[0.4, 0.6], [0.6, 0.4]])  # float64 0.6 < 6/10 < float32 0.6
    with pytest.warns(PrecisionWarning):
        multiclass_metrics.confidence_ece(v, np.array([0, 1]), n_bins=10)


def test_nll_at_zero_warns_and_matches_sklearn_with_x64(fresh_precision_warning):
    v = np.array([[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    y = np.array([1, 2])
    with pytest.warns(PrecisionWarning, match="epsilon"):
        f32 = float(multiclass_metrics.nll(v, y))
    with jax.enable_x64(True):
        np.testing.assert_allclose(float(multiclass_metrics.nll(v, y)), sk_log_loss(y, v, labels=[0, 1, 2]), rtol=1e-12)
    np.testing.assert_allclose(f32, (-np.log(np.finfo(np.float32).eps) - np.log(0.5)) / 2, rtol=1e-6)


@pytest.mark.parametrize("metric, program, options", [
    (binned_ece, "binned_ece_kernel", {"n_bins": 10}), (mce, "_mce_of", {"n_bins": 10}), (ece, "_ece_of", None),
])
def test_metric_is_one_compiled_program(metric, program, options):
    """Eager calls on new data of the same shape compile the metric once, as one program (not
    each of its operations: binned_ece compiled 35 on its first call), and a new setting compiles
    one more."""
    import jax.monitoring

    compiled = []

    def listen(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(kw.get("fun_name", ""))

    rng = np.random.default_rng(0)
    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        for _ in range(3):
            p = rng.uniform(size=300)
            metric(p, (rng.uniform(size=300) < p).astype(np.int32))
        if options is not None:
            metric(p, (rng.uniform(size=300) < p).astype(np.int32), **options)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert compiled.count(f"jit({program})") == 1 + (options is not None), compiled
    assert len(compiled) <= 10, compiled  # and a few array conversions of the first call

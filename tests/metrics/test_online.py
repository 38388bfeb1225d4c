"""(eps, lp)-calibration (both forms, both bucketings) and average regret, realised and in
expectation, against direct NumPy computations."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.metrics import average_regret, eps_calibration
from jcalib.metrics.online import calibration_from_buckets, grid_to_midpoint
from jcalib.scoring import Brier, Spherical


def _np_cal(values_of_round, bucket_of_round, y, weights, K, T, p, form):
    counts = np.zeros(K)
    bias = np.zeros(K)
    for v, b, yy, w in zip(values_of_round, bucket_of_round, y, weights):
        counts[b] += w
        bias[b] += w * (yy - v)
    if form == "norm":
        return (np.abs(bias / T) ** p).sum() ** (1 / p)
    gap = np.abs(bias) / np.where(counts > 0, counts, 1)
    return ((counts / T) * gap**p).sum() ** (1 / p)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("form", ["mean", "norm"])
def test_grid_and_midpoint_bucketings(p, form, x64):
    rng = np.random.default_rng(0)
    m, T = 7, 400
    j = rng.integers(0, m + 1, T)
    y = rng.integers(0, 2, T)
    f = j / m
    got = float(eps_calibration(f, y, n_bins=m, order=p, form=form))
    want = _np_cal(j / m, j, y, np.ones(T), m + 1, T, p, form)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    K = 3
    k = np.minimum(j * K // m, K - 1)
    got = float(eps_calibration(f, y, n_bins=m, n_buckets=K, order=p, form=form))
    want = _np_cal((k + 0.5) / K, k, y, np.ones(T), K, T, p, form)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_forms_agree_at_p1_and_differ_at_p2():
    rng = np.random.default_rng(1)
    f = rng.integers(0, 5, 300) / 4
    y = rng.integers(0, 2, 300)
    a, b = eps_calibration(f, y, n_bins=4, form="mean"), eps_calibration(f, y, n_bins=4, form="norm")
    np.testing.assert_allclose(float(a), float(b), rtol=1e-6)
    assert float(eps_calibration(f, y, n_bins=4, order=2, form="norm")) < float(eps_calibration(f, y, n_bins=4, order=2, form="mean"))


def test_grid_points_on_bucket_edges_use_integer_arithmetic():
    """m = 44, K = 22: grid point 26/44 lies on the left edge of bucket 13; in float32,
    fl(26/44) * 22 = 12.999999 would put it in bucket 12. The integer map puts it in bucket 13."""
    assert int(grid_to_midpoint(26, 44, 22)) == 13
    p = np.float32(26 / 44)
    assert int(np.floor(p * np.float32(22))) == 12  # the float32 floor misbuckets it
    c = eps_calibration(jnp.asarray([p], jnp.float32), jnp.asarray([1]), n_bins=44, n_buckets=22)
    np.testing.assert_allclose(float(c), 1 - 13.5 / 22, rtol=1e-6)  # midpoint of bucket 13


def test_expected_version_over_mixtures(x64):
    rng = np.random.default_rng(2)
    m, T = 6, 200
    i = rng.integers(0, m, T)
    sup = np.stack([i, i + 1], 1) / m
    w0 = rng.uniform(0, 1, T)
    probs = np.stack([w0, 1 - w0], 1)
    y = rng.integers(0, 2, T)
    got = float(eps_calibration(sup, y, n_bins=m, probs=probs))
    counts, bias = np.zeros(m + 1), np.zeros(m + 1)
    for t in range(T):
        for k in range(2):
            counts[i[t] + k] += probs[t, k]
            bias[i[t] + k] += probs[t, k] * (y[t] - (i[t] + k) / m)
    np.testing.assert_allclose(got, np.abs(bias).sum() / T, rtol=1e-12)
    q = rng.uniform(0, 1, T)
    for rule in (Brier(), Spherical()):
        got = float(average_regret(sup, q, y, scoring=rule, probs=probs))
        want = np.mean((probs * np.asarray(rule(sup, y[:, None]))).sum(1) - np.asarray(rule(q, y)))
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_off_grid_midpoints_and_regret_sign():
    f = np.array([0.05, 0.15, 0.95])
    y = np.array([0, 1, 1])
    c = float(eps_calibration(f, y, n_buckets=10))
    np.testing.assert_allclose(c, (0.05 + 0.85 + 0.05) / 3, rtol=1e-6)
    assert float(average_regret(np.array([0.9]), np.array([0.5]), np.array([1]))) < 0


def test_bad_input():
    with pytest.raises(ValueError, match="not on the grid"):
        eps_calibration(np.array([0.33]), np.array([1]), n_bins=4)
    with pytest.raises(ValueError, match="pass n_bins"):
        eps_calibration(np.array([0.5]), np.array([1]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        eps_calibration(np.array([1.5]), np.array([1]), n_buckets=2)
    with pytest.raises(ValueError, match="NaN"):
        average_regret(np.array([0.5]), np.array([np.nan]), np.array([1]))
    with pytest.raises(ValueError, match="form"):
        calibration_from_buckets(np.ones(2), np.ones(2), np.ones(2), 2, form="max")


def test_empty_rounds_are_refused():
    # both returned NaN on T = 0
    with pytest.raises(ValueError, match="empty"):
        eps_calibration(jnp.zeros(0), jnp.zeros(0, jnp.int32), n_bins=4)
    with pytest.raises(ValueError, match="empty"):
        average_regret(jnp.zeros(0), jnp.zeros(0), jnp.zeros(0, jnp.int32))

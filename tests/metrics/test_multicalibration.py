"""Multicalibration errors: the NumPy reference, the peers (``multicalibration``, ``mcgrad``) on
identical inputs, the audit's p-value, jit/vmap/no-retrace, and input checks."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.metrics import (
    SparseGroups,
    binned_ece,
    mcgrad_multicalibration_error,
    multicalibration_audit,
    multicalibration_error,
)
from reference.multicalibration import binned_group_errors


def _data(n=3000, G=6, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    g = rng.uniform(size=(n, G)) < rng.uniform(0.1, 0.6, G)
    shift = 0.15 * g[:, 0] - 0.1 * g[:, 1]  # groups 0 and 1 miscalibrated, others not
    y = (rng.uniform(size=n) < np.clip(p + shift, 0, 1)).astype(np.int32)
    return p, y, g


def test_binned_matches_reference_x64(x64):
    p, y, g = _data()
    w = np.random.default_rng(1).uniform(0.5, 2, p.shape[0])
    if True:  # float64 (the x64 fixture)
        r = multicalibration_error(jnp.asarray(p), jnp.asarray(y), jnp.asarray(g), n_bins=7, sample_weight=jnp.asarray(w))
        ref, sizes = binned_group_errors(p, y, g, 7, w)
        np.testing.assert_allclose(np.asarray(r.per_group), ref, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(r.group_size), sizes, rtol=1e-12)
        assert int(r.worst_group) == int(np.argmax(ref)) and float(r.worst) == pytest.approx(ref.max(), rel=1e-12)


def test_one_group_of_everything_is_binned_ece():
    p, y, _ = _data(n=500)
    r = multicalibration_error(p.astype(np.float32), y, np.ones((500, 1), bool), n_bins=10)
    assert float(r.worst) == pytest.approx(float(binned_ece(p.astype(np.float32), y, n_bins=10)), rel=1e-5)


def test_groups_as_function_of_features_and_min_size():
    p, y, g = _data(n=800)
    feats = g.astype(np.float32)
    r1 = multicalibration_error(p.astype(np.float32), y, g)
    r2 = multicalibration_error(p.astype(np.float32), y, lambda x: x > 0.5, features=feats)
    np.testing.assert_allclose(r1.per_group, r2.per_group, rtol=1e-6)
    big = multicalibration_error(p.astype(np.float32), y, g, min_size=float(np.sort(g.sum(0))[-2]))
    assert float(big.worst_size) >= float(np.sort(g.sum(0))[-2])


def test_parity_with_multicalibration_package(x64):
    """The package's HJZ audit (per group and bin: mean forecast minus mean label) on the same
    bins: our per-(group, bin) biases divided by cell weights are the same numbers."""
    from multicalibration.HJZ.utils import calculate_average_labels, calculate_calibration_errors, discretize_values

    from jcalib.metrics.multicalibration import group_bin_tables

    p, y, g = _data(n=2000, G=5)
    n_bins = 10
    subgroups = [np.flatnonzero(g[:, j]) for j in range(g.shape[1])]
    bins = discretize_values(p[:, None], n_bins)
    avg, _ = calculate_average_labels(y[:, None].astype(float), bins, subgroups, n_bins)
    errs = calculate_calibration_errors(avg, p[:, None], bins, subgroups)[:, :, 0, 0]  # (bins, groups)
    if True:  # float64 (the x64 fixture)
        wb, bias = group_bin_tables(jnp.asarray(p), jnp.asarray(y, jnp.float64), jnp.ones(2000), jnp.asarray(g, jnp.float64), n_bins)
        ours = np.where(np.asarray(wb) > 0, np.asarray(bias) / np.maximum(np.asarray(wb), 1), 0.0).T
    np.testing.assert_allclose(ours, errs, atol=1e-12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore:The inplace keyword")  # mcgrad's pandas calls
def test_parity_with_mcgrad_mce(x64):
    """mcgrad's MulticalibrationError on categorical segments (depth 1) and ours on the same
    segments as groups: per-segment ECCE-sigma and the MCE-sigma agree."""
    import pandas as pd
    from mcgrad.metrics import MulticalibrationError as McgradMCE

    rng = np.random.default_rng(3)
    n = 4000
    p = rng.uniform(0.02, 0.98, n)
    region = rng.integers(0, 4, n)
    y = (rng.uniform(size=n) < np.clip(p + 0.08 * (region == 2), 0, 1)).astype(np.int32)
    df = pd.DataFrame({"y": y, "p": p, "region": region.astype(str)})
    mce = McgradMCE(df, "y", "p", categorical_segment_columns=["region"], max_depth=1, max_values_per_segment_feature=10,
                    min_samples_per_segment=1, precision_dtype="float64")
    groups = np.stack([np.ones(n, bool)] + [region == k for k in range(4)], 1)
    if True:  # float64 (the x64 fixture)
        r = mcgrad_multicalibration_error(jnp.asarray(p), jnp.asarray(y), jnp.asarray(groups))
        assert float(r.worst) == pytest.approx(float(mce.mce_sigma), rel=1e-9)
        np.testing.assert_allclose(np.sort(np.asarray(r.per_group)), np.sort(mce.segments_ecce_sigma), rtol=1e-9)


def test_smooth_detects_the_miscalibrated_groups():
    p, y, g = _data(n=4000)
    r = multicalibration_error(p.astype(np.float32), y, g, method="smooth", n_bins=50, bandwidth=0.05)
    per = np.asarray(r.per_group)
    assert per[0] > 2 * np.median(per[2:]) and per[1] > np.median(per[2:])
    assert int(r.worst_group) == 0


def test_audit_p_values():
    p, y, g = _data(n=2000)
    key = jax.random.key(0)
    bad = multicalibration_audit(p.astype(np.float32), y, g, alpha=0.02, key=key, n_resamples=100)
    good = multicalibration_audit(p.astype(np.float32), y, g, alpha=0.4, key=key, n_resamples=100)
    assert float(bad.p_value) < 0.05 and float(good.p_value) > 0.5
    assert float(bad.statistic) == pytest.approx(float(bad.error.worst))


def test_jit_vmap_no_retrace():
    p, y, g = _data(n=256)
    p = jnp.asarray(p, jnp.float32)
    f = jax.jit(chex.assert_max_traces(lambda p, y, g: multicalibration_error(p, y, g).worst, n=1))
    f(p, y, g)
    f(p[::-1], y, g)
    keys = jax.random.split(jax.random.key(0), 3)
    ys = jax.vmap(lambda k: jax.random.bernoulli(k, p).astype(jnp.int32))(keys)
    batched = jax.vmap(lambda yy: multicalibration_error(p, yy, g).worst)(ys)
    one = multicalibration_error(p, ys[1], g).worst
    assert float(batched[1]) == pytest.approx(float(one), rel=1e-6)
    m = jax.jit(lambda p, y, g: mcgrad_multicalibration_error(p, y, g).worst)
    assert float(m(p, y, g)) == pytest.approx(float(mcgrad_multicalibration_error(p, y, g).worst), rel=1e-6)


@pytest.mark.parametrize("bad, match", [
    (np.ones((5, 2)), "one row per forecast"),
    (np.full((10, 2), 1.5), r"memberships in \[0, 1\]"),
    (np.ones(10), "2-D"),
])
def test_bad_groups(bad, match):
    p, y = np.linspace(0.1, 0.9, 10), np.arange(10) % 2
    with pytest.raises(ValueError, match=match):
        multicalibration_error(p, y, bad)


def test_features_rules():
    p, y = np.linspace(0.1, 0.9, 10), np.arange(10) % 2
    with pytest.raises(ValueError, match="features is required"):
        multicalibration_error(p, y, lambda x: x)
    with pytest.raises(ValueError, match="only used"):
        multicalibration_error(p, y, np.ones((10, 1)), features=np.ones((10, 1)))
    with pytest.raises(TypeError, match="key"):
        multicalibration_audit(p, y, np.ones((10, 1)), alpha=0.1, key=0)


def test_sparse_groups_give_the_dense_values(x64):
    p, y, g = _data(n=1500, G=9)
    s = SparseGroups.from_dense(g)
    assert s.ids.shape[1] == g.sum(1).max()
    for kw in ({"n_bins": 6}, {"method": "smooth", "n_bins": 20}):
        a, b = multicalibration_error(p, y, g, **kw), multicalibration_error(p, y, s, **kw)
        np.testing.assert_allclose(np.asarray(b.per_group), np.asarray(a.per_group), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(np.asarray(b.group_size), np.asarray(a.group_size))
    a, b = mcgrad_multicalibration_error(p, y, g), mcgrad_multicalibration_error(p, y, s)
    np.testing.assert_allclose(np.asarray(b.per_group), np.asarray(a.per_group), rtol=1e-10)
    with pytest.raises(ValueError, match="ids must lie"):
        SparseGroups(jnp.array([[0, 5]]), 3)
    with pytest.raises(ValueError, match="one row per forecast"):
        multicalibration_error(p, y, SparseGroups(jnp.zeros((3, 1), jnp.int32), 2))


def test_docstring_examples():
    import doctest

    import jcalib.forecasters.multicalibration as fm
    import jcalib.metrics.multicalibration as mm
    import jcalib.payoffs.multicalibration as pm
    import jcalib.recalibration.multicalibration as rm

    for module in (mm, rm, fm, pm):
        assert doctest.testmod(module, raise_on_error=True).attempted >= 4

"""Tests of histogram binning (jcalib.recalibration.histogram): parity with a NumPy restatement
of netcal's HistogramBinning (netcal needs torch, which the project does not install; see
tests/reference/classifier_recalibration.py), binary and one-vs-rest; equal-mass bins against a
plain reference; the method's in-sample guarantee (zero binned ECE on its own bins);
conformance (jit, vmap over bootstrap refits, no retrace); the adapter and bad input."""

import doctest

import numpy as np
import pytest
from reference import bins as bins_ref
from reference import classifier_recalibration as ref

from jcalib.metrics import binned_ece
from jcalib.recalibration import HistogramBinning, SklearnRecalibrator
from jcalib.recalibration import histogram as histogram_module



def _off_edges(p, n_bins):
    """netcal bins its fit left-closed and its predictions right-closed: the two rules differ
    only for scores exactly on an edge, so parity is checked where no score is."""
    edges = np.linspace(0, 1, n_bins + 1)
    assert not np.any(np.isin(p, edges[1:-1]))


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
@pytest.mark.parametrize("n_bins", [5, 10, 15])
def test_matches_netcal_histogram_binning(x64, kind, n_bins):
    _, (_, y_cal), (_, y_te), p_cal, p_te = ref.classifier_split(kind, seed=1, model="logistic")
    _off_edges(p_cal, n_bins)
    _off_edges(p_te, n_bins)
    got = np.asarray(HistogramBinning(n_bins=n_bins).fit(p_cal, y_cal)(p_te))
    want = ref.one_vs_rest(
        lambda s, t, w: ref.netcal_histogram_fit(s, t, n_bins), ref.netcal_histogram_predict, p_cal, y_cal, p_te
    )
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ref.nll(np.clip(got, 1e-15, 1), y_te), ref.nll(np.clip(want, 1e-15, 1), y_te), rtol=1e-12)


def test_empty_bins_predict_their_midpoint(x64):
    s = np.array([0.05, 0.07, 0.91, 0.93])
    params = HistogramBinning(n_bins=10).fit(np.stack([1 - s, s], 1), np.array([0, 1, 1, 1]))
    np.testing.assert_allclose(np.asarray(params.values), [0.5, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 1.0])


def test_edges_follow_the_one_bin_rule(x64):
    """A calibration score on an edge and a test score on the same edge share a bin, the bin
    jcalib.metrics.bin_index gives (float 0.3 < 3/10: bin 2; float 0.6 < 6/10: bin 5)."""
    s = np.array([0.3, 0.6, 0.35, 0.65])
    y = np.array([1, 0, 0, 1])
    params = HistogramBinning(n_bins=10).fit(np.stack([1 - s, s], 1), y)
    assert list(bins_ref.exact_bin(s, 10)) == [2, 5, 3, 6]
    np.testing.assert_allclose(np.asarray(params.values)[[2, 3, 5, 6]], [1, 0, 0, 1])
    got = np.asarray(params(np.stack([1 - s, s], 1)))[:, 1]
    np.testing.assert_allclose(got, y)


@pytest.mark.parametrize("weights", [False, True])
def test_equal_mass_bins_match_reference(x64, weights):
    rng = np.random.default_rng(2)
    s = np.round(rng.beta(2, 5, 300), 3)  # ties
    y = (rng.random(300) < s).astype(int)
    w = rng.integers(0, 3, 300).astype(float) if weights else None
    params = HistogramBinning(n_bins=8, strategy="quantile").fit(np.stack([1 - s, s], 1), y, sample_weight=w)
    t = np.concatenate([rng.random(400), s, [0.0, 1.0]])
    got = np.asarray(params(np.stack([1 - t, t], 1)))[:, 1]
    want = ref.quantile_histogram_predict(ref.quantile_histogram_fit(s, y, 8, w), t)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_in_sample_binned_ece_is_zero(x64, strategy):
    """Zadrozny-Elkan's histogram binning replaces each score by its bin's frequency of ones, so
    on the calibration set every bin's mean forecast equals its frequency: the binned ECE of the
    recalibrated scores, grouped by the fitted bins, is 0 (and the raw scores' is not)."""
    _, (_, y_cal), _, p_cal, _ = ref.classifier_split("binary", seed=3)
    q = np.asarray(HistogramBinning(n_bins=10, strategy=strategy).fit(p_cal, y_cal)(p_cal))[:, 1]
    # grouping by fitted value merges bins with equal values, which keeps each group's gap 0
    groups = {v: np.flatnonzero(q == v) for v in np.unique(q)}
    assert max(abs(q[g].mean() - y_cal[g].mean()) for g in groups.values()) < 1e-12
    assert float(binned_ece(p_cal[:, 1], y_cal, n_bins=10, strategy=strategy)) > 0.01


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_jit_vmap_bootstrap_no_retrace(check_bootstrap_refits, kind):
    check_bootstrap_refits(HistogramBinning(strategy="quantile"), kind)


def test_adapter_and_bad_input():
    _, (_, y_cal), _, p_cal, p_te = ref.classifier_split("binary", seed=6)
    method = HistogramBinning(n_bins=12, strategy="quantile")
    cal = SklearnRecalibrator(method).fit(p_cal, y_cal)
    np.testing.assert_allclose(np.asarray(cal.predict_proba(p_te)), np.asarray(method.fit(p_cal, y_cal)(p_te)))
    with pytest.raises(ValueError, match="strategy"):
        HistogramBinning(strategy="kmeans")
    with pytest.raises(ValueError, match="n_bins"):
        HistogramBinning(n_bins=0)
    with pytest.raises(ValueError, match="simplex|sum to 1|shape"):
        HistogramBinning().fit(p_cal[:, 1], y_cal)


def test_docstring_examples():
    assert doctest.testmod(histogram_module, raise_on_error=True).attempted > 0


def test_fit_and_apply_programs_have_no_host_callback():
    """The fit's and the map's programs hold no in-graph check (``bin_index`` on scores checked
    at the boundary): a host callback would keep them out of the persistent compilation cache."""
    import jax

    from jcalib.recalibration import _one_vs_rest

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 30).astype(np.float32)
    labels = rng.integers(0, 3, 30).astype(np.int32)
    fit = jax.make_jaxpr(lambda p: histogram_module._histogram_fit(p, labels, np.ones(30, np.float32), 5, "uniform"))(probs)
    fitted = HistogramBinning(n_bins=5).fit(probs, labels)
    apply = jax.make_jaxpr(lambda p: _one_vs_rest.apply_one_vs_rest(histogram_module._histogram_apply1, fitted, p))(probs)
    assert "callback" not in str(fit) and "callback" not in str(apply)

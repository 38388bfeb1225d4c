"""RecalibrationCounts: the O(m) summary gives the same metrics as the full history."""

from __future__ import annotations

import jax
import numpy as np

import jcalib
from jcalib.forecasters import ApproachabilityRecalibrator, KuleshovErmon
from jcalib.metrics import average_regret, eps_calibration
from jcalib.natures import DistortedModel
from jcalib.recorders import RecalibrationCounts


def _both(f, m, T=600):
    key = jax.random.key(7)
    hist = jcalib.core.play(f, DistortedModel(), T, key=key, record=jcalib.recorders.History(mixtures=True))
    summ = jcalib.core.play(f, DistortedModel(), T, key=key, record=RecalibrationCounts(m, n_model_buckets=5))
    return hist, summ


def test_summary_matches_history_metrics(x64):
    f = ApproachabilityRecalibrator.for_horizon(600)
    m = f.n_bins
    h, s = _both(f, m)
    sup, w = np.asarray(h.public.support), np.asarray(h.public.probs)
    for p, form in ((1, "mean"), (2, "norm")):
        np.testing.assert_allclose(float(s.calibration(p, form)), float(eps_calibration(sup, h.y, n_bins=m, order=p, form=form, probs=w)), rtol=1e-9)
        np.testing.assert_allclose(float(s.calibration(p, form, expected=False)), float(eps_calibration(h.forecast, h.y, n_bins=m, order=p, form=form)), rtol=1e-9)
        np.testing.assert_allclose(float(s.calibration(p, form, n_buckets=4)), float(eps_calibration(sup, h.y, n_bins=m, n_buckets=4, order=p, form=form, probs=w)), rtol=1e-9)
    np.testing.assert_allclose(float(s.regret()), float(average_regret(sup, h.x, h.y, probs=w)), rtol=1e-9)
    np.testing.assert_allclose(float(s.regret(expected=False)), float(average_regret(h.forecast, h.x, h.y)), rtol=1e-9)
    np.testing.assert_allclose(float(s.model_calibration()), float(eps_calibration(h.x, h.y, n_buckets=5)), rtol=1e-9)
    assert int(s.off_grid) == 0 and int(s.T) == 600


def test_summary_with_wide_mixtures_of_kuleshov_ermon(x64):
    f = KuleshovErmon(4, 0.2)
    h, s = _both(f, 4, T=300)
    np.testing.assert_allclose(float(s.calibration()), float(eps_calibration(h.public.support, h.y, n_bins=4, probs=h.public.probs)), rtol=1e-9)


def test_memory_is_independent_of_T():
    f = ApproachabilityRecalibrator(n_bins=10, step_size=0.05)
    a = jcalib.core.play(f, DistortedModel(), 100, key=jax.random.key(0), record=RecalibrationCounts(10))
    b = jcalib.core.play(f, DistortedModel(), 5000, key=jax.random.key(0), record=RecalibrationCounts(10), chunk=1000)
    assert jax.tree_util.tree_map(np.shape, a) == jax.tree_util.tree_map(np.shape, b)
    assert int(b.counts.sum()) == 5000

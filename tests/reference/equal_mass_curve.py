"""Plain Python reference for the equal-mass reliability curve with weights read as counts:
scikit-learn's ``calibration_curve(strategy="quantile")`` rule (edges at the type-7 percentiles,
``np.searchsorted(edges[1:-1], p)``) written out as loops over the sorted, repeated sample."""

from __future__ import annotations

import numpy as np


def _lerp(a, b, t):
    """numpy's two-sided linear interpolation (``numpy.lib._function_base_impl._lerp``)."""
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def edges(p, w, n_bins):
    """The inner edges e_1..e_{K-1}: the type-7 quantiles of the sample in which p_i appears
    w_i times (W = sum w; the sample's entry at index x is the first sorted p_i whose cumulative
    weight exceeds x)."""
    pairs = sorted(zip(np.asarray(p, float).tolist(), np.asarray(w, float).tolist()))
    cum, run = [], 0.0
    for _, wi in pairs:
        run += wi
        cum.append(run)
    top = max(run - 1, 0.0)

    def value_at(x):
        x = min(x, top)
        for (pi, _), ci in zip(pairs, cum):
            if ci > x:
                return pi
        return pairs[-1][0]

    out = []
    for q in np.linspace(0.0, 1.0, n_bins + 1)[1:-1] * 100 / 100:
        h = top * float(q)
        lo = float(np.floor(h))
        out.append(_lerp(value_at(lo), value_at(lo + 1), h - lo))
    return out


def curve(p, y, n_bins, w=None):
    """(forecast, frequency, weight) per bin; NaN where a bin is empty."""
    w = np.ones(len(p)) if w is None else np.asarray(w, float)
    e = edges(p, w, n_bins)
    sw, sp, sy = [0.0] * n_bins, [0.0] * n_bins, [0.0] * n_bins
    for pi, yi, wi in zip(np.asarray(p, float).tolist(), np.asarray(y, float).tolist(), w.tolist()):
        b = sum(1 for ek in e if ek < pi)
        sw[b] += wi
        sp[b] += wi * pi
        sy[b] += wi * yi
    fc = [a / s if s > 0 else np.nan for a, s in zip(sp, sw)]
    fr = [a / s if s > 0 else np.nan for a, s in zip(sy, sw)]
    return np.array(fc), np.array(fr), np.array(sw)

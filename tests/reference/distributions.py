"""Slow NumPy/SciPy references for jcalib.distributions.

Piecewise-constant densities through ``scipy.stats.rv_histogram`` (masses per bin,
``density=False``); Gaussians through ``scipy.stats.norm``; the CRPS straight from its
definition $\\int (F(z) - 1[y \\le z])^2 dz$ by ``scipy.integrate.quad`` over each piece where
$F$ is smooth; moments and expectations by ``quad`` against the density.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate
import scipy.stats

QUAD = dict(epsabs=1e-13, epsrel=1e-12, limit=200)


def histogram(probs, edges):
    """The scipy distribution with bin masses ``probs`` on ``edges``."""
    return scipy.stats.rv_histogram((np.asarray(probs, np.float64), np.asarray(edges, np.float64)), density=False)


def _quad_pieces(f, breaks):
    """∫ f over [breaks[0], breaks[-1]], one quad per piece between consecutive breakpoints."""
    b = np.unique(np.asarray(breaks, np.float64))
    return sum(scipy.integrate.quad(f, lo, hi, **QUAD)[0] for lo, hi in zip(b[:-1], b[1:]))


def crps_by_quadrature(cdf, y, low, high, breaks=()):
    """∫ (F(z) - 1[y <= z])² dz for a distribution supported on [low, high] (finite).

    Outside [min(low, y), max(high, y)] the integrand is 0; ``breaks`` are extra points where
    F has kinks (bin edges), so every quad sees a smooth integrand.
    """
    lo, hi = min(low, y), max(high, y)
    pts = [lo, hi, y, *[b for b in breaks if lo <= b <= hi]]
    return _quad_pieces(lambda z: (cdf(z) - (1.0 if y <= z else 0.0)) ** 2, pts)


def crps_by_quadrature_infinite(cdf, y, loc, scale):
    """∫ (F(z) - 1[y <= z])² dz over the real line, split at y, for a distribution near loc."""
    left = scipy.integrate.quad(lambda z: cdf(z) ** 2, -np.inf, y, **QUAD)[0]
    right = scipy.integrate.quad(lambda z: (1 - cdf(z)) ** 2, y, np.inf, **QUAD)[0]
    return left + right


def piecewise_expect(fn, probs, edges):
    """E[fn(Y)] for the histogram density, by quad on every bin of positive mass."""
    e = np.asarray(edges, np.float64)
    p = np.asarray(probs, np.float64)
    return sum(
        pi / (b - a) * scipy.integrate.quad(fn, a, b, **QUAD)[0] for pi, a, b in zip(p, e[:-1], e[1:]) if pi > 0
    )


def piecewise_crps_definition(probs, edges, y):
    """CRPS of the histogram density at y from the definition, by quadrature."""
    dist = histogram(probs, edges)
    return crps_by_quadrature(dist.cdf, float(y), float(edges[0]), float(edges[-1]), breaks=edges)


def gaussian_crps_closed_form(loc, scale, y):
    """Gneiting–Raftery (2007) eq. (5): σ[z(2Φ(z) − 1) + 2φ(z) − 1/√π], z = (y − μ)/σ."""
    z = (y - loc) / scale
    return scale * (z * (2 * scipy.stats.norm.cdf(z) - 1) + 2 * scipy.stats.norm.pdf(z) - 1 / np.sqrt(np.pi))


def mixture_cdf(cdfs, weights):
    """z ↦ Σ_k w_k F_k(z)."""
    return lambda z: sum(w * c(z) for w, c in zip(weights, cdfs))


def mixture_quantile(cdf, alpha, lo, hi, iters=200):
    """inf{y : F(y) >= alpha} by bisection on [lo, hi] in float64."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if cdf(mid) >= alpha:
            hi = mid
        else:
            lo = mid
    return hi

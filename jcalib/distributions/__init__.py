"""Distributions over an interval of the real line (see the concepts page, docs/concepts.md).

Equinox modules with a batch shape, usable as forecasts (``Forecast.value``), as the support
of a :class:`jcalib.core.Mixture`, and inside ``jit``/``vmap``/``grad``:
:class:`PiecewiseConstant` (ORCA's forecast family, Marx et al. 2024) and :class:`Gaussian`, with
closed-form CDF, quantile, moments and CRPS; :class:`MixtureDistribution` of stacked ones.
"""

from .base import AbstractDistribution, check_outcomes
from .gaussian import Gaussian
from .mixture import MixtureDistribution
from .piecewise import PiecewiseConstant, check_edges, probs_atol, uniform_edges

__all__ = [
    "AbstractDistribution",
    "Gaussian",
    "MixtureDistribution",
    "PiecewiseConstant",
    "check_edges",
    "check_outcomes",
    "probs_atol",
    "uniform_edges",
]

r"""Arunachaleswaran et al.'s (2024) line-up of binary forecasters, sized for a horizon:
Almost-One-Step-Ahead and every baseline it is compared with (the demo's and
``experiments/aosa_distance_bound.py``'s forecasters)."""

from __future__ import annotations

from .._validation import HORIZON, declare
from ..core.types import AbstractForecaster
from .aosa import AlmostOneStepAhead
from .defensive import DefensiveForecaster
from .foster import FosterRandomized
from .gupta_ramdas import GuptaRamdas
from .trivial import Constant, RunningFrequency

__all__ = ["binary_suite"]


@declare(T=HORIZON)
def binary_suite(T: int) -> dict[str, AbstractForecaster]:
    r"""AOSA (both tie rules) and every binary baseline, each sized for horizon ``T`` by its
    ``for_horizon``, by display name.

    Args:
        T: the horizon (a positive int): AOSA's grid is $m = \lceil\sqrt T\rceil$
            (Arunachaleswaran et al. 2024, Theorem 1), Foster's and Gupta–Ramdas' grids follow
            their own rules.

    Returns:
        ``{"AOSA": ..., "AOSA (tie high)": ..., "Foster": ..., "Defensive": ...,
        "Gupta-Ramdas": ..., "Constant 1/2": ..., "Running frequency": ...}``, in this order.

    Example:
        >>> from jcalib.forecasters import binary_suite
        >>> tuple(binary_suite(100))[:3]
        ('AOSA', 'AOSA (tie high)', 'Foster')

    References:
        Arunachaleswaran, Collina, Roth, Shi (2024), *An Elementary Predictor Obtaining
        2√T+1 Distance to Calibration*, Theorem 1.
    """
    return {
        "AOSA": AlmostOneStepAhead.for_horizon(T),
        "AOSA (tie high)": AlmostOneStepAhead.for_horizon(T, tie="high"),
        "Foster": FosterRandomized.for_horizon(T),
        "Defensive": DefensiveForecaster.for_horizon(T),
        "Gupta-Ramdas": GuptaRamdas.for_horizon(T),
        "Constant 1/2": Constant.for_horizon(T),
        "Running frequency": RunningFrequency.for_horizon(T),
    }

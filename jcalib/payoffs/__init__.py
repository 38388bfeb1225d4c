"""jcalib.payoffs: Blackwell payoffs and half-space oracles (Marx et al. 2024).

A payoff $\\pi(x, p, y)$ turns a notion of calibration into a vector whose running mean
Algorithm 1 (:class:`jcalib.forecasters.BlackwellForecaster`) and ORCA
(:class:`jcalib.forecasters.ORCA`) drive to zero.
"""

from .base import (
    AbstractExpectations,
    AbstractIntervalPayoff,
    AbstractPayoff,
    DefaultExpectations,
    DirectSum,
    ExpertContext,
    Recipe,
    as_expectations,
    direction,
    expect_under_bins,
)
from .binary import BinaryCalibration, MixedBinaryCalibration, tent_weights
from .decision import DecisionCalibration, SwapRegret
from .grid import (
    ConformalPayoff,
    MixedMomentCalibration,
    MomentGridCalibration,
    SmoothConformalPayoff,
    freudenthal,
)
from .interval import (
    DistributionCalibration,
    ExpertRegret,
    MomentCalibration,
    QuantileCalibration,
    QuantileStepPayoff,
    experiment_payoff,
    linearised_quantile,
    quantile_levels,
)
from .oracles import (
    AbstractOracle,
    ConformalOracle,
    KakadeFoster,
    MomentOracle,
    QuantileStepOracle,
    SmoothConformalOracle,
    conformal_certificate,
    game_value_mirror_prox,
    tent_root,
)
from .pinball import PinballRegret
from .multicalibration import MulticalibrationOracle, MulticalibrationPayoff

__all__: list[str] = [
    "MulticalibrationOracle",
    "MulticalibrationPayoff",
    "AbstractExpectations",
    "AbstractIntervalPayoff",
    "AbstractOracle",
    "AbstractPayoff",
    "BinaryCalibration",
    "ConformalOracle",
    "ConformalPayoff",
    "DecisionCalibration",
    "DefaultExpectations",
    "DirectSum",
    "DistributionCalibration",
    "ExpertContext",
    "ExpertRegret",
    "KakadeFoster",
    "MixedBinaryCalibration",
    "MixedMomentCalibration",
    "MomentCalibration",
    "MomentGridCalibration",
    "MomentOracle",
    "PinballRegret",
    "QuantileCalibration",
    "QuantileStepOracle",
    "QuantileStepPayoff",
    "Recipe",
    "SmoothConformalOracle",
    "SmoothConformalPayoff",
    "SwapRegret",
    "as_expectations",
    "conformal_certificate",
    "direction",
    "expect_under_bins",
    "experiment_payoff",
    "freudenthal",
    "game_value_mirror_prox",
    "linearised_quantile",
    "quantile_levels",
    "tent_root",
    "tent_weights",
]

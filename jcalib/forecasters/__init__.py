"""jcalib.forecasters: online forecasters as pure state transitions.

Binary outcomes (``outcome_space = "binary"``): AOSA, Foster, Gupta–Ramdas, defensive
forecasting, the approachability and multi-objective recalibrators, swap-regret calibration and
the trivial baselines. Outcomes in an interval (``"real"``): ORCA. Any outcome space:
``BlackwellForecaster`` (the payoff decides) and ``Partitioned`` (its inner forecaster's).
"""

from .aosa import AlmostOneStepAhead, aosa_bins, aosa_bound, one_step_ahead
from .approachability import ApproachabilityOracle, ApproachabilityPayoff, ApproachabilityRecalibrator, tradeoff_parameters
from .blackwell import BlackwellForecaster
from .defensive import DefensiveForecaster
from .foster import FosterRandomized, foster_bins
from .online_isotonic import OnlineIsotonic, OnlineIsotonicState, online_isotonic, online_isotonic_probs
from .orca import ORCA, ExpertMeanCells
from .gupta_ramdas import GuptaRamdas
from .kuleshov_ermon import KuleshovErmon, SwapRegretCalibrated
from .lee_mw import LeeMultiObjectiveMW, lee_weights
from .multicalibration import OnlineMulticalibration
from .partitioned import AbstractPartitioned, Partitioned, UniformCells
from .suite import binary_suite
from .trivial import Constant, RunningFrequency

__all__: list[str] = [
    "OnlineMulticalibration",
    "AbstractPartitioned",
    "AlmostOneStepAhead",
    "BlackwellForecaster",
    "Constant",
    "DefensiveForecaster",
    "ExpertMeanCells",
    "FosterRandomized",
    "GuptaRamdas",
    "ORCA",
    "OnlineIsotonic",
    "OnlineIsotonicState",
    "online_isotonic",
    "online_isotonic_probs",
    "Partitioned",
    "RunningFrequency",
    "UniformCells",
    "aosa_bins",
    "aosa_bound",
    "binary_suite",
    "foster_bins",
    "one_step_ahead",
    "ApproachabilityOracle",
    "ApproachabilityPayoff",
    "ApproachabilityRecalibrator",
    "tradeoff_parameters",
    "LeeMultiObjectiveMW",
    "lee_weights",
    "KuleshovErmon",
    "SwapRegretCalibrated",
]

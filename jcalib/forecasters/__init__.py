"""jcalib.forecasters: online forecasters of binary outcomes (pure state transitions)."""

from .aosa import AlmostOneStepAhead, aosa_bins, aosa_bound, one_step_ahead
from .approachability import ApproachabilityRecalibrator, halfspace_oracle, tradeoff_parameters
from .blackwell import BlackwellForecaster
from .defensive import DefensiveForecaster
from .foster import FosterRandomized, foster_bins
from .orca import ORCA
from .gupta_ramdas import GuptaRamdas
from .kuleshov_ermon import KuleshovErmon, SwapRegretCalibrated
from .lee_mw import LeeMultiObjectiveMW, lee_weights
from .partitioned import Partitioned, UniformCells
from .trivial import Constant, RunningFrequency

__all__: list[str] = [
    "AlmostOneStepAhead",
    "BlackwellForecaster",
    "Constant",
    "DefensiveForecaster",
    "FosterRandomized",
    "GuptaRamdas",
    "ORCA",
    "Partitioned",
    "RunningFrequency",
    "UniformCells",
    "aosa_bins",
    "aosa_bound",
    "foster_bins",
    "one_step_ahead",
    "ApproachabilityRecalibrator",
    "halfspace_oracle",
    "tradeoff_parameters",
    "LeeMultiObjectiveMW",
    "lee_weights",
    "KuleshovErmon",
    "SwapRegretCalibrated",
]

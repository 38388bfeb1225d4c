"""jcalib.forecasters: online forecasters of binary outcomes (pure state transitions)."""

from .aosa import AlmostOneStepAhead, aosa_bins, aosa_bound, one_step_ahead
from .blackwell import BlackwellForecaster
from .defensive import DefensiveForecaster
from .foster import FosterRandomized, foster_bins
from .orca import ORCA
from .gupta_ramdas import GuptaRamdas
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
]

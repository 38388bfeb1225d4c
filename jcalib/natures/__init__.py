"""jcalib.natures: outcome streams (oblivious, adaptive, models with contexts, replays) for ``jcalib.core.play``."""

from .adaptive import Contrarian, MaxCalibrationError, RandomMixture
from .contextual import DistortedModel, DriftingModel, TwoLevelModel
from .interval import HalfSpaceAdversary, IIDInterval, OverconfidentGaussian
from .oblivious import Bernoulli, Drifting, Markov, Periodic, RegimeSwitch, Replay
from .recalibration import RecalibrationAdversary
from .suite import binary_suite
from .switch import Switch

__all__: list[str] = [
    "Bernoulli",
    "Contrarian",
    "DistortedModel",
    "Drifting",
    "DriftingModel",
    "HalfSpaceAdversary",
    "IIDInterval",
    "Markov",
    "OverconfidentGaussian",
    "MaxCalibrationError",
    "Periodic",
    "RandomMixture",
    "RegimeSwitch",
    "Replay",
    "Switch",
    "TwoLevelModel",
    "RecalibrationAdversary",
    "binary_suite",
]

"""jcalib.natures: outcome streams (oblivious, adaptive, replays) for ``jcalib.play``."""

from .adaptive import Contrarian, MaxCalibrationError, RandomMixture
from .oblivious import Bernoulli, Drifting, Markov, Periodic, RegimeSwitch, Replay
from .switch import Switch

__all__: list[str] = [
    "Bernoulli",
    "Contrarian",
    "Drifting",
    "Markov",
    "MaxCalibrationError",
    "Periodic",
    "RandomMixture",
    "RegimeSwitch",
    "Replay",
    "Switch",
]

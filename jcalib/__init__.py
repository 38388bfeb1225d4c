"""jcalib: calibration research in JAX.

Online calibrated forecasters as pure state transitions (``jcalib.forecasters``) played against
adversaries and data streams (``jcalib.natures``) by ``play`` and ``sweep``, which keep what a
recorder asks for (``jcalib.recorders``); calibration metrics (``jcalib.metrics``); offline
recalibration (``jcalib.recalibration``); data loaders (``jcalib.datasets``); Blackwell payoffs
and half-space oracles (``jcalib.payoffs``); distributions over an interval
(``jcalib.distributions``); proper scoring rules (``jcalib.scoring``); differentiable
calibration losses for training (``jcalib.losses``); bootstrap intervals and calibration tests
with p-values (``jcalib.stats``); the switch for in-graph input checks (``jcalib.config``).
"""

from . import (
    config,
    core,
    datasets,
    distributions,
    forecasters,
    losses,
    metrics,
    natures,
    payoffs,
    recalibration,
    recorders,
    scoring,
    stats,
)
from .core import (
    AbstractForecaster,
    AbstractNature,
    AbstractRecorder,
    Forecast,
    History,
    Mixture,
    Trajectory,
    play,
    sweep,
)
from .recorders import GridSummary

__version__ = "0.1.0"

__all__ = [
    "AbstractForecaster",
    "AbstractNature",
    "AbstractRecorder",
    "Forecast",
    "GridSummary",
    "History",
    "Mixture",
    "Trajectory",
    "config",
    "core",
    "datasets",
    "distributions",
    "forecasters",
    "losses",
    "metrics",
    "natures",
    "payoffs",
    "play",
    "recalibration",
    "recorders",
    "scoring",
    "stats",
    "sweep",
]

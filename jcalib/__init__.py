"""jcalib: calibration research in JAX.

Online calibrated forecasters as pure state transitions (``jcalib.forecasters``) played against
adversaries and data streams (``jcalib.natures``) by ``play`` and ``sweep``; calibration metrics
(``jcalib.metrics``); offline recalibration (``jcalib.recalibration``); data loaders
(``jcalib.datasets``).
"""

from . import core, datasets, forecasters, metrics, natures, recalibration
from .core import (
    AbstractForecaster,
    AbstractNature,
    Forecast,
    GridSummary,
    Mixture,
    Trajectory,
    play,
    sweep,
)

__version__ = "0.1.0"

__all__ = [
    "AbstractForecaster",
    "AbstractNature",
    "Forecast",
    "GridSummary",
    "Mixture",
    "Trajectory",
    "core",
    "datasets",
    "forecasters",
    "metrics",
    "natures",
    "play",
    "recalibration",
    "sweep",
]

"""Core shapes and drivers: forecasters, natures, forecasts, trajectories, ``play`` and ``sweep``
(what a run keeps is a recorder: :mod:`jcalib.recorders`)."""

from .checkpoint import CheckpointError
from .drivers import as_traced_module, play, sweep
from .optim import OptimResult, optimise, optax_update
from .types import AbstractForecaster, AbstractNature, Forecast, Mixture, Trajectory, as_mixture

__all__ = [
    "AbstractForecaster",
    "AbstractNature",
    "CheckpointError",
    "Forecast",
    "Mixture",
    "OptimResult",
    "Trajectory",
    "as_mixture",
    "as_traced_module",
    "optax_update",
    "optimise",
    "play",
    "sweep",
]

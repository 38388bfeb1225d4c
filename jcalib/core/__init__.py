"""Core shapes and drivers: forecasters, natures, forecasts, trajectories, recorders, play, sweep."""

from .checkpoint import CheckpointError
from .drivers import as_traced_module, play, sweep
from .optim import OptimResult, optimise, optax_update
from .recorders import AbstractRecorder, History, Round
from .types import AbstractForecaster, AbstractNature, Forecast, Mixture, Trajectory, as_mixture

__all__ = [
    "AbstractForecaster",
    "AbstractNature",
    "AbstractRecorder",
    "CheckpointError",
    "Forecast",
    "History",
    "Mixture",
    "OptimResult",
    "Round",
    "Trajectory",
    "as_mixture",
    "as_traced_module",
    "optax_update",
    "optimise",
    "play",
    "sweep",
]

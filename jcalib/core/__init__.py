"""Core shapes and drivers: forecasters, natures, forecasts, trajectories, play and sweep."""

from .drivers import GridSummary, forecast_grid, play, summary_from_trajectory, sweep
from .types import AbstractForecaster, AbstractNature, Forecast, Mixture, Trajectory, as_mixture

__all__ = [
    "AbstractForecaster",
    "AbstractNature",
    "Forecast",
    "Mixture",
    "Trajectory",
    "GridSummary",
    "forecast_grid",
    "as_mixture",
    "play",
    "sweep",
    "summary_from_trajectory",
]

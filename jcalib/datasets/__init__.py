"""jcalib.datasets"""

from .predictions import load_predictions, save_predictions
from .streams import ModelStream, logistic_stream
from .naive_bayes import naive_bayes_stream
from .lagged import LaggedSeries, lag_features
from .sunspots import sunspots
from .wind import wind_power
from .experts import EXPERTS, ExpertForecasts, run_expert
from .day_ahead import run_day_ahead_expert

__all__: list[str] = [
    "load_predictions",
    "save_predictions",
    "ModelStream",
    "logistic_stream",
    "naive_bayes_stream",
    "LaggedSeries",
    "lag_features",
    "sunspots",
    "wind_power",
    "EXPERTS",
    "ExpertForecasts",
    "run_expert",
    "run_day_ahead_expert",
]

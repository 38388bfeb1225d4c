"""jcalib.datasets"""

from .predictions import load_predictions, save_predictions
from .streams import ModelStream, logistic_stream

__all__: list[str] = [
    "load_predictions",
    "save_predictions",
    "ModelStream",
    "logistic_stream",
]

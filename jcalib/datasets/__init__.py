"""jcalib.datasets"""

from .predictions import load_predictions, save_predictions

__all__: list[str] = [
    "load_predictions",
    "save_predictions",
]

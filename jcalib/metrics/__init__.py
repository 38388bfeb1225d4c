"""jcalib.metrics"""

from .binary import binned_ece, brier, ece, ece_from_counts, log_loss, lp_calibration_error

__all__: list[str] = [
    "binned_ece",
    "brier",
    "ece",
    "ece_from_counts",
    "log_loss",
    "lp_calibration_error",
]

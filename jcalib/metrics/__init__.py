"""jcalib.metrics"""

from .decision import (
    DecisionCalibrationResult,
    DecisionLossGapResult,
    decision_calibration_error,
    decision_loss_gap,
)
from .binary import binned_ece, brier, ece, ece_from_counts, log_loss, lp_calibration_error
from .multiclass import accuracy, classwise_ece, confidence_ece, l2_error, nll, one_hot, top_label_ece

__all__: list[str] = [
    "DecisionCalibrationResult",
    "DecisionLossGapResult",
    "decision_calibration_error",
    "decision_loss_gap",
    "binned_ece",
    "brier",
    "ece",
    "ece_from_counts",
    "log_loss",
    "lp_calibration_error",
    "accuracy",
    "classwise_ece",
    "confidence_ece",
    "l2_error",
    "nll",
    "one_hot",
    "top_label_ece",
]

"""jcalib.metrics"""

from .decision import (
    DecisionCalibrationResult,
    DecisionLossGapResult,
    decision_calibration_error,
    decision_loss_gap,
)
from .binary import binned_ece, brier, ece, ece_from_counts, log_loss, lp_calibration_error
from .online import average_regret, calibration_from_buckets, eps_calibration
from .smooth import smooth_calibration_error, smooth_ece
from .distance import (
    CalibratedWitness,
    CalibrationDistance,
    atoms_from_counts,
    distance_to_calibration,
    lower_distance_to_calibration,
)
from .multiclass import accuracy, classwise_ece, confidence_ece, l2_error, nll, one_hot, top_label_ece
from .weighted import (
    WeightedCE,
    classwise_calibration_error,
    full_smooth_calibration_error,
    lipschitz_correlation,
    low_degree_calibration_error,
    projected_smooth_calibration_error,
    sigmoid_calibration_error,
    subset_smooth_calibration_error,
    two_action_decision_calibration_error,
    weighted_calibration_error,
)

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
    "CalibratedWitness",
    "CalibrationDistance",
    "atoms_from_counts",
    "distance_to_calibration",
    "lower_distance_to_calibration",
    "smooth_calibration_error",
    "smooth_ece",
    "accuracy",
    "classwise_ece",
    "confidence_ece",
    "l2_error",
    "nll",
    "one_hot",
    "top_label_ece",
    "WeightedCE",
    "classwise_calibration_error",
    "full_smooth_calibration_error",
    "lipschitz_correlation",
    "low_degree_calibration_error",
    "projected_smooth_calibration_error",
    "sigmoid_calibration_error",
    "subset_smooth_calibration_error",
    "two_action_decision_calibration_error",
    "weighted_calibration_error",
    "average_regret",
    "calibration_from_buckets",
    "eps_calibration",
]

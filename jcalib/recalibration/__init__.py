"""jcalib.recalibration"""

from .decision import (
    DecisionCalibrationParams,
    DecisionCalibrator,
    decision_calibration_apply,
    decision_calibration_fit,
)
from .kernel import (
    GaussianKernel,
    KernelAudit,
    KernelCalibrationParams,
    KernelCalibrator,
    KernelWitness,
    MultinomialKernel,
    TheoremAuditor,
    gaussian_kernel,
    kernel_audit,
    kernel_calibration_apply,
    kernel_calibration_fit,
    kernel_weak_learner,
    multinomial_kernel,
    projected_smooth_auditor,
    sigmoid_auditor,
)
from .base import AbstractFittedRecalibrator, AbstractRecalibrator, SklearnRecalibrator
from .beta import BetaCalibration, FittedBetaCalibration
from .histogram import FittedHistogramBinning, HistogramBinning
from .isotonic_classifier import FittedIsotonicCalibration, IsotonicCalibration, pav
from .platt import FittedPlattScaling, PlattScaling
from .quantile import FittedQuantileRecalibration, QuantileRecalibration
from .scaling import (
    DirichletCalibration,
    FittedDirichletCalibration,
    FittedMatrixScaling,
    FittedTemperatureScaling,
    FittedVectorScaling,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
)

__all__: list[str] = [
    "AbstractFittedRecalibrator",
    "AbstractRecalibrator",
    "SklearnRecalibrator",
    "BetaCalibration",
    "FittedBetaCalibration",
    "HistogramBinning",
    "FittedHistogramBinning",
    "IsotonicCalibration",
    "FittedIsotonicCalibration",
    "pav",
    "PlattScaling",
    "FittedPlattScaling",
    "TemperatureScaling",
    "FittedTemperatureScaling",
    "VectorScaling",
    "FittedVectorScaling",
    "MatrixScaling",
    "FittedMatrixScaling",
    "DirichletCalibration",
    "FittedDirichletCalibration",
    "QuantileRecalibration",
    "FittedQuantileRecalibration",
    "DecisionCalibrationParams",
    "DecisionCalibrator",
    "decision_calibration_apply",
    "decision_calibration_fit",
    "KernelAudit",
    "KernelCalibrationParams",
    "KernelCalibrator",
    "KernelWitness",
    "MultinomialKernel",
    "TheoremAuditor",
    "GaussianKernel",
    "gaussian_kernel",
    "kernel_audit",
    "kernel_calibration_apply",
    "kernel_calibration_fit",
    "kernel_weak_learner",
    "multinomial_kernel",
    "projected_smooth_auditor",
    "sigmoid_auditor",
]

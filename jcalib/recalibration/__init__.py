"""jcalib.recalibration"""

from .decision import DecisionCalibration, FittedDecisionCalibration, StageInfo
from .kernel import (
    FittedKernelCalibration,
    KernelCalibration,
    TheoremAuditor,
    kernel_weak_learner,
    projected_smooth_auditor,
    sigmoid_auditor,
)
from .base import AbstractFittedRecalibrator, AbstractRecalibrator, SklearnRecalibrator
from .beta import BetaCalibration, FittedBetaCalibration
from .histogram import FittedHistogramBinning, HistogramBinning
from .isotonic_classifier import FittedIsotonicCalibration, IsotonicCalibration, pav
from .multicalibration import FittedMulticalibration, Multicalibration, MulticalibrationHistory
from .platt import FittedPlattScaling, PlattScaling
from .quantile import FittedQuantileRecalibration, QuantileRecalibration
from .venn_abers import FittedVennAbers, VennAbers, VennAbersInterval, cross_venn_abers
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
    "Multicalibration",
    "FittedMulticalibration",
    "MulticalibrationHistory",
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
    "VennAbers",
    "FittedVennAbers",
    "VennAbersInterval",
    "cross_venn_abers",
    "DecisionCalibration",
    "FittedDecisionCalibration",
    "StageInfo",
    "FittedKernelCalibration",
    "KernelCalibration",
    "TheoremAuditor",
    "kernel_weak_learner",
    "projected_smooth_auditor",
    "sigmoid_auditor",
]

"""jcalib.recalibration"""

from .scaling import (
    DirichletCalibrator,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    dirichlet_apply,
    dirichlet_fit,
    matrix_scaling_apply,
    matrix_scaling_fit,
    temperature_scaling_apply,
    temperature_scaling_fit,
    vector_scaling_apply,
    vector_scaling_fit,
)

__all__: list[str] = [
    "DirichletCalibrator",
    "MatrixScaling",
    "TemperatureScaling",
    "VectorScaling",
    "dirichlet_apply",
    "dirichlet_fit",
    "matrix_scaling_apply",
    "matrix_scaling_fit",
    "temperature_scaling_apply",
    "temperature_scaling_fit",
    "vector_scaling_apply",
    "vector_scaling_fit",
]

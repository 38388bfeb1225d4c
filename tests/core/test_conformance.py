"""Conformance suite over every forecaster and nature of the binary outcome space (interval
forecasters and natures run the same checks in their own test files, via tests/conformance.py):
jit, scan, vmap over keys and over stacked hyperparameters, no retracing across keys or
hyperparameter values, states keep structure and dtypes under both x64 settings."""

import numpy as np
import pytest
from conformance import check_forecaster, check_nature

from jcalib.forecasters import (
    AlmostOneStepAhead,
    Constant,
    DefensiveForecaster,
    FosterRandomized,
    GuptaRamdas,
    Partitioned,
    RunningFrequency,
    UniformCells,
)
from jcalib.natures import (
    Bernoulli,
    Contrarian,
    DistortedModel,
    Drifting,
    DriftingModel,
    Markov,
    MaxCalibrationError,
    Periodic,
    RandomMixture,
    RegimeSwitch,
    Replay,
    Switch,
    TwoLevelModel,
)

# Pairs of one class; where the class has array-valued (non-static) settings the two differ in
# them, so a sweep over the pair really vmaps over hyperparameters.
FORECASTERS = {
    "aosa": (AlmostOneStepAhead(n_bins=8), AlmostOneStepAhead(n_bins=8)),
    "aosa_high": (AlmostOneStepAhead(n_bins=5, tie="high"), AlmostOneStepAhead(n_bins=5, tie="high")),
    "foster": (FosterRandomized(n_bins=6), FosterRandomized(n_bins=6)),
    "defensive": (DefensiveForecaster(n_grid=16, bandwidth=0.1), DefensiveForecaster(n_grid=16, bandwidth=0.25)),
    "gupta_ramdas": (GuptaRamdas(n_bins=8), GuptaRamdas(n_bins=8)),
    "constant": (Constant(0.3), Constant(0.8)),
    "running_frequency": (RunningFrequency(1.0, 2.0), RunningFrequency(0.0, 0.5)),
    "partitioned": (
        Partitioned(RunningFrequency(1.0, 2.0), 4, UniformCells(4)),
        Partitioned(RunningFrequency(0.5, 3.0), 4, UniformCells(4)),
    ),
}

_rng = np.random.default_rng(0)
NATURES = {
    "bernoulli": (Bernoulli(0.3), Bernoulli(0.9)),
    "drifting": (Drifting(0.1, 0.9, 10.0), Drifting(0.9, 0.2, 5.0)),
    "periodic": (Periodic(0.5, 0.3, 8.0), Periodic(0.4, 0.1, 3.0)),
    "markov": (Markov(0.1, 0.2), Markov(0.9, 0.7)),
    "regime_switch": (RegimeSwitch((0.1, 0.9), 0.1), RegimeSwitch((0.5, 0.6), 0.9)),
    "replay": (Replay(_rng.integers(0, 2, 11)), Replay(_rng.integers(0, 2, 11))),
    "replay_with_context": (
        Replay(_rng.integers(0, 2, 11), _rng.random(11)),
        Replay(_rng.integers(0, 2, 11), _rng.random(11)),
    ),
    "contrarian": (Contrarian(), Contrarian()),
    "max_error": (MaxCalibrationError(n_bins=8), MaxCalibrationError(n_bins=8)),
    "random_mixture": (RandomMixture(n_bins=8), RandomMixture(0.2, 0.3, 0.5, 0.9, n_bins=8)),
    "switch": tuple(Switch.all_of((Markov(0.1, 0.2), Contrarian()))),
    "switch_with_context": tuple(Switch.all_of((TwoLevelModel(), DistortedModel(3.0, 0.5)))),
    "two_level_model": (TwoLevelModel(), TwoLevelModel(0.1, 0.9, 0.3, 0.6, 0.3)),
    "distorted_model": (DistortedModel(2.0, 0.0), DistortedModel(0.5, -0.3, 0.1, 0.8)),
    "drifting_model": (DriftingModel(-1.0, 1.0, 10.0), DriftingModel(0.5, -2.0, 4.0)),
}


@pytest.mark.parametrize("name", FORECASTERS)
def test_forecaster_conformance(name):
    check_forecaster(FORECASTERS[name], TwoLevelModel(), "binary")


@pytest.mark.parametrize("name", NATURES)
def test_nature_conformance(name):
    check_nature(NATURES[name], FORECASTERS["aosa"][0], "binary", other_forecaster=FosterRandomized(n_bins=4))

"""Conformance suite over every forecaster and nature of the binary outcome space (interval
forecasters and natures run the same checks in their own test files, via tests/conformance.py):
jit, scan, vmap over keys and over stacked hyperparameters, no retracing across keys or
hyperparameter values (for the classes that have array-valued settings; the others differ
only in the key, as the table below says), states keep structure and dtypes under both x64
settings; and every forecaster and nature class exported by jcalib is in the tables."""

import jax
import numpy as np
import pytest
from conformance import check_forecaster, check_nature

from jcalib.core import AbstractForecaster, AbstractNature

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

# Pairs of one class. Where the class has array-valued (non-static) settings the two differ in
# them, so the sweep over the pair vmaps over hyperparameters and the jitted `play` is checked
# not to retrace for new values (test_pairs_differ_wherever_the_class_allows enforces it).
# Classes whose settings are all static (grid sizes, tie rules) or that have none cannot differ
# without a second compilation by design; their pairs are identical and differ only in the key:
#
# | class                      | the pair differs in                        |
# |----------------------------|--------------------------------------------|
# | AlmostOneStepAhead         | key only (n_bins, tie are static)          |
# | FosterRandomized           | key only (n_bins is static)                |
# | GuptaRamdas                | key only (n_bins is static)                |
# | DefensiveForecaster        | bandwidth                                  |
# | Constant                   | p                                          |
# | RunningFrequency           | prior_ones, prior_count                    |
# | Partitioned                | the inner forecaster's priors              |
# | Contrarian                 | key only (no settings)                     |
# | MaxCalibrationError        | key only (n_bins is static)                |
# | every other nature         | its float settings / replayed arrays / Switch index |
KEY_ONLY = {AlmostOneStepAhead, FosterRandomized, GuptaRamdas, Contrarian, MaxCalibrationError}

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


def _leaves(module):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(module)]


@pytest.mark.parametrize("table", [FORECASTERS, NATURES], ids=["forecasters", "natures"])
def test_pairs_differ_wherever_the_class_allows(table):
    for name, (a, b) in table.items():
        assert type(a) is type(b), name
        la, lb = _leaves(a), _leaves(b)
        if type(a) in KEY_ONLY:
            assert la == [], f"{name}: {type(a).__name__} has array settings now; make the pair differ"
        else:
            assert la, f"{name}: no array-valued settings; list it in KEY_ONLY"
            assert any(u.shape != v.shape or not np.array_equal(u, v) for u, v in zip(la, lb)), (
                f"{name}: the pair is identical although {type(a).__name__} has array settings"
            )


def test_every_forecaster_and_nature_of_jcalib_is_covered():
    """Every exported forecaster and nature class runs the conformance checks: here (binary
    outcomes), or in its own test file (interval outcomes, contexts of its own) — a test file
    that calls check_forecaster/check_nature and names the class."""
    import re
    from pathlib import Path

    import jcalib.forecasters as F
    import jcalib.natures as N

    def classes(module, base):
        return {c for c in (getattr(module, n) for n in module.__all__)
                if isinstance(c, type) and issubclass(c, base)}

    covered = {type(a) for a, _ in FORECASTERS.values()} | {type(a) for a, _ in NATURES.values()}
    covered |= {type(m) for a, _ in NATURES.values() if isinstance(a, Switch) for m in a.natures}
    elsewhere = "\n".join(
        p.read_text() for p in Path(__file__).resolve().parents[1].rglob("test_*.py")
        if p.name != Path(__file__).name and re.search(r"check_(forecaster|nature)\(", p.read_text())
    )
    missing = [
        c.__name__
        for c in classes(F, AbstractForecaster) | classes(N, AbstractNature)
        if c not in covered and not re.search(rf"\b{c.__name__}\b", elsewhere)
    ]
    assert not missing, f"no conformance test for {sorted(missing)}"


@pytest.mark.parametrize("name", FORECASTERS)
def test_forecaster_conformance(name):
    check_forecaster(FORECASTERS[name], TwoLevelModel(), "binary")


@pytest.mark.parametrize("name", NATURES)
def test_nature_conformance(name):
    check_nature(NATURES[name], FORECASTERS["aosa"][0], "binary", other_forecaster=FosterRandomized(n_bins=4))

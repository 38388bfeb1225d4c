"""The public API under a bad-input battery (``tests/fuzz.py``): every public callable, collected
from the packages' ``__all__``, gets NaN, ±inf, out-of-range probabilities and labels, wrong
shapes and dtypes, empty arrays, lists, strings, bools and floats for integers, and non-keys for
keys, and must answer each with a clear ``ValueError``/``TypeError`` from jcalib (or an
``eqx.error_if`` failure under ``jit``) — never a value, never an obscure error from deep inside
JAX or NumPy — while accepting NumPy scalars where Python numbers are accepted.

The CI battery keeps three bad values per role; the full battery is ``slow``.
``benchmarks/fuzz_counts.py`` prints the counts.
"""

import fuzz
import pytest

# Public callables that no profile of tests/fuzz.py can call, and why. A new public callable
# that is neither fuzzed nor listed here fails test_every_public_callable_is_fuzzed_or_listed.
UNCOVERED = {
    # result containers and fitted parameters (built by the library, not by users)
    "metrics.KernelAudit": "an audit's result",
    "metrics.KernelWitness": "an audit's witness",
    "recalibration.FittedDecisionCalibration": "a fitted map (built by fit)",
    "recalibration.FittedKernelCalibration": "a fitted map (built by fit)",
    "recalibration.TheoremAuditor": "built by projected_smooth_auditor / sigmoid_auditor",
    "metrics.partition_search": "the search kernel over residuals and weights (its callers validate)",
    "metrics.decision_objective": "Eq. (8)/(9) of one witness over residuals and weights (its callers validate)",
    "metrics.partition_weights": "the cells of one witness (its callers validate)",
    **{f"recalibration.Fitted{m}": "a fitted map (built by fit)" for m in (
        "TemperatureScaling", "VectorScaling", "MatrixScaling", "DirichletCalibration", "PlattScaling",
        "BetaCalibration", "HistogramBinning", "IsotonicCalibration")},
    "recalibration.SklearnRecalibrator": "takes a recalibration method (its fit is the method's, fuzzed below)",
    # take fitted parameters or a fitted state first
    "recalibration.pav": "the pool-adjacent-violators kernel over sorted targets (its callers validate)",
    "forecasters.online_isotonic": "takes CDF values and PIT values of one stream",
    "forecasters.online_isotonic_probs": "takes a forecast matrix on edges",
    "recalibration.kernel_weak_learner": "takes support points and targets of a boosting round",
    # take a metric first (its inputs are checked by the metric; tests/stats/test_resampling.py)
    "stats.bootstrap": "takes a metric",
    "stats.paired_bootstrap": "takes a metric",
    "stats.consistency_test": "takes a metric",
    # the default (unbiased) estimator draws, so it needs a key: fuzzed in fuzz.extra_cases
    "stats.skce_test": "fuzzed with a key in extra_cases",
    # take other modules (payoffs, oracles, natures, forecasters, trajectories) as inputs
    "natures.HalfSpaceAdversary": "takes a payoff",
    "natures.Switch": "takes natures",
    "forecasters.BlackwellForecaster": "takes a payoff and an oracle",
    "forecasters.Partitioned": "takes a forecaster and a cell map",
    "payoffs.DecisionCalibration": "takes a utility matrix",
    "payoffs.SwapRegret": "takes a utility matrix",
    "payoffs.DirectSum": "takes payoffs",
    "payoffs.DistributionCalibration": "takes cell edges and ticks of a simplex grid",
    "payoffs.Recipe": "takes functions",
    "payoffs.direction": "takes a payoff",
    "payoffs.expect_under_bins": "takes a payoff and a distribution",
    "payoffs.DefaultExpectations": "takes a payoff",
    "payoffs.as_expectations": "takes a payoff",
    "distributions.MixtureDistribution": "takes distributions",
    "recorders.forecast_grid": "takes a forecaster",
    "recorders.register_shorthand": "takes a recorder factory",
    "recorders.summary_from_trajectory": "takes a trajectory",
    # inner-loop kernels of the algorithms (their callers validate)
    "forecasters.lee_weights": "Lee et al.'s weights of utility matrices",
    "payoffs.conformal_certificate": "an oracle's certificate",
    "payoffs.freudenthal": "a triangulation kernel",
    "payoffs.game_value_mirror_prox": "an LP solver on a payoff matrix",
    "payoffs.linearised_quantile": "a payoff kernel",
    "payoffs.tent_root": "an oracle kernel",
    "payoffs.tent_weights": "a payoff kernel",
    "distributions.Gaussian": "location-scale parameters (checked by their own tests)",
    "distributions.probs_atol": "a tolerance helper taking a dtype",
}

# Public callables with nothing to fuzz: no required inputs and no numeric settings, or
# scikit-learn-style wrappers, which check their settings in fit (their fit is fuzzed below)
NO_INPUTS = {"scoring.Brier", "scoring.Spherical", "recorders.History", "natures.Contrarian",
             "recalibration.IsotonicCalibration", "recalibration.QuantileRecalibration", "metrics.PrecisionWarning"}

CALLABLES = fuzz.public_callables()
EXTRA = fuzz.extra_cases()
OK = ("clear", "accepted")


def _failures(outcomes):
    return [f"{o.kind}: {o.case.target}({o.case.param}: {o.case.bad}) -> {o.detail}" for o in outcomes if o.kind not in OK]


@pytest.mark.parametrize("target, obj", CALLABLES, ids=[t for t, _ in CALLABLES])
def test_bad_inputs_get_clear_errors(target, obj):
    cases = fuzz.battery(target, obj)
    if cases is None:
        assert target in UNCOVERED, f"{target} is public but no fuzz profile can call it: add one to tests/fuzz.py"
        return
    assert target not in UNCOVERED, f"{target} is fuzzed now: remove it from UNCOVERED"
    assert cases or target in NO_INPUTS, f"{target} has no bad inputs to try: give it a role in tests/fuzz.py"
    assert not (cases and target in NO_INPUTS), f"{target} has inputs to fuzz now: remove it from NO_INPUTS"
    bad = _failures([fuzz.classify(c) for c in cases])
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("case", EXTRA, ids=[f"{c.target}-{c.param}-{c.bad}" for c in EXTRA])
def test_instances_and_jit_get_clear_errors(case):
    out = fuzz.classify(case)
    assert out.kind in OK, f"{out.kind}: {out.detail}"


def test_the_classifier_tells_the_kinds_apart():
    import jax.numpy as jnp
    import numpy as np

    from jcalib.metrics import ece

    silent = fuzz.Case("x", "p", "none", lambda: float(jnp.sum(jnp.ones(2))))
    obscure = fuzz.Case("x", "p", "deep", lambda: np.asarray([1, 2]).reshape(3))
    clear = fuzz.Case("x", "p", "range", lambda: ece(np.array([1.5]), np.array([1])))
    refused = fuzz.Case("x", "n", "NumPy scalar", lambda: ece(np.array([1.5]), np.array([1])), expect_value=True)
    assert [fuzz.classify(c).kind for c in (silent, obscure, clear, refused)] == ["silent", "obscure", "clear", "obscure"]


@pytest.mark.slow  # every bad value of every role (about 1,100 inputs): several minutes on 2 cores
def test_full_battery():
    bad = _failures([fuzz.classify(c) for c in fuzz.cases(full=True)])
    assert not bad, "\n".join(bad)

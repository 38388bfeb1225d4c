"""A valid example of every public callable, for the fuzz (``tests/fuzz.py``).

:data:`EXAMPLES` maps ``"package.Name"`` to an :class:`Ex`: the valid keyword arguments of one
call and, for a class, what to do with the instance (a forecaster or a nature is played, a
recalibrator fitted and applied, a scoring rule scores, a payoff is evaluated), so a bad setting
shows where it does harm. Callables that take a payoff, a forecaster, a metric or a trajectory
get a small valid one built here; result containers (NamedTuples, fitted parameters) are built
by calling what builds them, and their examples fuzz that call. Keys ``"Name.method"`` add the
methods users call with arrays (``fit``, a fitted map's ``__call__``).

A public callable without an entry fails ``tests/test_fuzz.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jcalib
from jcalib import (config, core, datasets, distributions, forecasters, losses, metrics, natures, payoffs,
                    recalibration, recorders, scoring, stats)

N = 6
P = np.array([0.1, 0.3, 0.5, 0.7, 0.9, 0.6])  # on the grid {j/10}
Y = np.array([0, 1, 1, 0, 1, 0], np.int32)
W = np.array([1.0, 2.0, 1.0, 0.5, 1.0, 1.0])
PM = np.array([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25], [0.2, 0.7, 0.1]])
YM = np.array([1, 0, 2, 2, 0, 1], np.int32)
U = np.array([0.05, 0.2, 0.45, 0.6, 0.8, 0.95])  # PIT values, outcomes in [0, 1]
YR = np.array([0.3, 1.2, -0.4, 2.0, 0.7, 0.1])  # real outcomes
E4 = (0.0, 0.25, 0.5, 0.75, 1.0)
D4 = np.array([0.1, 0.2, 0.3, 0.4])
T = 6  # rounds of a played example


def KEY():
    return jax.random.key(0)


class Ex(NamedTuple):
    """A valid example: ``fn(**args())``, then ``use`` of the result.

    ``fn`` None: nothing to fuzz (an abstract base, an exception type, a result container
    whose builder has its own entry); ``why`` says so. ``kinds`` overrides the kind of an
    argument (``fuzz.Kind``); ``fixed`` arguments are not mutated; ``static`` arrays are closed
    over under jit; ``unpaired`` arrays do not share the sample axis (the
    joint mutations "empty" and "length 1" cut the others; ``min_length`` 2 makes one sample
    invalid); ``jit=False``: the call is
    not traceable by design (``why``); ``isolate``: every case runs in a child process."""

    fn: Callable | None
    args: Callable[[], dict] = dict
    use: Callable | None = None
    kinds: dict = {}
    fixed: tuple = ()
    static: tuple = ()
    unpaired: tuple = ()
    jit: bool = True
    isolate: bool = False
    n: int | None = None
    no_length: bool = False
    min_length: int = 1  # fewer samples than this is invalid (a test statistic needs two)
    also_valid: tuple = ()  # (param, mutation[, mode]) valid here (an elementwise map takes any shape)
    jit_values: bool = True  # False: values are documented as checked on plain calls only (not in the graph)
    aliases: dict = {}  # the name an error may use for a parameter (scikit-learn's X is the probabilities)
    why: str = ""


class Kind(NamedTuple):
    """How an argument is mutated (``tests/fuzz.py``, ``mutations``): ``name`` is one of prob,
    simplex, label, weight, count, real, real_inf, int, float, float_inf, bool, key, option, object, fixed;
    ``lo``/``hi`` bound a number; ``n_classes`` is the first label out of range."""

    name: str
    lo: float | None = None
    hi: float | None = None
    n_classes: int = 2


def K(name, lo=None, hi=None, n_classes=2):
    return Kind(name, lo, hi, n_classes)


def _numeric_defaults(obj) -> dict:
    """The int and float settings with defaults (not bools, not None) of a function or module."""
    try:
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
            items = [(f.name, f.default) for f in dataclasses.fields(obj) if f.init and f.default is not dataclasses.MISSING]
        else:
            items = [(n, p.default) for n, p in inspect.signature(obj).parameters.items()
                     if p.default is not inspect.Parameter.empty]
    except (TypeError, ValueError):
        return {}
    return {n: d for n, d in items if isinstance(d, (int, float)) and not isinstance(d, bool)}


def _params(obj) -> set:
    try:
        return set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return set()


def ex(obj, args: dict | Callable[[], dict], *, defaults=True, **kw) -> Ex:
    """An example calling ``obj`` with ``args`` plus its numeric defaults (fuzzed too)."""
    get = args if callable(args) else (lambda: dict(args))

    def full():
        a = get()
        if defaults:
            a = {**_numeric_defaults(obj), **a}
        return a

    return Ex(obj, full, **kw)


BIN = {"probs": P, "labels": Y, "sample_weight": W}
MC = {"probs": PM, "labels": YM, "sample_weight": W}


def binary(obj, extra=None, weights=True, **kw):
    a = {"probs": P, "labels": Y, **({"sample_weight": W} if weights and "sample_weight" in _params(obj) else {}), **(extra or {})}
    return ex(obj, a, **kw)


def multiclass(obj, extra=None, weights=True, **kw):
    a = {"probs": PM, "labels": YM, **({"sample_weight": W} if weights and "sample_weight" in _params(obj) else {}), **(extra or {})}
    return ex(obj, a, **kw)


def nothing(why):
    return Ex(None, why=why)


# ------------------------------------------------------------------- uses of built modules
def play_binary(f):
    return core.play(f, natures.Bernoulli(0.4), T, key=KEY())


def play_against(nature):
    return lambda f: core.play(f, nature() if callable(nature) and not isinstance(nature, core.AbstractNature) else nature, T, key=KEY())


def play_nature(n):
    return core.play(forecasters.Constant(0.5), n, T, key=KEY())


def _kf():
    return forecasters.BlackwellForecaster.from_oracle(payoffs.KakadeFoster(4))


def play_interval_nature(n):
    return core.play(_kf(), n, T, key=KEY())


def _iid():
    return natures.IIDInterval(jnp.asarray(D4, jnp.result_type(float)), E4)


def play_interval(f):
    return core.play(f, _iid(), T, key=KEY())


def play_oracle(o):
    return core.play(forecasters.BlackwellForecaster.from_oracle(o), natures.Bernoulli(0.4), T, key=KEY())


def play_oracle_interval(o):
    return core.play(forecasters.BlackwellForecaster.from_oracle(o), _iid(), T, key=KEY())


def _pc():
    return distributions.PiecewiseConstant(jnp.asarray(D4, jnp.result_type(float)), E4)


def eval_interval_payoff(p):
    d = _pc()
    return payoffs.expect_under_bins(p, None, d, d.probs, E4)


def eval_binary_payoff(p):
    return p(None, jnp.asarray(0.3, jnp.result_type(float)), jnp.asarray(1, jnp.int32))


def fit_apply(probs, labels):
    def use(r):
        kw = {"key": KEY()} if getattr(r, "needs_key", False) else {}
        return r.fit(probs, labels, **kw)(probs)
    return use


def _utility(y, x):
    return jnp.stack([y, 0.5 - jnp.abs(y - 0.5), 1 - (y - 0.3) ** 2])


def _fit(method, probs=PM, labels=YM):
    kw = {"key": KEY()} if getattr(method, "needs_key", False) else {}
    return method.fit(probs, labels, **kw)


def _fit_entry(cls):
    """A method's ``fit`` (its arguments fuzzed), the method built by ``cls()``."""
    method = cls()

    def fit(probs, labels, sample_weight=None, **kw):
        if getattr(method, "needs_key", False):
            kw.setdefault("key", KEY())
        return method.fit(probs, labels, sample_weight=sample_weight, **kw)

    return Ex(fit, lambda: {"probs": PM, "labels": YM, "sample_weight": W})


def _fitted_entry(cls):
    """A fitted map's ``__call__`` (its probabilities fuzzed), fitted by ``cls().fit``."""
    def apply(probs):
        return _fit(cls(), PM, YM)(probs)

    return Ex(apply, lambda: {"probs": PM})


def _score_rule(rule_cls, fields=None):
    def score(probs, y, **settings):
        return rule_cls(**settings)(probs, y)
    # scoring rules run inside the forecasters' and payoffs' inner loops: their values are checked
    # on plain calls only, as the concepts page documents ("Input checks")
    return ex(score, {"probs": P, "y": Y, **(fields or {})}, defaults=False, jit_values=False)


# ---------------------------------------------------------------------------------- tables
EXAMPLES: dict[str, Ex] = {}
E = EXAMPLES

# config
def _checks(enabled):
    with config.checks(enabled):
        return config.checks_enabled()


def _set_checks(enabled):
    try:
        return config.set_checks(enabled)
    finally:
        config.set_checks(True)  # the rest of the fuzz runs with the checks on


E["config.checks"] = Ex(_checks, lambda: {"enabled": False}, kinds={"enabled": K("bool")}, jit=False)
E["config.checks_enabled"] = Ex(config.checks_enabled, jit=False)
E["config.set_checks"] = Ex(_set_checks, lambda: {"enabled": True}, kinds={"enabled": K("bool")}, jit=False)

# core
for _n in ("AbstractForecaster", "AbstractNature"):
    E[f"core.{_n}"] = nothing("an abstract base: its concrete subclasses have examples")
E["core.CheckpointError"] = nothing("an exception type")
E["core.Forecast"] = nothing("a container built by a forecaster's predict (played in every forecaster example)")
E["core.Trajectory"] = nothing("a container built by play (core.play's example)")
E["core.OptimResult"] = nothing("a container built by optimise (core.optimise's example)")
E["core.Mixture"] = ex(lambda support, probs: core.as_mixture(core.Mixture(support, probs)),
                       {"support": np.array([0.2, 0.5, 0.8]), "probs": np.array([0.2, 0.3, 0.5])}, defaults=False,
                       kinds={"support": K("real")}, unpaired=("support", "probs"), no_length=True,
                       also_valid=(("support", "extra axis"),))  # a support of vectors (k, d) is documented
E["core.as_mixture"] = ex(core.as_mixture, {"public": np.array([0.2, 0.5])}, kinds={"public": K("real")},
                          also_valid=(("public", "extra axis"),))  # any array is a point forecast (documented)
E["core.as_traced_module"] = Ex(core.as_traced_module, lambda: {"module": forecasters.Constant(0.5)}, kinds={"module": K("object")},
                                also_valid=(("module", "an int"),))  # a number is a pytree of one setting (documented)


def _optax():
    import optax
    return optax.sgd(0.1)


E["core.optax_update"] = Ex(lambda grads, params: core.optax_update(_optax(), grads, _optax().init(params), params),
                            lambda: {"grads": np.array([0.1, 0.2]), "params": np.array([1.0, 2.0])},
                            kinds={"grads": K("real"), "params": K("real")})
E["core.optimise"] = Ex(lambda params, n_steps: core.optimise(lambda x: jnp.sum(x ** 2), params, _optax(), n_steps),
                        lambda: {"params": np.array([1.0, 2.0]), "n_steps": 3}, kinds={"params": K("real")},
                        # params of any shape; 0 steps: the starting point (documented range [0, 2**24])
                        also_valid=(("params", "extra axis"), ("n_steps", "0 (below 1)")))
E["core.play"] = Ex(core.play, lambda: {"forecaster": forecasters.Constant(0.3), "nature": natures.Bernoulli(0.4), "T": T,
                                        "key": KEY(), "n_bins": 10, "chunk": 3}, jit=False)
E["core.sweep"] = Ex(core.sweep, lambda: {"forecaster": forecasters.Constant(0.3), "natures": natures.Bernoulli(0.4), "T": T,
                                          "key": KEY(), "n_seeds": 2, "n_bins": 10, "chunk": 3, "threads": 1}, jit=False)

# datasets (loaders of files and of bundled data: not traced)
E["datasets.save_predictions"] = Ex(lambda probs, labels: _save_load(probs, labels), lambda: {"probs": PM, "labels": YM}, jit=False)
E["datasets.load_predictions"] = Ex(lambda atol: _save_load(PM, YM, atol), lambda: {"atol": 1e-4}, jit=False,
                                    kinds={"atol": K("float", lo=0.0)})
E["datasets.ModelStream"] = nothing("a container built by logistic_stream / naive_bayes_stream (their examples)")
E["datasets.LaggedSeries"] = nothing("a container built by sunspots / wind_power / lag_features (their examples)")
E["datasets.ExpertForecasts"] = nothing("a container built by run_expert (its example)")
E["datasets.logistic_stream"] = Ex(datasets.logistic_stream, lambda: {"name": "breast_cancer", "n_passes": 1, "learning_rate": 0.5, "key": KEY()}, jit=False)
E["datasets.naive_bayes_stream"] = Ex(datasets.naive_bayes_stream, lambda: {"name": "digits", "n_passes": 1, "var_smoothing": 1e-9, "key": KEY()},
                                      jit=False, kinds={"var_smoothing": K("float", lo=0.0)})
E["datasets.lag_features"] = Ex(datasets.lag_features, lambda: {"series": np.linspace(0.0, 1.0, 30), "n_lags": 3}, jit=False,
                                min_length=4)  # more values than lags
E["datasets.sunspots"] = Ex(datasets.sunspots, lambda: {"n_lags": 3}, jit=False)
E["datasets.wind_power"] = Ex(datasets.wind_power, lambda: {"n_lags": 3, "hub_height": 100.0}, jit=False, kinds={"hub_height": K("float", lo=0.0)})


def _lagged():
    return datasets.sunspots(3)


E["datasets.run_expert"] = Ex(lambda name, horizon, warmup, n_bins, key: datasets.run_expert(
    name, _lagged(), horizon=horizon, warmup=warmup, n_bins=n_bins, key=key, progress=False),
    lambda: {"name": "marginal", "horizon": 8, "warmup": 40, "n_bins": 10, "key": KEY()}, jit=False,
    also_valid=(("warmup", "None"),))  # warmup=None is the documented default
E["datasets.run_day_ahead_expert"] = Ex(lambda name, days, warmup_days, day_length, n_bins, key: datasets.run_day_ahead_expert(
    name, _lagged(), days=days, warmup_days=warmup_days, day_length=day_length, n_bins=n_bins, key=key, progress=False),
    lambda: {"name": "marginal", "days": 2, "warmup_days": 4, "day_length": 4, "n_bins": 10, "key": KEY()}, jit=False,
    also_valid=(("warmup_days", "None"),))  # warmup_days=None is the documented default


def _save_load(probs, labels, atol=1e-4):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "preds.npz"
        datasets.save_predictions(path, probs, labels)
        return datasets.load_predictions(path, atol=atol)


# distributions
E["distributions.AbstractDistribution"] = nothing("an abstract base")


def _dist_use(d):
    return d.cdf(jnp.asarray(U, jnp.result_type(float))), d.mean()


E["distributions.PiecewiseConstant"] = ex(distributions.PiecewiseConstant, lambda: {"probs": D4, "edges": E4}, use=_dist_use,
                                          kinds={"probs": K("simplex"), "edges": K("object")}, unpaired=("probs",), no_length=True)
E["distributions.Gaussian"] = ex(distributions.Gaussian, lambda: {"loc": 0.5, "scale": 0.2},
                                 use=lambda d: (d.cdf(jnp.asarray(0.3, jnp.result_type(float))), d.mean()),
                                 kinds={"scale": K("float", lo=0.0)},
                                 also_valid=(("loc", "list"), ("scale", "list")))  # array-like parameters: a list is a batch
E["distributions.MixtureDistribution"] = Ex(lambda weights: distributions.MixtureDistribution(
    distributions.PiecewiseConstant(jnp.asarray(np.stack([D4, D4[::-1]]), jnp.result_type(float)), E4), weights),
    lambda: {"weights": np.array([0.3, 0.7])}, use=_dist_use, kinds={"weights": K("simplex")}, no_length=True)
E["distributions.check_edges"] = Ex(distributions.check_edges, lambda: {"edges": np.array(E4)}, kinds={"edges": K("prob")}, jit=False,
                                    min_length=2)  # one bin needs two edges
E["distributions.check_outcomes"] = Ex(distributions.check_outcomes, lambda: {"y": U}, kinds={"y": K("real_inf")},  # ±inf: CDF 0 or 1
                                       also_valid=(("y", "extra axis"), ("*", "empty")))  # any shape (documented)
E["distributions.probs_atol"] = Ex(distributions.probs_atol, lambda: {"n_bins": 4, "dtype": jnp.float32}, kinds={"dtype": K("object")}, jit=False)
E["distributions.uniform_edges"] = ex(distributions.uniform_edges, {"n": 4}, jit=False)

# the scores broadcast their arguments with NumPy's rules (the module docstring): y of shape (T, 1)
# against a batch (T,) is the documented table of every pair
_BROADCASTS = (("y", "extra axis"),)

# forecasters
E["forecasters.AbstractPartitioned"] = nothing("an abstract base")
for _n, _a in (("AlmostOneStepAhead", {"n_bins": 4}), ("FosterRandomized", {"n_bins": 4}), ("GuptaRamdas", {"n_bins": 4}),
               ("Constant", {"value": 0.3}), ("DefensiveForecaster", {"n_grid": 8, "bandwidth": 0.1}),
               ("RunningFrequency", {}), ("LeeMultiObjectiveMW", {"n_bins": 4, "learning_rate": 0.3}),
               ("KuleshovErmon", {"n_cells": 3, "learning_rate": 0.5, "n_squarings": 10}),
               ("SwapRegretCalibrated", {"n_bins": 3, "learning_rate": 0.2, "n_squarings": 10}),
               ("ApproachabilityRecalibrator", {"n_bins": 4, "step_size": 0.1})):
    # the recalibrating forecasters read a model's forecast from the context: a two-level model's
    _use = play_against(natures.TwoLevelModel) if _n in ("LeeMultiObjectiveMW", "KuleshovErmon", "ApproachabilityRecalibrator") else play_binary
    E[f"forecasters.{_n}"] = ex(getattr(forecasters, _n), _a, use=_use, kinds={"value": K("float", lo=0.0, hi=1.0)})
E["forecasters.ExpertMeanCells"] = ex(lambda n_cells, lo, hi: forecasters.Partitioned(
    forecasters.RunningFrequency(), n_cells, forecasters.ExpertMeanCells(n_cells, lo, hi)),
    {"n_cells": 3, "lo": 0.0, "hi": 1.0}, use=play_against(natures.TwoLevelModel), defaults=False)
E["forecasters.UniformCells"] = ex(lambda n_cells: forecasters.Partitioned(forecasters.RunningFrequency(), n_cells,
                                                                            forecasters.UniformCells(n_cells)),
                                   {"n_cells": 3}, use=play_against(natures.TwoLevelModel), defaults=False)
E["forecasters.Partitioned"] = Ex(forecasters.Partitioned, lambda: {"inner": forecasters.RunningFrequency(), "n_cells": 3,
                                                                    "cell_of": forecasters.UniformCells(3)},
                                  use=play_against(natures.TwoLevelModel))
E["forecasters.BlackwellForecaster"] = Ex(forecasters.BlackwellForecaster, lambda: {
    "payoff": payoffs.KakadeFoster(4).payoff, "oracle": payoffs.KakadeFoster(4)}, use=play_binary)
E["forecasters.ORCA"] = ex(forecasters.ORCA, {"payoff": payoffs.QuantileCalibration(3), "edges": E4, "n_steps": 2},
                           use=play_interval, kinds={"edges": K("object"), "temperature": K("float", lo=0.0),
                                                     "learning_rate": K("float", lo=0.0), "logit_range": K("float", lo=0.0)},
                           also_valid=(("n_steps", "0 (below 1)"),))  # no optimisation: the starting forecast (documented)
def _play_with_expert(f):
    """Against outcomes whose context is an expert's piecewise-constant forecast (what
    OnlineIsotonic recalibrates)."""
    x = distributions.PiecewiseConstant(jnp.asarray(np.tile(D4, (T, 1)), jnp.result_type(float)), E4)
    y = jnp.asarray(np.resize(np.asarray(U), T), jnp.result_type(float))
    return core.play(f, natures.Replay(y, x, outcomes="real"), T, key=KEY())


E["forecasters.OnlineIsotonic"] = ex(forecasters.OnlineIsotonic, {"edges": E4, "capacity": 8}, use=_play_with_expert,
                                     kinds={"edges": K("object"), "prior_weight": K("float", lo=0.0)})
E["forecasters.OnlineIsotonicState"] = nothing("a state built by OnlineIsotonic.init (played in its example)")
E["forecasters.online_isotonic"] = Ex(forecasters.online_isotonic, lambda: {
    "cdf_values": np.tile(np.array([0.0, 0.2, 0.5, 0.8, 1.0]), (N, 1)), "pit_values": U},
    kinds={"cdf_values": K("prob")})
E["forecasters.online_isotonic_probs"] = Ex(forecasters.online_isotonic_probs, lambda: {
    "probs": np.tile(D4, (N, 1)), "y": U, "edges": E4}, kinds={"probs": K("simplex"), "y": K("prob"), "edges": K("object")})
E["forecasters.aosa_bins"] = ex(forecasters.aosa_bins, {"T": 100}, jit=False)
E["forecasters.aosa_bound"] = ex(forecasters.aosa_bound, {"T": 100, "n_bins": 10}, jit=False)
E["forecasters.binary_suite"] = ex(forecasters.binary_suite, {"T": 100}, jit=False)
E["forecasters.foster_bins"] = ex(forecasters.foster_bins, {"T": 100}, jit=False)
E["forecasters.one_step_ahead"] = ex(forecasters.one_step_ahead, {"y": Y, "n_bins": 4})
# the approachability payoff reads the model's forecast from the context
E["forecasters.ApproachabilityOracle"] = ex(forecasters.ApproachabilityOracle, {"n_bins": 4}, use=lambda o: core.play(
    forecasters.BlackwellForecaster.from_oracle(o), natures.TwoLevelModel(), T, key=KEY()))
E["forecasters.ApproachabilityPayoff"] = ex(forecasters.ApproachabilityPayoff, {"n_bins": 4}, use=lambda p: p(
    jnp.asarray(0.3, jnp.result_type(float)), jnp.asarray(0.3, jnp.result_type(float)), jnp.asarray(1, jnp.int32)))
E["forecasters.tradeoff_parameters"] = ex(forecasters.tradeoff_parameters, {"T": 100, "beta": 0.4}, jit=False,
                                          kinds={"beta": K("float", lo=0.0, hi=1.0)})
E["forecasters.lee_weights"] = Ex(forecasters.lee_weights, lambda: {"U": np.array([0.1, -0.2, 0.3]), "U_reg": 0.1, "eta": 0.5},
                                  kinds={"U": K("real"), "eta": K("float", lo=0.0)})

# losses
for _n in ("smooth_ece_loss",):
    E[f"losses.{_n}"] = binary(getattr(losses, _n))
for _n in ("confidence_smooth_ece_loss", "kernel_calibration_loss", "mmce_loss"):
    E[f"losses.{_n}"] = multiclass(getattr(losses, _n))
E["losses.decision_calibration_loss"] = multiclass(losses.decision_calibration_loss,
                                                   {"losses": np.stack([np.eye(3), 1 - np.eye(3)])},
                                                   kinds={"losses": K("real")}, unpaired=("losses",))
E["losses.quantile_calibration_loss"] = ex(losses.quantile_calibration_loss, {
    "quantiles": np.stack([YR - 1, YR, YR + 1], 1), "targets": YR, "levels": np.array([0.1, 0.5, 0.9]), "sample_weight": W},
    kinds={"levels": K("prob")}, unpaired=("levels",))

# metrics
SMALL_SEARCH = metrics.PartitionSearch(n_restarts=2, n_steps=3)
E["metrics.DecisionCalibrationResult"] = nothing("a container built by decision_calibration_error (its example)")
E["metrics.DecisionLossGapResult"] = nothing("a container built by decision_loss_gap (its example)")
E["metrics.SearchResult"] = nothing("a container built by partition_search (its example)")
E["metrics.CalibratedWitness"] = nothing("a container built by distance_to_calibration (its example)")
E["metrics.CalibrationDistance"] = nothing("a container built by distance_to_calibration (its example)")
E["metrics.KernelAudit"] = nothing("a container built by kernel_audit (its example)")
E["metrics.HistogramState"] = nothing("a state built by StreamingBinnedECE.init (its example)")
E["metrics.WeightedCE"] = nothing("a container built by weighted_calibration_error (its example)")
E["metrics.PrecisionWarning"] = nothing("a warning type")
E["metrics.decision_calibration_error"] = multiclass(metrics.decision_calibration_error,
                                                    {"n_actions": 2, "key": KEY(), "search": SMALL_SEARCH}, defaults=False,
                                                    also_valid=(("n_actions", "list"),))  # a sequence of K values is documented
E["metrics.decision_loss_gap"] = multiclass(metrics.decision_loss_gap, {"n_losses": 2, "n_actions": 2, "key": KEY()}, defaults=False)
_RES = PM - np.eye(3)[YM]
# the decision-calibration search takes real predictions (N, C): a recalibrator's stages may
# leave the simplex (documented), so only NaN/inf and shapes are invalid
_OFF_SIMPLEX = K("real")
E["metrics.decision_objective"] = Ex(metrics.decision_objective, lambda: {
    "w": np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.5]]), "probs": PM, "residual": _RES, "weights": W / W.sum()},
    kinds={"w": K("real"), "residual": K("real"), "probs": _OFF_SIMPLEX}, unpaired=("w",))
E["metrics.partition_search"] = Ex(lambda probs, residual, weights, key: metrics.partition_search(
    probs, residual, weights, key=key, n_actions=2, search=SMALL_SEARCH) if "n_actions" in inspect.signature(metrics.partition_search).parameters
    else metrics.partition_search(probs, residual, weights, jnp.ones(2, bool), key=key, search=SMALL_SEARCH),
    lambda: {"probs": PM, "residual": _RES, "weights": W / W.sum(), "key": KEY()}, kinds={"residual": K("real"), "probs": _OFF_SIMPLEX})
E["metrics.partition_weights"] = Ex(metrics.partition_weights, lambda: {"w": np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.5]]), "probs": PM},
                                    kinds={"w": K("real"), "probs": _OFF_SIMPLEX}, unpaired=("w",))
for _n in ("ace", "mce", "brier", "smooth_calibration_error", "smooth_ece", "binned_ece"):
    E[f"metrics.{_n}"] = binary(getattr(metrics, _n), kinds={"eps": K("float", lo=0.0, hi=1.0), "order": K("float", lo=1.0)})
E["metrics.ece"] = binary(metrics.ece)
E["metrics.log_loss"] = binary(metrics.log_loss, {"eps": 1e-6}, kinds={"eps": K("float", lo=0.0, hi=0.5)})
E["metrics.bin_index"] = ex(metrics.bin_index, {"probs": P, "n_bins": 10},
                           also_valid=(("probs", "extra axis"), ("*", "empty")))  # elementwise: any shape, empty too
E["metrics.quantile_bin_index"] = ex(metrics.quantile_bin_index, {"probs": P, "n_bins": 3, "sample_weight": W})
# weighted (fractional) counts are documented; ones[0] = 0 keeps ones <= counts when counts[0] becomes 0.5
_GRID_COUNTS = dict(kinds={"counts": K("count"), "ones": K("count")}, no_length=True,
                    also_valid=(("counts", "fraction"), ("ones", "fraction")))
E["metrics.ece_from_counts"] = ex(metrics.ece_from_counts, {"counts": np.array([3, 2, 1, 4, 5]), "ones": np.array([0, 1, 0, 2, 5]), "n_bins": 4},
                                  **_GRID_COUNTS)
E["metrics.atoms_from_counts"] = ex(metrics.atoms_from_counts, {"counts": np.array([3, 2, 1, 4, 5]), "ones": np.array([0, 1, 0, 2, 5]), "n_bins": 4},
                                    **_GRID_COUNTS)
E["metrics.lp_calibration_error"] = binary(metrics.lp_calibration_error, {"epsilon": 0.5, "n_bins": 10},  # 0.5: exact in float32
                                           kinds={"epsilon": K("float", lo=0.0, hi=1.0), "order": K("float", lo=1.0)})
E["metrics.distance_to_calibration"] = binary(metrics.distance_to_calibration, {"sample_weight": np.array([1, 2, 1, 1, 1, 1])},
                                              jit=False, kinds={"sample_weight": K("weight"), "rtol": K("float", lo=0.0)},
                                              why="an exact LP solved in NumPy on concrete arrays")
E["metrics.lower_distance_to_calibration"] = binary(metrics.lower_distance_to_calibration, jit=False,
                                                    kinds={"rtol": K("float", lo=0.0)}, why="a bisection in NumPy")
E["metrics.smooth_ece_at_bandwidth"] = ex(metrics.smooth_ece_at_bandwidth, {"probs": P, "residuals": Y - P, "sigma": 0.1, "sample_weight": W},
                                          kinds={"sigma": K("float", lo=0.0)})
E["metrics.GaussianKernel"] = ex(lambda bandwidth: metrics.kernel_audit(PM, YM, metrics.GaussianKernel(bandwidth)), {"bandwidth": 0.5},
                                 kinds={"bandwidth": K("float", lo=0.0)}, defaults=False)
E["metrics.LaplacianKernel"] = ex(lambda bandwidth: metrics.kernel_audit(PM, YM, metrics.LaplacianKernel(bandwidth)), {"bandwidth": 0.5},
                                  kinds={"bandwidth": K("float", lo=0.0)}, defaults=False)
E["metrics.MultinomialKernel"] = ex(lambda degree: metrics.kernel_audit(PM, YM, metrics.MultinomialKernel(degree)), {"degree": 2},
                                    defaults=False)
E["metrics.kernel_audit"] = multiclass(metrics.kernel_audit, {"s": 1.0, "tile": 4}, kinds={"s": K("float", lo=0.0)})
E["metrics.KernelWitness"] = Ex(lambda probs: metrics.kernel_audit(PM, YM).witness(probs), lambda: {"probs": PM})
E["metrics.PartitionSearch"] = ex(lambda n_restarts, n_steps, learning_rate, scale: metrics.two_action_decision_calibration_error(
    PM, YM, key=KEY(), search=metrics.PartitionSearch(n_restarts, n_steps, learning_rate, scale)),
    {"n_restarts": 2, "n_steps": 3, "learning_rate": 0.01, "scale": 100.0}, defaults=False,
    kinds={"learning_rate": K("float", lo=0.0), "scale": K("float", lo=0.0)})
E["metrics.SigmoidSearch"] = ex(lambda n_restarts, n_steps, learning_rate: metrics.sigmoid_calibration_error(
    PM, YM, key=KEY(), search=metrics.SigmoidSearch(n_restarts, n_steps, learning_rate)),
    {"n_restarts": 2, "n_steps": 3, "learning_rate": 0.05}, defaults=False, kinds={"learning_rate": K("float", lo=0.0)})


def _stream(cls):
    def run(probs, labels, **settings):
        s = cls(**settings)
        st = s.init()
        st = s.step(st, probs, labels)
        return s.finalise(st)
    return run


E["metrics.StreamingBinnedECE"] = ex(_stream(metrics.StreamingBinnedECE), {"probs": P, "labels": Y, "n_bins": 15, "order": 1.0},
                                     defaults=False, kinds={"order": K("float", lo=1.0)})
E["metrics.StreamingSmoothECE"] = ex(_stream(metrics.StreamingSmoothECE), {"probs": P, "labels": Y, "n_grid": 65}, defaults=False)
for _n in ("accuracy", "classwise_ece", "confidence_ece", "l2_error", "nll", "top_label_ece", "full_smooth_calibration_error",
           "low_degree_calibration_error", "max_classwise_calibration_error", "projected_smooth_calibration_error",
           "subset_smooth_calibration_error"):
    E[f"metrics.{_n}"] = multiclass(getattr(metrics, _n), kinds={"order": K("float", lo=1.0), "eps": K("float", lo=0.0, hi=0.5)})
for _n in ("full_smooth_calibration_error", "projected_smooth_calibration_error"):
    E[f"metrics.{_n}"] = E[f"metrics.{_n}"]._replace(jit=False, why="linear programs solved on the host: refused under jit")
E["metrics.one_hot"] = ex(metrics.one_hot, {"labels": YM, "n_classes": 3}, also_valid=(("*", "empty"),))  # elementwise: (0, C) for no labels
E["metrics.lipschitz_correlation"] = ex(metrics.lipschitz_correlation, {"t": P, "r": Y - P}, jit=False,
                                       why="a linear program on the host: refused under jit", kinds={"t": K("real"), "r": K("real"),
                                                                                                     "lipschitz": K("float", lo=0.0)})
E["metrics.sigmoid_calibration_error"] = multiclass(metrics.sigmoid_calibration_error, {
    "key": KEY(), "search": metrics.SigmoidSearch(n_restarts=2, n_steps=3)}, kinds={"L": K("float", lo=0.0)})
E["metrics.two_action_decision_calibration_error"] = multiclass(metrics.two_action_decision_calibration_error, {
    "key": KEY(), "search": SMALL_SEARCH})
E["metrics.weighted_calibration_error"] = multiclass(metrics.weighted_calibration_error, {"weight_fn": lambda v: v})
E["metrics.average_regret"] = ex(metrics.average_regret, {"forecasts": P, "q": P[::-1].copy(), "y": Y})
E["metrics.calibration_from_buckets"] = ex(metrics.calibration_from_buckets, {
    "counts": np.array([3, 2, 1, 4, 5]), "ones": np.array([0, 1, 0, 2, 5]), "values": np.linspace(0, 1, 5), "T": 15},
    kinds={"counts": K("count"), "ones": K("count"), "values": K("prob"), "order": K("float", lo=1.0)}, no_length=True,
    also_valid=(("counts", "fraction"), ("ones", "fraction")))  # expected (fractional) counts are documented
E["metrics.eps_calibration"] = ex(metrics.eps_calibration, {"forecasts": P, "y": Y, "n_bins": 10},
                                  kinds={"order": K("float", lo=1.0)})
E["metrics.central_interval_coverage"] = ex(metrics.central_interval_coverage, {"pit_values": U, "sample_weight": W},
                                            kinds={"level": K("float", lo=0.0, hi=1.0)})
E["metrics.crps_score"] = ex(lambda probs, y, sample_weight: metrics.crps_score(
    distributions.PiecewiseConstant(probs, E4), y, sample_weight=sample_weight),
    {"probs": np.tile(D4, (N, 1)), "y": U, "sample_weight": W}, kinds={"y": K("real")},  # beyond the support is valid
    aliases={"probs": "dist"})  # the masses reach crps_score as its argument dist
E["metrics.miscalibration_area"] = ex(metrics.miscalibration_area, {"pit_values": U, "sample_weight": W})
E["metrics.pinball_loss"] = ex(metrics.pinball_loss, {"quantiles": np.stack([YR - 1, YR, YR + 1], 1), "y": YR,
                                                      "levels": np.array([0.1, 0.5, 0.9]), "sample_weight": W},
                               kinds={"levels": K("prob"), "y": K("real")}, unpaired=("levels",))
E["metrics.pit"] = ex(lambda probs, y: metrics.pit(distributions.PiecewiseConstant(probs, E4), y),
                      {"probs": np.tile(D4, (N, 1)), "y": U}, kinds={"y": K("real")})  # an outcome beyond the support is valid
E["metrics.pit_histogram"] = ex(metrics.pit_histogram, {"pit_values": U, "sample_weight": W})
E["metrics.pit_uniformity"] = ex(metrics.pit_uniformity, {"pit_values": U})
E["metrics.qce_calibrated_expectation"] = ex(metrics.qce_calibrated_expectation, {"T": 100, "levels": np.array([0.1, 0.5, 0.9])},
                                             kinds={"levels": K("prob")}, jit=False)
E["metrics.quantile_calibration_error"] = ex(metrics.quantile_calibration_error, {"pit_values": U, "levels": np.array([0.1, 0.5, 0.9]),
                                                                                  "sample_weight": W},
                                             kinds={"levels": K("prob")}, unpaired=("levels",))
E["metrics.quantile_frequencies"] = ex(metrics.quantile_frequencies, {"pit_values": U, "levels": np.array([0.1, 0.5, 0.9]), "sample_weight": W},
                                       kinds={"levels": K("prob")}, unpaired=("levels",))
E["metrics.smape"] = ex(metrics.smape, {"y_pred": YR + 0.1, "y": YR, "sample_weight": W}, kinds={"y": K("real")})

# natures
for _n, _a in (("Bernoulli", {"prob": 0.4}), ("Contrarian", {}), ("DistortedModel", {}), ("Drifting", {}), ("DriftingModel", {}),
               ("Markov", {}), ("MaxCalibrationError", {"n_bins": 4}), ("Periodic", {}), ("RandomMixture", {"n_bins": 4}),
               ("TwoLevelModel", {}), ("RecalibrationAdversary", {"n_bins": 4})):
    E[f"natures.{_n}"] = ex(getattr(natures, _n), _a, use=play_nature,
                            kinds={"prob": K("float", lo=0.0, hi=1.0), "p01": K("float", lo=0.0, hi=1.0), "p10": K("float", lo=0.0, hi=1.0),
                                   "p_high": K("float", lo=0.0, hi=1.0), "alpha": K("float", lo=0.0, hi=1.0),
                                   "horizon": K("float", lo=0.0), "period": K("float", lo=0.0)})
E["natures.RegimeSwitch"] = ex(natures.RegimeSwitch, {"rates": np.array([0.2, 0.8]), "switch_prob": 0.01}, use=play_nature,
                               kinds={"rates": K("prob"), "switch_prob": K("float", lo=0.0, hi=1.0)}, no_length=True)
E["natures.Replay"] = ex(natures.Replay, {"y": Y, "x": P}, use=play_nature,
                        also_valid=(("x", "extra axis"),))  # contexts (T, d): a feature vector a round (documented)
E["natures.Switch"] = Ex(natures.Switch, lambda: {"natures": (natures.Bernoulli(0.3), natures.Contrarian()), "index": 1},
                         use=play_nature, kinds={"index": K("int")})
E["natures.HalfSpaceAdversary"] = ex(lambda n_grid, lo, hi: natures.HalfSpaceAdversary(_kf().payoff, n_grid, lo, hi),
                                     {"n_grid": 11, "lo": 0.0, "hi": 1.0}, use=play_interval_nature, defaults=False)
E["natures.IIDInterval"] = ex(natures.IIDInterval, {"probs": D4, "edges": E4}, use=play_interval_nature,
                              kinds={"probs": K("simplex"), "edges": K("object")}, no_length=True)
E["natures.OverconfidentGaussian"] = ex(natures.OverconfidentGaussian, {"edges": E4}, use=play_interval_nature,
                                        kinds={"edges": K("object"), "scale": K("float", lo=0.0), "spread": K("float", lo=0.0)})
E["natures.binary_suite"] = ex(natures.binary_suite, {"T": 100, "n_bins": 10, "key": KEY()}, jit=False)

# payoffs
for _n in ("AbstractExpectations", "AbstractIntervalPayoff", "AbstractOracle", "AbstractPayoff"):
    E[f"payoffs.{_n}"] = nothing("an abstract base: its concrete subclasses have examples")
E["payoffs.ExpertContext"] = nothing("a container of a context (built by the natures that publish an expert's forecast)")
Q5 = np.linspace(0.0, 1.0, 5)  # the conformal context: Q_t(a_i) at n_actions + 1 = 5 points


def against_adversary(oracle, context=None):
    """Play a Blackwell forecaster (of ``oracle``) against a half-space adversary of the payoff."""
    return lambda p: core.play(forecasters.BlackwellForecaster.from_oracle(oracle()), natures.HalfSpaceAdversary(
        p, n_grid=11, context_value=None if context is None else jnp.asarray(context, jnp.result_type(float))), T, key=KEY())


_F = jnp.result_type(float)
E["payoffs.BinaryCalibration"] = ex(payoffs.BinaryCalibration, {"n_bins": 4}, use=eval_binary_payoff)
E["payoffs.MixedBinaryCalibration"] = ex(payoffs.MixedBinaryCalibration, {"n_bins": 4}, use=lambda p: p(
    None, core.Mixture(jnp.array([0.25, 0.5], _F), jnp.array([0.4, 0.6], _F)), jnp.asarray(1, jnp.int32)))
E["payoffs.ConformalPayoff"] = ex(payoffs.ConformalPayoff, {"beta": 0.3, "n_actions": 4}, kinds={"beta": K("float", lo=0.0, hi=1.0)},
                                  use=against_adversary(lambda: payoffs.ConformalOracle(0.3, 4, lp_steps=20), Q5))
E["payoffs.SmoothConformalPayoff"] = ex(payoffs.SmoothConformalPayoff, {"beta": 0.3, "n_actions": 4}, kinds={"beta": K("float", lo=0.0, hi=1.0)},
                                        use=against_adversary(lambda: payoffs.SmoothConformalOracle(0.3, 4), Q5))
E["payoffs.MomentGridCalibration"] = ex(payoffs.MomentGridCalibration, {"n_ticks": 3}, use=against_adversary(lambda: payoffs.MomentOracle(3)))
E["payoffs.MixedMomentCalibration"] = ex(payoffs.MixedMomentCalibration, {"n_ticks": 3},
                                         use=against_adversary(lambda: payoffs.MomentOracle(3, quasi=True)))
E["payoffs.QuantileStepPayoff"] = ex(payoffs.QuantileStepPayoff, {"n_levels": 3}, use=lambda p: p(None, jnp.asarray(0.5, _F), jnp.asarray(0.3, _F)))
E["payoffs.ExpertRegret"] = ex(payoffs.ExpertRegret, {}, use=lambda p: p(payoffs.ExpertContext(_pc()), _pc(), jnp.asarray(0.3, _F)))
E["payoffs.PinballRegret"] = ex(payoffs.PinballRegret, {"levels": (0.1, 0.5, 0.9)}, use=lambda p: p(_pc(), _pc(), jnp.asarray(0.3, _F)))
for _n, _a in (("QuantileCalibration", {"n_levels": 3}), ("MomentCalibration", {})):
    E[f"payoffs.{_n}"] = ex(getattr(payoffs, _n), _a, use=eval_interval_payoff)
E["payoffs.DistributionCalibration"] = ex(payoffs.DistributionCalibration, {"cell_edges": (0.0, 0.5, 1.0), "n_ticks": 3},
                                          use=eval_interval_payoff)
E["payoffs.DecisionCalibration"] = ex(payoffs.DecisionCalibration, {"utility": _utility, "n_actions": 3}, use=eval_interval_payoff)
E["payoffs.SwapRegret"] = ex(payoffs.SwapRegret, {"utility": _utility, "n_actions": 3}, use=eval_interval_payoff)
E["payoffs.DirectSum"] = Ex(payoffs.DirectSum, lambda: {"blocks": (payoffs.QuantileCalibration(3), payoffs.MomentCalibration())},
                            use=eval_interval_payoff)
E["payoffs.DefaultExpectations"] = Ex(payoffs.DefaultExpectations, lambda: {"payoff": payoffs.QuantileCalibration(3)}, use=eval_interval_payoff)
E["payoffs.as_expectations"] = Ex(payoffs.as_expectations, lambda: {"payoff": payoffs.QuantileCalibration(3)}, use=eval_interval_payoff)
E["payoffs.experiment_payoff"] = ex(payoffs.experiment_payoff, {"n_levels": 3},
                                   use=lambda p: p(payoffs.ExpertContext(_pc()), _pc(), jnp.asarray(0.3, _F)))
E["payoffs.Recipe"] = Ex(lambda n_context, n_witness, bound_value: payoffs.Recipe(
    lambda x, p: jnp.ones(1), lambda y: jnp.stack([y]), lambda p: jnp.stack([p]), n_context, n_witness, bound_value),
    lambda: {"n_context": 1, "n_witness": 1, "bound_value": 1.0}, use=lambda p: p(None, jnp.asarray(0.3, _F), jnp.asarray(1.0, _F)), kinds={"bound_value": K("float", lo=0.0)})
_conformal_play = (lambda o: core.play(forecasters.BlackwellForecaster.from_oracle(o), natures.HalfSpaceAdversary(
    o.payoff, n_grid=11, context_value=jnp.asarray(Q5, _F)), T, key=KEY()))
for _n, _a, _use in (("KakadeFoster", {"n_bins": 4}, play_oracle), ("ConformalOracle", {"beta": 0.3, "n_actions": 4, "lp_steps": 20}, _conformal_play),
                     ("SmoothConformalOracle", {"beta": 0.3, "n_actions": 4}, _conformal_play),
                     ("MomentOracle", {"n_ticks": 3}, play_oracle_interval), ("QuantileStepOracle", {"n_levels": 3}, play_oracle_interval)):
    E[f"payoffs.{_n}"] = ex(getattr(payoffs, _n), _a, use=_use, kinds={"beta": K("float", lo=0.0, hi=1.0)})
E["payoffs.conformal_certificate"] = Ex(payoffs.conformal_certificate, lambda: {"c": np.array([0.2, -0.1, 0.3, 0.1]), "q": np.array([0.1, 0.2, 0.3, 0.4]), "beta": 0.3},
                                        kinds={"c": K("real"), "q": K("simplex"), "beta": K("float", lo=0.0, hi=1.0)}, no_length=True)
E["payoffs.direction"] = Ex(lambda mean: payoffs.direction(payoffs.QuantileCalibration(3), mean), lambda: {"mean": np.array([0.1, -0.2, 0.05])},
                            kinds={"mean": K("real")}, no_length=True)
E["payoffs.expect_under_bins"] = Ex(lambda q_probs: payoffs.expect_under_bins(payoffs.QuantileCalibration(3), None, _pc(), q_probs, E4),
                                    lambda: {"q_probs": D4}, kinds={"q_probs": K("simplex")}, no_length=True)
E["payoffs.freudenthal"] = ex(payoffs.freudenthal, {"forecast": np.array([0.4, 0.2]), "n_bins": 4}, kinds={"forecast": K("prob")},
                              no_length=True)  # a point (mean, second moment)
E["payoffs.game_value_mirror_prox"] = ex(payoffs.game_value_mirror_prox, {"A": np.array([[1.0, -1.0], [-1.0, 1.0]]), "n_steps": 20},
                                         kinds={"A": K("real")}, no_length=True)
E["payoffs.linearised_quantile"] = Ex(payoffs.linearised_quantile, lambda: {"f_left": np.array([0.2, 0.4]), "f_right": np.array([0.4, 0.7]), "alpha": 0.3},
                                      kinds={"f_left": K("prob"), "f_right": K("prob"), "alpha": K("float", lo=0.0, hi=1.0)},
                                      also_valid=(("alpha", "list"),))  # elementwise: a list of levels is a batch
E["payoffs.quantile_levels"] = ex(payoffs.quantile_levels, {"n": 4}, jit=False)
E["payoffs.tent_root"] = Ex(payoffs.tent_root, lambda: {"c": np.array([0.3, 0.1, -0.2, -0.4, 0.2])}, kinds={"c": K("real")}, no_length=True)
E["payoffs.tent_weights"] = ex(payoffs.tent_weights, {"forecasts": 0.3, "n_bins": 4}, kinds={"forecasts": K("float", lo=0.0, hi=1.0)},
                              also_valid=(("forecasts", "list"),))  # forecasts of any shape: a list is a batch

# recalibration
E["recalibration.AbstractRecalibrator"] = nothing("an abstract base: its concrete subclasses have examples")
E["recalibration.AbstractFittedRecalibrator"] = nothing("an abstract base: its concrete subclasses have examples")
E["recalibration.StageInfo"] = nothing("a container built by DecisionCalibration.fit (its example)")
# every method takes (n, C) probabilities (Platt, beta, histogram binning, isotonic: one-vs-rest)
_MC_METHODS = ("TemperatureScaling", "VectorScaling", "MatrixScaling", "DirichletCalibration", "DecisionCalibration", "KernelCalibration",
               "PlattScaling", "BetaCalibration", "HistogramBinning", "IsotonicCalibration")
_MC_METHODS += tuple(n for n in ("VennAbers",) if hasattr(recalibration, n))  # from 1.0 on
_FIELDS = {"DecisionCalibration": {"n_stages": 2, "search": SMALL_SEARCH, "n_actions": 2}, "KernelCalibration": {"max_steps": 3, "tile": 4},
           "MatrixScaling": {"n_steps": 20}, "DirichletCalibration": {"n_steps": 20}, "VectorScaling": {"n_steps": 20},
           "BetaCalibration": {"n_steps": 20}}
for _n in _MC_METHODS:
    _cls = getattr(recalibration, _n)
    E[f"recalibration.{_n}"] = ex(_cls, _FIELDS.get(_n, {}), use=fit_apply(PM, YM),
                                  kinds={"reg_lambda": K("float", lo=0.0), "reg_mu": K("float", lo=0.0), "ridge": K("float", lo=0.0),
                                         "beta": K("float", lo=0.0), "s": K("float", lo=0.0)})
    E[f"recalibration.{_n}.fit"] = _fit_entry(lambda _cls=_cls, _n=_n: _cls(**_FIELDS.get(_n, {})))
    E[f"recalibration.Fitted{_n}"] = _fitted_entry(lambda _cls=_cls, _n=_n: _cls(**_FIELDS.get(_n, {})))
E["recalibration.QuantileRecalibration"] = Ex(lambda pit_values: recalibration.QuantileRecalibration().fit(pit_values)(jnp.asarray(U)),
                                              lambda: {"pit_values": U})
E["recalibration.FittedQuantileRecalibration"] = Ex(lambda cdf_values: recalibration.QuantileRecalibration().fit(U)(cdf_values),
                                                    lambda: {"cdf_values": U}, kinds={"cdf_values": K("prob")},
                                                    also_valid=(("cdf_values", "extra axis"),))  # elementwise
E["recalibration.SklearnRecalibrator"] = Ex(lambda X, y: recalibration.SklearnRecalibrator(recalibration.TemperatureScaling()).fit(X, y).predict_proba(X),
                                            lambda: {"X": PM, "y": YM}, kinds={"X": K("simplex"), "y": K("label", n_classes=3)}, jit=False,
                                            aliases={"X": "probs", "y": "labels"},
                                            why="a scikit-learn estimator: stateful, not traced")
E["recalibration.VennAbersInterval"] = nothing("a container built by FittedVennAbers.interval and cross_venn_abers (their examples)")
E["recalibration.FittedVennAbers.interval"] = Ex(lambda probs: recalibration.VennAbers().fit(PM, YM).interval(probs),
                                                 lambda: {"probs": PM}, kinds={"probs": K("simplex")})
_VA_FOLDS = np.array([[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]])
E["recalibration.cross_venn_abers"] = Ex(
    lambda probs: recalibration.cross_venn_abers(
        jax.vmap(lambda w: recalibration.VennAbers().fit(PM, YM, sample_weight=w))(jnp.asarray(_VA_FOLDS)), probs),
    lambda: {"probs": PM}, kinds={"probs": K("simplex")})
E["recalibration.pav"] = Ex(recalibration.pav, lambda: {"y": np.array([0.1, 0.4, 0.3, 0.8, 0.6, 0.9]), "w": W},
                            kinds={"y": K("real"), "w": K("weight")})
E["recalibration.kernel_weak_learner"] = ex(recalibration.kernel_weak_learner, {"points": PM, "targets": Y - P, "tile": 4},
                                            kinds={"points": K("simplex"), "targets": K("real"), "s": K("float", lo=0.0)})
E["recalibration.TheoremAuditor"] = ex(lambda probs, labels, alpha: recalibration.projected_smooth_auditor(alpha)(probs, labels),
                                       {"probs": PM, "labels": YM, "alpha": 0.1}, kinds={"alpha": K("float", lo=0.0, hi=1.0)}, defaults=False)
E["recalibration.projected_smooth_auditor"] = ex(lambda alpha, max_sq_norm: recalibration.projected_smooth_auditor(alpha, max_sq_norm)(PM, YM),
                                                 {"alpha": 0.1, "max_sq_norm": 2.0}, defaults=False,
                                                 kinds={"alpha": K("float", lo=0.0, hi=1.0), "max_sq_norm": K("float", lo=0.0)})
E["recalibration.sigmoid_auditor"] = ex(lambda alpha, L: recalibration.sigmoid_auditor(alpha, L)(PM, YM), {"alpha": 0.1, "L": 4.0},
                                        defaults=False, kinds={"alpha": K("float", lo=0.0, hi=1.0), "L": K("float", lo=0.0)})

# recorders
E["recorders.AbstractRecorder"] = nothing("an abstract base: its concrete subclasses have examples")
E["recorders.GridSummary"] = nothing("a container built by GridCounts (its example)")
E["recorders.RecalibrationSummary"] = nothing("a container built by RecalibrationCounts (its example)")
E["recorders.Round"] = nothing("a container built by play for each round (core.play's example)")


def _record(rec):
    return core.play(forecasters.AlmostOneStepAhead(4), natures.Bernoulli(0.4), T, key=KEY(), record=rec)


E["recorders.GridCounts"] = ex(recorders.GridCounts, {"n_bins": 4}, use=_record)
E["recorders.History"] = ex(recorders.History, {}, use=_record)
E["recorders.RecalibrationCounts"] = ex(lambda n_bins: core.play(
    forecasters.ApproachabilityRecalibrator(4, 0.1), natures.TwoLevelModel(), T, key=KEY(), record=recorders.RecalibrationCounts(n_bins)),
    {"n_bins": 4}, defaults=False)
E["recorders.forecast_grid"] = Ex(recorders.forecast_grid, lambda: {"forecaster": forecasters.AlmostOneStepAhead(4)}, jit=False)
E["recorders.register_shorthand"] = Ex(recorders.register_shorthand, lambda: {"name": "fuzz-grid", "factory": lambda n_bins=4: recorders.GridCounts(n_bins)},
                                       jit=False, also_valid=(("name", "unknown option"),))  # any new name registers
E["recorders.summary_from_trajectory"] = Ex(lambda n_bins: recorders.summary_from_trajectory(_record("full"), n_bins), lambda: {"n_bins": 4})

# scoring
E["scoring.AbstractScoringRule"] = nothing("an abstract base: its concrete subclasses have examples")
E["scoring.Brier"] = _score_rule(scoring.Brier)
E["scoring.Spherical"] = _score_rule(scoring.Spherical)
E["scoring.LogScore"] = _score_rule(scoring.LogScore, {"clip": 1e-4})
E["scoring.LogScore"] = E["scoring.LogScore"]._replace(kinds={"clip": K("float", lo=0.0, hi=0.5)})
E["scoring.crps"] = ex(lambda probs, y: scoring.crps(distributions.PiecewiseConstant(probs, E4), y), {"probs": np.tile(D4, (N, 1)), "y": U},
                       kinds={"y": K("real")}, also_valid=_BROADCASTS)  # an outcome beyond the support is a valid outcome
_ENS = YR[:, None] + np.array([-0.5, 0.0, 0.3, 1.0])
E["scoring.crps_ensemble"] = ex(scoring.crps_ensemble, {"ensemble": _ENS, "y": YR, "member_weights": np.ones_like(_ENS)},
                                kinds={"member_weights": K("weight")}, fixed=("axis",),
                                also_valid=(("y", "extra axis"),))  # y broadcasts against the batch (documented)
E["scoring.twcrps_ensemble"] = ex(scoring.twcrps_ensemble, {"ensemble": _ENS, "y": YR, "lower": -1.0, "upper": 1.5}, fixed=("axis",),
                                  kinds={"lower": K("float_inf"), "upper": K("float_inf")}, also_valid=_BROADCASTS)
E["scoring.crps_beta"] = ex(scoring.crps_beta, {"a": 2.0, "b": 3.0, "y": U},  # an outcome beyond [0, 1] is a valid outcome
                           kinds={"a": K("float", lo=0.0), "b": K("float", lo=0.0), "y": K("real")}, also_valid=_BROADCASTS)
E["scoring.crps_gamma"] = ex(scoring.crps_gamma, {"shape": 2.0, "rate": 1.5, "y": np.abs(YR)},
                             kinds={"shape": K("float", lo=0.0), "rate": K("float", lo=0.0)}, also_valid=_BROADCASTS)
E["scoring.crps_poisson"] = ex(scoring.crps_poisson, {"mean": 3.0, "y": np.array([0.0, 1.0, 4.0, 2.0, 3.0, 5.0])}, kinds={"mean": K("float", lo=0.0)},
                               also_valid=_BROADCASTS)
E["scoring.crps_t"] = ex(scoring.crps_t, {"df": 4.0, "loc": 0.5, "scale": 1.2, "y": YR},
                         kinds={"df": K("float", lo=1.0), "scale": K("float", lo=0.0)}, also_valid=_BROADCASTS)
E["scoring.interval_score"] = ex(scoring.interval_score, {"lower": YR - 1, "upper": YR + 1, "y": YR, "alpha": 0.2},
                                 kinds={"alpha": K("float", lo=0.0, hi=1.0)}, also_valid=_BROADCASTS)
# pinball runs inside the quantile payoffs' rounds: its values are checked on plain calls only (documented)
E["scoring.pinball"] = ex(scoring.pinball, {"pred": YR + 0.1, "y": YR, "alpha": 0.3}, kinds={"alpha": K("float", lo=0.0, hi=1.0)},
                          also_valid=tuple((a, v, "jit") for a in ("pred", "y") for v in ("nan", "inf", "-inf"))
                          + _BROADCASTS + (("pred", "extra axis"),))
E["scoring.rps"] = ex(scoring.rps, {"probs": PM, "labels": YM})
E["scoring.squared_error"] = ex(scoring.squared_error, {"pred": YR + 0.1, "y": YR}, also_valid=_BROADCASTS + (("pred", "extra axis"),))
E["scoring.weighted_interval_score"] = ex(scoring.weighted_interval_score, {
    "median": YR, "lower": YR[:, None] - np.array([1.0, 0.5]), "upper": YR[:, None] + np.array([1.0, 0.5]), "y": YR,
    "alphas": np.array([0.2, 0.5])}, kinds={"alphas": K("prob"), "median_weight": K("float", lo=0.0)}, unpaired=("alphas",),
    also_valid=_BROADCASTS + (("median", "extra axis"),))

# stats
for _n in ("BootstrapResult", "CalibrationCurve", "CalibrationTestResult", "SKCEInterval", "SmoothCalibrationCurve",
           "CORPCurve", "ScoreDecomposition"):  # (the last two from 1.0 on: stale entries are harmless)
    E[f"stats.{_n}"] = nothing("a container built by the function that returns it (its example)")
E["stats.bootstrap"] = ex(lambda probs, labels, key, n_resamples, level, sample_weight: stats.bootstrap(
    metrics.brier, probs, labels, key=key, n_resamples=n_resamples, level=level, sample_weight=sample_weight),
    {"probs": P, "labels": Y, "key": KEY(), "n_resamples": 8, "level": 0.9, "sample_weight": W},
    kinds={"level": K("float", lo=0.0, hi=1.0)}, defaults=False, min_length=2, aliases={"probs": "arrays[0]", "labels": "arrays[1]"})
E["stats.paired_bootstrap"] = ex(lambda probs_a, probs_b, labels, key, n_resamples, level: stats.paired_bootstrap(
    metrics.brier, probs_a, probs_b, labels, key=key, n_resamples=n_resamples, level=level),
    {"probs_a": P, "probs_b": P[::-1].copy(), "labels": Y, "key": KEY(), "n_resamples": 8, "level": 0.9},
    kinds={"level": K("float", lo=0.0, hi=1.0)}, defaults=False, min_length=2)
E["stats.consistency_test"] = ex(lambda probs, labels, key, n_resamples, sample_weight: stats.consistency_test(
    metrics.brier, probs, labels, key=key, n_resamples=n_resamples, sample_weight=sample_weight),
    {"probs": P, "labels": Y, "key": KEY(), "n_resamples": 8, "sample_weight": W}, defaults=False)
E["stats.calibration_curve"] = binary(stats.calibration_curve, {"n_bins": 4}, kinds={"level": K("float", lo=0.0, hi=1.0)})
E["stats.cme_test"] = multiclass(stats.cme_test, {"key": KEY(), "n_test": 2}, kinds={"level": K("float", lo=0.0, hi=1.0)},
                                min_length=2)  # a test statistic needs two rows
for _n in ("ks_calibration_error", "ks_test", "kuiper_calibration_error", "kuiper_test", "spiegelhalter_test"):
    E[f"stats.{_n}"] = binary(getattr(stats, _n))
E["stats.pit_uniformity_test"] = ex(stats.pit_uniformity_test, {"pit_values": U})
# the unbiased and block estimators need two rows (one pair)
E["stats.skce"] = multiclass(stats.skce, {"tile": 4}, min_length=2)
E["stats.skce_interval"] = multiclass(stats.skce_interval, {"tile": 4}, kinds={"level": K("float", lo=0.0, hi=1.0)}, min_length=2)
E["stats.skce_test"] = multiclass(stats.skce_test, {"key": KEY(), "tile": 4, "n_resamples": 8}, kinds={"level": K("float", lo=0.0, hi=1.0)},
                                  min_length=2)
E["stats.smooth_calibration_curve"] = binary(stats.smooth_calibration_curve, {"key": KEY(), "n_resamples": 4, "n_points": 16},
                                             kinds={"level": K("float", lo=0.0, hi=1.0)}, min_length=2,  # a bootstrap band needs two rows
                                             also_valid=(("key", "None"),))  # key=None: the curve alone (documented)
E["stats.ucme"] = multiclass(stats.ucme, {"test_probs": PM[:3], "test_labels": YM[:3]}, unpaired=("test_probs", "test_labels"))


# plots (matplotlib figures: drawn on concrete arrays, not traced)
def _plot(fn):
    def draw(**kw):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fn(**kw)
        plt.close("all")
    return draw


try:
    from jcalib import plots
except ImportError:  # pragma: no cover - matplotlib missing
    plots = None
if plots is not None:
    E["plots.reliability_diagram"] = binary(_plot(plots.reliability_diagram), {"n_bins": 4, "level": 0.95}, jit=False,
                                            kinds={"level": K("float", lo=0.0, hi=1.0)}, defaults=False)
    E["plots.multiclass_reliability_diagram"] = ex(_plot(plots.multiclass_reliability_diagram), {"probs": PM, "labels": YM, "n_bins": 4},
                                                   jit=False, defaults=False)
    E["plots.pit_histogram_plot"] = ex(_plot(plots.pit_histogram_plot), {"pit_values": U, "n_bins": 4}, jit=False, defaults=False)
    E["plots.quantile_reliability_curve"] = ex(_plot(plots.quantile_reliability_curve), {"pit_values": U, "levels": np.array([0.1, 0.5, 0.9])},
                                               jit=False, defaults=False, kinds={"levels": K("prob")}, unpaired=("levels",))
    E["plots.rate_plot"] = Ex(_plot(plots.rate_plot), lambda: {"T": np.array([10.0, 100.0, 1000.0]), "series": {"ece": [0.3, 0.1, 0.03]}},
                              jit=False, kinds={"T": K("weight"), "series": K("object")}, no_length=True)

    def _save(path_suffix):
        import tempfile

        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ax = plots.reliability_diagram(P, Y, n_bins=4)
        with tempfile.TemporaryDirectory() as d:
            out = plots.save(ax, f"{d}/fig{path_suffix}")
        plt.close("all")
        return out

    E["plots.save"] = Ex(_save, lambda: {"path_suffix": ".png"}, jit=False, fixed=("path_suffix",))

# multicalibration, Venn–Abers, CORP decompositions (looked up lazily: present from 1.0 on)
def _get(module, name):
    return getattr(module, name, None)


PB = np.stack([1 - P, P], 1)  # binary forecasts as (n, 2) rows

if _get(metrics, "multicalibration_error"):
    # multicalibration: groups are memberships (n, G) in [0, 1]
    GR = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 1], [1, 1]], np.float64)
    _GROUPS_KIND = {"groups": K("prob"), "alpha": K("float", lo=0.0, hi=1.0), "bandwidth": K("float", lo=0.0, hi=1.0),
                    "min_size": K("float", lo=0.0), "validation_fraction": K("float", lo=0.0, hi=0.5)}
    E["metrics.multicalibration_error"] = binary(metrics.multicalibration_error, {"groups": GR}, kinds=_GROUPS_KIND)
    E["metrics.mcgrad_multicalibration_error"] = binary(metrics.mcgrad_multicalibration_error, {"groups": GR}, kinds=_GROUPS_KIND)
    E["metrics.multicalibration_audit"] = ex(metrics.multicalibration_audit,
                                             lambda: {**BIN, "groups": GR, "alpha": 0.1, "key": KEY(), "n_resamples": 8}, kinds=_GROUPS_KIND)
    E["metrics.MulticalibrationError"] = nothing("a container built by multicalibration_error (its example)")
    E["metrics.MulticalibrationAudit"] = nothing("a container built by multicalibration_audit (its example)")

    def _mc_fit_apply(r):
        return r.fit(P, Y, groups=GR)(P, GR)

    E["recalibration.Multicalibration"] = ex(recalibration.Multicalibration, {"max_rounds": 4, "validation_fraction": 0.0},
                                             use=_mc_fit_apply, kinds=_GROUPS_KIND)
    E["recalibration.Multicalibration.fit"] = Ex(
        lambda probs, labels, groups, sample_weight=None: recalibration.Multicalibration(max_rounds=4, validation_fraction=0.0).fit(
            probs, labels, groups=groups, sample_weight=sample_weight),
        lambda: {**BIN, "groups": GR}, kinds=_GROUPS_KIND)
    E["recalibration.FittedMulticalibration"] = Ex(
        lambda probs, groups: recalibration.Multicalibration(max_rounds=4, validation_fraction=0.0).fit(P, Y, groups=GR)(probs, groups),
        lambda: {"probs": P, "groups": GR}, kinds=_GROUPS_KIND)
    E["recalibration.MulticalibrationHistory"] = nothing("a container built by Multicalibration.fit (its example)")
    E["forecasters.OnlineMulticalibration"] = ex(forecasters.OnlineMulticalibration, {"n_groups": 2, "n_bins": 4},
                                                 use=lambda f: core.play(f, natures.Replay(Y, jnp.asarray(GR, jnp.result_type(float))), T, key=KEY()))
    E["payoffs.MulticalibrationPayoff"] = ex(payoffs.MulticalibrationPayoff, {"n_groups": 2, "n_bins": 4},
                                             use=lambda p: p(jnp.array([1.0, 0.0]), jnp.asarray(0.3, jnp.result_type(float)), jnp.asarray(1, jnp.int32)))
    E["payoffs.MulticalibrationOracle"] = ex(payoffs.MulticalibrationOracle, {"n_groups": 2, "n_bins": 4},
                                             use=lambda o: core.play(forecasters.BlackwellForecaster.from_oracle(o),
                                                                     natures.Replay(Y, jnp.asarray(GR, jnp.result_type(float))), T, key=KEY()))
if _get(recalibration, "VennAbers"):
    E["recalibration.VennAbers"] = ex(recalibration.VennAbers, {}, use=fit_apply(PB, Y))
    E["recalibration.VennAbers.fit"] = Ex(lambda probs, labels, sample_weight: recalibration.VennAbers().fit(probs, labels, sample_weight=sample_weight),
                                          lambda: {"probs": PB, "labels": Y, "sample_weight": W})
    E["recalibration.FittedVennAbers"] = Ex(lambda probs: recalibration.VennAbers().fit(PB, Y).interval(probs), lambda: {"probs": PB})
    E["recalibration.VennAbersInterval"] = nothing("a container built by FittedVennAbers.interval and cross_venn_abers (their examples)")
    E["recalibration.cross_venn_abers"] = Ex(lambda probs: recalibration.cross_venn_abers(
        jax.vmap(lambda m: recalibration.VennAbers().fit(jnp.asarray(PB), jnp.asarray(Y), sample_weight=m))(
            jnp.asarray(np.array([[1.0, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]]))), probs),
        lambda: {"probs": np.stack([PB, PB])}, kinds={"probs": K("simplex")}, no_length=True,
        also_valid=(("probs", "1-D"),))  # binary predictions (n,) without a fold axis are documented
if _get(stats, "corp_curve"):
    E["stats.score_decomposition"] = binary(stats.score_decomposition, {"key": KEY(), "n_resamples": 8, "chunk": 4},
                                             kinds={"level": K("float", lo=0.0, hi=1.0)},
                                             also_valid=(("key", "None"),))  # key=None: no intervals (documented)
    E["stats.corp_curve"] = binary(stats.corp_curve, {"key": KEY(), "n_resamples": 8, "chunk": 4},
                                   kinds={"level": K("float", lo=0.0, hi=1.0)},
                                   also_valid=(("key", "None"),))  # key=None: the PAV curve alone (documented)
    E["stats.quantile_score_decomposition"] = ex(stats.quantile_score_decomposition,
                                                 {"quantiles": YR, "y": YR[::-1].copy(), "levels": np.array([0.5]), "key": KEY(),
                                                  "n_resamples": 4},
                                                 kinds={"quantiles": K("real"), "level": K("float", lo=0.0, hi=1.0)},
                                                 fixed=("levels",), static=("levels",),
                                                 # key=None: no intervals; (T, 1) is one level's column (documented)
                                                 also_valid=(("key", "None"), ("quantiles", "extra axis")))
E["metrics.SparseGroups"] = Ex(lambda ids: metrics.multicalibration_error(P, Y, metrics.SparseGroups(ids, 2)),
                               lambda: {"ids": np.array([[0, -1], [0, 1], [1, -1], [0, -1], [1, -1], [0, 1]], np.int32)},
                               kinds={"ids": K("fixed")}, jit=False, why="ids are checked on the host (a group count bounds them)",
                               no_length=True)  # one row per forecast of the fixed P: a cut ids is a mismatch

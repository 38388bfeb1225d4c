"""The bad-input battery of the public API, shared by ``tests/test_fuzz.py`` and
``benchmarks/fuzz_counts.py``.

Every public callable is collected from the packages' ``__all__`` (so a new one is covered as
soon as it is exported). A callable is called once with valid inputs, found by trying the
*profiles* below (binary forecasts, multi-class predictions, grid counts, real outcomes,
hyperparameters) until one fills all its required parameters and the call succeeds; then each
parameter in turn is replaced by each bad value of its *role*, and the outcome is classified:

- ``clear``: a ``ValueError`` or ``TypeError`` raised from jcalib's own code (the innermost frame
  of the traceback is in ``jcalib/``), or an ``eqx.error_if`` failure under ``jit``;
- ``obscure``: any other exception (an ``AttributeError``, or a ``TypeError`` raised deep inside
  JAX or NumPy), or a valid NumPy scalar (``np.int64(4)`` for ``4``) refused;
- ``silent``: a value came back;
- ``accepted``: a valid NumPy scalar gave a value (the right outcome for those inputs).

Container types (NamedTuples of results and states) and abstract bases are not inputs and are
left out; callables that no profile can call are listed by :func:`uncovered`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import traceback
import warnings
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

PACKAGES = (
    "metrics",
    "losses",
    "scoring",
    "recalibration",
    "natures",
    "forecasters",
    "payoffs",
    "distributions",
    "recorders",
    "stats",
)

N = 6
_P = np.array([0.1, 0.3, 0.5, 0.7, 0.9, 0.6])
_Y = np.array([0, 1, 1, 0, 1, 0])
_W = np.array([1.0, 2.0, 1.0, 0.5, 1.0, 1.0])
_PM = np.array([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25], [0.2, 0.7, 0.1]])
_YM = np.array([1, 0, 2, 2, 0, 1])
_U = np.array([0.05, 0.2, 0.45, 0.6, 0.8, 0.95])
_YR = np.array([0.3, 1.2, -0.4, 2.0, 0.7, 0.1])


def _key():
    return jax.random.key(0)


class Role(NamedTuple):
    """How to fill a parameter: a valid value, and the bad values (name, value) to try."""

    valid: Callable[[], Any]
    bad: tuple
    numpy_scalar: Callable[[], Any] | None = None  # a valid NumPy scalar that must be accepted


def _swap(arr, i, v):
    out = np.array(arr, dtype=float)
    out.flat[i] = v
    return out


_SHAPES = (("wrong length", lambda a: np.asarray(a)[:-1]), ("empty", lambda a: np.asarray(a)[:0]))
_PROB_BAD = (
    ("nan", lambda: _swap(_P, 2, np.nan)),
    ("inf", lambda: _swap(_P, 2, np.inf)),
    ("below 0", lambda: _swap(_P, 2, -0.5)),
    ("above 1", lambda: _swap(_P, 2, 1.5)),
    ("2-D", lambda: _P[:, None]),
    ("wrong length", lambda: _P[:-1]),
    ("empty", lambda: _P[:0]),
    ("strings", lambda: np.array(["a"] * N)),
)
_LABEL_BAD = (
    ("label 2", lambda: _swap(_Y, 1, 2)),
    ("label -1", lambda: _swap(_Y, 1, -1)),
    ("label 0.5", lambda: _swap(_Y, 1, 0.5)),
    ("nan", lambda: _swap(_Y, 1, np.nan)),
    ("wrong length", lambda: _Y[:-1]),
    ("empty", lambda: _Y[:0]),
)
_MC_PROB_BAD = (
    ("nan", lambda: _swap(_PM, 0, np.nan)),
    ("negative", lambda: _swap(_swap(_PM, 0, -0.2), 1, 0.9)),
    ("rows not summing to 1", lambda: _swap(_PM, 0, 0.9)),
    ("1-D", lambda: _PM[:, 0]),
    ("empty", lambda: _PM[:0]),
)
_MC_LABEL_BAD = (
    ("label 3 of 3", lambda: _swap(_YM, 0, 3)),
    ("label -1", lambda: _swap(_YM, 0, -1)),
    ("label 1.5", lambda: _swap(_YM, 0, 1.5)),
    ("wrong length", lambda: _YM[:-1]),
)
_WEIGHT_BAD = (
    ("negative", lambda: _swap(_W, 0, -1.0)),
    ("nan", lambda: _swap(_W, 0, np.nan)),
    ("wrong length", lambda: _W[:-1]),
    ("all zero", lambda: np.zeros(N)),
)
_REAL_BAD = (("nan", lambda: _swap(_YR, 0, np.nan)), ("inf", lambda: _swap(_YR, 0, np.inf)), ("empty", lambda: _YR[:0]))
_INT_BAD = (("zero", lambda: 0), ("negative", lambda: -1), ("float", lambda: 2.5), ("bool", lambda: True), ("string", lambda: "4"))
_KEY_BAD = (("int seed", lambda: 0), ("float", lambda: 1.5), ("string", lambda: "0"))


def _pos_float(v):
    return Role(
        lambda: v,
        (("nan", lambda: float("nan")), ("inf", lambda: float("inf")), ("negative", lambda: -1.0),
         ("string", lambda: "a"), ("list", lambda: [v, v])),
        lambda: np.float64(v),
    )


def _int(v):
    return Role(lambda: v, _INT_BAD, lambda: np.int64(v))


def _unit_float(v):
    r = _pos_float(v)
    return r._replace(bad=r.bad + (("above 1", lambda: 1.5),))


BINARY = {
    "probs": Role(lambda: _P, _PROB_BAD),
    "forecasts": Role(lambda: _P, _PROB_BAD),
    "q": Role(lambda: _P, _PROB_BAD),
    "labels": Role(lambda: _Y, _LABEL_BAD),
    "y": Role(lambda: _Y, _LABEL_BAD),
    "sample_weight": Role(lambda: _W, _WEIGHT_BAD),
    "epsilon": _unit_float(0.1),
    "m": _int(10),  # the forecasts above lie on the grid {j/10}
    "n_bins": _int(10),  # the same grid, under its 1.0 name (eps_calibration, lp_calibration_error, ...)
    "residuals": Role(lambda: _P - _Y, (("nan", lambda: _swap(_P - _Y, 0, np.nan)), ("wrong length", lambda: (_P - _Y)[:-1]))),
    "weights": Role(lambda: _W, _WEIGHT_BAD),
    "sigma": _pos_float(0.1),
    "t": Role(lambda: _P, _PROB_BAD[:2] + _PROB_BAD[4:7]),  # any reals: no range
    "r": Role(lambda: _P - _Y, (("nan", lambda: _swap(_P - _Y, 0, np.nan)),)),
    # test locations of the CME test (3 of them, next to the 6 rows)
    "test_probs": Role(lambda: _P[:3], (("nan", lambda: _swap(_P[:3], 2, np.nan)), ("above 1", lambda: _swap(_P[:3], 2, 1.5)),
                                        ("2-D", lambda: _P[:3, None]), ("wrong length", lambda: _P[:2]))),
    "test_labels": Role(lambda: _Y[:3], (("label 2", lambda: _swap(_Y[:3], 1, 2)), ("nan", lambda: _swap(_Y[:3], 1, np.nan)),
                                         ("wrong length", lambda: _Y[:2]))),
}
MULTICLASS = {
    "probs": Role(lambda: _PM, _MC_PROB_BAD),
    "labels": Role(lambda: _YM, _MC_LABEL_BAD),
    "sample_weight": Role(lambda: _W, _WEIGHT_BAD),
    "n_classes": _int(3),
    "losses": Role(lambda: np.stack([np.eye(3), 1 - np.eye(3)]), (("nan", lambda: np.full((2, 3, 3), np.nan)),
                                                                  ("one action", lambda: np.ones((2, 1, 3))))),
    "weight_fn": Role(lambda: (lambda v: v), ()),
    "test_probs": Role(lambda: _PM[:3], (("nan", lambda: _swap(_PM[:3], 0, np.nan)), ("4 columns", lambda: np.full((3, 4), 0.25)),
                                         ("1-D", lambda: _PM[:3, 0]), ("rows not summing to 1", lambda: _swap(_PM[:3], 0, 0.9)))),
    "test_labels": Role(lambda: _YM[:3], (("label 3 of 3", lambda: _swap(_YM[:3], 0, 3)), ("label 1.5", lambda: _swap(_YM[:3], 0, 1.5)),
                                          ("wrong length", lambda: _YM[:2]))),
}
COUNTS = {
    "counts": Role(lambda: np.array([3, 2, 1, 4, 5]), (("negative", lambda: np.array([3, -2, 1, 4, 5])), ("wrong length", lambda: np.array([3, 2, 1])))),
    "ones": Role(lambda: np.array([1, 1, 0, 2, 5]), (("more ones than counts", lambda: np.array([4, 1, 0, 2, 5])), ("negative", lambda: np.array([-1, 1, 0, 2, 5])))),
    "m": _int(4),
    "n_bins": _int(4),
    "values": Role(lambda: np.linspace(0, 1, 5), (("above 1", lambda: np.array([0, 0.25, 0.5, 0.75, 1.5])),)),
    "T": _int(15),
}
REGRESSION = {
    "pit_values": Role(lambda: _U, _PROB_BAD[:4] + (("empty", lambda: _U[:0]),)),
    "y": Role(lambda: _YR, _REAL_BAD),
    "y_pred": Role(lambda: _YR + 0.1, _REAL_BAD),
    "targets": Role(lambda: _YR, _REAL_BAD),
    "quantiles": Role(lambda: np.stack([_YR - 1, _YR, _YR + 1], 1), (("nan", lambda: np.full((N, 3), np.nan)),)),
    "levels": Role(lambda: np.array([0.1, 0.5, 0.9]), (("above 1", lambda: np.array([0.1, 0.5, 1.5])), ("nan", lambda: np.array([0.1, np.nan, 0.9])))),
    "sample_weight": Role(lambda: _W, _WEIGHT_BAD),
    "T": _int(6),
}
HYPER = {
    "n_bins": _int(4),
    "m": _int(4),
    "n_cells": _int(3),
    "n_levels": _int(4),
    "n_ticks": _int(3),
    "n_actions": _int(3),
    "n": _int(4),
    "degree": Role(lambda: 2, _INT_BAD[1:], lambda: np.int64(2)),  # degree 0 is a (constant) kernel
    "T": _int(100),
    "beta": _unit_float(0.4),
    "alpha": _unit_float(0.1),
    "learning_rate": _pos_float(0.1),
    "step_size": _pos_float(0.1),
    "bandwidth": _pos_float(0.5),
    "L": _pos_float(2.0),
    "sigma": _pos_float(0.1),
}
_E4 = (0.0, 0.25, 0.5, 0.75, 1.0)
_D4 = np.array([0.1, 0.2, 0.3, 0.4])


def _dist():
    from jcalib.distributions import PiecewiseConstant

    return PiecewiseConstant(jnp.asarray(np.tile(_D4, (N, 1))), _E4)


DISTRIBUTION = {
    "dist": Role(_dist, (("not a distribution", lambda: _U),)),
    "y": Role(lambda: _U, (("nan", lambda: _swap(_U, 0, np.nan)), ("inf", lambda: _swap(_U, 0, np.inf)), ("empty", lambda: _U[:0]))),
    "pred": Role(lambda: _U, (("nan", lambda: _swap(_U, 0, np.nan)),)),
    "alpha": _unit_float(0.3),
    "probs": Role(lambda: _D4, (("nan", lambda: _swap(_D4, 0, np.nan)), ("negative", lambda: _swap(_D4, 0, -0.1)), ("not summing to 1", lambda: _D4 * 2))),
    "edges": Role(lambda: _E4, (("decreasing", lambda: (0.0, 0.5, 0.25, 0.75, 1.0)), ("nan", lambda: (0.0, float("nan"), 0.5, 0.75, 1.0)), ("one edge", lambda: (0.0,)))),
}
_ENS = _YR[:, None] + np.array([-0.5, 0.0, 0.3, 1.0])
_LOK, _UPK = _YR[:, None] - np.array([1.0, 0.5]), _YR[:, None] + np.array([1.0, 0.5])
# the scoring rules of real outcomes (ensembles, intervals, parametric CRPS): parameters first
SCORES = {
    "ensemble": Role(lambda: _ENS, (("nan", lambda: _swap(_ENS, 1, np.nan)), ("inf", lambda: _swap(_ENS, 1, np.inf)), ("no members", lambda: _ENS[:, :0]))),
    "member_weights": Role(lambda: np.ones_like(_ENS), (("negative", lambda: _swap(np.ones_like(_ENS), 1, -1.0)), ("nan", lambda: _swap(np.ones_like(_ENS), 1, np.nan)), ("all zero", lambda: np.zeros_like(_ENS)))),
    "y": Role(lambda: _YR, _REAL_BAD),
    "lower": Role(lambda: _YR - 1, (("nan", lambda: _swap(_YR - 1, 0, np.nan)), ("above upper", lambda: _YR + 2))),
    "upper": Role(lambda: _YR + 1, (("nan", lambda: _swap(_YR + 1, 0, np.nan)), ("below lower", lambda: _YR - 2))),
    "alpha": _unit_float(0.2),
    "a": _pos_float(2.0),
    "b": _pos_float(3.0),
    "shape": _pos_float(2.0),
    "rate": _pos_float(1.5),
    "mean": _pos_float(3.0),
    "df": _pos_float(4.0)._replace(bad=(("df = 1", lambda: 1.0),) + _pos_float(4.0).bad),
    "loc": Role(lambda: 0.5, (("nan", lambda: float("nan")), ("inf", lambda: float("inf")), ("string", lambda: "a")), lambda: np.float64(0.5)),
    "scale": _pos_float(1.2),
}
WIS = {
    "median": Role(lambda: _YR, _REAL_BAD[:2]),
    "lower": Role(lambda: _LOK, (("nan", lambda: _swap(_LOK, 0, np.nan)), ("above upper", lambda: _LOK + 3), ("wrong K", lambda: _LOK[:, :1]))),
    "upper": Role(lambda: _UPK, (("nan", lambda: _swap(_UPK, 0, np.nan)), ("below lower", lambda: _UPK - 3), ("wrong K", lambda: _UPK[:, :1]))),
    "y": Role(lambda: _YR, _REAL_BAD),
    "alphas": Role(lambda: np.array([0.2, 0.5]), (("nan", lambda: np.array([0.2, np.nan])), ("above 1", lambda: np.array([0.2, 1.5])), ("zero", lambda: np.array([0.0, 0.5])), ("wrong K", lambda: np.array([0.2, 0.5, 0.8])))),
}
PROFILES = {"binary": BINARY, "multiclass": MULTICLASS, "counts": COUNTS, "regression": REGRESSION, "distribution": DISTRIBUTION, "hyper": HYPER,
            "scores": SCORES, "wis": WIS}
OPT_IN = ("scores", "wis")  # profiles tried only for the callables PROFILE_OF sends there
KEY = Role(_key, _KEY_BAD)


class Case(NamedTuple):
    """One input of the battery: ``call()`` runs it."""

    target: str  # "metrics.ece"
    param: str
    bad: str  # what is wrong with it
    call: Callable[[], Any]
    expect_value: bool = False  # a valid NumPy scalar: must return a value


class Outcome(NamedTuple):
    case: Case
    kind: str  # "clear", "obscure" or "silent"
    detail: str


def public_callables() -> list[tuple[str, Any]]:
    """``(package.name, obj)`` for every callable in the packages' ``__all__`` that takes inputs:
    not NamedTuple containers, not abstract bases."""
    out = []
    for pkg in PACKAGES:
        mod = importlib.import_module(f"jcalib.{pkg}")
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not callable(obj):
                continue
            if inspect.isclass(obj) and (issubclass(obj, tuple) or name.startswith("Abstract") or inspect.isabstract(obj)):
                continue
            out.append((f"{pkg}.{name}", obj))
    return out


def _required(obj) -> list[str]:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty and p.kind in kinds]


def _optional(obj) -> list[str]:
    try:
        return [p.name for p in inspect.signature(obj).parameters.values() if p.default is not inspect.Parameter.empty]
    except (TypeError, ValueError):
        return []


OPTIONAL = ("sample_weight", "m", "n_bins", "member_weights", "test_probs", "test_labels")  # optional parameters fuzzed when the profile has them
# optional parameters fuzzed for one callable: a key that is optional only because another
# argument makes the call deterministic (decision_calibration_error(..., losses=L))
OPTIONAL_OF = {"decision_calibration_error": ("key",), "decision_loss_gap": ("key",)}


def _roles(obj, profile, optional: bool) -> dict[str, Role] | None:
    """The roles of ``obj``'s required parameters (and, with ``optional``, of :data:`OPTIONAL`
    ones) under a profile; None when a required parameter has no role there."""
    table = {**profile, "key": KEY}
    req = _required(obj)
    if any(p not in table for p in req):
        return None
    roles = {p: table[p] for p in req}
    if optional:
        extra = OPTIONAL_OF.get(getattr(obj, "__name__", ""), ())
        roles.update({p: table[p] for p in _optional(obj) if (p in OPTIONAL or p in extra) and p in table and p not in roles})
    return roles


def _run(obj, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = obj(**kwargs)
        jax.block_until_ready(jax.tree_util.tree_leaves(out))
        return out


# callables whose parameter names mean something else than in the first profile that fits
PROFILE_OF = {"check_outcomes": "regression", "crps_score": "distribution", "pit": "distribution", "crps": "distribution",
              "rps": "multiclass", "weighted_interval_score": "wis",
              **{f: "scores" for f in ("crps_ensemble", "twcrps_ensemble", "interval_score", "crps_beta", "crps_gamma", "crps_t", "crps_poisson")}}


def base_call(obj):
    """``(profile name, roles)`` of the first profile whose valid inputs ``obj`` accepts, or None."""
    order = [PROFILE_OF[obj.__name__]] if getattr(obj, "__name__", None) in PROFILE_OF else [p for p in PROFILES if p not in OPT_IN]
    for pname in order:
        for optional in (True, False):
            roles = _roles(obj, PROFILES[pname], optional)
            if roles is None or (not roles and pname != "hyper"):
                break
            try:
                _run(obj, {p: r.valid() for p, r in roles.items()})
            except Exception:  # noqa: BLE001 - the profile does not fit this callable
                continue
            return pname, roles
    return None


def _defaults(obj) -> list[tuple[str, Any]]:
    """``(name, default)`` of the settings to fuzz: an equinox module's fields with defaults, a
    function's parameters with defaults. Other classes (scikit-learn-style wrappers) check their
    settings in ``fit``, by that ecosystem's convention, and are left out."""
    if inspect.isclass(obj):
        if not dataclasses.is_dataclass(obj):
            return []
        return [(f.name, f.default) for f in dataclasses.fields(obj) if f.init and f.default is not dataclasses.MISSING]
    return [(n, p.default) for n, p in inspect.signature(obj).parameters.items() if p.default is not inspect.Parameter.empty]


# settings whose documented type includes what the generic battery calls bad
VALID_SETTINGS = {("decision_calibration_error", "n_actions", "list")}  # one action count per loss


def _module_field_cases(target, obj, roles) -> list[Case]:
    """Bad values for numeric settings that have defaults (module fields, function parameters)."""
    base = {p: r.valid() for p, r in roles.items()}
    cases = []
    for name, d in _defaults(obj):
        if name in base:
            continue
        if isinstance(d, bool) or not isinstance(d, (int, float)):
            continue
        # an int default may be a real setting (an exponent p = 1): only type errors are bad
        bads = [("nan", float("nan")), ("string", "a"), ("list", [d, d])] if isinstance(d, float) else [
            ("string", "4"), ("list", [d, d])]
        for bname, bv in bads:
            if (getattr(obj, "__name__", ""), name, bname) not in VALID_SETTINGS:
                cases.append(Case(target, name, bname, _bind(obj, {**base, name: bv})))
    return cases


def _bind(obj, kwargs):
    return lambda: _run(obj, kwargs)


# roles that mean less for one callable than in their profile
ROLE_OF = {
    # real outcomes where ±inf is allowed (the CDF is 0 or 1 there) and no length is implied
    ("check_outcomes", "y"): Role(lambda: _YR, (("nan", lambda: _swap(_YR, 0, np.nan)), ("strings", lambda: np.array(["a"] * N)))),
    # elementwise: forecasts of any shape (a 2-D array is valid)
    ("bin_index", "probs"): Role(lambda: _P, tuple(b for b in _PROB_BAD if b[0] != "2-D")),
}
_PAIRED = ("wrong length", "empty")  # bad only next to another array of the same length


def battery(target: str, obj, full: bool = False) -> list[Case] | None:
    """The bad inputs of one callable (None when no profile can call it).

    ``full=False`` keeps the first three bad values per role and per module field. A wrong
    length or an empty array is tried only where another array argument fixes the length."""
    found = base_call(obj)
    if found is None:
        return None
    _, roles = found
    name = getattr(obj, "__name__", "")
    roles = {p: ROLE_OF.get((name, p), r) for p, r in roles.items()}
    base = {p: r.valid() for p, r in roles.items()}
    paired = sum(isinstance(v, np.ndarray) and v.ndim >= 1 for v in base.values()) > 1
    out = []
    for p, r in roles.items():
        bads = [b for b in r.bad if paired or b[0] not in _PAIRED]
        for bname, bv in bads if full else bads[:3]:
            out.append(Case(target, p, bname, _bind(obj, {**base, p: bv()})))
        if r.numpy_scalar is not None:
            out.append(Case(target, p, "NumPy scalar", _bind(obj, {**base, p: r.numpy_scalar()}), expect_value=True))
    mf = _module_field_cases(target, obj, roles)
    return out + (mf if full else mf[:3])


def cases(full: bool = False) -> list[Case]:
    """Every input of the battery: each public callable's, then :func:`extra_cases`."""
    out = []
    for target, obj in public_callables():
        out += battery(target, obj, full) or []
    return out + extra_cases()


def uncovered() -> list[str]:
    """Public callables that no profile can call (they need inputs of their own)."""
    return [t for t, obj in public_callables() if base_call(obj) is None]


def extra_cases() -> list[Case]:
    """Inputs that need an instance first: scoring rules' ``__call__``, wrappers' ``fit``, jit."""
    import jcalib
    from jcalib import losses, metrics, recalibration, scoring

    out = []
    for rule in (scoring.Brier(), scoring.LogScore(), scoring.Spherical()):
        name = f"scoring.{type(rule).__name__}.__call__"
        for bname, p, y in (("p below 0", -0.5, 0), ("p above 1", 1.5, 1), ("p nan", float("nan"), 1), ("y = 2", 0.3, 2), ("y = 0.5", 0.3, 0.5)):
            out.append(Case(name, "probs" if "p " in bname else "y", bname, _bind(rule, {"probs": p, "y": y})))
    for cls in (recalibration.KernelCalibration, recalibration.DecisionCalibration, recalibration.TemperatureScaling,
                recalibration.VectorScaling, recalibration.MatrixScaling, recalibration.DirichletCalibration,
                recalibration.PlattScaling, recalibration.BetaCalibration, recalibration.HistogramBinning,
                recalibration.IsotonicCalibration):
        est = cls(progress=False) if "progress" in inspect.signature(cls).parameters else cls()
        keyed = {"key": jax.random.key(0)} if getattr(cls, "needs_key", False) else {}
        out.append(Case(f"recalibration.{cls.__name__}.fit", "probs", "empty", _bind(est.fit, {"probs": _PM[:0], "labels": _YM[:0], **keyed})))
    out.append(Case("metrics.crps_score", "y", "empty", lambda: _run(
        metrics.crps_score, {"dist": jcalib.distributions.PiecewiseConstant(jnp.full((0, 4), 0.25), jcalib.distributions.uniform_edges(4)), "y": jnp.zeros(0)})))
    out.append(Case("metrics.eps_calibration", "forecasts", "empty", _bind(metrics.eps_calibration, {"forecasts": _P[:0], "y": _Y[:0], "n_bins": 4})))
    out.append(Case("metrics.average_regret", "forecasts", "empty", _bind(metrics.average_regret, {"forecasts": _P[:0], "q": _P[:0], "y": _Y[:0]})))
    # under jit: labels and probabilities out of range must fail in the graph
    jitted = (
        ("losses.smooth_ece_loss", "labels", "label 2 under jit", lambda: jax.jit(losses.smooth_ece_loss)(jnp.asarray(_P), jnp.asarray(_swap(_Y, 1, 2), jnp.int32))),
        ("losses.mmce_loss", "labels", "label 3 of 3 under jit", lambda: jax.jit(losses.mmce_loss)(jnp.asarray(_PM), jnp.asarray(_swap(_YM, 0, 3), jnp.int32))),
        ("metrics.ece", "probs", "above 1 under jit", lambda: jax.jit(metrics.ece)(jnp.asarray(_swap(_P, 2, 1.5)), jnp.asarray(_Y))),
        ("metrics.ece", "labels", "label 2 under jit", lambda: jax.jit(metrics.ece)(jnp.asarray(_P), jnp.asarray(_swap(_Y, 1, 2), jnp.int32))),
        ("metrics.brier", "probs", "nan under jit", lambda: jax.jit(metrics.brier)(jnp.asarray(_swap(_P, 2, np.nan)), jnp.asarray(_Y))),
        ("metrics.classwise_ece", "labels", "label 3 of 3 under jit", lambda: jax.jit(metrics.classwise_ece)(jnp.asarray(_PM), jnp.asarray(_swap(_YM, 0, 3), jnp.int32))),
        ("metrics.nll", "probs", "negative under jit", lambda: jax.jit(metrics.nll)(jnp.asarray(_swap(_swap(_PM, 0, -0.2), 1, 0.9)), jnp.asarray(_YM))),
        ("metrics.smooth_ece", "labels", "label 2 under jit", lambda: jax.jit(metrics.smooth_ece)(jnp.asarray(_P), jnp.asarray(_swap(_Y, 1, 2), jnp.int32))),
    )
    out += [Case(t, p, b, lambda f=f: jax.block_until_ready(f())) for t, p, b, f in jitted]
    # jcalib.stats is walked (PACKAGES) with the CME test's locations given; here they are drawn
    # with a key, and the smooth curve draws its band
    from jcalib import stats

    def cme_test_drawn(probs, labels, key, n_test=2):
        return stats.cme_test(probs, labels, key=key, n_test=n_test)

    def smooth_curve_band(probs, labels, key, n_resamples=4):
        return stats.smooth_calibration_curve(probs, labels, key=key, n_resamples=n_resamples)

    def skce_test_drawn(probs, labels, key, n_resamples=8):
        return stats.skce_test(probs, labels, key=key, n_resamples=n_resamples)

    for name, obj in (("cme_test(key)", cme_test_drawn), ("smooth_calibration_curve(key)", smooth_curve_band),
                      ("skce_test(key)", skce_test_drawn)):
        out += battery(f"stats.{name}", obj) or []
    return out


def _graph_error(e: BaseException) -> bool:
    """An ``eqx.error_if`` failure (EquinoxRuntimeError, or JaxRuntimeError under ``jax.jit``)."""
    import equinox as eqx

    return isinstance(e, eqx.EquinoxRuntimeError) or (
        type(e).__name__ in ("JaxRuntimeError", "XlaRuntimeError") and "EquinoxRuntimeError" in str(e)
    )


def _raised_in_jcalib(e: BaseException) -> bool:
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and "/jcalib/" in frames[-1].filename.replace("\\", "/")


def classify(case: Case) -> Outcome:
    try:
        case.call()
    except Exception as e:  # noqa: BLE001 - classifying is the point
        msg = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        if case.expect_value:
            return Outcome(case, "obscure", "refused a valid NumPy scalar: " + msg)
        if _graph_error(e) or (isinstance(e, (ValueError, TypeError)) and _raised_in_jcalib(e)):
            return Outcome(case, "clear", msg)
        return Outcome(case, "obscure", msg)
    return Outcome(case, "accepted" if case.expect_value else "silent", "returned a value")


def counts(outcomes) -> dict[str, int]:
    """Inputs, clear errors, obscure errors, silent values, and valid NumPy scalars accepted."""
    c = {"inputs": len(outcomes), "clear": 0, "obscure": 0, "silent": 0, "accepted": 0}
    for o in outcomes:
        c[o.kind] += 1
    return c

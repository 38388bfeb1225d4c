"""The conventions of the public API (concepts page, "Conventions"), checked for every public name.

The public API is ``__all__`` of every public module of jcalib, found with ``pkgutil`` (so a new
subpackage is walked as soon as it exists): its functions, its classes' constructors and their
public methods. Each convention is one parametrised test:

- ``jcalib`` itself exports only its subpackages; each public object is exported once, from the
  subpackage where it lives;
- a PRNG key is ``key``, keyword-only and required, and a non-key (``0``, ``None``) gets the one
  ``TypeError`` of ``check_key``; the protocol methods of forecasters, natures, recorders and
  half-space oracles take it last and positionally; no parameter is a seed or a generator;
- ``sample_weight`` is keyword-only; predictions come before outcomes; the grid size is
  ``n_bins``, an Lp exponent ``order``, forecasts ``probs`` or ``forecasts``;
- every offline recalibrator is ``Method(settings).fit(probs, labels, *, sample_weight=None)``
  returning a ``Fitted<Method>``;
- every exported name is on an API page (``::: jcalib.<module>[.<name>]``), and those pages name
  nothing private or unexported;
- equinox's rule: a class is abstract (named ``Abstract*``) or final.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
import textwrap
import typing
import warnings
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pytest
import yaml

import jcalib

API_PAGES = Path(__file__).resolve().parents[1] / "docs" / "api"
_MISSING = object()

# ---------------------------------------------------------------------------------------------
# The public API
# ---------------------------------------------------------------------------------------------

PACKAGES = sorted(m.name for m in pkgutil.iter_modules(jcalib.__path__) if not m.name.startswith("_"))
MODULES = {name: importlib.import_module(f"jcalib.{name}") for name in PACKAGES}
# ("metrics.ece", obj) for every name in a public module's __all__
EXPORTS = [(f"{pkg}.{name}", getattr(MODULES[pkg], name, _MISSING))
           for pkg in PACKAGES for name in getattr(MODULES[pkg], "__all__", ())]


def _exporters() -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for path, obj in EXPORTS:
        if obj is not _MISSING:
            out.setdefault(id(obj), []).append(path)
    return out


EXPORTERS = _exporters()  # id(obj) -> every "pkg.name" that exports it


def _exported(name: str):
    """The exported object called ``name`` (whichever subpackage exports it), or None."""
    return next((obj for path, obj in EXPORTS if path.rsplit(".", 1)[1] == name and obj is not _MISSING), None)


def _owner_path(cls) -> str:
    """How a class is named in test ids: its export path, else its module path."""
    paths = EXPORTERS.get(id(cls))
    return paths[0] if paths else f"{cls.__module__.removeprefix('jcalib.')}.{cls.__qualname__}"


class Entry(typing.NamedTuple):
    """One public callable: an exported function, an exported class's constructor or method."""

    id: str  # "metrics.ece", "recalibration.TemperatureScaling", "core.AbstractForecaster.predict"
    sig: inspect.Signature
    owner: type | None  # the class that defines the method (None for functions, the class for __init__)
    name: str  # the function's or method's name; "__init__" for a constructor
    obj: typing.Any  # the function, the class, or the method's function

    def params(self) -> list[inspect.Parameter]:
        """The parameters a caller passes (without ``self`` or ``cls``)."""
        ps = list(self.sig.parameters.values())
        bound = self.owner is not None and self.name != "__init__" and ps and ps[0].name in ("self", "cls")
        return ps[1:] if bound else ps


# Protocol methods: the methods of these abstract bases that the drivers call inside the scan,
# where the key is the last positional argument (found by the base a method overrides).
PROTOCOL = {
    "AbstractForecaster": ("init", "predict", "update"),
    "AbstractNature": ("init", "context", "outcome", "update"),
    "AbstractRecorder": ("init", "step", "finalise"),
    "AbstractOracle": ("__call__",),
}
PROTOCOL_BASES = [(_exported(base), names) for base, names in PROTOCOL.items()]


def test_protocol_bases_are_exported():
    missing = [base for (base, _), (cls, _) in zip(PROTOCOL.items(), PROTOCOL_BASES) if cls is None]
    assert not missing, f"no public module exports {missing}: the protocol methods' key rule cannot find them"


def is_protocol(entry: Entry) -> bool:
    """Whether ``entry`` is a method that overrides (or is) a protocol method of an abstract base."""
    if entry.owner is None or entry.name == "__init__":
        return False
    return any(
        base is not None and issubclass(entry.owner, base) and entry.name in names
        and any(entry.name in vars(c) for c in base.__mro__)
        for base, names in PROTOCOL_BASES
    )


def _signature(obj) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _methods(cls):
    """``(name, function, defining class)`` of a class's public methods (and ``__call__``) that a
    jcalib class defines: not equinox's, NamedTuple's or object's."""
    for name in dir(cls):
        if name.startswith("_") and name != "__call__":
            continue
        owner = next((c for c in cls.__mro__ if name in vars(c)), None)
        if owner is None or not owner.__module__.startswith("jcalib"):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if isinstance(raw, (property, type)) or not callable(raw):
            continue
        yield name, raw, owner


def _entries() -> list[Entry]:
    out, seen = [], set()
    for path, obj in EXPORTS:
        if obj is _MISSING or inspect.ismodule(obj) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if inspect.isclass(obj):
            if issubclass(obj, BaseException):
                continue
            sig = _signature(obj)
            if sig is not None:
                out.append(Entry(path, sig, obj, "__init__", obj))
            for name, fn, owner in _methods(obj):
                if (id(owner), name) in seen:
                    continue
                seen.add((id(owner), name))
                sig = _signature(fn)
                if sig is not None:
                    out.append(Entry(f"{_owner_path(owner)}.{name}", sig, owner, name, fn))
        elif callable(obj):
            sig = _signature(obj)
            if sig is not None:
                out.append(Entry(path, sig, None, getattr(obj, "__name__", path), obj))
    return out


ENTRIES = _entries()
KEYED = [e for e in ENTRIES if "key" in e.sig.parameters]
WEIGHTED = [e for e in ENTRIES if "sample_weight" in e.sig.parameters]


def _ids(entries):
    return [e.id for e in entries]


# ---------------------------------------------------------------------------------------------
# Exports
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", jcalib.__all__)
def test_top_level_exports_only_subpackages(name):
    obj = getattr(jcalib, name, None)
    assert inspect.ismodule(obj) and name in PACKAGES, (
        f"jcalib.__all__ holds {name!r}, which is not a public subpackage of jcalib: export it from "
        "its subpackage only (jcalib itself holds the subpackages)"
    )


@pytest.mark.parametrize("pkg", PACKAGES)
def test_public_modules_declare_their_exports(pkg):
    module = MODULES[pkg]
    assert isinstance(getattr(module, "__all__", None), (list, tuple)), f"jcalib.{pkg} has no __all__"
    missing = [n for n in module.__all__ if getattr(module, n, _MISSING) is _MISSING]
    assert not missing, f"jcalib.{pkg}.__all__ names what it does not define: {missing}"
    private = [n for n in module.__all__ if n.startswith("_")]
    assert not private, f"jcalib.{pkg}.__all__ exports private names: {private}"


_PUBLIC_OBJECTS = sorted({paths[0]: paths for paths in EXPORTERS.values()}.items())


@pytest.mark.parametrize("paths", [p for _, p in _PUBLIC_OBJECTS], ids=[k for k, _ in _PUBLIC_OBJECTS])
def test_each_object_is_exported_once(paths):
    assert len(paths) == 1, f"one object is exported {len(paths)} times: {paths}; keep the subpackage where it lives"


def _home(obj) -> str | None:
    """The public subpackage where an object is defined (None when outside jcalib or private)."""
    module = getattr(obj, "__module__", None) if not inspect.ismodule(obj) else None
    if not isinstance(module, str) or not module.startswith("jcalib."):
        return None
    sub = module.split(".")[1]
    return None if sub.startswith("_") else sub


_HOMED = [(path, obj) for path, obj in EXPORTS if obj is not _MISSING and _home(obj) is not None]


@pytest.mark.parametrize("path, obj", _HOMED, ids=[p for p, _ in _HOMED])
def test_exported_from_where_it_lives(path, obj):
    home = _home(obj)
    assert path.split(".")[0] == home, (
        f"{path} is defined in {obj.__module__}: export it from jcalib.{home}, not jcalib.{path.split('.')[0]}"
    )


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------

# Parameters named key that may default, and why.
KEY_MAY_DEFAULT = {
    "recalibration.SklearnRecalibrator": "the adapter's key is required exactly when the wrapped method draws "
    "(method.needs_key) and refused otherwise",
    "metrics.decision_calibration_error": "required for the random search, refused with a decision maker's losses",
    "metrics.decision_loss_gap": "required for random losses, refused with a decision maker's losses",
    # optional randomness: key=None means nothing is drawn; asking for the random part without a
    # key raises check_key's TypeError (tested beside each function)
    "stats.cme_test": "required when the test locations are drawn from the data; None with test_probs given",
    "stats.skce_test": "required by the methods that draw (consistency resampling, unbiased asymptotic); None otherwise",
    "stats.smooth_calibration_curve": "draws the bootstrap band; None gives the curve alone",
    "stats.score_decomposition": "draws the bootstrap intervals; None gives the decomposition alone",
    "stats.quantile_score_decomposition": "draws the bootstrap intervals; None gives the decomposition alone",
    "stats.corp_curve": "draws the consistency band; None gives the PAV curve alone",
    "plots.reliability_diagram": "draws the smooth curve's bootstrap band; None draws no band",
}


@pytest.mark.parametrize("entry", KEYED, ids=_ids(KEYED))
def test_key_is_keyword_only_and_required(entry):
    key = entry.sig.parameters["key"]
    if is_protocol(entry):
        params = list(entry.sig.parameters.values())
        assert key.kind in (key.POSITIONAL_ONLY, key.POSITIONAL_OR_KEYWORD) and params[-1].name == "key", (
            f"{entry.id}{entry.sig} is a protocol method: its key is the last positional argument"
        )
        assert key.default is key.empty, f"{entry.id}{entry.sig}: no default key"
        return
    assert key.kind is key.KEYWORD_ONLY, f"{entry.id}{entry.sig}: key must be keyword-only (after *)"
    assert key.default is key.empty or entry.id in KEY_MAY_DEFAULT, f"{entry.id}{entry.sig}: key must be required (no default)"


def _data():
    """40 rows of 3-class probabilities and labels, and their binary (class 0) versions."""
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 40).astype(np.float32)
    probs /= probs.sum(1, keepdims=True)
    labels = np.array([rng.choice(3, p=row / row.sum()) for row in probs.astype(np.float64)], np.int32)
    labels[:3] = [0, 1, 2]  # every class present
    return probs, labels, probs[:, 0].copy(), (labels == 0).astype(np.int32)


PROBS, LABELS, PROBS_BINARY, LABELS_BINARY = _data()


def _profiles() -> list[dict]:
    """Valid inputs by parameter name: a binary and a multi-class profile."""
    mean_residual = lambda probs, labels: (probs - labels).mean()  # noqa: E731 - a statistic to resample
    drivers = {"T": 4, "Ts": [4], "n_seeds": 1, "n_bins": 4, "statistic": mean_residual, "metric": mean_residual}
    constant, bernoulli = _exported("Constant"), _exported("Bernoulli")
    if constant is not None and bernoulli is not None:
        drivers.update(forecaster=constant(), nature=bernoulli(), natures=bernoulli())
    drawing = [cls for _, cls in RECALIBRATORS if cls.needs_key]
    if drawing:
        drivers["method"] = _recalibrator(drawing[0])
    drivers["groups"] = np.stack([np.arange(40) < 20, np.arange(40) % 2 == 0], 1)  # two overlapping groups
    drivers["alpha"] = 0.1
    binary = {"probs": PROBS_BINARY, "forecasts": PROBS_BINARY, "labels": LABELS_BINARY, "y": LABELS_BINARY,
              "probs_a": PROBS_BINARY, "probs_b": PROBS_BINARY[::-1].copy(), "arrays": (PROBS_BINARY, LABELS_BINARY)}
    multiclass = {"probs": PROBS, "labels": LABELS, "probs_a": PROBS, "probs_b": PROBS[::-1].copy(), "arrays": (PROBS, LABELS)}
    return [{**drivers, **binary}, {**drivers, **multiclass}]


def _recalibrator(cls):
    """A recalibrator with its loops cut short (enough to check the shape of its fit)."""
    short = {"n_steps": 3, "max_steps": 2, "n_stages": 2, "n_restarts": 1}
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return cls(**{k: v for k, v in short.items() if k in fields})


def _instances() -> dict[str, typing.Callable[[], typing.Any]]:
    """Instances whose methods take a key, by their class's test id."""
    import jax.numpy as jnp

    def make(name, **fields):
        cls = _exported(name)
        return (_owner_path(cls), lambda: cls(**fields)) if cls is not None else (name, None)

    edges = (0.0, 0.25, 0.5, 0.75, 1.0)
    out = dict([
        make("Mixture", support=jnp.array([0.2, 0.8]), probs=jnp.array([0.5, 0.5])),
        make("Gaussian", loc=jnp.zeros(()), scale=jnp.ones(())),
        make("PiecewiseConstant", probs=jnp.full(4, 0.25), edges=edges),
        make("MixtureDistribution", components=_exported("Gaussian")(loc=jnp.zeros(2), scale=jnp.ones(2)),
             weights=jnp.array([0.5, 0.5])),
    ])
    return {k: v for k, v in out.items() if v is not None}


# Key-taking callables whose call check is not made, and why.
SKIP_CALL: dict[str, str] = {
    "metrics.partition_search": "takes residuals and weights (a building block); its key check is tested in "
    "tests/metrics/test_decision.py",
}


def _toy_series():
    """A 48-step series in [0, 1] with two lags (``jcalib.datasets.LaggedSeries``)."""
    datasets = MODULES["datasets"]
    series = np.linspace(0.1, 0.9, 48)
    y, x = datasets.lag_features(series, 2)
    return datasets.LaggedSeries(y=y, x=x, series=series, low=0.0, high=1.0, name="toy", unit="")


# Inputs (args, kwargs) of key-taking callables that the profiles cannot fill.
CALL_INPUTS = {
    "datasets.run_expert": lambda: (("marginal", _toy_series()), {"horizon": 8, "progress": False}),
    "datasets.run_day_ahead_expert": lambda: (("marginal", _toy_series()), {"days": 1, "day_length": 8, "progress": False}),
    "stats.quantile_score_decomposition": lambda: ((np.linspace(-1.0, 1.0, 8), np.linspace(-0.5, 1.5, 8), [0.5]),
                                                   {"n_resamples": 2}),
}


def _calls(entry):
    """``(callable, args, kwargs)`` candidates that are valid but for the key."""
    if entry.id in CALL_INPUTS:
        args, kwargs = CALL_INPUTS[entry.id]()
        return [(entry.obj, args, kwargs)]
    if entry.owner is None or entry.name == "__init__":
        target = entry.obj
    else:
        owner, instances = entry.id.rsplit(".", 1)[0], _instances()
        if owner in instances:
            instance = instances[owner]()
        else:
            base = _exported("AbstractRecalibrator")
            if base is None or not issubclass(entry.owner, base) or inspect.isabstract(entry.owner):
                return []
            instance = _recalibrator(entry.owner)
        target = getattr(instance, entry.name)
    out = []
    for profile in _profiles():
        required = [p for p in entry.params()  # *args included: its default is empty too
                    if p.name != "key" and p.kind is not p.VAR_KEYWORD and p.default is p.empty]
        if all(p.name in profile for p in required):
            # by name, but for what comes before *args (and positional-only parameters)
            star = next((i for i, p in enumerate(required) if p.kind is p.VAR_POSITIONAL), -1)
            positional = [p for i, p in enumerate(required) if i <= star or p.kind is p.POSITIONAL_ONLY]
            args = [a for p in positional for a in (profile[p.name] if p.kind is p.VAR_POSITIONAL else (profile[p.name],))]
            kwargs = {p.name: profile[p.name] for p in required if p not in positional}
            out.append((target, args, kwargs))
    return out


# abstract methods are checked through their implementations
CALLED = [e for e in KEYED if not is_protocol(e) and not getattr(e.obj, "__isabstractmethod__", False)]


@pytest.mark.parametrize("bad", [0, None], ids=["key=0", "key=None"])
@pytest.mark.parametrize("entry", CALLED, ids=_ids(CALLED))
def test_a_non_key_gets_the_key_error(entry, bad):
    if entry.id in SKIP_CALL:
        pytest.skip(SKIP_CALL[entry.id])
    if bad is None and entry.id in KEY_MAY_DEFAULT:
        pytest.skip(f"key=None is documented: {KEY_MAY_DEFAULT[entry.id]}")
    calls = _calls(entry)
    assert calls, f"{entry.id}{entry.sig}: no valid inputs to call it with; add them to _profiles/_instances or SKIP_CALL"
    outcomes = []
    for fn, args, kwargs in calls:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(*args, **kwargs, key=bad)
        except TypeError as e:
            if "must be a JAX PRNG key" in str(e):
                return
            outcomes.append(f"TypeError: {str(e)[:200]}")
        except Exception as e:  # noqa: BLE001 - any other outcome is reported
            outcomes.append(f"{type(e).__name__}: {str(e)[:200]}")
        else:
            outcomes.append("returned a value")
        finally:
            _close_figures()
    pytest.fail(f"{entry.id}(..., key={bad!r}) should raise check_key's TypeError; got: " + " | ".join(outcomes))


def _close_figures():
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def test_call_check_lists_are_current():
    ids = set(_ids(CALLED))
    stale = [k for k in (*SKIP_CALL, *KEY_MAY_DEFAULT, *CALL_INPUTS) if k not in ids and k not in _ids(KEYED)]
    assert not stale, f"these entries of SKIP_CALL/KEY_MAY_DEFAULT/CALL_INPUTS name no key-taking callable now: {stale}"


# ---------------------------------------------------------------------------------------------
# Argument names and order
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", WEIGHTED, ids=_ids(WEIGHTED))
def test_sample_weight_is_keyword_only(entry):
    p = entry.sig.parameters["sample_weight"]
    assert p.kind is p.KEYWORD_ONLY, f"{entry.id}{entry.sig}: sample_weight must be keyword-only (after *)"


# Names with one meaning across the library, and what to use instead.
BANNED = {
    "m": "a forecast grid's size is n_bins",
    "grid": "a forecast grid's size is n_bins",
    "p": "forecasts are probs (or forecasts); an Lp exponent is order",
}
# (callable id, parameter) that keep a banned name because it means something else there.
NAME_ALLOWED: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_no_retired_parameter_names(entry):
    bad = [f"{p.name} ({BANNED[p.name]})" for p in entry.params()
           if p.name in BANNED and (entry.id, p.name) not in NAME_ALLOWED]
    assert not bad, f"{entry.id}{entry.sig}: " + "; ".join(bad)


# Randomness comes from a PRNG key called key, never from a seed or a generator.
NOT_KEYS = ("seed", "rng", "rng_key", "prng_key")
# (callable id, parameter) that keep such a name because nothing is drawn from it.
NOT_KEYS_ALLOWED: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_randomness_comes_from_a_key(entry):
    bad = [p.name for p in entry.params() if p.name in NOT_KEYS and (entry.id, p.name) not in NOT_KEYS_ALLOWED]
    assert not bad, f"{entry.id}{entry.sig}: {bad}: randomness comes from a PRNG key, a keyword-only key"


def test_name_allow_lists_are_current():
    by_id = {e.id: e for e in ENTRIES}
    stale = [k for k in (*NAME_ALLOWED, *NOT_KEYS_ALLOWED) if k[0] not in by_id or k[1] not in by_id[k[0]].sig.parameters]
    assert not stale, f"allow-list entries that name no parameter now: {stale}"


OUTCOMES = {"y", "y_true", "labels", "label", "targets", "target", "outcomes", "outcome"}
PREDICTIONS = {"probs", "p", "q", "forecasts", "forecast", "y_hat", "y_pred", "pred", "preds", "predictions",
               "quantiles", "dist", "logits", "scores", "ensemble", "pit_values", "test_probs"}


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_predictions_come_before_outcomes(entry):
    names = [p.name for p in entry.params()[:2]]
    assert not (len(names) == 2 and names[0] in OUTCOMES and names[1] in PREDICTIONS), (
        f"{entry.id}{entry.sig}: predictions first, outcomes second ({names[1]}, {names[0]})"
    )


# ---------------------------------------------------------------------------------------------
# Offline recalibrators
# ---------------------------------------------------------------------------------------------


def _recalibrators():
    base = _exported("AbstractRecalibrator")
    if base is None:
        return []
    module = MODULES.get("recalibration")
    return [(name, getattr(module, name)) for name in getattr(module, "__all__", ())
            if inspect.isclass(getattr(module, name, None)) and issubclass(getattr(module, name), base)
            and not inspect.isabstract(getattr(module, name))]


RECALIBRATORS = _recalibrators()
_RETIRED_SUFFIXES = ("Calibrator", "Recalibrator")


@pytest.mark.parametrize("name", getattr(MODULES.get("recalibration"), "__all__", ()))
def test_recalibration_exports_no_pre_1_0_pieces(name):
    """The old pieces of a method (``*Params``, ``*_fit``, ``*_apply``, the stateful wrapper)
    are gone; the adapter is ``SklearnRecalibrator``."""
    base = name.startswith("Abstract") or name == "SklearnRecalibrator"  # the contract and the adapter
    assert base or not name.endswith(_RETIRED_SUFFIXES), (
        f"recalibration.{name}: a method is named after itself, without the suffixes {_RETIRED_SUFFIXES}"
    )
    assert not re.search(r"(Params|_fit|_apply)$", name), (
        f"recalibration.{name}: a method is Method(settings).fit(...) -> Fitted<Method>; no *Params/*_fit/*_apply"
    )


# Per-sample data a method's fit needs beyond (probs, labels), keyword-only with default None.
FIT_DATA_KEYWORDS: dict[str, dict[str, str]] = {
    "Multicalibration": {"groups": "each sample's group memberships (n, G); None is the one group of all samples"},
}


@pytest.mark.parametrize("name, cls", RECALIBRATORS, ids=[n for n, _ in RECALIBRATORS])
def test_recalibrator_shape(name, cls):
    assert not name.endswith(_RETIRED_SUFFIXES), f"{name}: named after its method, without {_RETIRED_SUFFIXES}"
    params = list(inspect.signature(cls.fit).parameters.values())[1:]
    shape = [(p.name, p.kind, p.default) for p in params]
    expected = [("probs", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
                ("labels", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty)]
    keyword = {("sample_weight", inspect.Parameter.KEYWORD_ONLY, None)}
    keyword |= {(k, inspect.Parameter.KEYWORD_ONLY, None) for k in FIT_DATA_KEYWORDS.get(name, ())}
    if cls.needs_key:
        keyword.add(("key", inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty))
    assert shape[:2] == expected and set(shape[2:]) == keyword, (
        f"{name}.fit{inspect.signature(cls.fit)}: expected fit(probs, labels, *, sample_weight=None"
        + (", key)" if cls.needs_key else ")") + f" (needs_key = {cls.needs_key})"
    )
    method, key = _recalibrator(cls), ({"key": jax.random.key(0)} if cls.needs_key else {})

    def fit_and_apply(probs, labels):
        fitted = method.fit(probs, labels, **key)
        return fitted, fitted(probs)

    # fitted abstractly: fit and the fitted map are traced as jit traces them, not compiled
    # (compiling the ten fits takes longer than this whole file may)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted, out = jax.eval_shape(fit_and_apply, PROBS, LABELS)
    assert isinstance(fitted, _exported("AbstractFittedRecalibrator")), (
        f"{name}.fit returned a {type(fitted).__name__}, not an AbstractFittedRecalibrator"
    )
    assert type(fitted).__name__ == f"Fitted{name}", f"{name}.fit returns {type(fitted).__name__}, not Fitted{name}"
    assert out.shape == PROBS.shape, f"Fitted{name}(probs) has shape {out.shape}, not {PROBS.shape}"


# ---------------------------------------------------------------------------------------------
# API pages
# ---------------------------------------------------------------------------------------------


def _doc_entries() -> list[tuple[str, str, list[str] | None]]:
    """``(page, dotted path, members option or None)`` of every ``::: `` entry on docs/api/*.md."""
    out = []
    for page in sorted(API_PAGES.glob("*.md")):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r":::\s+(\S+)\s*$", line)
            if not m:
                continue
            block = []
            for nxt in lines[i + 1:]:
                if not nxt.strip() or not nxt.startswith(" "):
                    break
                block.append(nxt)
            options = (yaml.safe_load(textwrap.dedent("\n".join(block))) or {}) if block else {}
            members = (options.get("options") or {}).get("members")
            out.append((page.name, m.group(1), list(members) if isinstance(members, list) else None))
    return out


DOC_ENTRIES = _doc_entries()


def _resolve(path: str):
    """The object a dotted path names (``_MISSING`` when nothing does)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def _documented_ids() -> set[int]:
    """Objects an API page renders: each entry's object and, for a module or class, its members
    (the ``members`` option, else the module's ``__all__``, else what it defines)."""
    out = set()
    for _, path, members in DOC_ENTRIES:
        obj = _resolve(path)
        if obj is _MISSING:
            continue
        out.add(id(obj))
        if members is not None:
            names = members
        elif inspect.ismodule(obj):
            names = getattr(obj, "__all__", None) or [
                n for n, v in vars(obj).items() if not n.startswith("_") and getattr(v, "__module__", None) == obj.__name__]
        elif inspect.isclass(obj):
            names = [n for n in vars(obj) if not n.startswith("_")]
        else:
            names = []
        out.update(id(getattr(obj, n)) for n in names if getattr(obj, n, _MISSING) is not _MISSING)
    return out


DOCUMENTED = _documented_ids()
_DOCUMENTABLE = [(p, o) for p, o in EXPORTS if o is not _MISSING and not inspect.ismodule(o)]


@pytest.mark.parametrize("path, obj", _DOCUMENTABLE, ids=[p for p, _ in _DOCUMENTABLE])
def test_every_export_is_on_an_api_page(path, obj):
    assert id(obj) in DOCUMENTED, f"{path} is on no docs/api/*.md page: add a '::: jcalib.<module>.<name>' entry"


@pytest.mark.parametrize("page, path, members", DOC_ENTRIES, ids=[f"{pg}:{p}" for pg, p, _ in DOC_ENTRIES])
def test_api_pages_name_only_exported_objects(page, path, members):
    assert not any(part.startswith("_") for part in path.split(".")), f"{page}: ::: {path} names a private path"
    obj = _resolve(path)
    assert obj is not _MISSING, f"{page}: ::: {path} names nothing that exists"
    if inspect.ismodule(obj):
        for name in members or ():
            member = getattr(obj, name, _MISSING)
            assert member is not _MISSING and id(member) in EXPORTERS, (
                f"{page}: ::: {path} lists member {name}, which is not an exported name"
            )
        return
    assert id(obj) in EXPORTERS, f"{page}: ::: {path} names an object that no public module exports"


# ---------------------------------------------------------------------------------------------
# Equinox: abstract or final
# ---------------------------------------------------------------------------------------------


def is_abstract(cls) -> bool:
    """Equinox's test: abstract methods, or ``eqx.AbstractVar``/``AbstractClassVar`` not yet given."""
    return bool(inspect.isabstract(cls) or getattr(cls, "__abstractvars__", ()) or getattr(cls, "__abstractclassvars__", ()))


MODULE_CLASSES = sorted({(p, o) for p, o in EXPORTS if inspect.isclass(o) and issubclass(o, eqx.Module)},
                        key=lambda po: po[0])


@pytest.mark.parametrize("path, cls", MODULE_CLASSES, ids=[p for p, _ in MODULE_CLASSES])
def test_no_concrete_class_is_subclassed(path, cls):
    concrete = [b for b in cls.__mro__[1:] if b.__module__.startswith("jcalib") and issubclass(b, eqx.Module)
                and not is_abstract(b) and not b.__name__.startswith("Abstract")]
    assert not concrete, (
        f"{path} subclasses the concrete {[_owner_path(b) for b in concrete]}: equinox classes are abstract or final"
    )


@pytest.mark.parametrize("path, cls", MODULE_CLASSES, ids=[p for p, _ in MODULE_CLASSES])
def test_abstract_classes_are_named_abstract(path, cls):
    name = cls.__name__
    if is_abstract(cls):
        assert name.startswith("Abstract"), f"{path} is abstract: name it Abstract{name}"
    else:
        stringified = [a for k in cls.__mro__ for a in vars(k).get("__annotations__", {}).values()
                       if isinstance(a, str) and "AbstractVar" in a]
        hint = (" (equinox reads a string annotation such as 'eqx.AbstractVar[...]', from `from __future__ import "
                "annotations`, as a plain field)") if stringified else ""
        assert not name.startswith("Abstract"), f"{path} is named Abstract* but has no abstract method or AbstractVar{hint}"

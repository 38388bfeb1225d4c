"""The bad-input fuzz of the public API, shared by ``tests/test_fuzz.py`` and
``benchmarks/fuzz_counts.py``.

Every public callable is collected from the ``__all__`` of every subpackage (and of
``jcalib.plots``), and each must have a valid example in ``tests/fuzz_examples.py``
(:data:`fuzz_examples.EXAMPLES`): its valid keyword arguments and, for a class, what to do with
the instance (play a forecaster, fit a recalibrator, score with a rule, ...). The fuzz calls each
example with one argument at a time replaced by a *mutation* of its value, plainly and under
``jax.jit`` (array arguments traced, hyperparameters closed over), and classifies the outcome.

Mutations are chosen from the argument's *kind* (:func:`kind_of`: probabilities, simplex rows,
labels, weights, reals, integer sizes, float settings, keys, option strings, objects) and are
either **invalid** (NaN, ±inf, out-of-range values, wrong shapes and dtypes, empty arrays,
strings and bools for numbers, lists for scalars, huge sizes, non-keys) or **valid but unusual**
(lists for arrays, NumPy scalars and 0-d arrays for Python numbers, length-1 arrays, an ``rbg``
key, a raw ``uint32`` key). Under ``jit`` a scalar hyperparameter is also *traced*: it must work
or be refused with a message that names it and says it must be static. Outcomes:

- invalid input: ``clear`` (a ``ValueError``/``TypeError`` — or an ``eqx.error_if`` failure under
  ``jit`` — whose message names the argument, not raised inside JAX or NumPy), ``obscure`` (any
  other error), ``silent`` (a value came back), ``crash`` (the process died), ``hang`` (timeout);
- valid input: ``accepted`` (a value came back), ``refused`` (an error), ``crash``, ``hang``.

Huge sizes (``10**12`` for counts, bins, horizons) run in a child process
(:class:`Isolated`: ``multiprocessing`` with the ``spawn`` start method, an address-space
limit and a timeout), so an abort or a runaway allocation is counted, not fatal.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import multiprocessing as mp
import os
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_examples  # noqa: E402
from fuzz_examples import Kind  # noqa: E402

PACKAGES = ("config", "core", "datasets", "distributions", "forecasters", "losses", "metrics", "natures", "payoffs",
            "recalibration", "recorders", "scoring", "stats", "plots")
HUGE = 10**12
# an eqx.error_if failure under jit also logs the callback's traceback: the outcome says enough
logging.getLogger("jax._src.callback").setLevel(logging.CRITICAL)
INVALID_KINDS = ("clear", "obscure", "silent", "crash", "hang")
VALID_KINDS = ("accepted", "refused", "crash", "hang")
CASE_TIMEOUT = 20.0  # seconds an isolated case may run before it counts as a hang
STARTUP_TIMEOUT = 60.0  # seconds a child may take to import jax and jcalib, before its first case
CHILD_MEMORY = 8 * 2**30  # address-space limit of the child process (bytes)


# ----------------------------------------------------------------------------- the public API
def public_callables() -> list[tuple[str, Any]]:
    """``(package.Name, obj)`` for every callable in the ``__all__`` of every subpackage."""
    out = []
    for pkg in PACKAGES:
        try:
            mod = importlib.import_module(f"jcalib.{pkg}")
        except ImportError:  # an optional dependency (matplotlib) is missing
            continue
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if callable(obj):
                out.append((f"{pkg}.{name}", obj))
    return out


# ------------------------------------------------------------------------------- mutations
class Mutation(NamedTuple):
    name: str
    value: Callable[[Any], Any]  # the valid value -> the mutated one
    valid: bool = False  # a valid but unusual input: must be accepted
    jit: bool = True  # also tried under jax.jit (for a traced array argument)
    isolate: bool = False  # run in a child process (huge sizes)


def _set(a, i, v, dtype=None):
    out = np.array(a, dtype=dtype if dtype is not None else (float if np.asarray(a).dtype.kind != "c" else None))
    out.flat[i] = v
    return out


def _first_along(a, v):
    out = np.array(a, dtype=float)
    out[(0,) * (out.ndim - 1) + (0,)] = v
    return out


_ARRAY_COMMON = (
    Mutation("strings", lambda a: np.full(np.shape(a), "a"), jit=False),
    Mutation("complex dtype", lambda a: np.asarray(a) + 0j, jit=False),  # shapes and dtypes: checked when traced, as plainly
    Mutation("extra axis", lambda a: np.asarray(a)[..., None], jit=False),
    Mutation("list", lambda a: np.asarray(a).tolist(), valid=True, jit=False),
)


def _prob_mutations():
    return (
        Mutation("nan", lambda a: _set(a, 1, np.nan)),
        Mutation("inf", lambda a: _set(a, 1, np.inf)),
        Mutation("-inf", lambda a: _set(a, 1, -np.inf)),
        Mutation("below 0", lambda a: _set(a, 1, -0.25)),
        Mutation("above 1", lambda a: _set(a, 1, 1.25)),
        *_ARRAY_COMMON,
    )


def _simplex_mutations():
    return (
        Mutation("nan", lambda a: _set(a, 0, np.nan)),
        Mutation("inf", lambda a: _set(a, 0, np.inf)),
        Mutation("negative entry", lambda a: _set(_set(a, 0, -0.2), 1, np.asarray(a).flat[1] + np.asarray(a).flat[0] + 0.2)),
        Mutation("row not summing to 1", lambda a: _set(a, 0, np.asarray(a).flat[0] + 0.3)),
        Mutation("1-D", lambda a: np.asarray(a)[:, 0], jit=False),
        *_ARRAY_COMMON,
    )


def _label_mutations(n_classes):
    return (
        Mutation(f"label {n_classes}", lambda a: _set(a, 0, n_classes, dtype=np.asarray(a).dtype)),
        Mutation("label -1", lambda a: _set(a, 0, -1, dtype=np.asarray(a).dtype)),
        Mutation("label 0.5", lambda a: _set(a, 0, 0.5)),
        Mutation("nan", lambda a: _set(a, 0, np.nan)),
        *_ARRAY_COMMON,
    )


def _weight_mutations():
    return (
        Mutation("negative", lambda a: _set(a, 0, -1.0)),
        Mutation("nan", lambda a: _set(a, 0, np.nan)),
        Mutation("inf", lambda a: _set(a, 0, np.inf)),
        Mutation("all zero", lambda a: np.zeros(np.shape(a))),
        *_ARRAY_COMMON,
    )


def _count_mutations():
    return (
        Mutation("negative", lambda a: _set(a, 0, -1)),
        Mutation("fraction", lambda a: _set(a, 0, 0.5)),
        Mutation("nan", lambda a: _set(a, 0, np.nan)),
        Mutation("inf", lambda a: _set(a, 0, np.inf)),
        *_ARRAY_COMMON,
    )


def _real_mutations():
    return (
        Mutation("nan", lambda a: _set(a, 0, np.nan)),
        Mutation("inf", lambda a: _set(a, 0, np.inf)),
        Mutation("-inf", lambda a: _set(a, 0, -np.inf)),
        *_ARRAY_COMMON,
    )


def _int_mutations(v, minimum, optional=False):
    out = [
        Mutation("float", lambda _: float(v) + 0.5),
        Mutation("bool", lambda _: True),
        Mutation("string", lambda _: str(v)),
        Mutation("list", lambda _: [v, v]),
        *(() if optional else (Mutation("None", lambda _: None),)),
        Mutation("huge", lambda _: HUGE, isolate=True),
        Mutation("np.int64", lambda _: np.int64(v), valid=True),
        Mutation("0-d array", lambda _: np.asarray(v), valid=True),
    ]
    if minimum is not None:
        out.insert(0, Mutation(f"{minimum - 1} (below {minimum})", lambda _: minimum - 1))
        if minimum - 1 != -1:
            out.insert(1, Mutation("-1", lambda _: -1))
    return tuple(out)


def _float_mutations(v, lo, hi):
    out = [
        Mutation("nan", lambda _: float("nan")),
        Mutation("inf", lambda _: float("inf")),
        Mutation("string", lambda _: "a"),
        Mutation("bool", lambda _: True),
        Mutation("list", lambda _: [v, v]),
        Mutation("np.float32", lambda _: np.float32(v), valid=True),
        Mutation("0-d array", lambda _: np.asarray(v, np.float32), valid=True),
    ]
    if lo is not None:
        out.insert(0, Mutation(f"below {lo}", lambda _: lo - 1.0 if lo != 0 else -1.0))
    if hi is not None:
        out.insert(0, Mutation(f"above {hi}", lambda _: hi + 1.0))
    return tuple(out)


def _key_mutations():
    return (
        Mutation("int seed", lambda _: 0),
        Mutation("None", lambda _: None),
        Mutation("float", lambda _: 1.5),
        Mutation("string", lambda _: "0"),
        Mutation("rbg key", lambda _: jax.random.key(0, impl="rbg"), valid=True),
        Mutation("raw uint32 key", lambda _: jax.random.PRNGKey(0), valid=True),
    )


_OPTION = (Mutation("unknown option", lambda _: "no-such-option"), Mutation("int", lambda _: 3))
_OBJECT = (Mutation("a string", lambda _: "x"), Mutation("an int", lambda _: 3))


# argument names whose kind the name alone decides
_PROB_NAMES = {"probs", "forecasts", "q", "pit_values", "test_probs", "probs_a", "probs_b", "forecast", "pits"}
_LABEL_NAMES = {"labels", "y", "test_labels", "ones"}
_WEIGHT_NAMES = {"sample_weight", "weights", "member_weights", "w"}
_NOT_SIZE = {"axis", "index", "order", "seed", "unroll"}
_INT_LO = {"block_size": 2, "degree": 0, "warmup": 0, "warmup_days": 0, "n_squarings": 0}  # least valid value where not 1


def kind_of(name: str, value: Any) -> Kind:
    """The kind of a valid argument, from its name and value (an example may override it)."""
    if value is None or callable(value) and not isinstance(value, (np.ndarray, jax.Array)) and not isinstance(value, type):
        return Kind("object") if value is not None else Kind("fixed")
    if isinstance(value, jax.Array) and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
        return Kind("key")
    if isinstance(value, bool):
        return Kind("fixed")
    if isinstance(value, str):
        return Kind("option")
    if isinstance(value, int):
        return Kind("int", lo=None if name in _NOT_SIZE else _INT_LO.get(name, 1))
    if isinstance(value, float):
        return Kind("float")
    if isinstance(value, np.ndarray) and value.ndim >= 1 and value.dtype.kind in "fiub":
        if value.dtype.kind in "iub" and name in _LABEL_NAMES:
            return Kind("label", n_classes=int(value.max()) + 1 if value.max() > 1 else 2)
        if name in _WEIGHT_NAMES:
            return Kind("weight")
        if name in _PROB_NAMES and value.ndim == 2 and np.allclose(value.sum(-1), 1):
            return Kind("simplex")
        if name in _PROB_NAMES and np.all((value >= 0) & (value <= 1)):
            return Kind("prob")
        return Kind("real")
    return Kind("object")


def mutations(kind: Kind, value: Any, optional: bool = False) -> tuple[Mutation, ...]:
    """The mutations of an argument of ``kind`` whose valid value is ``value`` (``optional``:
    the parameter defaults to None, so None is valid there)."""
    k = kind.name
    if k == "count":
        return _count_mutations()
    if k == "prob":
        return _prob_mutations()
    if k == "simplex":
        return _simplex_mutations()
    if k == "label":
        return _label_mutations(kind.n_classes)
    if k == "weight":
        return _weight_mutations()
    if k == "real":
        return _real_mutations()
    if k == "real_inf":  # reals where ±inf is a value (an outcome beyond every edge)
        return tuple(m for m in _real_mutations() if "inf" not in m.name)
    if k == "int":
        return _int_mutations(value, kind.lo if kind.lo is not None else None, optional)
    if k == "float":
        return _float_mutations(value, kind.lo, kind.hi)
    if k == "float_inf":  # a bound that may be infinite (a threshold's default -inf/inf)
        return tuple(m for m in _float_mutations(value, None, None) if m.name != "inf")
    if k == "key":
        return _key_mutations()
    if k == "bool":  # a switch: True/False (NumPy's bool too), nothing else
        return (Mutation("string", lambda _: "no"), Mutation("None", lambda _: None), Mutation("int 2", lambda _: 2),
                Mutation("np.bool_", lambda v: np.bool_(v), valid=True))
    if k == "option":
        return _OPTION
    if k == "object":
        return _OBJECT
    return ()


TRACED = "traced"  # a scalar hyperparameter traced under jit: it works, or is refused as not static


def _is_traced_array(v) -> bool:
    return isinstance(v, np.ndarray) and v.ndim >= 1 and v.dtype.kind in "fiub"


# ---------------------------------------------------------------------------------- cases
class Case(NamedTuple):
    """One input: ``target`` called with ``param`` mutated by ``mutation``, in ``mode``."""

    target: str  # "metrics.ece"
    param: str
    mutation: str
    mode: str  # "plain" or "jit"
    valid: bool
    isolate: bool

    @property
    def id(self) -> str:
        return f"{self.mode}:{self.target}({self.param}: {self.mutation})"


def _run(fn, use, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(**kwargs)
        if use is not None:
            out = use(out)
        jax.block_until_ready([x for x in jax.tree_util.tree_leaves(out) if isinstance(x, jax.Array)])
        return out


def _run_jit(fn, use, kwargs, static=()):
    traced = {p: v for p, v in kwargs.items() if _is_traced_array(v) and p not in static}
    static = {p: v for p, v in kwargs.items() if p not in traced}

    def f(tr):
        out = fn(**static, **tr)
        return use(out) if use is not None else out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = jax.jit(f)(traced)
        jax.block_until_ready(jax.tree_util.tree_leaves(out))
        return out


def _leading(v):
    return np.shape(v)[0] if _is_traced_array(v) else None


def _joint(kwargs, n, size, ex):
    """Every array argument with the example's leading length ``n`` cut to ``size`` rows."""
    out = dict(kwargs)
    for p, v in kwargs.items():
        if p in ex.unpaired:
            continue
        if _leading(v) == n:
            out[p] = v[:size]
    return out


def _sleep():
    import time

    time.sleep(3600)


# examples that check the child process itself (tests/test_fuzz.py): an abort, a hang, a value
_SELF_TEST = {
    "_selftest.abort": fuzz_examples.Ex(lambda: os.abort()),
    "_selftest.sleep": fuzz_examples.Ex(_sleep),
    "_selftest.value": fuzz_examples.Ex(lambda: 1.0),
}


def example_of(target: str):
    return fuzz_examples.EXAMPLES.get(target) or _SELF_TEST.get(target)


def _kinds(ex, kwargs):
    return {p: ex.kinds.get(p) or kind_of(p, v) for p, v in kwargs.items()}


def _optional(ex) -> set:
    """Parameters of the example's callable that default to None (None is valid there)."""
    try:
        return {n for n, p in inspect.signature(ex.fn).parameters.items() if p.default is None}
    except (TypeError, ValueError):
        return set()


def cases_of(target: str) -> list[Case]:
    """Every input of one callable (empty for containers, abstract bases and exceptions)."""
    ex = example_of(target)
    if ex is None or ex.fn is None:
        return []
    kwargs = ex.args()
    kinds = _kinds(ex, kwargs)
    traced = ex.jit and any(_is_traced_array(v) and p not in ex.static for p, v in kwargs.items())
    out = [Case(target, "*", "valid example", "plain", True, ex.isolate)]
    if traced:
        out.append(Case(target, "*", "valid example", "jit", True, ex.isolate))
    optional = _optional(ex)
    for p, v in kwargs.items():
        if p in ex.fixed:
            continue
        for m in mutations(kinds[p], v, p in optional):
            try:
                m.value(v)
            except Exception:  # noqa: BLE001 - the mutation does not apply to this value (a 1-D simplex has no "1-D")
                continue
            valid = m.valid or (p, m.name) in ex.also_valid
            out.append(Case(target, p, m.name, "plain", valid or (p, m.name, "plain") in ex.also_valid, m.isolate or ex.isolate))
            if ex.jit and m.jit and _is_traced_array(v) and p not in ex.static and (
                    ex.jit_values or not _value_mutation(v, m)):
                out.append(Case(target, p, m.name, "jit", valid or (p, m.name, "jit") in ex.also_valid, ex.isolate))
        if traced and kinds[p].name in ("int", "float") and not isinstance(v, bool):
            out.append(Case(target, p, TRACED, "jit", True, ex.isolate))
    n = ex.n if ex.n is not None else max((_leading(v) or 0 for v in kwargs.values()), default=0)
    if n and sum(_leading(v) == n for p, v in kwargs.items() if p not in ex.unpaired) >= 1 and not ex.no_length:
        for name, valid in (("empty", ("*", "empty") in ex.also_valid), ("length 1", ex.min_length <= 1)):
            out.append(Case(target, "*", name, "plain", valid, ex.isolate))
            if traced:
                out.append(Case(target, "*", name, "jit", valid, ex.isolate))
    return out


def _value_mutation(v, m) -> bool:
    """Whether mutation ``m`` changes only the values of array ``v`` (same shape, numeric)."""
    try:
        mv = np.asarray(m.value(v))
    except Exception:  # noqa: BLE001 - not an array mutation
        return False
    return mv.shape == np.shape(v) and mv.dtype.kind in "biuf"


def _scalar_of(fn, param):
    """``fn`` with ``param`` (traced as a 1-element array) passed on as a 0-d tracer."""
    def call(**kw):
        return fn(**{**kw, param: kw[param][0]})
    return call


def call_of(case: Case) -> Callable[[], Any]:
    """The call that runs one case (rebuilt from the example, so a child process can run it)."""
    ex = example_of(case.target)
    kwargs = ex.args()
    if case.mutation in ("valid example", TRACED):
        pass
    elif case.param == "*":
        n = ex.n if ex.n is not None else max(_leading(v) or 0 for v in kwargs.values())
        kwargs = _joint(kwargs, n, 0 if case.mutation == "empty" else 1, ex)
    else:
        kinds = _kinds(ex, kwargs)
        m = next(m for m in mutations(kinds[case.param], kwargs[case.param], case.param in _optional(ex)) if m.name == case.mutation)
        kwargs = {**kwargs, case.param: m.value(kwargs[case.param])}
    if case.mutation == TRACED:
        kwargs = {**kwargs, case.param: np.asarray([kwargs[case.param]])}  # traced, then taken back to 0-d
        return lambda: _run_jit(_scalar_of(ex.fn, case.param), ex.use, kwargs, ex.static)
    if case.mode == "jit":
        return lambda: _run_jit(ex.fn, ex.use, kwargs, ex.static)
    return lambda: _run(ex.fn, ex.use, kwargs)


# ---------------------------------------------------------------------------- classifying
class Outcome(NamedTuple):
    case: Case
    kind: str
    detail: str


def _graph_error(e: BaseException) -> bool:
    """An ``eqx.error_if`` failure (EquinoxRuntimeError, or JaxRuntimeError under ``jax.jit``)."""
    import equinox as eqx

    return isinstance(e, eqx.EquinoxRuntimeError) or (
        type(e).__name__ in ("JaxRuntimeError", "XlaRuntimeError") and "EquinoxRuntimeError" in str(e))


_FOREIGN = ("/jax/", "/jaxlib/", "/numpy/", "/optax/", "/equinox/", "/scipy/", "/matplotlib/")


def _raised_inside_a_library(e: BaseException) -> bool:
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and any(s in frames[-1].filename.replace("\\", "/") for s in _FOREIGN)


# mutations of a shape whose culprit is a matter of view (1-D probabilities make a binary
# problem, whose labels are then out of range): naming any argument of the call is clear
_SHAPE_MUTATIONS = ("1-D", "extra axis")


def _names(msg: str, case: Case, names=()) -> bool:
    if case.param == "*":  # a joint mutation (empty, length 1): any argument may be named
        return True
    if case.mutation in _SHAPE_MUTATIONS and any(n in msg for n in names):
        return True
    ex = example_of(case.target)
    alias = ex.aliases.get(case.param) if ex is not None else None
    return case.param in msg or (alias is not None and alias in msg)


def _type_check_error(e: BaseException) -> bool:
    names = [c.__name__ for c in type(e).__mro__]
    return any("TypeCheck" in n or "Beartype" in n for n in names)


def judge(case: Case, error: BaseException | None, names=()) -> Outcome:
    """The outcome of one case from the exception it raised (None: it returned a value);
    ``names``: the call's argument names."""
    if error is None:
        return Outcome(case, "accepted" if case.valid else "silent", "returned a value")
    text = str(error)
    msg = f"{type(error).__name__}: {text.strip().splitlines()[0][:200] if text.strip() else ''}"
    if case.valid:
        if case.mutation == TRACED and isinstance(error, (ValueError, TypeError)) and case.param in text and (
                "static" in text or "concrete" in text):
            return Outcome(case, "accepted", "refused as not static: " + msg)
        return Outcome(case, "refused", msg)
    if _graph_error(error):
        return Outcome(case, "clear" if _names(text, case, names) else "obscure", msg)
    if isinstance(error, (ValueError, TypeError)) or _type_check_error(error):
        if not _raised_inside_a_library(error) or _type_check_error(error):
            if _names(text, case, names):
                return Outcome(case, "clear", msg)
            return Outcome(case, "obscure", "does not name the argument: " + msg)
    return Outcome(case, "obscure", msg)


def classify(case: Case) -> Outcome:
    """Run one case in this process (use :class:`Isolated` for ``case.isolate``)."""
    try:
        call = call_of(case)
    except Exception as e:  # noqa: BLE001 - the mutation itself failed: a bug of the fuzz
        return Outcome(case, "obscure", f"fuzz could not build the case: {type(e).__name__}: {e}")
    try:
        call()
    except Exception as e:  # noqa: BLE001 - classifying is the point
        ex = example_of(case.target)
        return judge(case, e, tuple(ex.args()) if ex is not None else ())
    return judge(case, None)


# ------------------------------------------------------------------------ the child process
def _child(conn, memory: int):
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (ValueError, OSError):
        pass
    jax.config.update("jax_numpy_dtype_promotion", "strict")
    jax.config.update("jax_numpy_rank_promotion", "raise")
    conn.send("ready")  # imported: a case's time runs from here
    while True:
        try:
            case = conn.recv()
        except EOFError:
            return
        if case is None:
            return
        o = classify(Case(*case))
        conn.send((o.kind, o.detail))


class Isolated:
    """Runs cases in a spawned child (reused until it dies or hangs, then restarted)."""

    def __init__(self, timeout: float = CASE_TIMEOUT, memory: int = CHILD_MEMORY):
        self.timeout, self.memory = timeout, memory
        self.proc = self.conn = None

    def _start(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_child, args=(child, self.memory), daemon=True)
        self.proc.start()
        child.close()
        if self.conn.poll(STARTUP_TIMEOUT):  # the child imports jax and jcalib first
            self.conn.recv()  # "ready" (EOFError: it died starting)

    def _stop(self):
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        self.proc = self.conn = None

    def classify(self, case: Case) -> Outcome:
        try:
            if self.proc is None or not self.proc.is_alive():
                self._start()
            self.conn.send(tuple(case))
            if self.conn.poll(self.timeout):
                kind, detail = self.conn.recv()
                return Outcome(case, kind, detail)
        except (EOFError, BrokenPipeError, ConnectionResetError):  # the child died
            self.proc.join(10)
        if self.proc.is_alive():
            self._stop()
            return Outcome(case, "hang", f"no answer in {self.timeout:.0f} s")
        self.proc.join(5)
        code = self.proc.exitcode
        self._stop()
        sig = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return Outcome(case, "crash", f"the process died ({sig})")

    def close(self):
        if self.conn is not None:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_cases(cases: list[Case], isolated: Isolated | None = None) -> list[Outcome]:
    """Classify every case: isolated ones in a child process, the others here."""
    own = isolated is None
    iso = isolated or Isolated()
    try:
        return [iso.classify(c) if c.isolate else classify(c) for c in cases]
    finally:
        if own:
            iso.close()


# ------------------------------------------------------------------------------- the lists
def targets() -> list[str]:
    """The public callables, then the methods with examples of their own (``Name.fit``)."""
    public = [t for t, _ in public_callables()]
    return public + [t for t in fuzz_examples.EXAMPLES if t.count(".") > 1 and t.rsplit(".", 1)[0] in public]


def all_cases() -> list[Case]:
    out = []
    for target in targets():
        out += cases_of(target)
    return out


def check_example(target: str, mode: str = "plain") -> str | None:
    """None when the example's valid call runs (plainly or under jit), else why not."""
    ex = example_of(target)
    if ex is None:
        return "no example"
    if ex.fn is None:
        return None if ex.why else "no example and no reason"
    try:
        if mode == "jit":
            _run_jit(ex.fn, ex.use, ex.args(), ex.static)
        else:
            _run(ex.fn, ex.use, ex.args())
    except Exception as e:  # noqa: BLE001 - reported
        return f"{type(e).__name__}: {str(e).strip()[:300]}"
    return None


def shuffled(cases: list[Case], seed: int = 0) -> list[Case]:
    """The cases in a fixed-seed random order: every prefix is a uniform sample of them."""
    order = np.random.default_rng(seed).permutation(len(cases))
    return [cases[i] for i in order]


def failures(outcomes) -> list[str]:
    """One line per failing input: ``kind target(param: mutation) -> detail``."""
    ok = {"clear", "accepted"}
    return [f"{o.kind} {o.case.mode}:{o.case.target}({o.case.param}: {o.case.mutation}) -> {o.detail}"
            for o in outcomes if o.kind not in ok]


def table(outcomes) -> dict:
    """Counts: for invalid inputs by mode (plain, jit) and kind; valid inputs refused."""
    inv = {m: {k: 0 for k in ("total",) + INVALID_KINDS} for m in ("plain", "jit")}
    val = {m: {k: 0 for k in ("total",) + VALID_KINDS} for m in ("plain", "jit")}
    by_pkg: dict[str, dict[str, int]] = {}
    for o in outcomes:
        t = val if o.case.valid else inv
        t[o.case.mode]["total"] += 1
        t[o.case.mode][o.kind] += 1
        if not o.case.valid and o.case.mode == "plain":
            d = by_pkg.setdefault(o.case.target.split(".")[0], {k: 0 for k in ("total",) + INVALID_KINDS})
            d["total"] += 1
            d[o.kind] += 1
    return {"invalid": inv, "valid": val, "by_package": by_pkg}


CI_SAMPLE = 300  # inputs the CI test runs (a fixed-seed sample of all_cases())


def ci_sample(cases: list[Case]) -> list[Case]:
    """The CI test's inputs: the first :data:`CI_SAMPLE` cases of :func:`shuffled`."""
    return shuffled(cases)[:CI_SAMPLE]

"""Input checks: at the Python boundary for concrete values, in the graph for traced ones.

Every public function that takes user arrays calls these before any traced computation, so a
bad input raises a clear ``ValueError`` (or ``TypeError``) naming the argument instead of
producing a silent NaN. Value checks on concrete arrays run in NumPy. On tracers (inside a
user's ``jit``/``vmap``/``grad``) shapes and dtypes are checked at trace time and values in the
graph with ``eqx.error_if`` (:func:`in_graph`), unless ``jcalib.config.checks(False)`` is in
force when the function is traced.

Integer hyperparameters (:func:`check_int`, :func:`check_positive_int`) accept Python and NumPy
integers (and 0-d integer arrays), never bools or floats; keys go through :func:`check_key`.

Public callables use these rules through one declaration each (:func:`declare` and the
:class:`Spec` objects at the end of this module): the declaration gives the plain-call error and
the in-graph check from the same rule, bounds sizes before anything is allocated, and serves
equinox module fields too (:func:`check_fields`, :meth:`Spec.converter`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import abc
import operator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


def checks_enabled() -> bool:
    """:func:`jcalib.config.checks_enabled` (imported when called: :mod:`jcalib.config` declares
    its own inputs with this module)."""
    from .config import checks_enabled as enabled

    return enabled()

__all__ = [
    "is_concrete",
    "in_graph",
    "stage_check",
    "deferred_checks",
    "as_int",
    "check_int",
    "check_key",
    "check_finite",
    "as_float_array",
    "check_binary_probs",
    "check_binary_labels",
    "check_simplex_probs",
    "check_class_labels",
    "check_weights",
    "check_same_length",
    "check_positive_int",
    "check_float_scalar",
    "check_hyper",
    "check_binary_inputs",
    "check_multiclass_inputs",
    "check_grid_counts",
    "shown",
    "offending",
    "to_device",
    "full",
    "bucket_size",
    "pad_rows",
]

_MAX_SHOWN = 3  # offending values an error message lists at most


def shown(value) -> str:
    """A short rendering of any argument for an error message: a scalar or short string as its
    ``repr``, an array (or list, tuple) as its type, shape and dtype with at most the first
    three values, so a wrong call with a 10,000-element array still gives a one-line error."""
    if isinstance(value, (str, bytes)):
        r = repr(value)
        return r if len(r) <= 60 else r[:57] + "..."
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0):
        try:
            arr = np.asarray(value)
        except Exception:  # ragged or opaque: describe it by type and length
            return f"{type(value).__name__} of length {len(value)}"
        flat = arr.ravel()[:_MAX_SHOWN]
        head = ", ".join(repr(v.item()) if hasattr(v, "item") else repr(v) for v in flat)
        more = ", ..." if arr.size > _MAX_SHOWN else ""
        return f"{type(value).__name__} of shape {tuple(arr.shape)} and dtype {arr.dtype} [{head}{more}]"
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def offending(arr, bad) -> str:
    """Where a concrete array breaks a rule, for an error message: its shape, how many entries
    are bad and at most the first three of them with their indices, e.g.
    ``"shape (10000,), 2 bad entries: [3]=1.5, [17]=-0.25"``. ``bad`` is a boolean mask of
    ``arr``'s shape."""
    arr, bad = np.asarray(arr), np.asarray(bad, dtype=bool)
    where = np.argwhere(bad)[:_MAX_SHOWN]

    def at(ix):
        ix = tuple(int(i) for i in ix)
        return ("[" + ", ".join(map(str, ix)) + "]") + "=" + repr(arr[ix].item())
    n_bad = int(bad.sum())
    more = ", ..." if n_bad > _MAX_SHOWN else ""
    return (f"shape {tuple(arr.shape)}, {n_bad} bad entr{'y' if n_bad == 1 else 'ies'}: "
            + ", ".join(at(ix) for ix in where) + more)


def is_concrete(x) -> bool:
    """True when ``x`` holds values (not a tracer), so value checks can run."""
    return not isinstance(x, jax.core.Tracer)


def in_graph(x, bad, message: str):
    """``x``, carrying ``eqx.error_if(x, bad, message)`` when ``x`` is a tracer and in-graph
    checks are on (:mod:`jcalib.config`); concrete ``x`` passes unchanged (checked in NumPy)."""
    if isinstance(x, jax.core.Tracer) and checks_enabled():
        return stage_check(x, bad, message)
    return x


def checked_at_the_boundary(fn):
    """``fn`` traced with the in-graph checks off: for a library core, jitted, whose public caller
    checked its inputs (at the boundary or in the graph) and which calls other public functions
    on values it derived from them. Their in-graph checks would only re-check those values, and
    each is a host callback, which keeps the core's program out of JAX's persistent
    compilation cache. Trace-time checks (shapes, dtypes) still run."""
    from .config import checks

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        with checks(False):
            return fn(*args, **kwargs)

    return traced


def stage_check(x, bad, message: str):
    """``eqx.error_if(x, bad, message)``, or, inside :func:`deferred_checks` and at its level of
    tracing, ``x`` unchanged with ``any(bad)`` recorded there (the caller returns the flags and
    raises on the host: no host callback in the program)."""
    box = _DEFERRED.get()
    if box is not None and box.here():
        box.flags.append(jnp.any(jnp.asarray(bad)))
        box.messages.append(message)
        return x
    return eqx.error_if(x, bad, message)


class _Deferred:
    """What :func:`deferred_checks` records: the level of tracing it was opened at, and the
    flags and messages of the checks staged there."""

    def __init__(self):
        self.trace = _current_trace()
        self.flags: list = []
        self.messages: list[str] = []

    def here(self) -> bool:
        # a check inside a nested trace (a loop or branch of the traced function) cannot hand its
        # flag out of that trace: it stays an eqx.error_if
        return self.trace is not None and _current_trace() is self.trace

    def any(self):
        """The recorded checks' failures, a bool vector (one entry per message)."""
        return jnp.stack(self.flags) if self.flags else jnp.zeros((0,), bool)


def _current_trace():
    ctx = getattr(jax._src.core, "trace_ctx", None)  # JAX's current trace (newer JAX); None: never defer
    return None if ctx is None else ctx.trace


_DEFERRED: contextvars.ContextVar = contextvars.ContextVar("jcalib_deferred_checks", default=None)


@contextlib.contextmanager
def deferred_checks():
    """Record the in-graph checks staged at the current level of tracing instead of staging
    ``eqx.error_if`` (whose host callback keeps a program out of JAX's persistent compilation
    cache and runs a branch per check); yields the record (``.any()``, ``.messages``). The
    caller returns ``.any()`` from its traced function and raises when an entry is true."""
    box = _Deferred()
    token = _DEFERRED.set(box)
    try:
        yield box
    finally:
        _DEFERRED.reset(token)


def _gather_tracers(x):
    """A list/tuple holding tracers (a list argument of a jitted function) as one traced array;
    anything else unchanged."""
    if isinstance(x, (list, tuple)) and any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(x)):
        return jnp.asarray(x)
    return x


def to_device(x, dtype=None) -> jax.Array:
    """A host value (a Python or NumPy scalar, a NumPy array) as the JAX array ``jnp.asarray(x,
    dtype)`` makes of it (the dtype canonicalised, a Python scalar weakly typed), put on the
    device without compiling: ``jnp.asarray`` compiles a program per shape and dtype on a
    first call (10-20 ms each). Concrete even inside someone's trace; anything else (a list, a
    JAX array) goes to ``jnp.asarray``."""
    with jax.ensure_compile_time_eval():
        if isinstance(x, (np.ndarray, np.generic, bool, int, float)):
            return jax.device_put(x if dtype is None else np.asarray(x, dtype))
        return jnp.asarray(x, dtype)


def full(shape, value, dtype, like) -> jax.Array:
    """``jnp.full(shape, value, dtype)``: made in NumPy when ``like`` (the array it goes with) is
    concrete, so a first call compiles nothing; in the graph when ``like`` is traced, where a host
    array would be baked into the program as a constant of the full size."""
    if is_concrete(like):
        return to_device(np.full(shape, value, dtype))
    return jnp.full(shape, value, dtype)


def bucket_size(n: int, smallest: int = 256) -> int:
    """``n`` rounded up to the next size of a fixed ladder: ``smallest``, then four sizes per
    doubling (``2^e`` times 5/4, 6/4, 7/4, 2), so at most a quarter more rows. A program
    compiled for a bucket serves every ``n`` in it (after :func:`pad_rows`)."""
    if n <= smallest:
        return smallest
    step = 1 << ((n - 1).bit_length() - 3)  # a quarter of the largest power of two below n
    return -(-n // step) * step


def pad_rows(arrays, size: int):
    """``arrays`` (``None`` allowed) with zero rows appended along the first axis up to ``size``
    rows. Host arrays and arrays on a CPU device (which NumPy reads without a copy) are padded in
    NumPy, since a padding program would compile per input shape; arrays on an accelerator are
    padded there, without a round trip through the host. Unchanged when one of them is traced
    (they go together into the caller's program, whose shapes stay)."""
    if not all(is_concrete(x) for x in arrays):
        return tuple(arrays)

    def pad(x):
        if x is None or x.shape[0] == size:
            return x
        zeros = (size - x.shape[0],) + x.shape[1:]
        if isinstance(x, jax.Array) and any(d.platform != "cpu" for d in x.devices()):
            return jnp.concatenate([x, jnp.zeros(zeros, x.dtype)])
        host = np.asarray(x)
        return to_device(np.concatenate([host, np.zeros(zeros, host.dtype)]))

    return tuple(pad(x) for x in arrays)


def trace_once(fn, *args):
    """``fn`` traced once at the shapes of ``args``: its output shapes and a function that
    replays the recorded operations on new arguments of those shapes. The replay stages the
    same program as calling ``fn`` in its place, for a loop body whose output shapes are needed
    before the loop (its buffers): one trace instead of two."""
    closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    out_tree = jax.tree_util.tree_structure(shape)

    def replay(*new):
        flat = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *jax.tree_util.tree_leaves(new))
        return jax.tree_util.tree_unflatten(out_tree, flat)

    return shape, replay


def _template(x):
    """An array leaf's shape, dtype and weak type; another leaf's type and value."""
    if eqx.is_array(x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=bool(getattr(x, "weak_type", False)))
    return type(x), x


def signature(tree, *extra):
    """A hashable key of what tracing a function of ``tree`` depends on (and of the hashable
    ``extra``), or None where a leaf cannot be part of a key: the tree's structure, each array
    leaf's shape, dtype and weak type, each other leaf's type and value, and the settings that
    change a trace (64-bit types, JAX's promotion rules, jcalib's checks)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    key = (treedef, tuple(_template(x) for x in leaves), extra, jax.config.jax_enable_x64,
           jax.config.jax_numpy_dtype_promotion, jax.config.jax_numpy_rank_promotion, checks_enabled())
    try:
        hash(key)
    except TypeError:
        return None
    return key


def once_per_signature(table: dict, make, tree, *extra, size: int = 64):
    """``make()`` (a trace's result: shapes, a replay) kept in ``table`` under
    :func:`signature` ``(tree, *extra)``, made again only for another signature (and at every
    call where a leaf cannot be part of a key); past ``size`` entries the oldest is dropped. For
    what a warm call would otherwise trace again (about 0.2-0.6 ms each)."""
    key = signature(tree, *extra)
    if key is None:
        return make()
    if key not in table:
        if len(table) >= size:
            table.pop(next(iter(table)), None)  # None: another thread may have dropped it first
        table[key] = make()
    return table[key]


def cast(x, dtype) -> jax.Array:
    """``x.astype(dtype)``; for concrete ``x`` converted in NumPy (a conversion on the device
    compiles a program of its own on a first call)."""
    if x.dtype == dtype:
        return x
    if isinstance(x, jax.core.Tracer):
        return x.astype(dtype)
    return to_device(np.asarray(x).astype(dtype))


def as_float_array(x, name: str) -> jax.Array:
    """Convert to a JAX float array (keeping float64 if enabled), rejecting non-numeric input."""
    x = _gather_tracers(x)
    if isinstance(x, jax.core.Tracer):
        arr = x
    else:
        try:
            arr = to_device(np.asarray(x) if not isinstance(x, jax.Array) else x)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from e
    if arr.dtype == jnp.bool_ or jnp.issubdtype(arr.dtype, jnp.integer):
        arr = cast(arr, jnp.result_type(float))
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        raise ValueError(f"{name} must have a real floating dtype, got {arr.dtype}")
    return arr


def _as_numpy(x, name: str) -> np.ndarray:
    """A concrete input as NumPy, with a ``ValueError`` naming it when it is not numeric."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from e
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    return arr


def _values(arr):
    """The concrete values of ``arr`` as NumPy, or None for a tracer.

    Checks run in NumPy so that a concrete array captured inside someone's trace (a
    ``lax.map`` body, say) is checked without staging anything into that trace.
    """
    return None if isinstance(arr, jax.core.Tracer) else np.asarray(arr)


def check_finite(arr, name: str):
    """``arr``, after a ``ValueError`` if its concrete values hold NaN or ±inf (in the graph for
    a tracer)."""
    if isinstance(arr, jax.core.Tracer):
        return in_graph(arr, ~jnp.all(jnp.isfinite(arr)), f"{name} contains NaN or infinite values")
    v = np.asarray(arr)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or infinite values ({offending(v, ~np.isfinite(v))})")
    return arr


def check_binary_probs(p, name: str = "probs") -> jax.Array:
    """Forecasts of a binary event: a float array with every entry in [0, 1] (NaN rejected)."""
    arr = as_float_array(p, name)
    if isinstance(arr, jax.core.Tracer):
        bad = ~jnp.all((arr >= 0) & (arr <= 1))  # NaN fails both comparisons
        return in_graph(arr, bad, f"{name} must lie in [0, 1] (no NaN)")
    check_finite(arr, name)
    v = _values(arr)
    if v is not None and v.size and (np.any(v < 0) or np.any(v > 1)):
        raise ValueError(f"{name} must lie in [0, 1] ({offending(v, (v < 0) | (v > 1))})")
    return arr


def check_binary_labels(y, name: str = "labels") -> jax.Array:
    """Binary outcomes: values in {0, 1}, returned as int32."""
    y = _gather_tracers(y)
    if isinstance(y, jax.core.Tracer):
        if not (jnp.issubdtype(y.dtype, jnp.number) or y.dtype == jnp.bool_):
            raise ValueError(f"{name} must be numeric 0/1 outcomes, got dtype {y.dtype}")
        y = in_graph(y, ~jnp.all((y == 0) | (y == 1)), f"{name} must be 0 or 1")
        return y.astype(jnp.int32)
    arr = _as_numpy(y, name)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric 0/1 outcomes, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values ({offending(arr, ~np.isfinite(arr))})")
    if arr.size and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must be 0 or 1 ({offending(arr, (arr != 0) & (arr != 1))})")
    return to_device(arr.astype(np.int32))


def check_simplex_probs(p, name: str = "probs", atol: float = 1e-4) -> jax.Array:
    """Multi-class predictions: shape (n, C), C >= 2, non-negative rows summing to 1 (within atol).

    ``atol`` allows for float32 round-off in softmax outputs; rows are not renormalised.
    """
    arr = as_float_array(p, name)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, C) with C >= 2, got {tuple(arr.shape)}")
    if isinstance(arr, jax.core.Tracer):
        dev = jnp.abs(jnp.sum(arr, axis=1) - 1)
        bad = ~jnp.all(arr >= 0) | ~jnp.all(dev <= atol)  # NaN fails both
        return in_graph(arr, bad, f"{name} must be finite, non-negative, with rows summing to 1")
    check_finite(arr, name)
    v = _values(arr)
    if v is not None and v.size:
        if np.any(v < 0):
            raise ValueError(f"{name} must be non-negative ({offending(v, v < 0)})")
        err = float(np.max(np.abs(v.astype(np.float64).sum(axis=1) - 1)))
        if err > atol:
            raise ValueError(f"rows of {name} must sum to 1 (largest deviation {err:.3g} > {atol})")
    return arr


def check_class_labels(labels, n_classes: int, name: str = "labels") -> jax.Array:
    """Integer class labels in [0, n_classes), returned as int32."""
    labels = _gather_tracers(labels)
    if isinstance(labels, jax.core.Tracer):
        if labels.ndim != 1:
            raise ValueError(f"{name} must be 1-D integer class indices, got shape {labels.shape}")
        if not (jnp.issubdtype(labels.dtype, jnp.number) or labels.dtype == jnp.bool_):
            raise ValueError(f"{name} must be integer class indices, got dtype {labels.dtype}")
        ok = (labels >= 0) & (labels < n_classes)
        if jnp.issubdtype(labels.dtype, jnp.floating):
            ok = ok & (labels == jnp.round(labels))
        labels = in_graph(labels, ~jnp.all(ok), f"{name} must be integer class indices in [0, {n_classes})")
        return labels.astype(jnp.int32)
    arr = _as_numpy(labels, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D integer class indices, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must be integer class indices")
    elif arr.dtype.kind not in "biu":
        raise ValueError(f"{name} must be integer class indices, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"{name} must lie in [0, {n_classes}); found range [{arr.min()}, {arr.max()}]")
    return to_device(arr.astype(np.int32))


def check_weights(w, n: int, name: str = "sample_weight", *, positive_total: bool = False):
    """Optional non-negative sample weights of length n (None passes through); with
    ``positive_total``, concrete weights must not all be zero (a weighted mean needs mass)."""
    if w is None:
        return None
    arr = as_float_array(w, name)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {tuple(arr.shape)}")
    if isinstance(arr, jax.core.Tracer):
        # a zero total is left to the callers (internal per-class weights may sum to 0)
        ok = jnp.all((arr >= 0) & jnp.isfinite(arr))
        return in_graph(arr, ~ok, f"{name} must be finite and non-negative")
    check_finite(arr, name)
    v = _values(arr)
    if v is not None and np.any(v < 0):
        raise ValueError(f"{name} must be non-negative ({offending(v, v < 0)})")
    if positive_total and v is not None and n and not v.sum() > 0:
        raise ValueError(f"{name} sums to zero; at least one sample needs positive weight")
    return arr


def check_same_length(**arrays) -> int:
    """All arrays share their leading dimension; returns it."""
    lengths = {k: (v.shape[0] if getattr(v, "ndim", 0) else None) for k, v in arrays.items()}
    if any(n is None for n in lengths.values()):
        raise ValueError(f"expected arrays with a leading axis, got shapes { {k: getattr(v, 'shape', ()) for k, v in arrays.items()} }")
    if len(set(lengths.values())) > 1:
        raise ValueError(f"mismatched lengths: {lengths}")
    return next(iter(lengths.values()))


def check_int(value, name: str, minimum: int | None = None) -> int:
    """An integer hyperparameter as a Python ``int``.

    Accepts Python ints, NumPy integers and 0-d integer arrays (NumPy or concrete JAX); rejects
    bools, floats (even integral ones) and anything else with a ``ValueError`` naming ``name``,
    as it does values below ``minimum``.
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, not a bool, got {shown(value)}")
    if isinstance(value, jax.core.Tracer):
        raise TypeError(_static_message(name))
    try:
        out = operator.index(value)  # int, np.integer, 0-d integer arrays; not float or bool
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {type(value).__name__} {shown(value)}") from None
    if minimum is not None and out < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {shown(value)}")
    return out


def as_int(value):
    """Converter for integer module fields (``eqx.field(converter=as_int)``): a NumPy integer or
    0-d integer array becomes a Python ``int``; anything else passes unchanged, for the module's
    ``__check_init__`` to reject with :func:`check_int` naming the field."""
    if isinstance(value, (bool, np.bool_, jax.core.Tracer)):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def check_positive_int(value, name: str) -> int:
    """An integer >= 1 (e.g. T, a number of bins), as a Python ``int`` (see :func:`check_int`)."""
    return check_int(value, name, minimum=1)


def check_key(key, name: str = "key", *, optional: bool = False) -> jax.Array:
    """A JAX PRNG key: a typed key array (``jax.random.key``) or a raw ``uint32`` key of shape
    ``(..., 2)`` (``jax.random.PRNGKey``); anything else (an int seed, a float, None) raises a
    ``TypeError`` saying how to make one. ``optional=True`` (deterministic fits, which ignore
    the key) also accepts ``None``. Returned unchanged."""
    if key is None and optional:
        return key
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return key
    if dtype == jnp.uint32 and getattr(key, "ndim", 0) >= 1 and key.shape[-1] == 2 and isinstance(key, jax.Array):
        return key
    raise TypeError(
        f"{name} must be a JAX PRNG key, e.g. jax.random.key(0), got {type(key).__name__}"
        + (f" of dtype {dtype}" if dtype is not None else f" {shown(key)}")
    )


def check_float_scalar(value, name: str, dtype, *, positive: bool = False, non_negative: bool = False) -> jax.Array:
    """A float hyperparameter as a 0-d array of ``dtype``, so that jit traces it (one compilation
    for every value) instead of baking it in as a constant. Tracers pass through unchecked;
    concrete values must be finite, and > 0 (``positive``) or >= 0 (``non_negative``); a bool
    is refused."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got the bool {value!r}")
    arr = as_float_array(value, name)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {tuple(arr.shape)}")
    v = _values(arr)
    if v is not None:
        if not np.isfinite(v):
            raise ValueError(f"{name} must be finite, got {shown(value)}")
        if positive and not v > 0:
            raise ValueError(f"{name} must be > 0, got {shown(value)}")
        if non_negative and not v >= 0:
            raise ValueError(f"{name} must be >= 0, got {shown(value)}")
    return arr.astype(dtype)


def check_hyper(value, name: str, lo: float | None = None, hi: float | None = None, *, open_lo: bool = False,
                open_hi: bool = False):
    """A scalar float hyperparameter of a module (checked in ``__check_init__``).

    It must be a real number (a string or a list raises) of shape ``()`` — a list would change
    the shapes a module produces; a traced scalar (a sweep's stacked hyperparameter, seen one at
    a time under ``vmap``) passes after that shape check. Concrete values must be finite and in
    ``[lo, hi]`` (``open_lo`` / ``open_hi`` exclude the ends). Returns the value unchanged.
    """
    if isinstance(value, (str, bytes, list, tuple, dict, bool, np.bool_)) or value is None:
        raise ValueError(f"{name} must be a real scalar, got {type(value).__name__} {shown(value)}")
    arr = as_float_array(value, name)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {tuple(arr.shape)}")
    v = _values(arr)
    if v is not None:
        x = float(v)
        below = lo is not None and (x <= lo if open_lo else x < lo)
        above = hi is not None and (x >= hi if open_hi else x > hi)
        if not np.isfinite(x) or below or above:
            rng = "" if lo is None and hi is None else (
                f" in {'(' if open_lo else '['}{'-inf' if lo is None else format(lo, 'g')}, "
                f"{'inf' if hi is None else format(hi, 'g')}{')' if open_hi or hi is None else ']'}"
            )
            raise ValueError(f"{name} must be finite (no NaN){rng}, got {shown(value)}")
    return value


def check_binary_inputs(probs, labels, sample_weight):
    """Validate ``(probs, labels, sample_weight)``; return float ``p``, ``y``, ``w`` of one dtype."""
    p = check_binary_probs(probs)
    y = check_binary_labels(labels)
    if p.ndim != 1 or y.ndim != 1:
        raise ValueError(
            f"probs and labels must be 1-D, got shapes {tuple(p.shape)} and {tuple(y.shape)}"
        )
    n = check_same_length(probs=p, labels=y)
    if n == 0:
        raise ValueError("probs and labels are empty; a calibration metric needs at least one round")
    w = check_weights(sample_weight, n)
    w = jnp.ones_like(p) if w is None else w.astype(p.dtype)
    if is_concrete(w) and not bool(np.sum(np.asarray(w)) > 0):
        raise ValueError("sample_weight sums to zero; at least one round needs positive weight")
    w = in_graph(w, ~(jnp.sum(w) > 0), "sample_weight sums to zero; at least one round needs positive weight")
    return p, y.astype(p.dtype), w


def check_multiclass_inputs(probs, labels, sample_weight=None):
    """Multi-class predictions ``(n, C)``, labels ``(n,)`` and optional weights, checked together.

    Returns ``(probs, int32 labels, weights)`` with ``weights`` an ``(n,)`` array in the dtype of
    ``probs`` (ones when ``sample_weight`` is None). Raises ``ValueError`` for any malformed
    piece, for empty input, and for weights that sum to zero.
    """
    v = check_simplex_probs(probs)
    y = check_class_labels(labels, v.shape[1])
    n = check_same_length(probs=v, labels=y)
    if n == 0:
        raise ValueError("probs and labels are empty; at least one sample is needed")
    w = check_weights(sample_weight, n)
    w = jnp.ones((n,), v.dtype) if w is None else w.astype(v.dtype)
    wv = _values(w)
    if wv is not None and not wv.sum() > 0:
        raise ValueError("sample_weight sums to zero; at least one sample needs positive weight")
    w = in_graph(w, ~(jnp.sum(w) > 0), "sample_weight sums to zero; at least one sample needs positive weight")
    return v, y, w


def check_grid_counts(counts, ones, n_bins):
    """Per-grid-point counts of a grid summary on ``{0, 1/m, ..., 1}`` (``m = n_bins``): shapes
    ``(m+1,)``, finite, ``0 <= ones <= counts``.

    Returns ``(m, counts, ones)`` as JAX arrays.
    """
    m = check_positive_int(n_bins, "n_bins")
    for name, arr in (("counts", counts), ("ones", ones)):
        v = _values(arr)
        if v is not None:
            v = _as_numpy(v, name)
            top = np.iinfo(jnp.asarray(0).dtype).max  # JAX's default integer: int32 unless x64
            if v.size and v.dtype.kind in "iu" and v.max() > top:
                raise ValueError(
                    f"{name} holds {int(v.max())}, more than the largest default JAX integer ({top}); "
                    "enable jax_enable_x64 for 64-bit counts"
                )
    counts, ones = jnp.asarray(counts), jnp.asarray(ones)
    if counts.shape != (m + 1,) or ones.shape != (m + 1,):
        raise ValueError(f"counts and ones must have shape ({m + 1},), got {counts.shape} and {ones.shape}")
    if counts.dtype != ones.dtype:  # one dtype for both (integer counts with float ones: the float)
        kinds = (counts.dtype.kind, ones.dtype.kind)
        if "f" in kinds:
            dt = max((d for d in (counts.dtype, ones.dtype) if d.kind == "f"), key=lambda d: d.itemsize)
        else:
            dt = max((counts.dtype, ones.dtype), key=lambda d: d.itemsize)
        counts, ones = counts.astype(dt), ones.astype(dt)
    c, o = _values(counts), _values(ones)
    if c is not None and o is not None:
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(o))):
            raise ValueError("counts and ones must be finite")
        if np.any(o < 0) or np.any(o > c):
            raise ValueError(f"need 0 <= ones[i] <= counts[i] for every grid point ({offending(o, (o < 0) | (o > c))})")
    elif checks_enabled():
        bad = ~(jnp.all(jnp.isfinite(counts)) & jnp.all(jnp.isfinite(ones))) | jnp.any(ones < 0) | jnp.any(ones > counts)
        ones = in_graph(ones, bad, "counts and ones must be finite with 0 <= ones[i] <= counts[i] for every grid point")
    return m, counts, ones


# ---------------------------------------------------------------------------------------------
# The declared layer: each public callable states its inputs once, as specs.
#
#     @declare(probs=BinaryProbs(ndim=1, nonempty=True), labels=BinaryLabels(length_of="probs"),
#              sample_weight=Weights(length_of="probs", positive_total=True))
#     def ece(probs, labels, *, sample_weight=None): ...   # the body receives converted arrays
#
# A spec's ``check(value, name, bound)`` returns the converted value or raises a ValueError /
# TypeError naming the argument and the rule; on a tracer it checks shapes and dtypes at trace
# time and stages the value rule into the graph (``in_graph``, behind ``jcalib.config.checks``).
# ``bound`` maps the names of the arguments checked so far to their converted values, so a
# spec may refer to an earlier argument (its length, its number of classes, its dtype).
# The same spec objects check equinox module fields: ``check_fields(self, n_bins=Int(1))`` in
# ``__check_init__``, or ``eqx.field(converter=Int(1).converter("n_bins"))``.
# ---------------------------------------------------------------------------------------------

__all__ += [
    "Spec", "declare", "declared", "check_fields", "check_static_int", "format_bytes",
    "Int", "Integer", "Real", "Bool", "Choice", "Key", "Optional", "Custom", "BoundaryOnly",
    "BinaryProbs", "BinaryLabels", "SimplexProbs", "ClassLabels", "Weights", "RealArray", "IntArray", "Distribution",
    "MAX_BINS", "BINS", "MAX_STEPS", "STEPS", "HORIZON", "binary_inputs", "multiclass_inputs", "binary_or_multiclass_inputs",
]

MAX_BINS = 2**24  # forecast grids / bins: tables of n_bins entries per class and per state


def format_bytes(n: float) -> str:
    """``n`` bytes as a short human figure (``"8 TB"``, ``"512 MB"``)."""
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def _power_of_two(n: int) -> str:
    return f"2**{n.bit_length() - 1}" if n > 1 and n & (n - 1) == 0 else str(n)


def _static_message(name: str) -> str:
    return f"`{name}` must be a static Python int, not a traced value (pass it outside jit, or mark it static)"


def check_static_int(value, name: str, lo: int | None = None, hi: int | None = None, *,
                     bytes_per: float | None = None, what: str = "its tables") -> int:
    """An integer that fixes a shape or a loop length, as a Python ``int``.

    Python and NumPy integers and 0-d integer arrays are accepted; bools, floats and strings
    raise a ``ValueError`` naming ``name``; a tracer raises a ``TypeError`` saying the argument
    must be static; a value above ``hi`` raises before anything is allocated, saying the limit
    and (with ``bytes_per``, the bytes one unit of the value costs) the memory it would need.
    """
    if isinstance(value, jax.core.Tracer):
        raise TypeError(_static_message(name))
    n = check_int(value, name, minimum=lo)
    if hi is not None and n > hi:
        need = f": {what} would need {format_bytes(float(n) * bytes_per)}" if bytes_per else f" ({what})"
        raise ValueError(f"{name}={n} exceeds {_power_of_two(hi)}{need}")
    return n


class Spec(abc.ABC):
    """The rule for one argument (a base class: subclasses implement :meth:`check`)."""

    @abc.abstractmethod
    def check(self, value, name: str, bound: dict):
        """``value`` checked and converted; ``bound`` holds the arguments declared before it."""

    def converter(self, name: str):
        """This spec as an ``eqx.field(converter=...)`` for a module field called ``name``."""
        return lambda value: self.check(value, name, {})

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if v not in (None, False))
        return f"{type(self).__name__}({args})"


def _ref(bound: dict, ref: str | None):
    """The converted value of an earlier argument ``ref`` (None when absent or None)."""
    return None if ref is None else bound.get(ref)


def _check_length(arr, name: str, bound: dict, length_of: str | None) -> None:
    other = _ref(bound, length_of)
    if other is None or getattr(other, "ndim", 0) == 0 or getattr(arr, "ndim", 0) == 0:
        return
    if arr.shape[0] != other.shape[0]:
        raise ValueError(f"mismatched lengths: {name} must have the length of {length_of} ({other.shape[0]}), "
                         f"got {arr.shape[0]}")


def _check_ndim(arr, name: str, ndim, nonempty: bool) -> None:
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(f"{name} must be {want}, got shape {tuple(arr.shape)}")
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} is empty; at least one entry is needed, got shape {tuple(arr.shape)}")


class Int(Spec):
    """An integer setting in ``[lo, hi]`` that fixes a shape or a loop (static under ``jit``).

    ``bytes_per`` (the memory one unit costs) makes the size-bound message say what the value
    would need; ``optional=True`` lets ``None`` through.
    """

    def __init__(self, lo: int | None = None, hi: int | None = None, *, bytes_per: float | None = None,
                 what: str = "its tables", optional: bool = False):
        self.lo, self.hi, self.bytes_per, self.what, self.optional = lo, hi, bytes_per, what, optional

    def check(self, value, name, bound):
        if value is None and self.optional:
            return None
        return check_static_int(value, name, self.lo, self.hi, bytes_per=self.bytes_per, what=self.what)


Integer = Int  # the same spec, for modules that also import jaxtyping's ``Int``


class Real(Spec):
    """A real scalar setting, finite and in ``[lo, hi]`` (``open_lo``/``open_hi`` exclude the
    ends). Python and NumPy scalars and 0-d arrays are accepted. ``static=True`` returns a
    Python ``float`` (a setting the code branches on; a tracer is refused with a ``TypeError``);
    otherwise the value is returned as given (``as_array=True``: a 0-d float array) and a traced
    value carries the rule as an in-graph check."""

    def __init__(self, lo: float | None = None, hi: float | None = None, *, open_lo: bool = False,
                 open_hi: bool = False, static: bool = False, as_array: bool = False, optional: bool = False):
        self.lo, self.hi, self.open_lo, self.open_hi = lo, hi, open_lo, open_hi
        self.static, self.as_array, self.optional = static, as_array, optional

    def check(self, value, name, bound):
        if value is None and self.optional:
            return None
        if isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be a real number, not a bool, got {shown(value)}")
        if isinstance(value, jax.core.Tracer):
            if self.static:
                raise TypeError(f"`{name}` must be a static Python float, not a traced value "
                                "(pass it outside jit, or mark it static)")
            arr = as_float_array(value, name)
            if arr.ndim != 0:
                raise ValueError(f"{name} must be a scalar, got shape {tuple(arr.shape)}")
            ok = jnp.isfinite(arr)
            if self.lo is not None:
                ok = ok & ((arr > self.lo) if self.open_lo else (arr >= self.lo))
            if self.hi is not None:
                ok = ok & ((arr < self.hi) if self.open_hi else (arr <= self.hi))
            return in_graph(arr, ~ok, f"{name} must be finite and in range{self._range()}")
        check_hyper(value, name, self.lo, self.hi, open_lo=self.open_lo, open_hi=self.open_hi)
        if self.static:
            return float(np.asarray(value))
        if self.as_array:
            return as_float_array(value, name)
        return value.item() if isinstance(value, np.generic) else value

    def _range(self):
        if self.lo is None and self.hi is None:
            return ""
        return (f" {'(' if self.open_lo else '['}{'-inf' if self.lo is None else format(self.lo, 'g')}, "
                f"{'inf' if self.hi is None else format(self.hi, 'g')}{')' if self.open_hi or self.hi is None else ']'}")


class _BoolError(TypeError, ValueError):
    """A flag that is not a bool."""


class Bool(Spec):
    """A Python or NumPy bool (returned as ``bool``); numbers and strings raise an error that is
    both a ``TypeError`` and a ``ValueError`` (the library raised either for a flag before)."""

    def check(self, value, name, bound):
        if not isinstance(value, (bool, np.bool_)):
            raise _BoolError(f"{name} must be a bool, got {type(value).__name__} {shown(value)}")
        return bool(value)


class Choice(Spec):
    """One of a fixed set of values (strings, usually)."""

    def __init__(self, *choices):
        self.choices = choices

    def check(self, value, name, bound):
        if isinstance(value, np.str_):  # a NumPy string is the string it holds
            value = str(value)
        if not any(value is c or (type(value) is type(c) and value == c) for c in self.choices):
            raise ValueError(f"{name} must be one of {', '.join(map(repr, self.choices))}, got {shown(value)}")
        return value


class Key(Spec):
    """A JAX PRNG key (:func:`check_key`); ``optional=True`` lets ``None`` through;
    ``single=True`` refuses a batch of keys."""

    def __init__(self, optional: bool = False, single: bool = False):
        self.optional, self.single = optional, single

    def check(self, value, name, bound):
        key = check_key(value, name, optional=self.optional)
        if self.single and key is not None:
            typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
            if (typed and key.shape != ()) or (not typed and key.shape != (2,)):
                raise ValueError(f"{name} must be a single PRNG key, got shape {key.shape}")
        return key


class Optional(Spec):
    """``None``, or a value that satisfies ``spec``."""

    def __init__(self, spec: Spec):
        self.spec = spec

    def check(self, value, name, bound):
        return None if value is None else self.spec.check(value, name, bound)


class BoundaryOnly(Spec):
    """``spec`` with its value rules checked on concrete inputs only: a traced input gets the
    trace-time shape and dtype checks but no in-graph check (for functions that run inside
    forecasters' inner loops, such as the scoring rules on grid points)."""

    def __init__(self, spec: Spec):
        self.spec = spec

    def check(self, value, name, bound):
        if any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(value)):
            return checked_at_the_boundary(self.spec.check)(value, name, bound)  # nothing is staged
        return self.spec.check(value, name, bound)


class Custom(Spec):
    """A rule written as a function ``fn(value, name, bound) -> converted`` (for inputs no
    other spec describes: a distribution module, a metric, a pytree of settings)."""

    def __init__(self, fn, doc: str = ""):
        self.fn, self.doc = fn, doc

    def check(self, value, name, bound):
        return self.fn(value, name, bound)

    def __repr__(self):
        return f"Custom({self.doc or getattr(self.fn, '__name__', 'fn')!r})"


class Distribution(Spec):
    """A :class:`jcalib.distributions.AbstractDistribution` (with ``method``, when given). Its
    parameters are checked at construction when concrete; traced parameters (a distribution
    built inside ``jit`` from the caller's arrays) get its ``value_rules`` staged into the
    graph here, behind :mod:`jcalib.config`'s ``checks``."""

    def __init__(self, method: str | None = None):
        self.method = method

    def check(self, value, name, bound):
        from .distributions import AbstractDistribution

        if not isinstance(value, AbstractDistribution):
            raise TypeError(f"{name} must be a jcalib.distributions.AbstractDistribution, got {type(value).__name__}")
        if self.method is not None and not callable(getattr(value, self.method, None)):
            raise TypeError(f"{name} must be a distribution with a {self.method} method, got {type(value).__name__}")
        if checks_enabled() and any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(value)):
            for bad, message in value.value_rules():
                value = stage_check(value, bad, f"{name}: {message}")
        return value


class BinaryProbs(Spec):
    """Binary forecasts in [0, 1] (NaN refused; :func:`check_binary_probs`), as a float array,
    of ``ndim`` dimensions (None: any), non-empty with ``nonempty``, as long as ``length_of``."""

    def __init__(self, ndim=1, *, nonempty: bool = True, length_of: str | None = None):
        self.ndim, self.nonempty, self.length_of = ndim, nonempty, length_of

    def check(self, value, name, bound):
        arr = check_binary_probs(value, name)
        _check_ndim(arr, name, self.ndim, self.nonempty)
        _check_length(arr, name, bound, self.length_of)
        return arr


class BinaryLabels(Spec):
    """Binary outcomes in {0, 1} (:func:`check_binary_labels`), as int32 or, with
    ``dtype_of``, in the float dtype of that earlier argument; 1-D and as long as ``length_of``."""

    def __init__(self, *, length_of: str | None = None, dtype_of: str | None = None, ndim=1):
        self.length_of, self.dtype_of, self.ndim = length_of, dtype_of, ndim

    def check(self, value, name, bound):
        y = check_binary_labels(value, name)
        _check_ndim(y, name, self.ndim, False)
        _check_length(y, name, bound, self.length_of)
        like = _ref(bound, self.dtype_of)
        return y if like is None else cast(y, like.dtype)


class SimplexProbs(Spec):
    """Multi-class predictions ``(n, C)``, C >= 2, rows on the simplex (:func:`check_simplex_probs`)."""

    def __init__(self, *, nonempty: bool = True, length_of: str | None = None):
        self.nonempty, self.length_of = nonempty, length_of

    def check(self, value, name, bound):
        arr = check_simplex_probs(value, name)
        _check_ndim(arr, name, None, self.nonempty)
        _check_length(arr, name, bound, self.length_of)
        return arr


class ClassLabels(Spec):
    """Integer class labels in ``[0, C)`` with ``C`` the columns of ``classes_of`` (or its value,
    an int argument such as ``n_classes``, or a fixed ``n_classes``), 1-D, as long as ``length_of``; returned as int32."""

    def __init__(self, *, classes_of: str | None = "probs", n_classes: int | None = None,
                 length_of: str | None = "probs"):
        self.classes_of, self.n_classes, self.length_of = classes_of, n_classes, length_of

    def check(self, value, name, bound):
        ref = _ref(bound, self.classes_of)
        n_classes = self.n_classes if ref is None else ref if isinstance(ref, int) else ref.shape[-1]
        y = check_class_labels(value, n_classes, name)
        _check_length(y, name, bound, self.length_of)
        return y


class Weights(Spec):
    """Optional sample weights: finite, non-negative, shape ``(n,)`` with ``n`` the length of
    ``length_of``; ``positive_total`` refuses an all-zero vector (in NumPy, or in the graph for
    a tracer); ``fill=True`` turns ``None`` into ones and casts to the dtype of ``length_of``."""

    def __init__(self, *, length_of: str = "probs", positive_total: bool = True, fill: bool = False):
        self.length_of, self.positive_total, self.fill = length_of, positive_total, fill

    def check(self, value, name, bound):
        ref = _ref(bound, self.length_of)
        if value is None:
            if self.fill and ref is not None:
                dtype = ref.dtype if jnp.issubdtype(ref.dtype, jnp.floating) else jnp.result_type(float)
                return full(ref.shape[:1], 1, dtype, ref)
            return None
        n = ref.shape[0] if ref is not None and getattr(ref, "ndim", 0) else None
        if n is None:
            w = as_float_array(value, name)
            if w.ndim != 1:
                raise ValueError(f"{name} must be 1-D, got shape {tuple(w.shape)}")
            n = w.shape[0]
        w = check_weights(value, n, name, positive_total=self.positive_total)
        if self.positive_total and isinstance(w, jax.core.Tracer):
            w = in_graph(w, ~(jnp.sum(w) > 0), f"{name} sums to zero; at least one sample needs positive weight")
        if self.fill and ref is not None and jnp.issubdtype(ref.dtype, jnp.floating):
            w = w.astype(ref.dtype)
        return w


class RealArray(Spec):
    """A real float array: ``ndim`` (None: any), finite unless ``finite=False``, entries in
    ``[lo, hi]``, non-empty with ``nonempty``, as long as ``length_of``; values checked in
    NumPy when concrete and in the graph when traced."""

    def __init__(self, ndim=1, *, lo: float | None = None, hi: float | None = None, finite: bool = True,
                 nonempty: bool = True, length_of: str | None = None, shape_of: str | None = None):
        self.ndim, self.lo, self.hi, self.finite = ndim, lo, hi, finite
        self.nonempty, self.length_of, self.shape_of = nonempty, length_of, shape_of

    def check(self, value, name, bound):
        if isinstance(value, (bool, np.bool_)) or getattr(value, "dtype", None) == np.bool_:
            raise ValueError(f"{name} must be real numbers, not bools, got {shown(value)}")
        arr = as_float_array(value, name)
        _check_ndim(arr, name, self.ndim, self.nonempty)
        _check_length(arr, name, bound, self.length_of)
        other = _ref(bound, self.shape_of)
        if other is not None and tuple(arr.shape) != tuple(other.shape):
            raise ValueError(f"{name} must have the shape of {self.shape_of} {tuple(other.shape)}, "
                             f"got {tuple(arr.shape)}")
        rng = ("" if self.lo is None and self.hi is None else
               f" in [{'-inf' if self.lo is None else format(self.lo, 'g')}, {'inf' if self.hi is None else format(self.hi, 'g')}]")
        if isinstance(arr, jax.core.Tracer):
            ok = jnp.isfinite(arr) if self.finite else ~jnp.isnan(arr)
            if self.lo is not None:
                ok = ok & (arr >= self.lo)
            if self.hi is not None:
                ok = ok & (arr <= self.hi)
            return in_graph(arr, ~jnp.all(ok), f"{name} must be {'finite' if self.finite else 'free of NaN'}{rng}")
        v = np.asarray(arr)
        if self.finite:
            check_finite(v, name)
        elif np.any(np.isnan(v)):
            raise ValueError(f"{name} contains NaN ({offending(v, np.isnan(v))})")
        bad = np.zeros(v.shape, bool)
        if self.lo is not None:
            bad |= v < self.lo
        if self.hi is not None:
            bad |= v > self.hi
        if bad.any():
            raise ValueError(f"{name} must lie{rng} ({offending(v, bad)})")
        return arr


class IntArray(Spec):
    """An array of integers (integral floats accepted) in ``[lo, hi]``, ``ndim`` dimensions,
    as long as ``length_of``; returned as int32."""

    def __init__(self, ndim=1, *, lo: int | None = None, hi: int | None = None, nonempty: bool = True,
                 length_of: str | None = None):
        self.ndim, self.lo, self.hi, self.nonempty, self.length_of = ndim, lo, hi, nonempty, length_of

    def check(self, value, name, bound):
        value = _gather_tracers(value)
        if isinstance(value, jax.core.Tracer):
            if not jnp.issubdtype(value.dtype, jnp.number):
                raise ValueError(f"{name} must be an integer array, got dtype {value.dtype}")
            arr = value
        else:
            arr = _as_numpy(value, name)
        _check_ndim(arr, name, self.ndim, self.nonempty)
        _check_length(arr, name, bound, self.length_of)
        rng = f"integers in [{self.lo}, {'inf' if self.hi is None else self.hi}]"
        if isinstance(arr, jax.core.Tracer):
            ok = arr == jnp.round(arr) if jnp.issubdtype(arr.dtype, jnp.floating) else jnp.ones(arr.shape, bool)
            if self.lo is not None:
                ok = ok & (arr >= self.lo)
            if self.hi is not None:
                ok = ok & (arr <= self.hi)
            return in_graph(arr, ~jnp.all(ok), f"{name} must be {rng}").astype(jnp.int32)
        bad = ~np.isfinite(arr) | (arr != np.round(arr)) if arr.dtype.kind == "f" else np.zeros(arr.shape, bool)
        with np.errstate(invalid="ignore"):
            if self.lo is not None:
                bad |= arr < self.lo
            if self.hi is not None:
                bad |= arr > self.hi
        if bad.any():
            raise ValueError(f"{name} must be {rng} ({offending(arr, bad)})")
        return to_device(arr.astype(np.int32))


def declare(_host_check=None, **specs: Spec):
    """Decorator: declare a public callable's inputs once.

    The call is bound with :func:`inspect.signature`, each declared argument is checked (and
    converted) by its spec in declaration order — a spec may refer to arguments declared before
    it — and the function body receives the converted values. The declaration is kept as
    ``fn.__jcalib_inputs__`` (a dict name -> spec); ``functools.wraps`` keeps the signature
    and docstring for the docs. ``_host_check(raw, checked)``, if given, runs after the checks
    with the arguments as passed and as converted (the precision warnings that need a user's
    float64 values before JAX rounds them).
    """
    def decorate(fn):
        sig = inspect.signature(fn)
        unknown = set(specs) - set(sig.parameters)
        if unknown:
            raise TypeError(f"declare() names arguments {sorted(unknown)} that {fn.__qualname__} does not take")
        for name, spec in specs.items():
            if not isinstance(spec, Spec):
                raise TypeError(f"declare(): the rule for {name} must be a Spec, got {type(spec).__name__}")

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            ba = sig.bind(*args, **kwargs)
            ba.apply_defaults()
            values = ba.arguments
            raw = dict(values) if _host_check is not None else None
            seen = {}
            for name, spec in specs.items():
                seen[name] = spec.check(values[name], name, seen)
            values.update(seen)  # a spec may also have replaced an earlier argument in ``seen``
            if _host_check is not None:
                _host_check(raw, values)
            return fn(*ba.args, **ba.kwargs)

        checked.__jcalib_inputs__ = dict(specs)
        return checked

    return decorate


def declared(fn) -> dict:
    """The declaration of a callable decorated with :func:`declare` (empty dict if none)."""
    return dict(getattr(fn, "__jcalib_inputs__", {}))


def check_fields(module, **specs: Spec) -> dict:
    """Check fields of an equinox module (call it in ``__check_init__``) against specs, in
    order; returns the converted values (``__check_init__`` cannot store them: use a converter,
    :meth:`Spec.converter`, for fields that must be converted)."""
    seen = {}
    for name, spec in specs.items():
        seen[name] = spec.check(getattr(module, name), name, seen)
    return seen


def _horizon(value, name, bound):
    from .core.keys import check_horizon

    return check_horizon(value, name)


HORIZON = Custom(_horizon, "a horizon: an int in [1, 2**31 - 128] (core.keys.MAX_ROUNDS)")
BINS = Int(1, MAX_BINS, bytes_per=8, what="its per-bin tables")  # a number of bins or grid cells
MAX_STEPS = 2**20  # iterations of a fixed-length optimisation loop (one lax.scan)
STEPS = Int(1, MAX_STEPS, what="a fixed-length loop of that many iterations would not finish")


def binary_inputs(*, nonempty: bool = True) -> dict:
    """The declaration of a binary metric's ``(probs, labels, sample_weight)``: 1-D forecasts in
    [0, 1], 0/1 labels of the same length (in the forecasts' float dtype), weights filled with
    ones and refused when they sum to zero."""
    return dict(probs=BinaryProbs(nonempty=nonempty), labels=BinaryLabels(length_of="probs", dtype_of="probs"),
                sample_weight=Weights(length_of="probs", fill=True))


def multiclass_inputs() -> dict:
    """The declaration of a multi-class metric's ``(probs, labels, sample_weight)``: rows on the
    simplex ``(n, C)``, int32 labels in ``[0, C)``, weights filled with ones (positive total)."""
    return dict(probs=SimplexProbs(), labels=ClassLabels(), sample_weight=Weights(length_of="probs", fill=True))


def _binary_or_simplex(value, name, bound):
    """Binary forecasts ``(n,)`` or rows on the simplex ``(n, C)``, by the input's ndim."""
    return (SimplexProbs() if np.ndim(value) == 2 else BinaryProbs()).check(value, name, bound)


def _labels_of_probs(value, name, bound):
    """0/1 labels (in the forecasts' dtype) of binary forecasts, or class labels in ``[0, C)``
    of simplex rows."""
    if bound["probs"].ndim == 1:
        try:
            return BinaryLabels(length_of="probs", dtype_of="probs").check(value, name, bound)
        except ValueError as e:
            raise ValueError(f"{e} (probs is 1-D, so these are binary forecasts with 0/1 labels; "
                             "pass rows (n, C) for class labels)") from None
    return ClassLabels().check(value, name, bound)


def binary_or_multiclass_inputs(*, fill: bool = True, weights: bool = True) -> dict:
    """The declaration of ``(probs, labels, sample_weight)`` for functions that take binary
    forecasts ``(n,)`` with 0/1 labels or rows on the simplex ``(n, C)`` with class labels;
    ``fill=False`` keeps ``sample_weight=None`` as None (unweighted estimators);
    ``weights=False`` for functions without a ``sample_weight``."""
    out = dict(probs=Custom(_binary_or_simplex, "binary forecasts (n,) or simplex rows (n, C)"),
               labels=Custom(_labels_of_probs, "0/1 labels, or class labels in [0, C)"))
    if weights:
        out["sample_weight"] = Weights(length_of="probs", fill=fill)
    return out

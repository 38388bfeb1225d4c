"""Input checks: at the Python boundary for concrete values, in the graph for traced ones.

Every public function that takes user arrays calls these before any traced computation, so a
bad input raises a clear ``ValueError`` (or ``TypeError``) naming the argument instead of
producing a silent NaN. Value checks on concrete arrays run in NumPy. On tracers (inside a
user's ``jit``/``vmap``/``grad``) shapes and dtypes are checked at trace time and values in the
graph with ``eqx.error_if`` (:func:`in_graph`), unless ``jcalib.config.checks(False)`` is in
force when the function is traced.

Integer hyperparameters (:func:`check_int`, :func:`check_positive_int`) accept Python and NumPy
integers (and 0-d integer arrays), never bools or floats; keys go through :func:`check_key`.
"""

from __future__ import annotations

import operator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .config import checks_enabled

__all__ = [
    "is_concrete",
    "in_graph",
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
        return eqx.error_if(x, bad, message)
    return x


def _gather_tracers(x):
    """A list/tuple holding tracers (a list argument of a jitted function) as one traced array;
    anything else unchanged."""
    if isinstance(x, (list, tuple)) and any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(x)):
        return jnp.asarray(x)
    return x


def as_float_array(x, name: str) -> jax.Array:
    """Convert to a JAX float array (keeping float64 if enabled), rejecting non-numeric input."""
    x = _gather_tracers(x)
    if isinstance(x, jax.core.Tracer):
        arr = x
    else:
        try:
            arr = jnp.asarray(np.asarray(x) if not isinstance(x, jax.Array) else x)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from e
    if arr.dtype == jnp.bool_ or jnp.issubdtype(arr.dtype, jnp.integer):
        arr = arr.astype(jnp.result_type(float))
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
    return jnp.asarray(arr.astype(np.int32))


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
    return jnp.asarray(arr.astype(np.int32))


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
        raise ValueError(f"{name} must be a concrete integer (it fixes a shape), got a traced value")
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
    concrete values must be finite, and > 0 (``positive``) or >= 0 (``non_negative``)."""
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
    if isinstance(value, (str, bytes, list, tuple, dict)) or value is None:
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
    c, o = _values(counts), _values(ones)
    if c is not None and o is not None:
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(o))):
            raise ValueError("counts and ones must be finite")
        if np.any(o < 0) or np.any(o > c):
            raise ValueError(f"need 0 <= ones[i] <= counts[i] for every grid point ({offending(o, (o < 0) | (o > c))})")
    return m, counts, ones

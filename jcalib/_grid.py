"""The grid $\\{0, 1/m, \\dots, 1\\}$ of binary forecasts: its points, a forecast's index on it,
and the One-Step-Ahead helpers that the grid forecasters share (AOSA, Gupta–Ramdas, Foster,
the defensive forecaster, approachability, Kuleshov–Ermon, Lee et al.).

**The grid-index rule** (one everywhere: metrics, recorders, payoffs): a forecast $p$ has the
index $j = \\mathrm{clip}(\\mathrm{round}(m p), 0, m)$, computed in the default float dtype
(:func:`grid_index`); it is *on* the grid when $|m p - j| \\le$ :data:`GRID_TOLERANCE`
(:func:`off_grid`). The tolerance, $10^{-3}$ of a grid step, absorbs float32 round-off in
$m p$ (which grows with $m$); a genuinely off-grid forecast misses by far more.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from ._dtypes import float_dtype
from ._validation import check_positive_int, check_static_int, format_bytes

__all__ = ["GRID_TOLERANCE", "grid_points", "grid_index", "off_grid", "sign_change_index", "lookahead_update"]

GRID_TOLERANCE = 1e-3
"""How far (in grid steps) $m p$ may be from its grid index for $p$ to count as on the grid."""

MAX_GRID = 2**22
"""The largest grid size $m$: grid indices are recovered from forecasts as $\\mathrm{round}(m p)$,
exact in float32 only for $m < 2^{22}$."""

MAX_TABLE_BYTES = 2**34
"""The most memory (16 GiB) the tables that one size setting fixes may take (a forecaster's
per-grid-point state, a recorder's counts, a payoff's vectors): a larger setting is refused
before anything is allocated, with the memory it would need in the message."""


def table_size(value, name: str, nbytes, *, what: str = "its tables", lo: int = 1, hi: int | None = None,
               why: str = "", limit: float = MAX_TABLE_BYTES) -> int:
    """A size setting (a grid size, a number of cells) as a Python ``int``, bounded by memory.

    ``nbytes(n)`` is the memory the tables need for the value ``n`` (increasing in ``n``). A
    NumPy integer or a concrete 0-d integer array is accepted; a bool, a float, a string or a
    value below ``lo`` raises a ``ValueError`` naming ``name``; a traced value a ``TypeError``
    saying it must be static; a value whose tables would need more than ``limit`` bytes (or
    above ``hi``, for the reason ``why``) a ``ValueError`` with the memory it implies and the
    largest allowed value.
    """
    n = check_static_int(value, name, lo)
    if hi is not None and n > hi:
        raise ValueError(f"{name}={n} exceeds {hi}{why} ({what} would need {format_bytes(float(nbytes(n)))})")
    if float(nbytes(n)) > limit:
        top, bad = lo, n  # the largest n within the limit, by bisection
        while bad - top > 1:
            mid = (top + bad) // 2
            top, bad = (mid, bad) if float(nbytes(mid)) <= limit else (top, mid)
        raise ValueError(f"{name}={n} is too large: {what} would need {format_bytes(float(nbytes(n)))}, more than "
                         f"the {format_bytes(limit)} limit (the largest {name} is {top})")
    return n


def table_converter(name: str, nbytes, **kw):
    """:func:`table_size` as an ``eqx.field(converter=...)`` for a module field ``name``."""
    return lambda value: table_size(value, name, nbytes, **kw)


def size_field(name: str, entries=lambda n: n + 1, *, what: str = "its tables", lo: int = 1, hi: int | None = None,
               why: str = "", optional: bool = False, **field_kw):
    """A static size field of an equinox module (``eqx.field(static=True, ...)``) converted by
    :func:`table_size`: its tables hold ``entries(n)`` numbers of the default float dtype.
    ``optional=True`` lets ``None`` through (a size chosen later)."""
    import equinox as eqx

    def convert(value):
        if value is None and optional:
            return None
        return table_size(value, name, lambda n: entries(n) * float_bytes(), what=what, lo=lo, hi=hi, why=why)

    return eqx.field(static=True, converter=convert, **field_kw)


GRID_WHY = ": a forecast's grid index round(m p) is exact in float32 only below 2**22"


def float_bytes() -> int:
    """Bytes of one entry in the default float dtype (4, or 8 under ``jax_enable_x64``)."""
    return jnp.dtype(float_dtype()).itemsize


def _scaled(p, m: int):
    # in the default float dtype, or p's when wider: float64 under x64 whatever p's precision
    p = jnp.asarray(p)
    dt = float_dtype()
    if jnp.issubdtype(p.dtype, jnp.floating):
        dt = jnp.promote_types(dt, p.dtype)
    return p.astype(dt) * m


def grid_index(p, m: int) -> Int[Array, "..."]:
    """The index $j = \\mathrm{clip}(\\mathrm{round}(m p), 0, m)$ of the grid point nearest $p$ (int32).

    Never raises (it runs inside compiled loops); check :func:`off_grid` where a forecast
    must lie on the grid.
    """
    return jnp.clip(jnp.round(_scaled(p, m)), 0, m).astype(jnp.int32)


def off_grid(p, m: int) -> Bool[Array, "..."]:
    """Whether $p$ misses its grid point $j/m$ by more than :data:`GRID_TOLERANCE` grid steps.

    A float32 forecast carries a relative error of up to $6\\cdot 10^{-8}$, so grids finer than
    about $10^4$ points need ``jax_enable_x64`` for this check to be meaningful.
    """
    scaled = _scaled(p, m)
    return jnp.abs(scaled - jnp.clip(jnp.round(scaled), 0, m)) > GRID_TOLERANCE


def grid_points(n_bins: int) -> Float[Array, " m+1"]:
    r"""The grid $\{0, 1/m, \dots, 1\}$ as correctly rounded floats (default float dtype).

    Forecasters index this table instead of computing ``i / m`` in the graph: XLA rewrites a
    division by a constant as a multiplication by its reciprocal, which can miss the nearest
    float by one ulp (e.g. ``49 * (1/49) != 1``). The table makes every grid forecast exactly the
    float nearest to $i/m$, so equal grid points compare equal across forecasters and metrics.
    """
    m = check_positive_int(n_bins, "n_bins")
    return jnp.asarray(np.arange(m + 1) / m, jnp.result_type(float))


def sign_change_index(values: Int[Array, " n+1"]) -> Int[Array, ""]:
    r"""Bisection for an adjacent sign change: $i$ with $v_i \le 0 \le v_{i+1}$.

    Requires $v_0 \le 0 \le v_n$. Keeps $v_{lo} \le 0$, $v_{hi} \ge 0$ and halves
    $hi - lo$ for a fixed $\lceil\log_2 n\rceil$ iterations (a fully unrolled
    ``fori_loop``; extra iterations at $hi - lo = 1$ change nothing), so vmapped batches never
    wait on each other.

    Args:
        values: shape ``(n + 1,)``, ``n >= 1``.

    Returns:
        int32 scalar in ``[0, n - 1]``.
    """
    n = values.shape[0] - 1
    n_iter = max(n - 1, 0).bit_length()  # = ceil(log2 n) for n >= 1

    def body(_, lohi):
        lo, hi = lohi
        # lo + hi >= 0: a shift is the floor division without the sign fix-ups that `//` emits
        # (a dozen integer ops per step in the hot loop)
        mid = jax.lax.shift_right_logical(lo + hi, jnp.int32(1))
        right = values[mid] <= 0
        return jnp.where(right, mid, lo), jnp.where(right, hi, mid)

    lo, _ = jax.lax.fori_loop(0, n_iter, body, (jnp.int32(0), jnp.int32(n)), unroll=True)
    return lo


def lookahead_update(beta: Int[Array, " m+1"], i: Int[Array, ""], y, n_bins: int) -> Int[Array, " m+1"]:
    r"""One-Step-Ahead's state transition, shared by AOSA and Gupta–Ramdas.

    With $i$ the pair's lower index ($\beta_i \le 0 \le \beta_{i+1}$, :func:`sign_change_index`)
    and outcome $y_t$, the look-ahead point is $j = i + y_t$ and $\beta_j \mathrel{+}= j - m y_t$,
    i.e. $\alpha(p_j) \mathrel{+}= \tilde p_t - y_t$ (Arunachaleswaran et al. 2024, §3).

    Args:
        beta: int32 ``(m + 1,)``, $m\,\alpha(p_i)$.
        i: int32 scalar, the pair's lower index.
        y: the 0/1 outcome.
        n_bins: $m$.

    Returns:
        The new ``beta``.
    """
    y = jnp.asarray(y, jnp.int32)
    j = i + y
    return beta.at[j].add(j - n_bins * y)

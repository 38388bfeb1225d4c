r"""Arunachaleswaran et al.'s (2024) grid summary: per-grid-point counts in place of a full history of binary forecasts.

For forecasts on the grid $\{0, 1/m, \dots, 1\}$, the counts ``counts[i]`` of rounds that
forecast $i/m$ and the number ``ones[i]`` of those whose outcome was 1 are exactly what the
ECE of Arunachaleswaran et al. (2024, §2) and the distance to calibration of a grid forecaster
need. Everything is counted in int32, so a run of $10^7$ rounds takes the same numbers in
float32 and float64 (DESIGN.md, "Numbers"). ``record="summary"`` is shorthand for ``GridCounts``
on the forecaster's own grid (its ``value_grid``).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._dtypes import float_dtype
from .._grid import GRID_WHY, MAX_GRID, grid_index, off_grid, size_field
from .._padded import table_bins
from .._validation import Custom, check_positive_int, declare
from .base import AbstractRecorder, Round, register_builtin_shorthand
from ..core.types import AbstractForecaster, Trajectory

__all__ = ["GridCounts", "GridSummary", "forecast_grid", "summary_from_trajectory"]


class GridSummary(NamedTuple):
    """Running statistics of a grid forecaster's binary forecasts (the result of :class:`GridCounts`).

    Attributes:
        counts, ones: int32 ``(m+1,)`` for the realised forecasts.
        off_grid: rounds whose forecast was more than 1e-3/m away from the grid (then the
            summary rounds them and is not exact; 0 for grid forecasters).
        info_counts, info_ones: the same for the forecaster's post-outcome value (AOSA's
            look-ahead forecasts p̃_t); zeros when the forecaster has none.
        info_steps: $\\sum_t |i_t - j_t|$ in grid steps, with $p_t = i_t/m$ and
            $\\tilde p_t = j_t/m$ (int32, exact).
        T: rounds recorded.
    """

    counts: Int[Array, " m+1"]
    ones: Int[Array, " m+1"]
    off_grid: Int[Array, ""]
    info_counts: Int[Array, " m+1"]
    info_ones: Int[Array, " m+1"]
    info_steps: Int[Array, ""]
    T: Int[Array, ""]

    @property
    def info_l1(self) -> Array:
        """$\\sum_t |p_t - \\tilde p_t|$, the first term of Arunachaleswaran et al.'s (2024) Theorem 1
        (divided once)."""
        m = self.counts.shape[-1] - 1
        # computed by JAX whether the counts are on the host or a device: one rounding everywhere
        return jnp.asarray(self.info_steps).astype(float_dtype()) / m

    def ece(self) -> Float[Array, "..."]:
        r"""The ECE of the realised forecasts, **unnormalised** (Arunachaleswaran et al. 2024, §2):
        $\sum_i |n_i\, i/m - o_i|$ with $n_i$ = ``counts[i]``, $o_i$ = ``ones[i]``. Leading
        batch axes (a sweep's) are kept."""
        return _grid_ece(self.counts, self.ones)

    def certificate(self) -> Float[Array, "..."]:
        r"""The proof's bound on the distance to calibration (Arunachaleswaran et al. 2024, Theorem 1's
        triangle inequality): $\sum_t |p_t - \tilde p_t| + \mathrm{ECE}(\tilde p)$,
        unnormalised, from the post-outcome values $\tilde p_t$; NaN for a run without them (a
        forecaster with no ``info``). Leading batch axes are kept."""
        cert = self.info_l1 + _grid_ece(self.info_counts, self.info_ones)
        return jnp.where(jnp.asarray(self.info_counts).sum(-1) > 0, cert, jnp.nan)


def _grid_ece(counts, ones):
    fdt = float_dtype()
    counts, ones = jnp.asarray(counts).astype(fdt), jnp.asarray(ones).astype(fdt)
    m = counts.shape[-1] - 1
    grid = (jnp.arange(m + 1).astype(fdt) / m).reshape((1,) * (counts.ndim - 1) + (m + 1,))
    return jnp.abs(counts * grid - ones).sum(-1)


def _float_bins(p, m):
    # a traced m (the padded variant, jcalib._padded) as a float of the dtype that grid_index
    # scales p in: the same product m * p as with a static m
    if isinstance(m, int):
        return m
    p = jnp.asarray(p)
    dt = float_dtype()
    if jnp.issubdtype(p.dtype, jnp.floating):
        dt = jnp.promote_types(dt, p.dtype)
    return jnp.asarray(m).astype(dt)


def _grid_index(p, m):
    return grid_index(p, _float_bins(p, m))


def _off_grid(p, m):
    return off_grid(p, _float_bins(p, m))


def _binary_outcome(y):
    dt = jnp.result_type(y)
    if not (jnp.issubdtype(dt, jnp.integer) or dt == jnp.bool_):
        raise ValueError(
            f"the grid summary counts binary outcomes (integer 0/1), got dtype {dt}; "
            "real-valued outcomes need another recorder (e.g. History())"
        )
    return jnp.asarray(y, jnp.int32)


class _GridState(NamedTuple):
    """:class:`GridCounts`' running state: one histogram of (grid index, outcome) pairs.

    ``hist[2i + y]`` counts the rounds whose forecast was $i/m$ and outcome $y$;
    ``hist[2(m+1) + 2j + y]`` the same for the post-outcome value. One scatter of two
    increments per round (instead of four scatters); :meth:`GridCounts.finalise` turns it into
    the :class:`GridSummary`.
    """

    hist: Int[Array, " 4(m+1)"]
    off_grid: Int[Array, ""]
    info_steps: Int[Array, ""]


class GridCounts(AbstractRecorder):
    """Record a :class:`GridSummary` on the grid $\\{0, 1/m, \\dots, 1\\}$, $m$ = ``n_bins``
    (memory O(m)).

    Attributes:
        n_bins: grid size $m$ (static: fixes the counts' shape).
    """

    n_bins: int = size_field("n_bins", lambda n: 4 * (n + 1), what="its grid counts", hi=MAX_GRID, why=GRID_WHY)

    def init(self) -> _GridState:
        zero = jnp.zeros((), jnp.int32)
        # sized for max_bins in the padded variant (jcalib._padded): its counts past m stay 0
        return _GridState(jnp.zeros((4 * (table_bins(self) + 1),), jnp.int32), zero, zero)

    def step(self, s: _GridState, rnd: Round):
        m = self.n_bins
        y = _binary_outcome(rnd.y)
        i, off = _grid_index(rnd.forecast.value, m), _off_grid(rnd.forecast.value, m)
        s = s._replace(off_grid=s.off_grid + off.astype(jnp.int32))
        if rnd.info is None:
            return s._replace(hist=s.hist.at[2 * i + y].add(1)), None
        j = _grid_index(rnd.info, m)
        codes = jnp.stack([2 * i + y, 2 * (table_bins(self) + 1) + 2 * j + y])
        return s._replace(hist=s.hist.at[codes].add(1), info_steps=s.info_steps + jnp.abs(i - j)), None

    def finalise(self, s: _GridState, outs) -> GridSummary:
        h = s.hist.reshape(s.hist.shape[:-1] + (2, table_bins(self) + 1, 2))
        counts, info_counts = h[..., 0, :, :].sum(-1), h[..., 1, :, :].sum(-1)
        return GridSummary(counts, h[..., 0, :, 1], s.off_grid, info_counts, h[..., 1, :, 1], s.info_steps, counts.sum(-1))


def _forecaster(value, name, bound):
    if not isinstance(value, AbstractForecaster):
        raise ValueError(f"{name} must be an AbstractForecaster, got {type(value).__name__}")
    return value


def _trajectory(value, name, bound):
    if not isinstance(value, Trajectory):
        raise ValueError(f"{name} must be a Trajectory (the result of play with record='full'), got {type(value).__name__}")
    return value


@declare(forecaster=Custom(_forecaster, "a forecaster"))
def forecast_grid(forecaster) -> int | None:
    """The grid size $m$ (``n_bins``) of a grid forecaster (forecasts in {0, 1/m, …, 1}), else ``None``.

    Grid forecasters say so with their ``value_grid`` property
    (:attr:`jcalib.core.AbstractForecaster.value_grid`, ``None`` by default; e.g. Gupta–Ramdas
    scores interval midpoints on a grid twice as fine as its ``n_bins``).
    """
    m = forecaster.value_grid
    return None if m is None else int(m)


def _summary_for(forecaster, n_bins=None) -> GridCounts:
    m = forecast_grid(forecaster)
    if n_bins is not None:
        n_bins = check_positive_int(n_bins, "n_bins")
        # every forecast on the forecaster's grid {j/m} must be a point of the summary's {i/n_bins}
        if m is not None and n_bins % m:
            raise ValueError(
                f"n_bins={n_bins} does not match {type(forecaster).__name__}'s forecast grid of {m} bins "
                f"(its forecasts j/{m} would fall off the summary's grid); pass n_bins={m} or a multiple, "
                "or leave n_bins out"
            )
        return GridCounts(n_bins)
    if m is None:
        raise ValueError(
            "record='summary' needs the forecast grid: pass n_bins (forecasts counted on "
            f"{{0, 1/n_bins, ..., 1}}); {type(forecaster).__name__} has no value_grid"
        )
    return GridCounts(m)


register_builtin_shorthand("summary", _summary_for)


@declare(traj=Custom(_trajectory, "a recorded trajectory"))  # n_bins: GridCounts' own field check
def summary_from_trajectory(traj: Trajectory, n_bins: int) -> GridSummary:
    """The :class:`GridSummary` of a recorded (unbatched) trajectory on the grid
    $\\{0, 1/n_{bins}, \\dots, 1\\}$."""
    rec = GridCounts(n_bins)

    def body(s, row):
        v, y, info = row
        return rec.step(s, Round(jnp.int32(0), None, _Value(v), y, info))[0], None

    s, _ = jax.lax.scan(body, rec.init(), (traj.forecast, traj.y, traj.info))
    return rec.finalise(s, None)


class _Value(NamedTuple):
    value: Array

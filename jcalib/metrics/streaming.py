r"""Binned ECE and smooth ECE at any $n$: histograms on a fixed grid, folded in chunk by chunk.

Both metrics depend on the data only through sums over a fixed partition of $[0, 1]$, so a
stream of predictions can be summarised in $O(\text{grid})$ memory and the metric read off at
the end (or at any time). Each accumulator is a small equinox module with three pure
functions in the library's accumulator vocabulary (the recorders' words), ``init() -> state``,
``step(state, probs, labels, *, sample_weight=None) -> state`` and ``finalise(state) -> metric``,
all jit- and vmap-able; ``step`` is a ``segment_sum``.

Sums are kept with Neumaier's compensated summation (a running total and its round-off per
cell), so float32 state holds about twice float32's precision: $10^9$ predictions fed in
chunks lose no more than a few float32 ulps of the total, instead of all significance past
$2^{24}$ rounds.

* :class:`StreamingBinnedECE` keeps, per uniform bin, the weight, $\sum w p$ and $\sum w y$;
  its final value equals :func:`jcalib.metrics.binned_ece` (``strategy="uniform"``) on the
  concatenated data, to float round-off (same bins: :func:`~jcalib.metrics.binary` 's
  bin rule).
* :class:`StreamingSmoothECE` splits each forecast's weight linearly between its two
  neighbours on the grid $\{j/(G-1)\}$ (relplot's own discretisation step, done once, at
  resolution $G$), separately for $y = 0$ and $y = 1$; its final value is
  :func:`jcalib.metrics.smooth_ece` of the $2G$ weighted grid points, i.e. the smooth ECE of
  the data rounded to the grid. Forecasts on the grid are reproduced exactly; others move by
  at most $1/(2(G-1))$, a change of the smooth ECE of the same order (Błasiok–Nakkiran's
  smECE is 1-Lipschitz in the forecasts up to the bandwidth search).
"""

from __future__ import annotations

import abc

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._validation import BINS, Integer, Real, binary_inputs, declare
from .binary import bin_index
from .smooth import smooth_ece

__all__ = ["HistogramState", "StreamingBinnedECE", "StreamingSmoothECE"]


class HistogramState(NamedTuple):
    """Compensated sums per grid cell.

    Attributes:
        totals: ``(rows, cells)`` running sums (what each accumulator's docstring lists).
        compensation: ``(rows, cells)`` the round-off lost by ``totals`` (Neumaier).
    """

    totals: Array
    compensation: Array


def _fold(state: HistogramState, x: Array) -> HistogramState:
    """Neumaier's compensated addition of ``x`` into the running sums."""
    s, c = state
    t = s + x
    c = c + jnp.where(jnp.abs(s) >= jnp.abs(x), (s - t) + x, (x - t) + s)
    return HistogramState(t, c)


def _value(state: HistogramState) -> Array:
    return state.totals + state.compensation


def _init(rows, cells, dtype):
    dt = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
    z = jnp.zeros((rows, cells), dt)
    return HistogramState(z, z)


def _inputs(state, probs, labels, sample_weight):
    """Checked inputs in the dtype of the state."""
    dt = state.totals.dtype
    return probs.astype(dt), labels.astype(dt), sample_weight.astype(dt)


class _AbstractAccumulator(eqx.Module):
    """``init`` and ``step`` shared by the accumulators; subclasses say what a chunk adds and
    implement ``finalise``."""

    _rows = 0

    @abc.abstractmethod
    def _cells(self) -> int:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def _sums(self, p, y, w) -> Array:
        """The ``(rows, cells)`` sums of one chunk."""
        raise NotImplementedError  # abstract

    def init(self, dtype=None) -> HistogramState:
        """Empty sums (in ``dtype``, default: JAX's default float)."""
        return _init(self._rows, self._cells(), dtype)

    @declare(**binary_inputs())
    def step(
        self,
        state: HistogramState,
        probs: Float[Array, " n"],
        labels: Int[Array, " n"],
        *,
        sample_weight: Float[Array, " n"] | None = None,
    ) -> HistogramState:
        """Fold a chunk of forecasts, outcomes and optional weights into the state."""
        return _step(self, state, *_inputs(state, probs, labels, sample_weight))

    @abc.abstractmethod
    def finalise(self, state: HistogramState) -> Float[Array, ""]:
        """The metric of everything folded in so far."""
        raise NotImplementedError  # abstract


@eqx.filter_jit
def _step(acc, state, p, y, w):
    return _fold(state, acc._sums(p, y, w))


class StreamingBinnedECE(_AbstractAccumulator):
    r"""Binned ECE (uniform bins) accumulated over chunks; **normalised** like :func:`binned_ece`.

    State rows: bin weight $W_b$, $\sum_{i\in b} w_i p_i$, $\sum_{i \in b} w_i y_i$. Final value
    $\big(\sum_b \frac{W_b}{W} |\bar p_b - \bar y_b|^r\big)^{1/r}$ ($r$ = ``order``), which for $r = 1$ is
    $\frac1W \sum_b |\sum_{i\in b} w_i (p_i - y_i)|$ (Naeini et al. 2015; Guo et al. 2017).

    Attributes:
        n_bins: number of equal-width bins (static).
        order: exponent $r \ge 1$ (static).

    Examples:
        >>> import jax.numpy as jnp
        >>> acc = StreamingBinnedECE(n_bins=2)
        >>> s = acc.step(acc.init(), jnp.array([0.1, 0.2]), jnp.array([0, 1]))
        >>> s = acc.step(s, jnp.array([0.9]), jnp.array([1]))
        >>> round(float(acc.finalise(s)), 4)   # binned_ece of the three forecasts at once
        0.2667
    """

    n_bins: int = eqx.field(static=True, default=15, converter=BINS.converter("n_bins"))
    order: float = eqx.field(static=True, default=1, converter=Real(1, static=True).converter("order"))

    _rows = 3

    def _cells(self) -> int:
        return self.n_bins

    def _sums(self, p, y, w):
        idx = bin_index(p, self.n_bins)
        return jax.ops.segment_sum(jnp.stack([w, w * p, w * y], axis=1), idx, num_segments=self.n_bins).T

    def finalise(self, state: HistogramState) -> Float[Array, ""]:
        """The binned ECE of everything folded in so far."""
        wb, fb, yb = _value(state)
        total = jnp.sum(wb)
        if self.order == 1:
            return jnp.sum(jnp.abs(fb - yb)) / total
        safe = jnp.where(wb > 0, wb, 1)
        terms = jnp.where(wb > 0, wb / total * jnp.abs((fb - yb) / safe) ** self.order, 0)
        return jnp.sum(terms) ** (1.0 / self.order)


class StreamingSmoothECE(_AbstractAccumulator):
    r"""Smooth ECE (Błasiok–Nakkiran 2023) of a stream, from a histogram on a fixed grid.

    State rows: the weight of outcomes 0 and of outcomes 1 split linearly onto the grid
    $t_j = j/(G-1)$, $j = 0..G-1$ (a forecast $p$ with $p(G-1) = j + f$ puts $(1-f)w$ on
    $t_j$ and $fw$ on $t_{j+1}$, as relplot's ``smooth_round_to_grid`` does). Final value:
    :func:`jcalib.metrics.smooth_ece` of the $2G$ weighted grid points, **normalised**, and
    with it the bandwidth when asked.

    Attributes:
        n_grid: grid size $G \ge 2$ (static). The default 8193 keeps the rounding below
            $6.2\cdot10^{-5}$, far finer than relplot's own grid ($\ge 1001$ points).

    Examples:
        >>> import jax.numpy as jnp
        >>> acc = StreamingSmoothECE(n_grid=11)
        >>> s = acc.step(acc.init(), jnp.array([0.2, 0.8]), jnp.array([1, 0]))
        >>> from jcalib.metrics import smooth_ece
        >>> bool(jnp.isclose(acc.finalise(s), smooth_ece(jnp.array([0.2, 0.8]), jnp.array([1, 0]))))
        True
    """

    n_grid: int = eqx.field(static=True, default=8193,
                            converter=Integer(2, 2**24, bytes_per=16, what="its grid sums").converter("n_grid"))

    _rows = 2

    def _cells(self) -> int:
        return self.n_grid

    def _sums(self, p, y, w):
        G = self.n_grid
        scaled = p * (G - 1)
        b = jnp.clip(jnp.floor(scaled).astype(jnp.int32), 0, G - 2)
        frac = scaled - b.astype(p.dtype)
        row = y.astype(jnp.int32)  # 0: outcome 0, 1: outcome 1
        flat = jnp.zeros((2 * G,), p.dtype)
        flat = flat.at[row * G + b].add((1 - frac) * w).at[row * G + b + 1].add(frac * w)
        return flat.reshape(2, G)

    def grid_points(self, state: HistogramState):
        """The $2G$ weighted points whose smooth ECE :meth:`finalise` returns: ``(probs, labels, weights)``."""
        G = self.n_grid
        dt = state.totals.dtype
        t = jnp.arange(G, dtype=dt) / (G - 1)
        probs = jnp.concatenate([t, t])
        labels = jnp.concatenate([jnp.zeros((G,), dt), jnp.ones((G,), dt)])
        return probs, labels, _value(state).reshape(-1)

    def finalise(self, state: HistogramState, *, return_bandwidth: bool = False):
        """The smooth ECE of the grid-rounded stream (and its bandwidth if asked)."""
        probs, labels, weights = self.grid_points(state)
        val, sigma = smooth_ece(probs, labels, sample_weight=weights, return_bandwidth=True)
        return (val, sigma) if return_bandwidth else val

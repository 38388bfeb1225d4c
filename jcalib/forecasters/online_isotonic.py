r"""Online quantile recalibration of regression forecasts (Kuleshov, Fenner, Ermon 2018) — the
baseline of Marx et al. (2024, §6), "fit on the data up to $t$ and applied at $t + 1$" — as a forecaster
and as one vectorised call over a whole stream.

At round $t$ the map $R_t$ of `jcalib.recalibration.QuantileRecalibration` is fitted on the PIT
values $u_s = F_s(y_s)$ of the rounds $s < t$ and applied to forecast $t$'s CDF. Each value of
$R_t$ is a count over the past, so the online recalibrator for all $t$ at once
(:func:`online_isotonic`) is one ``lax.map`` over $t$ of masked reductions — $O(T^2 K)$ work,
no sort and no data-dependent shapes — and it vmaps over runs. The tests check it against
scikit-learn's ``IsotonicRegression`` refit on every step.

Projection onto the bins: the recalibrated CDF $R_t \circ F_t$ is piecewise linear between the
points where $F_t$ crosses a past PIT value, so it is not a density on the original bins. As
the forecasts of Marx et al. (2024, §6) are densities on 50 bins, :func:`online_isotonic_probs` and
`OnlineIsotonic` keep the values $G_k = R_t(F_t(e_k))$ at the bin edges, with $G_0 := 0$ and
$G_K := 1$ (the mass of the atoms $R_t(0) > 0$ and $1 - R_t(1)$ goes into the end bins), and
return the bin masses $G_{k+1} - G_k$. Before any past data ($t = 0$) the forecast is left
unchanged.

References:
    V. Kuleshov, N. Fenner, S. Ermon (2018), *Accurate uncertainties for deep learning using
    calibrated regression*, ICML, Algorithm 1.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import size_field
from .._validation import Custom, check_hyper, check_positive_int, declare, RealArray, shown, SimplexProbs
from ..payoffs.interval import float_tuple
from ..core.types import AbstractForecaster, Forecast
from ..recalibration.quantile import recalibrated_cdf

__all__ = ["OnlineIsotonic", "OnlineIsotonicState", "online_isotonic", "online_isotonic_probs"]


@declare(cdf_values=RealArray(ndim=2, lo=0.0, hi=1.0), pit_values=RealArray(ndim=1, lo=0.0, hi=1.0, length_of="cdf_values"))
def online_isotonic(
    cdf_values: Float[Array, "T K"], pit_values: Float[Array, " T"]
) -> Float[Array, "T K"]:
    r"""Online recalibration: row $t$ of ``cdf_values`` (forecast $t$'s CDF at any $K$ points)
    mapped by $R_t$, fitted on the PIT values of rounds $s < t$ only.

    Args:
        cdf_values: ``(T, K)`` values $F_t(z_k)$ in [0, 1].
        pit_values: ``(T,)`` values $u_s = F_s(y_s)$ of the same forecasts.

    Returns:
        ``(T, K)`` recalibrated values $R_t(F_t(z_k))$; row 0 unchanged. One ``lax.map`` over
        $t$ (memory $O(TK)$ per step); jit- and vmap-able.

    Raises:
        ValueError: values outside [0, 1] or NaN (in the graph when traced), empty input, or
            ``pit_values`` not one per row of ``cdf_values``.
    """
    return _online(cdf_values, pit_values)


@jax.jit
def _online(v, u):
    T = u.shape[0]
    idx = jnp.arange(T)
    return jax.lax.map(lambda tv: recalibrated_cdf(u, idx < tv[0], tv[1]), (idx, v))


def _edges_tuple(edges, name, bound):
    e = float_tuple(edges, name)
    if len(e) < 3 or not all(np.isfinite(e)) or not all(a < b for a, b in zip(e, e[1:])):
        raise ValueError(f"{name} must be at least 3 strictly increasing finite floats (2 bins or more), got {shown(edges)}")
    p = bound["probs"]
    if p.shape[1] != len(e) - 1:
        raise ValueError(f"{name} must have one more entry than probs has bins ({p.shape[1]}), got {len(e)}")
    return e


def _outcomes_on(y, name, bound):
    e = bound["edges"]
    return RealArray(ndim=1, lo=e[0], hi=e[-1], length_of="probs").check(y, name, bound)


@declare(probs=SimplexProbs(), edges=Custom(_edges_tuple, "bin edges"), y=Custom(_outcomes_on, "outcomes within the edges"))
def online_isotonic_probs(
    probs: Float[Array, "T n"], y: Float[Array, " T"], edges
) -> Float[Array, "T n"]:
    r"""The online isotonic baseline for piecewise-constant forecasts on ``edges``: bin masses
    of $R_t \circ F_t$ projected onto the bins (module docstring).

    Args:
        probs: ``(T, n)`` bin masses of the forecasts.
        y: ``(T,)`` outcomes.
        edges: the ``n + 1`` bin edges (a sequence of floats).

    Returns:
        ``(T, n)`` recalibrated bin masses (non-negative, rows summing to 1).

    Raises:
        ValueError: ``probs`` not rows of bin masses summing to 1, ``edges`` not increasing
            with one more entry than there are bins, or ``y`` not one finite outcome per row
            within ``[edges[0], edges[-1]]`` (in the graph when traced).

    Example:
        >>> import jax.numpy as jnp
        >>> p = jnp.full((3, 2), 0.5)
        >>> online_isotonic_probs(p, jnp.array([0.9, 0.8, 0.2]), (0.0, 0.5, 1.0))[2].tolist()
        [0.5, 0.5]
    """
    from ..distributions import PiecewiseConstant

    d = PiecewiseConstant(probs, edges)
    y = y.astype(d.probs.dtype)
    u = jnp.clip(d.cdf(y), 0, 1)
    cum = jnp.concatenate([jnp.zeros_like(d.probs[:, :1]), jnp.cumsum(d.probs, axis=1)], axis=1)
    g = _online(jnp.clip(cum, 0, 1), u)
    return _project(g)


def _project(g):
    """Bin masses from recalibrated CDF values at the edges (ends pinned to 0 and 1)."""
    g = g.at[..., 0].set(0).at[..., -1].set(1)
    g = jax.lax.cummax(g, axis=g.ndim - 1)  # R is non-decreasing; guards round-off in the clip of cum
    return jnp.diff(g, axis=-1)


class OnlineIsotonicState(NamedTuple):
    """:class:`OnlineIsotonic`'s state.

    Attributes:
        pits: ``(capacity,)`` ring buffer of the expert's past PIT values.
        count: rounds seen (int32).
    """

    pits: Float[Array, " capacity"]
    count: Int[Array, ""]


class OnlineIsotonic(AbstractForecaster):
    r"""The online isotonic baseline as a forecaster, playable by ``jcalib.core.play``/``sweep``.

    The context $x_t$ is the expert's forecast, a :class:`~jcalib.distributions.PiecewiseConstant`
    on ``edges``. ``predict`` returns $R_t \circ F_{x_t}$ projected on the bins (module
    docstring), $R_t$ fitted on the expert's PIT values $F_{x_s}(y_s)$ of the last
    ``capacity`` rounds; ``update`` stores $F_{x_t}(y_t)$. With ``capacity >= T`` and
    ``prior_weight = 0`` this is Kuleshov et al.'s recalibrator refit at every step, and equals
    :func:`online_isotonic_probs` (tested).

    Departure (optional, off by default): ``prior_weight`` $= w > 0$ shrinks the map towards
    the identity (the expert itself), $\tilde R_t(v) = (n R_t(v) + w v)/(n + w)$ with $n$ the
    PIT values in use — a pseudo-count that tames the first rounds, where $R_t$ from one or two
    points is a step to 1.

    Attributes:
        edges: static tuple of bin edges (the expert's).
        capacity: PIT values kept (static; a sliding window when the run is longer).
        prior_weight: $w \ge 0$ (float, vmappable).

    Example:
        >>> import jax, jax.numpy as jnp, jcalib
        >>> from jcalib.distributions import PiecewiseConstant
        >>> x = PiecewiseConstant(jnp.full((30, 2), 0.5), (0.0, 0.5, 1.0))
        >>> nature = jcalib.natures.Replay(jnp.full((30,), 0.2), x, outcomes="real")
        >>> traj = jcalib.core.play(OnlineIsotonic((0.0, 0.5, 1.0), capacity=30), nature, 30, key=jax.random.key(0))
        >>> traj.forecast.probs[-1].tolist()
        [1.0, 0.0]
    """

    edges: tuple = eqx.field(static=True)
    capacity: int = size_field("capacity", lambda n: n, what="its buffer of PIT values", default=1000)
    prior_weight: float = 0.0

    def __check_init__(self):
        from ..distributions import check_edges

        check_edges(self.edges)
        check_positive_int(self.capacity, "capacity")
        check_hyper(self.prior_weight, "prior_weight", 0.0)

    def init(self, key: PRNGKeyArray) -> OnlineIsotonicState:
        return OnlineIsotonicState(jnp.zeros((self.capacity,), jnp.result_type(float)), jnp.zeros((), jnp.int32))

    def predict(self, state: OnlineIsotonicState, x, key: PRNGKeyArray) -> Forecast:
        from ..distributions import PiecewiseConstant

        probs = x.probs
        dt = probs.dtype
        cum = jnp.clip(jnp.concatenate([jnp.zeros((1,), dt), jnp.cumsum(probs)]), 0, 1)
        mask = jnp.arange(self.capacity, dtype=jnp.int32) < jnp.minimum(state.count, self.capacity)
        r = recalibrated_cdf(state.pits.astype(dt), mask, cum)
        n = jnp.sum(mask.astype(dt))
        w = jnp.asarray(self.prior_weight, dt)
        g = jnp.where(n + w > 0, (n * r + w * cum) / jnp.where(n + w > 0, n + w, 1), cum)
        p = PiecewiseConstant._trusted(_project(g), self.edges)
        return Forecast(p, p)

    def update(self, state: OnlineIsotonicState, x, forecast: Forecast, y) -> OnlineIsotonicState:
        u = jnp.clip(x.cdf(jnp.asarray(y).astype(x.probs.dtype)), 0, 1).astype(state.pits.dtype)
        i = state.count % self.capacity
        return OnlineIsotonicState(state.pits.at[i].set(u), state.count + 1)

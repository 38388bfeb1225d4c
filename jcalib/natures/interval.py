r"""Natures with real outcomes in an interval (the setting of Marx et al. 2024: outcomes rescaled to $[0, 1]$).

- :class:`IIDInterval`: $y_t$ i.i.d. from a fixed piecewise-constant density (oblivious).
- :class:`HalfSpaceAdversary`: the adaptive adversary of Blackwell forecasting: it tracks
  $\bar\pi_{t-1}$ of a payoff and plays the outcome on a grid (or in $\{0, 1\}$) that
  maximises $\langle\bar\pi_{t-1}, \pi(x_t, p_t, y)\rangle$ against the published forecast —
  the move that Theorem 4.3's oracle must withstand.
- :class:`OverconfidentGaussian`: a recalibration stream (Marx et al. 2024, §5.2, §6): a latent mean
  $\mu_t$ (AR(1)), outcomes from the Gaussian $N(\mu_t, s^2)$ truncated to $[0,1]$ and binned
  onto the edges; the context is an expert who knows $\mu_t$ but reports the scale $\kappa s$
  with $\kappa < 1$ (overconfident), as an :class:`~jcalib.payoffs.ExpertContext`.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._dtypes import float_dtype
from .._grid import size_field
from .._validation import check_hyper, check_positive_int, Real, to_device
from ..core.types import AbstractNature, Forecast
from ..distributions import PiecewiseConstant, uniform_edges
from ..distributions.piecewise import check_edges
from ..payoffs.base import AbstractPayoff, ExpertContext, direction

__all__ = [
    "AdversaryState",
    "HalfSpaceAdversary",
    "IIDInterval",
    "OverconfidentGaussian",
    "binned_gaussian",
]



class IIDInterval(AbstractNature):
    r"""$y_t \sim p$ i.i.d., $p$ the piecewise-constant density with masses ``probs`` on ``edges``.

    Attributes:
        probs: ``(n,)`` bin masses (non-negative, summing to 1; checked when concrete).
        edges: static tuple of $n + 1$ increasing floats.
    """

    outcome_space = "real"

    probs: Float[Array, " n"]
    edges: tuple = eqx.field(static=True)

    def __init__(self, probs, edges):
        self.edges = check_edges(edges)
        # PiecewiseConstant checks shape, sign, sum and finiteness: of concrete masses at once,
        # of traced ones in the graph, under this argument's name
        self.probs = PiecewiseConstant(probs, self.edges).probs

    @classmethod
    def skewed(cls, n: int = 50) -> "IIDInterval":
        """A fixed skewed density on $n$ equal bins of $[0, 1]$ (masses $\\propto (i + 1/2)(n - i)$)."""
        n = check_positive_int(n, "n")
        i = np.arange(n) + 0.5
        w = i * (n - i + 0.5)
        return cls(to_device(w / w.sum(), float_dtype()), uniform_edges(n))

    def distribution(self) -> PiecewiseConstant:
        return PiecewiseConstant._trusted(self.probs, self.edges)

    def init(self, key: PRNGKeyArray) -> Int[Array, ""]:
        return jnp.zeros((), jnp.int32)

    def outcome(self, state, x, public, key: PRNGKeyArray) -> Float[Array, ""]:
        return self.distribution().sample(key=key)

    def update(self, state, x, forecast: Forecast, y, key: PRNGKeyArray):
        return state + 1


class AdversaryState(NamedTuple):
    """:class:`HalfSpaceAdversary`'s copy of the running payoff: sum and count."""

    total: Float[Array, " d"]
    count: Int[Array, ""]


class HalfSpaceAdversary(AbstractNature):
    r"""$y_t = \arg\max_{y\in G}\langle c_{t-1}, \pi(x_t, p_t, y)\rangle$, $c$ = the payoff's running mean.

    $G$ is ``n_grid`` equally spaced points of $[lo, hi]$, or $\{0, 1\}$ (int32 outcomes) when
    ``binary``. The adversary sees the published forecast (a mixed strategy included) and keeps
    its own sum of the realised payoffs.

    Attributes:
        payoff: the payoff the forecaster is calibrated for.
        n_grid: grid size (static).
        lo, hi: the outcome range (static).
        binary: outcomes in {0, 1} (static).
        context_value: a fixed context revealed every round (e.g. the quantile grid $Q_t(a_i)$
            of adaptive conformal inference), ``None`` for none.
    """

    payoff: AbstractPayoff
    n_grid: int = size_field("n_grid", lambda n: n, what="its grid of candidate outcomes", default=101)
    lo: float = eqx.field(static=True, default=0.0, converter=Real(static=True).converter("lo"))
    hi: float = eqx.field(static=True, default=1.0, converter=Real(static=True).converter("hi"))
    binary: bool = eqx.field(static=True, default=False)

    @property
    def outcome_space(self) -> str:
        return "binary" if self.binary else "real"
    context_value: object = None

    def context(self, state, key):
        return self.context_value

    def __check_init__(self):
        if not isinstance(self.payoff, AbstractPayoff):
            raise ValueError(f"payoff must be an AbstractPayoff, got {type(self.payoff).__name__}")
        if not self.lo < self.hi:
            raise ValueError(f"need lo < hi, got lo={self.lo!r}, hi={self.hi!r}")

    def init(self, key: PRNGKeyArray) -> AdversaryState:
        return AdversaryState(jnp.zeros((self.payoff.dim,), float_dtype()), jnp.zeros((), jnp.int32))

    def grid(self):
        if self.binary:
            return jnp.array([0, 1], jnp.int32)
        return jnp.linspace(self.lo, self.hi, self.n_grid, dtype=float_dtype())

    def outcome(self, state: AdversaryState, x, public, key: PRNGKeyArray):
        c = direction(self.payoff, state.total / jnp.maximum(state.count, 1).astype(state.total.dtype))
        ys = self.grid()
        vals = jax.vmap(lambda y: jnp.dot(c, self.payoff(x, public, y).astype(c.dtype)))(ys)
        # ties (e.g. c = 0 in the first round) are broken at random so the play is not degenerate
        noise = jax.random.uniform(key, vals.shape, vals.dtype) * 1e-6 * (1 + jnp.max(jnp.abs(vals)))
        return ys[jnp.argmax(vals + noise)]

    def update(self, state: AdversaryState, x, forecast: Forecast, y, key: PRNGKeyArray) -> AdversaryState:
        pi = self.payoff(x, forecast.public, y).astype(state.total.dtype)
        return AdversaryState(state.total + pi, state.count + 1)


def binned_gaussian(mu, scale, edges) -> PiecewiseConstant:
    """$N(\\mu, scale^2)$ truncated to ``[edges[0], edges[-1]]`` and binned onto ``edges``."""
    mu = jnp.asarray(mu)
    e = jnp.asarray(edges, mu.dtype)
    cdf = jax.scipy.stats.norm.cdf((e - mu) / scale)
    mass = jnp.diff(cdf) + jnp.finfo(mu.dtype).tiny
    return PiecewiseConstant._trusted(mass / jnp.sum(mass), edges)


class LatentMean(NamedTuple):
    """:class:`OverconfidentGaussian`'s state: the round index and the latent mean $\\mu_t$."""

    t: Int[Array, ""]
    mu: Float[Array, ""]


class OverconfidentGaussian(AbstractNature):
    r"""Outcomes $y_t \sim N(\mu_t, s^2)$ truncated to $[0,1]$ and binned; the expert reports scale $\kappa s$.

    $\mu_{t+1} = m + \phi(\mu_t - m) + \sqrt{1-\phi^2}\,\varsigma\,\xi_t$ with $m = 1/2$, clipped
    to $[0.1, 0.9]$. Context: ``ExpertContext(expert=binned N(μ_t, (κ s)^2), features=μ_t)``.

    Attributes:
        scale: $s$ (float). overconfidence: $\kappa$ (float; $< 1$ is overconfident).
        phi: AR coefficient (float in $(-1, 1)$). spread: $\varsigma$ (float).
        edges: static bin edges (default 50 equal bins of [0, 1]).
    """

    outcome_space = "real"

    scale: float = 0.12
    overconfidence: float = 0.4
    phi: float = 0.9
    spread: float = 0.15
    edges: tuple = eqx.field(static=True, default=uniform_edges(50), converter=check_edges)

    def __check_init__(self):
        for name in ("scale", "overconfidence", "spread"):
            check_hyper(getattr(self, name), name, 0.0, open_lo=True)
        # |phi| < 1: the innovation's scale sqrt(1 - phi^2) is NaN beyond (phi = 1.7 gave NaN streams)
        check_hyper(self.phi, "phi", -1.0, 1.0, open_lo=True, open_hi=True)

    def init(self, key: PRNGKeyArray) -> LatentMean:
        mu = 0.5 + self.spread * jax.random.normal(key, (), float_dtype())
        return LatentMean(jnp.zeros((), jnp.int32), jnp.clip(mu, 0.1, 0.9))

    def truth(self, state: LatentMean) -> PiecewiseConstant:
        return binned_gaussian(state.mu, jnp.asarray(self.scale, state.mu.dtype), self.edges)

    def context(self, state: LatentMean, key: PRNGKeyArray) -> ExpertContext:
        s = jnp.asarray(self.scale, state.mu.dtype) * jnp.asarray(self.overconfidence, state.mu.dtype)
        return ExpertContext(binned_gaussian(state.mu, s, self.edges), state.mu)

    def outcome(self, state: LatentMean, x, public, key: PRNGKeyArray) -> Float[Array, ""]:
        return self.truth(state).sample(key=key)

    def update(self, state: LatentMean, x, forecast: Forecast, y, key: PRNGKeyArray) -> LatentMean:
        dt = state.mu.dtype
        phi = jnp.asarray(self.phi, dt)
        nxt = 0.5 + phi * (state.mu - 0.5) + jnp.sqrt(1 - phi**2) * jnp.asarray(self.spread, dt) * jax.random.normal(key, (), dt)
        return LatentMean(state.t + 1, jnp.clip(nxt, 0.1, 0.9))

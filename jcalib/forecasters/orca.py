r"""ORCA: gradient-based Blackwell forecasting, Algorithm 2 of Marx, Kuleshov, Ermon et al. (2024).

Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for Arbitrary Sequences*
(TMLR); equation, section and algorithm numbers below are theirs.

Each round ORCA solves the half-space problem (Eq. 8–9) approximately,

$$\ell_t = \min_\theta \max_{k} \;\mathbb E_{y\sim q_k}\langle c_{t-1}, \pi(x_t, p_\theta, y)\rangle,$$

with $c_{t-1} = \bar\pi_{t-1}$ (positive part on regret coordinates, Prop. A.5), announces
$p_{\theta_t}$, and updates $\bar\pi$ like Algorithm 1. Set-up (paper §6.1, "ORCA Implementation", with
jcalib's choices where the paper is silent):

- forecast family $p_\theta$: the piecewise-constant density on the ``edges`` (50 equal bins of
  the rescaled outcome range $[0,1]$ by default) with masses $\mathrm{softmax}(\theta)$ —
  logits are jcalib's choice (the paper does not say how it parametrises); or
  ``family="gaussian_mixture"``: a mixture of ``n_components`` Gaussians (weights, means,
  log-scales) binned onto the same edges and renormalised (so every payoff sees the same
  :class:`~jcalib.distributions.PiecewiseConstant`);
- nature family: mixtures of the **same uniform-on-bin components** $q_k$ (§6.1), not
  point masses: with point masses the quantile block is piecewise constant in $\theta$ and Adam
  sees zero gradients (jcalib's observation). The inner problem is linear in the mixture weights, so its
  maximum is the maximum over the $K$ components: taken exactly (``temperature=0``; the
  gradient is the active component's) or smoothed by $\tau\log\sum_k e^{v_k/\tau}$
  (``temperature`` $=\tau > 0$, an upper bound within $\tau\log K$). The paper's LP through
  cvxpylayers is not needed.
- optimiser: optax Adam for ``n_steps`` steps (400, §6.1) inside one ``lax.scan``
  (:func:`jcalib.core.optimise`); the learning rate (default 0.05) and the warm start from the
  previous round's $\theta$ **and** Adam state are jcalib's choices (the paper is silent).
- three departures that make the minimax solvable by gradient steps (each tested): the logits
  are bounded one-sidedly (:meth:`ORCA.project`), each round's start is screened against
  spiked starts that escape zero-gradient violators (:meth:`ORCA.best_start`), and Adam
  minimises $\max(\ell, 0)$ so that a passing start is not moved (:meth:`ORCA.objective`).

Certificate (``Forecast.certificate``, an :class:`ORCACertificate`): ``value`` is $\ell_t$,
the exact maximum over the $K$ nature components at the final $\theta$ (whatever the
temperature); when it is $\le 0$ no outcome *distribution* of the nature family can increase
$\|\bar\pi\|$ in expectation (§5.1). ``pointwise`` is $\max_y\langle c, \pi(x, p, y)\rangle$
over a dense set of single outcomes (``n_check`` points per bin plus both sides of every jump
the payoff declares, :meth:`~jcalib.payoffs.AbstractPayoff.jumps`: the quantiles of the quantile
block): a realised $y$ cannot make $\langle\bar\pi_{t-1}, \pi_t\rangle$ exceed it beyond the
payoff's variation between neighbouring points. The warm start ($\theta_t$ and the Adam state)
goes from ``predict`` to ``update`` in ``Forecast.carry`` (an :class:`ORCACarry`), which
recorders keep only when asked (``History(carry=True)``).

Cost: the component values are :meth:`~jcalib.payoffs.AbstractExpectations.expect_bins_along`, closed
forms in the bin masses and their cumulative sums ($O(n + m)$ for the quantile block with $m$
levels, cumulative sums for the CRPS; the expert's terms do not depend on $\theta$ and XLA
computes them once per round, outside the Adam loop). ``benchmarks/profile_orca.py`` times a
step per payoff block.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import size_field
from .._validation import as_int, check_hyper, check_int, check_positive_int, Int, stage_check
from ..core.optim import optimise, standard_promotion
from ..core.types import AbstractForecaster, Forecast
from ..distributions import AbstractDistribution, PiecewiseConstant, uniform_edges
from ..payoffs.base import (
    AbstractExpectations,
    AbstractIntervalPayoff,
    AbstractPayoff,
    DirectSum,
    as_expectations,
    direction,
)
from ..payoffs.interval import ExpertRegret, check_range, experiment_payoff, float_tuple

__all__ = ["ORCA", "ORCACarry", "ORCACertificate", "ORCAState", "ExpertMeanCells"]

_FAMILIES = ("piecewise", "gaussian_mixture")


class ORCAState(NamedTuple):
    """ORCA's state.

    Attributes:
        total: $\\sum_{s\\le t}\\pi(x_s, p_s, y_s)$, ``(d,)``.
        count: $t$ (int32).
        theta: the last round's parameters (warm start).
        opt_state: the last round's Adam state (warm start).
    """

    total: Float[Array, " d"]
    count: Int[Array, ""]
    theta: Float[Array, " n"]
    opt_state: Any

    def mean(self) -> Float[Array, " d"]:
        return self.total / jnp.maximum(self.count, 1).astype(self.total.dtype)


class ORCACertificate(NamedTuple):
    """ORCA's per-round certificate (computed before the outcome).

    Attributes:
        value: $\\ell_t = \\max_k \\mathbb E_{y\\sim q_k}\\langle c, \\pi(x, p_t, y)\\rangle$.
        pointwise: $\\max_y \\langle c, \\pi(x, p_t, y)\\rangle$ over the dense check set.
        loss_start: the objective at the warm start (before this round's Adam steps).
    """

    value: Float[Array, ""]
    pointwise: Float[Array, ""]
    loss_start: Float[Array, ""]


class ORCACarry(NamedTuple):
    """What ORCA's ``predict`` hands to ``update`` (``Forecast.carry``): the next round's warm start.

    Not recorded by default (``History(carry=True)`` keeps it, $3n + 1$ numbers per round).

    Attributes:
        theta: the round's final parameters $\\theta_t$.
        opt_state: the round's final Adam state.
    """

    theta: Float[Array, " n"]
    opt_state: Any


def _leaf_blocks(payoff) -> list:
    """The payoff's blocks with every :class:`DirectSum` flattened."""
    if isinstance(payoff, DirectSum):
        return [b for blk in payoff.blocks for b in _leaf_blocks(blk)]
    return [payoff]
class ORCA(AbstractForecaster):
    r"""Online Regression Calibration against an Adversary (Marx et al. 2024, Algorithm 2).

    Attributes:
        payoff: the payoff (default :func:`~jcalib.payoffs.experiment_payoff`: quantile +
            CRPS/MSE regret against the context's expert + moments 1, 2, blocks normalised).
            Any :class:`~jcalib.payoffs.AbstractPayoff`: its ``expect_bins_along``
            (:class:`~jcalib.payoffs.AbstractExpectations`; by default ``expect_uniform`` on
            the bins, projected, :class:`~jcalib.payoffs.DefaultExpectations`) gives the
            component values, its ``jumps`` the outcomes where it steps; outcomes are scalars
            in ``[edges[0], edges[-1]]``.
        edges: static tuple of bin edges (default 50 equal bins of $[0, 1]$).
        n_steps: Adam steps per round (static, default 400; 0 forecasts each round's starting
            point without optimising).
        learning_rate: Adam's step size (float, vmappable; default 0.05).
        temperature: 0 for the exact inner max, $\tau > 0$ for $\tau$-log-sum-exp (float).
        family: ``"piecewise"`` ($\theta$ = logits, one per bin) or ``"gaussian_mixture"``
            (static).
        n_components: Gaussians in the mixture family (static).
        n_check: outcomes per bin of the pointwise certificate's check set (static).
        start: ``"warm"`` (default): start each round's Adam from the previous round's
            $\theta$ (jcalib's choice; the paper is silent); ``"expert"``: from the context expert's own
            logits $\log p_e$ (Algorithm 2's "initialize $p_{\theta_t}$" each round; the
            natural start for recalibration) with a fresh Adam state (static).
        warm_optimizer: carry Adam's state from round to round (static; else a fresh Adam
            state each round from the warm-started $\theta$).
        logit_range: $R$, logits are kept in $[\max\theta - R, \max\theta]$ after every Adam step
            (float; see :meth:`project`).
        spike_weights: before Adam, the start is screened against the spiked starts
            $(1-\gamma)p + \gamma\delta_j$ for every bin $j$ and $\gamma$ in this tuple (static;
            ``()`` turns it off; piecewise family only; see :meth:`best_start`).
        satisfice: minimise $\max(\ell, 0)$ instead of $\ell$ (static, default ``True``; see
            :meth:`objective`).
        unroll: Adam steps per iteration of the compiled inner loop (static; an int $\ge 1$, or
            ``None`` for the backend's default, :func:`jcalib.core.optim.default_unroll`). Not
            in the paper: it changes how the loop is compiled, not the steps (forecasts agree
            with ``unroll=1`` up to float rounding); it saves a loop iteration's fixed cost per
            unrolled step where that cost is large (a GPU's host round trip and kernel launches).

    Context: ``None``, the expert's forecast (a ``PiecewiseConstant`` on the same edges), or an
    :class:`~jcalib.payoffs.ExpertContext` — whatever the payoff reads.

    Example:
        >>> import jax, jcalib
        >>> from jcalib.natures import IIDInterval
        >>> f = ORCA(payoff=jcalib.payoffs.QuantileCalibration(9), edges=uniform_edges(10), n_steps=20)
        >>> traj = jcalib.core.play(f, IIDInterval.skewed(10), 5, key=jax.random.key(0))
        >>> traj.certificate.value.shape
        (5,)

    References:
        Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for Arbitrary
        Sequences*, Algorithm 2, Eq. 8–9, §5.1 and §6.1.
    """

    outcome_space = "real"

    payoff: AbstractPayoff = eqx.field(default_factory=experiment_payoff)
    edges: tuple = eqx.field(static=True, default=uniform_edges(50))
    n_steps: int = eqx.field(static=True, default=400, converter=Int(0, 2**20, what="optimiser steps per round").converter("n_steps"))
    learning_rate: float = 0.05
    temperature: float = 0.1
    family: str = eqx.field(static=True, default="piecewise")
    n_components: int = size_field("n_components", lambda n: 3 * n, what="its mixture parameters", default=5)
    n_check: int = size_field("n_check", what="its grid of checked outcomes", hi=2**20, default=8)
    logit_range: float = 10.0
    spike_weights: tuple = eqx.field(static=True, default=(0.5, 0.9, 0.99))
    satisfice: bool = eqx.field(static=True, default=True)
    warm_optimizer: bool = eqx.field(static=True, default=True)
    start: str = eqx.field(static=True, default="warm")
    unroll: int | None = eqx.field(static=True, default=None, converter=as_int)

    def __check_init__(self):
        if not isinstance(self.payoff, AbstractPayoff):
            raise ValueError(f"payoff must be an AbstractPayoff, got {type(self.payoff).__name__}")
        e = np.asarray(float_tuple(self.edges, "edges"), np.float64)
        if e.ndim != 1 or len(e) < 2 or not np.all(np.isfinite(e)) or not np.all(np.diff(e) > 0):
            raise ValueError("edges must be a strictly increasing tuple of at least 2 finite floats")
        if self.unroll is not None:
            check_int(self.unroll, "unroll", minimum=1)
        if self.start not in ("warm", "expert"):
            raise ValueError(f"start must be 'warm' or 'expert', got {self.start!r}")
        if self.start == "expert" and self.family != "piecewise":
            raise ValueError("start='expert' needs family='piecewise'")
        if self.family not in _FAMILIES:
            raise ValueError(f"family must be one of {_FAMILIES}, got {self.family!r}")
        check_positive_int(self.n_components, "n_components")
        check_positive_int(self.n_check, "n_check")
        if not isinstance(self.spike_weights, tuple) or not all(
            isinstance(g, (int, float)) and 0 < g <= 1 for g in self.spike_weights
        ):
            raise ValueError(f"spike_weights must be a tuple of floats in (0, 1], got {self.spike_weights!r}")
        for name in ("learning_rate", "logit_range"):
            check_hyper(getattr(self, name), name, 0.0, open_lo=True)
        check_hyper(self.temperature, "temperature", 0.0)
        # a block that knows its outcome range must be built for the edges' range: its bound B
        # (and the normalisation of a DirectSum) holds only there
        span = e[-1] - e[0]
        for b in _leaf_blocks(self.payoff):
            if isinstance(b, AbstractIntervalPayoff):
                lo, hi = b.outcome_range
                if abs(lo - e[0]) > 1e-9 * span or abs(hi - e[-1]) > 1e-9 * span:
                    raise ValueError(
                        f"payoff block {type(b).__name__} is built for outcomes in [{lo}, {hi}] but edges "
                        f"span [{e[0]}, {e[-1]}]; build the payoff for the edges' range, e.g. "
                        f"payoff=experiment_payoff(lo={e[0]}, hi={e[-1]})"
                    )

    def check_context(self, x) -> None:
        """Raise ``ValueError`` (at trace time: the context's pytree structure is known) when the
        payoff compares with an expert (an :class:`~jcalib.payoffs.ExpertRegret` block) and the
        context carries none."""
        regret = [b for b in _leaf_blocks(self.payoff) if isinstance(b, ExpertRegret)]
        expert = ExpertRegret.expert_of(x) if regret else None
        if regret and not isinstance(expert, AbstractDistribution):
            raise ValueError(
                f"ORCA's payoff has an ExpertRegret block, which compares with the context's expert "
                f"forecast, but the nature's context is {type(x).__name__}; play against a nature "
                f"whose context is the expert's forecast, or pass a payoff without the regret block, "
                f"e.g. DirectSum((QuantileCalibration(99), MomentCalibration((1, 2), lo, hi)))"
            )

    # ----------------------------------------------------------------------------- family
    @property
    def n_bins(self) -> int:
        return len(self.edges) - 1

    @property
    def n_params(self) -> int:
        return self.n_bins if self.family == "piecewise" else 3 * self.n_components

    def distribution(self, theta) -> PiecewiseConstant:
        """$p_\\theta$ as a :class:`PiecewiseConstant` on ``edges``."""
        if self.family == "piecewise":
            return PiecewiseConstant.from_logits(theta, self.edges)
        k = self.n_components
        logw, mu, logs = theta[:k], theta[k : 2 * k], theta[2 * k :]
        e = jnp.asarray(self.edges, theta.dtype)
        cdf = jax.scipy.stats.norm.cdf((e[:, None] - mu[None, :]) / jnp.exp(logs)[None, :])  # (n+1, k)
        mass = jnp.diff(cdf, axis=0) @ jax.nn.softmax(logw)  # (n,)
        mass = mass + jnp.finfo(theta.dtype).tiny
        return PiecewiseConstant._trusted(mass / jnp.sum(mass), self.edges)

    def init_theta(self) -> Float[Array, " n"]:
        fdt = jnp.result_type(float)
        if self.family == "piecewise":
            return jnp.zeros((self.n_bins,), fdt)  # uniform density
        k = self.n_components
        lo, hi = self.edges[0], self.edges[-1]
        mu = jnp.asarray(lo + (hi - lo) * (np.arange(k) + 0.5) / k, fdt)
        logs = jnp.full((k,), np.log((hi - lo) / k), fdt)
        return jnp.concatenate([jnp.zeros((k,), fdt), mu, logs])

    def project(self, theta):
        r"""Keep the logits in $[\max\theta - R, \max\theta]$, $R$ = ``logit_range``, shifted so $\max\theta = 0$ (piecewise family only).

        Departure from the paper (which does not say how it parametrises): without a bound, Adam
        drives the logits of a sharp minimax forecast to $-\infty$, where the softmax's
        gradients vanish and every later round is stuck at that forecast (observed: the first
        outcome's bin takes all the mass and the certificate never falls again). The bound is
        one-sided on purpose: every bin keeps at least $e^{-R}$ times the largest bin's mass,
        but one bin may hold up to $1/(1 + (n-1)e^{-R})$ of it ($0.998$ for $n = 50$, $R = 10$).
        An earlier centred box $[-L, L]$ capped a single bin's mass at
        $e^L/(e^L + (n-1)e^{-L/(n-1)})$ (0.135 for $L = 2$), below the sharpness of the
        experts ORCA recalibrates and of the minimax forecasts themselves.
        """
        if self.family != "piecewise":
            return theta
        R = jnp.asarray(self.logit_range, theta.dtype)
        return jnp.maximum(theta - jnp.max(theta), -R)

    def _optimizer(self, dtype):
        return optax.adam(jnp.asarray(self.learning_rate, dtype))

    # --------------------------------------------------------------------------- protocol
    def init(self, key: PRNGKeyArray) -> ORCAState:
        theta = self.init_theta()
        fdt = theta.dtype
        with standard_promotion():
            opt_state = self._optimizer(fdt).init(theta)
        return ORCAState(jnp.zeros((self.payoff.dim,), fdt), jnp.zeros((), jnp.int32), theta, opt_state)

    @property
    def expectations(self) -> AbstractExpectations:
        """The payoff with the expectations the inner loop calls: the payoff itself when it states
        them (:class:`~jcalib.payoffs.AbstractExpectations`: the built-in interval payoffs), else
        :class:`~jcalib.payoffs.DefaultExpectations` of it (quadrature and ``vmap``)."""
        return as_expectations(self.payoff)

    def component_values(self, theta, c, x) -> Float[Array, " K"]:
        """$v_k(\\theta) = \\mathbb E_{y\\sim q_k}\\langle c, \\pi(x, p_\\theta, y)\\rangle$ for each bin $k$."""
        return self.expectations.expect_bins_along(x, self.distribution(theta), self.edges, c)

    def objective(self, theta, c, x) -> Float[Array, ""]:
        """The inner max over components of $v_k/\\|c\\|$: exact, or $\\tau$-log-sum-exp when ``temperature`` $= \\tau > 0$.

        $c$ is scaled to unit norm (the minimiser does not change), so the temperature and the
        learning rate mean the same thing in every round. With ``satisfice`` the objective is
        $\\max(\\cdot, 0)$: Blackwell's argument (Theorem 4.3) needs only $\\ell_t \\le 0$, so
        once a start passes, Adam leaves it where it is (with ``start="expert"``, ORCA announces
        the expert whenever the expert itself passes); the paper's Eq. 8–9 minimise on.
        With $\\tau > 0$ the smoothed value bounds the exact one from above, so a smoothed value
        $\\le 0$ certifies the exact one.
        """
        nrm = jnp.linalg.norm(c)
        v = self.component_values(theta, c / jnp.where(nrm > 0, nrm, 1), x)
        tau = jnp.asarray(self.temperature, v.dtype)
        safe = jnp.where(tau > 0, tau, 1)
        smooth = safe * jax.scipy.special.logsumexp(v / safe)
        obj = jnp.where(tau > 0, smooth, jnp.max(v))
        return jnp.maximum(obj, 0) if self.satisfice else obj

    def spikes(self, theta) -> Float[Array, "k n"]:
        """$\\theta$, then the spiked starts $\\log((1-\\gamma) p_\\theta + \\gamma\\delta_j)$ for each $\\gamma$ in ``spike_weights`` and bin $j$.

        Not in Marx et al. (2024), whose Algorithm 2 starts Adam from one point: see :meth:`best_start`.
        Returns ``(1 + n |spike_weights|, n)`` logits, each row projected (:meth:`project`).
        """
        p = jax.nn.softmax(theta)
        n = p.shape[0]
        g = jnp.asarray(self.spike_weights, p.dtype)[:, None, None]
        spiked = jnp.log((1 - g) * p[None, None, :] + g * jnp.eye(n, dtype=p.dtype)[None]).reshape(-1, n)  # [γ, j] rows
        return jnp.concatenate([theta[None, :], jax.vmap(self.project)(spiked)])

    def best_start(self, theta, c, x):
        """The start among :meth:`spikes` with the smallest exact inner max (the first such: $\\theta$ itself on a tie).

        Why (not in the paper): the inner problem is not convex in $\\theta$. A nature component
        $q_k$ whose bin holds no forecast quantile has $v_k = \\sum_\\alpha c_\\alpha
        (\\mathbb 1\\{Q(\\alpha) > \\text{bin}\\} - \\alpha)$, constant in $\\theta$ nearby; when it is the
        largest, every gradient is zero (or points to a local minimum), and only a large move of
        mass into such bins lowers it. Observed on i.i.d. data (quantile block, 50 bins): from the
        warm start alone the certificate stayed near $+1.5\\|c\\|$ and $T\\cdot$QCE grew from 6 at
        $T = 300$ to 130 at $T = 1000$; with the screened starts it stays at 0.4. Screening costs
        $1 + n\\,|\\text{spike\\_weights}|$ evaluations of :meth:`component_values` (151 for the
        defaults), without gradients. With ``satisfice`` values are clipped at 0, so a start
        that already passes is kept.

        Cost: the spikes are ranked by the values of the mixtures $(1-\\gamma)p_\\theta + \\gamma\\delta_j$
        themselves (:meth:`~jcalib.payoffs.AbstractExpectations.spike_values`: closed forms in
        $O(|\\text{spike\\_weights}|\\,n^2)$ dense operations for the payoffs of
        :mod:`jcalib.payoffs.interval`, no cumulative sum per candidate); the start returned is the
        chosen mixture's projected logits (:meth:`spikes`). The projection floors each bin at
        $e^{-R}$ times the largest mass, a change of at most $n e^{-R}$ in total mass that the
        ranking ignores.
        """
        cands = self.spikes(theta)
        spiked = self.expectations.spike_values(x, self.distribution(theta), self.edges, c, self.spike_weights)
        own = jnp.max(self.component_values(theta, c, x))
        vals = jnp.concatenate([own[None], jnp.max(spiked, axis=-1).reshape(-1)])  # [γ, j] rows, as in spikes
        if self.satisfice:
            vals = jnp.maximum(vals, 0)  # argmin keeps the first: the start itself when it already passes
        return cands[jnp.argmin(vals)]

    def check_points(self, x, forecast: PiecewiseConstant) -> Float[Array, " m"]:
        """The outcomes of the pointwise certificate: a grid per bin and both sides of each jump of the payoff.

        The jumps are the payoff's own (:meth:`~jcalib.payoffs.AbstractPayoff.jumps`: the
        quantiles $Q_p(\\alpha)$ of the quantile block), so a user's payoff that declares its
        jumps gets an exact certificate too.
        """
        e = np.asarray(self.edges, np.float64)
        t = np.linspace(0, 1, self.n_check + 1)[:-1]
        grid = (e[:-1, None] + np.diff(e)[:, None] * t[None, :]).reshape(-1)
        pts = [jnp.asarray(np.r_[grid, e[-1]], forecast.dtype)]
        jumps = jnp.asarray(self.payoff.jumps(x, forecast)).astype(forecast.dtype)
        if jumps.shape[0]:
            # both sides of each jump, eps away from it: at y = Q(α) exactly the indicator
            # 1{F(y) <= α} flips with the last ulp of F (batched and unbatched programs differ)
            eps = 1e-4 * (e[-1] - e[0])
            pts += [jnp.clip(jumps - eps, e[0], e[-1]), jnp.clip(jumps + eps, e[0], e[-1])]
        return jnp.concatenate(pts)

    def predict(self, state: ORCAState, x, key: PRNGKeyArray) -> Forecast:
        self.check_context(x)
        c = direction(self.payoff, state.mean())
        opt = self._optimizer(state.theta.dtype)
        opt_state = state.opt_state
        theta0 = state.theta
        if self.start == "expert":
            # Algorithm 2 initialises θ_t each round: from the expert's own density (logits
            # log p_e, bounded), with a fresh Adam state
            pe = ExpertRegret.expert_of(x).probs.astype(theta0.dtype)
            theta0 = self.project(jnp.log(jnp.maximum(pe, jnp.finfo(theta0.dtype).tiny)))
        if self.spike_weights and self.family == "piecewise":
            theta0 = self.best_start(theta0, c, x)
        if not self.warm_optimizer or self.start == "expert":
            with standard_promotion():
                opt_state = opt.init(theta0)
        res = optimise(
            lambda th: self.objective(th, c, x), theta0, opt, self.n_steps, state=opt_state, project=self.project,
            unroll=self.unroll,
        )
        theta = res.params
        p = self.distribution(theta)
        value = jnp.max(self.component_values(theta, c, x))
        ys = self.check_points(x, p)
        pointwise = jnp.max(self.expectations.along_at(x, p, c, ys))
        start = res.losses[0] if self.n_steps > 0 else self.objective(theta, c, x)
        return Forecast(p, p, ORCACertificate(value, pointwise, start), ORCACarry(theta, res.state))

    def check_outcome(self, y) -> Float[Array, ""]:
        """Raise (inside jit, via ``eqx.error_if``) on a NaN outcome or one outside the edges."""
        y = jnp.asarray(y)
        if jnp.ndim(y) != 0:
            raise ValueError(f"ORCA's outcome must be a scalar, got shape {jnp.shape(y)}")
        bad = jnp.isnan(y) | (y < self.edges[0]) | (y > self.edges[-1])
        return stage_check(y, bad, f"outcome y is NaN or outside [{self.edges[0]}, {self.edges[-1]}]")

    def update(self, state: ORCAState, x, forecast: Forecast, y) -> ORCAState:
        y = self.check_outcome(y).astype(state.total.dtype)
        pi = self.payoff(x, forecast.public, y).astype(state.total.dtype)
        warm = forecast.carry
        return ORCAState(state.total + pi, state.count + 1, warm.theta, warm.opt_state)


class ExpertMeanCells(eqx.Module):
    r"""Cells of the expert's forecast space for per-cell recalibration (Marx et al. 2024, §5.2, App. D).

    ``cell(x) = min(floor(n (mean(e) - lo)/(hi - lo)), n - 1)`` with $e$ the expert's forecast
    (``x.expert`` of an :class:`~jcalib.payoffs.ExpertContext`, or ``x`` itself): a partition
    of the expert's forecasts by their mean, for
    ``Partitioned(ORCA(...), n_cells, ExpertMeanCells(n_cells))``.

    Attributes:
        n_cells: number of cells (static).
        lo, hi: the outcome range (static).
    """

    n_cells: int = size_field("n_cells", lambda n: n, what="its cells")
    lo: float = eqx.field(static=True, default=0.0)
    hi: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        check_positive_int(self.n_cells, "n_cells")
        check_range(self.lo, self.hi)

    def __call__(self, x) -> Int[Array, ""]:
        m = jnp.asarray(ExpertRegret.expert_of(x).mean())
        c = jnp.floor((m - self.lo) / (self.hi - self.lo) * self.n_cells).astype(jnp.int32)
        return jnp.clip(c, 0, self.n_cells - 1)

r"""The payoff protocol of Blackwell forecasting (Marx et al. 2024, §3 and §4).

Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for Arbitrary
Sequences* (TMLR).

A payoff $\pi(x, p, y) \in \mathbb R^d$ maps a context $x$, a forecast $p \in \Delta(\mathcal Y)$
and an outcome $y$ to a vector whose running average $\bar\pi_T = \frac1T\sum_t \pi(x_t, p_t, y_t)$
measures miscalibration: $\|\bar\pi_T\|_2$ (unnormalised by $d$). The paper's conditions
(§4.1, Conditions 1–3):

1. bounded: $B = \sup \|\pi\|_2^2 < \infty$ (the paper writes $\sup\|\pi\|$, but its eqs 14–15
   use the square; :meth:`AbstractPayoff.bound` returns the square);
2. consistent: $\mathbb E_{y\sim p}\,\pi(x, p, y) = 0$; regret payoffs are only
   semi-consistent (Condition 4, $\le 0$ coordinatewise) and are driven through the positive
   part of $\bar\pi$ (Proposition A.5): :attr:`AbstractPayoff.semi` marks those coordinates;
3. continuous in $p$ (Wasserstein).

A payoff is defined by what :class:`AbstractPayoff` asks for and nothing else:
``__call__(x, forecast, y) -> (d,)`` (the context, the forecast — the paper's $p$, whatever object
the forecaster publishes — and the outcome), ``dim``, ``bound()``, ``semi`` (which coordinates are
regret coordinates, default none) and ``jumps(x, forecast)`` (where the payoff may jump in $y$,
default nowhere). A payoff a user writes needs these only, and runs with Algorithm 1 (given an
oracle) and with ORCA.

ORCA's inner loop asks more of a payoff over real outcomes: expectations under uniform
outcomes on intervals and on its bins, projected on a direction, and the payoff at many
outcomes at once. Those are the methods of :class:`AbstractExpectations`, a payoff that
states them; its base class computes each one from the definition (Gauss–Legendre quadrature,
``vmap`` over outcomes), and the payoffs of :mod:`jcalib.payoffs.interval` and
:class:`~jcalib.payoffs.PinballRegret` override them in closed form. ORCA runs any other payoff
through :class:`DefaultExpectations`, which adds the default methods to its definition:

- ``expect_uniform(x, forecast, lo, hi) -> (K, d)``: the expected payoff when $y$ is uniform on each
  of $K$ intervals $[lo_k, hi_k]$ — the nature family of ORCA (Marx et al., §6.1) and the
  quadrature behind consistency checks. The default computes it by Gauss–Legendre quadrature
  (exact for payoffs polynomial of degree $\le 2\cdot$``quad_nodes``$-1$ in $y$ on each
  interval); closed forms matter for payoffs with steps in $y$ (quantile calibration), where
  they keep ORCA's gradients non-zero.
- ``expect_bins(x, forecast, edges) -> (n, d)``: the same for the $n$ bins of static ``edges``;
  payoffs override it where the bins are the forecast's own (dense expressions of the bin
  masses and their cumulative sums), else it is ``expect_uniform``.
- ``expect_bins_along(x, forecast, edges, c) -> (n,)``: ``expect_bins`` projected on $c$, ORCA's
  component values.
- ``spike_values(x, forecast, edges, c, gammas) -> (G, n, n)``: the projected component values of the
  spiked mixtures $(1-\gamma)p + \gamma\delta_j$, ORCA's start screen (default: one
  ``expect_bins_along`` per mixture).
- ``along_at(x, forecast, c, ys) -> (M,)``: $\langle c, \pi(x, p, y)\rangle$ at many outcomes, the
  call behind ORCA's pointwise certificate (default: the payoff vmapped over ``ys``).

A certificate that maximises over single outcomes (ORCA's pointwise certificate) checks both
sides of each of the payoff's ``jumps``, so it is exact for any payoff that declares them, a
user's own included.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._dtypes import float_dtype
from .._validation import Custom, declare, in_graph, Int, is_concrete, Real, RealArray, shown

__all__ = [
    "AbstractExpectations",
    "AbstractIntervalPayoff",
    "AbstractPayoff",
    "DefaultExpectations",
    "DirectSum",
    "ExpertContext",
    "Recipe",
    "as_expectations",
    "direction",
    "expect_under_bins",
]


class ExpertContext(NamedTuple):
    """The context of recalibration (Marx et al. 2024, §4.2, §6): an expert's forecast and features.

    Attributes:
        expert: the expert's forecast distribution (e.g. a ``PiecewiseConstant``).
        features: any pytree of features (``None`` when there are none).
    """

    expert: Any
    features: Any = None


def _gauss_legendre(n: int):
    nodes, weights = np.polynomial.legendre.leggauss(n)
    return nodes, weights / 2.0  # weights of the uniform distribution on [-1, 1]


class AbstractPayoff(eqx.Module):
    """A vector payoff $\\pi(x, p, y)$: what defines it (value, dimension, bound, regret coordinates, jumps).

    Subclasses implement :attr:`dim`, :meth:`__call__` and :meth:`bound`; :attr:`semi` and
    :meth:`jumps` have defaults (no regret coordinates, no jumps). The arguments of
    ``__call__`` are the same everywhere in :mod:`jcalib.payoffs`: ``x`` the context (``None``,
    a model's forecast, an :class:`ExpertContext`, features), ``forecast`` — the paper's
    $p$: a probability, a grid point, a :class:`~jcalib.core.Mixture`, a distribution, whatever
    object the forecaster publishes (``Forecast.public``) — and ``y`` the outcome.
    """

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """Length $d$ of the payoff vector (a Python int)."""
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def __call__(self, x: Any, forecast: Any, y: Any) -> Float[Array, " d"]:
        """$\\pi(x, p, y)$, shape ``(d,)``."""
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def bound(self) -> float:
        """$B = \\sup_{x,p,y}\\|\\pi(x,p,y)\\|_2^2$ (a Python float)."""
        raise NotImplementedError  # abstract

    @property
    def semi(self) -> np.ndarray:
        """Boolean mask ``(d,)`` of semi-consistent (regret) coordinates (default: none)."""
        return np.zeros(self.dim, bool)

    def jumps(self, x: Any, forecast: Any) -> Float[Array, " J"]:
        """The outcomes $y$ at which $\\pi(x, p, y)$ may jump, ``(J,)`` with ``J`` fixed by the payoff.

        Default: none (the payoff is continuous in $y$). A payoff with steps in $y$ (quantile
        calibration: at $Q_p(\\alpha)$) returns where they are, so that a maximum over single
        outcomes (ORCA's pointwise certificate) looks at both sides of every step.
        """
        return jnp.zeros((0,), _dtype_of(forecast))


class AbstractIntervalPayoff(AbstractPayoff):
    """A payoff built for real outcomes in a range $[lo, hi]$: its bound holds there only.

    ORCA checks that such a payoff's range is the range of its ``edges``. Subclasses implement
    :attr:`outcome_range` (the payoffs here from their static fields ``lo`` and ``hi``).
    """

    @property
    @abc.abstractmethod
    def outcome_range(self) -> tuple[float, float]:
        """``(lo, hi)``: the outcome range the payoff (and its bound) is built for (Python floats)."""
        raise NotImplementedError  # abstract


class AbstractExpectations(AbstractPayoff):
    """A payoff with the expectations ORCA's inner loop asks for (see the module docstring).

    Every method has a default computed from the payoff's definition (Gauss–Legendre
    quadrature, ``vmap`` over outcomes); subclasses override the ones they have in closed form.
    A payoff that is not an :class:`AbstractExpectations` gets the defaults through
    :class:`DefaultExpectations` (:func:`as_expectations`).
    """

    quad_nodes = 3  # Gauss–Legendre nodes per interval in :meth:`expect_uniform`

    def expect_uniform(self, x: Any, forecast: Any, lo: Float[Array, " K"], hi: Float[Array, " K"]) -> Float[Array, "K d"]:
        """$\\mathbb E_{y\\sim U[lo_k, hi_k]}\\,\\pi(x, p, y)$ for each $k$ (Gauss–Legendre)."""
        nodes, weights = _gauss_legendre(self.quad_nodes)
        lo, hi = jnp.asarray(lo), jnp.asarray(hi)
        fdt = lo.dtype
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        ys = mid[:, None] + half[:, None] * jnp.asarray(nodes, fdt)[None, :]  # (K, n)
        vals = jax.vmap(jax.vmap(lambda y: self(x, forecast, y)))(ys)  # (K, n, d)
        return jnp.einsum("knd,n->kd", vals, jnp.asarray(weights, fdt))

    def expect_bins(self, x: Any, forecast: Any, edges: tuple) -> Float[Array, "n d"]:
        """$\\mathbb E_{y\\sim U[e_k, e_{k+1}]}\\,\\pi(x, p, y)$ for each bin $k$ of the static ``edges``.

        Default: :meth:`expect_uniform` on the bins (in the forecast's dtype). Payoffs override it with
        a cheaper closed form where ``edges`` are the forecast's own bins (ORCA's inner loop).
        """
        lo, hi = _bin_ends(edges, forecast)
        return self.expect_uniform(x, forecast, lo, hi)

    def expect_bins_along(self, x: Any, forecast: Any, edges: tuple, c: Float[Array, " d"]) -> Float[Array, " n"]:
        """$\\langle c, \\mathbb E_{y\\sim U[e_k, e_{k+1}]}\\,\\pi(x, p, y)\\rangle$ for each bin $k$ (ORCA's component values).

        Default: ``expect_bins(x, forecast, edges) @ c``. Payoffs override it where the projection on
        $c$ is cheaper than the $(n, d)$ matrix (quantile calibration: $O(n + m)$).
        """
        return self.expect_bins(x, forecast, edges) @ c

    def spike_values(self, x: Any, forecast: Any, edges: tuple, c: Float[Array, " d"], gammas: tuple) -> Float[Array, "G n n"]:
        r"""The component values of the spiked mixtures $(1-\gamma)p + \gamma\delta_j$ (ORCA's start screen).

        ``[g, j, k]`` is $\langle c, \mathbb E_{y\sim U[e_k, e_{k+1}]}\,\pi(x, p'_{gj}, y)\rangle$ for
        $p'_{gj} = (1-\gamma_g)p + \gamma_g\delta_j$, $\delta_j$ the uniform density on bin $j$, for a
        piecewise-constant forecast $p$ on the static ``edges``. Default: :meth:`expect_bins_along` of each
        of the $G n$ mixtures. The payoffs of :mod:`jcalib.payoffs.interval` override it in closed
        form: on bin $k \ne j$ the mixture is $(1-\gamma)p$ shifted by $0$ or $\gamma$ in CDF, so
        their values are $O(Gn)$ evaluations plus dense $(G, n, n)$ expressions.
        """
        from ..distributions import PiecewiseConstant

        n = forecast.probs.shape[-1]
        g = jnp.asarray(gammas, forecast.dtype)[:, None, None]
        mix = (1 - g) * forecast.probs[None, None, :] + g * jnp.eye(n, dtype=forecast.dtype)[None]  # (G, n, n): [g, j, :]
        one = lambda q: self.expect_bins_along(x, PiecewiseConstant._trusted(q, forecast.edges), edges, c)  # noqa: E731
        return jax.vmap(jax.vmap(one))(mix)

    def along_at(self, x: Any, forecast: Any, c: Float[Array, " d"], ys: Float[Array, " M"]) -> Float[Array, " M"]:
        """$\\langle c, \\pi(x, p, y_i)\\rangle$ for each outcome of ``ys`` ``(M,)`` (ORCA's pointwise certificate).

        Default: the payoff at every outcome (``vmap``), projected on $c$: $O(dM)$ plus $M$ times
        the payoff's own cost. Payoffs override it where the projection at many outcomes has a
        cheaper closed form (the payoffs of :mod:`jcalib.payoffs.interval`: $O(n + m + M)$).
        """
        return jax.vmap(lambda y: self(x, forecast, y))(ys) @ jnp.asarray(c)


class DefaultExpectations(AbstractExpectations):
    """A payoff's definition with :class:`AbstractExpectations`' default methods: how ORCA runs a payoff
    that states no expectations of its own (a user's, say).

    Attributes:
        payoff: the payoff (any :class:`AbstractPayoff`).

    Example:
        >>> import jax.numpy as jnp
        >>> from jcalib.distributions import PiecewiseConstant
        >>> mean = Recipe(lambda x, p: jnp.ones(1), lambda y: jnp.stack([y]), lambda p: jnp.stack([p.mean()]),
        ...               n_context=1, n_witness=1, bound_value=1.0)
        >>> p = PiecewiseConstant(jnp.array([0.5, 0.5]), (0.0, 0.5, 1.0))
        >>> tuple(round(float(v), 4) for v in DefaultExpectations(mean).expect_bins(None, p, p.edges)[:, 0])
        (0.25, -0.25)
    """

    payoff: AbstractPayoff

    def __check_init__(self):
        if not isinstance(self.payoff, AbstractPayoff):
            raise ValueError(f"payoff must be an AbstractPayoff, got {type(self.payoff).__name__}")

    @property
    def dim(self) -> int:
        return self.payoff.dim

    def __call__(self, x, forecast, y):
        return self.payoff(x, forecast, y)

    def bound(self) -> float:
        return self.payoff.bound()

    @property
    def semi(self) -> np.ndarray:
        return self.payoff.semi

    def jumps(self, x, forecast):
        return self.payoff.jumps(x, forecast)


@declare(payoff=Custom(lambda v, name, b: _payoff(v, name, b), "a payoff"))
def as_expectations(payoff: AbstractPayoff) -> AbstractExpectations:
    """``payoff`` itself if it states its expectations (:class:`AbstractExpectations`), else
    :class:`DefaultExpectations` of it."""
    return payoff if isinstance(payoff, AbstractExpectations) else DefaultExpectations(payoff)


def _dtype_of(p) -> jnp.dtype:
    """The float dtype of a forecast: its ``dtype`` attribute (distributions, arrays), else the default."""
    dt = getattr(p, "dtype", None)
    return dt if dt is not None and jnp.issubdtype(dt, jnp.floating) else float_dtype()


def _bin_ends(edges: tuple, p) -> tuple[Array, Array]:
    """``(lo, hi)``: the left and right ends of the bins of static ``edges``, in ``p``'s dtype."""
    e = np.asarray(edges, np.float64)
    dt = _dtype_of(p)
    return jnp.asarray(e[:-1], dt), jnp.asarray(e[1:], dt)


def _payoff(value, name, bound):
    if not isinstance(value, AbstractPayoff):
        raise ValueError(f"{name} must be an AbstractPayoff, got {type(value).__name__}")
    return value


def _edges(value, name, bound):
    e = RealArray(ndim=1).check(value, name, bound)
    v = None if isinstance(e, jax.core.Tracer) else np.asarray(e)
    if e.shape[0] < 2 or (v is not None and not np.all(np.diff(v) > 0)):
        raise ValueError(f"{name} must be strictly increasing bin edges, at least two, got {shown(value)}")
    q = bound.get("q_probs")
    if q is not None and q.shape[-1] != e.shape[0] - 1:
        raise ValueError(f"{name} must have one more entry than q_probs has bins ({q.shape[-1]}), got {e.shape[0]}")
    return e


def _bin_masses(value, name, bound):
    """Bin masses ``(n,)`` or ``(B, n)``: non-negative, each row summing to 1 (to ``probs_atol``)."""
    from ..distributions import probs_atol

    q = RealArray(ndim=(1, 2), lo=0.0).check(value, name, bound)
    atol = probs_atol(max(q.shape[-1], 1), q.dtype)
    if is_concrete(q):
        err = float(np.max(np.abs(np.asarray(q, np.float64).sum(-1) - 1), initial=0.0))
        if err > atol:
            raise ValueError(f"{name} must sum to 1 over its bins (off by {err:.3g} > {atol:.3g})")
        return q
    return in_graph(q, jnp.any(jnp.abs(jnp.sum(q, -1) - 1) > atol), f"{name} must sum to 1 over its bins (to {atol:.3g})")


@declare(payoff=Custom(_payoff, "a payoff"), q_probs=Custom(_bin_masses, "bin masses summing to 1"),
         edges=Custom(_edges, "bin edges"))
def expect_under_bins(payoff: AbstractPayoff, x, forecast, q_probs, edges) -> Float[Array, " d"]:
    """$\\mathbb E_{y\\sim q}\\,\\pi(x, p, y)$ for $q$ piecewise constant with bin masses ``q_probs`` on ``edges``
    (through :meth:`AbstractExpectations.expect_uniform`; any payoff, by :func:`as_expectations`).

    Raises:
        ValueError: ``payoff`` is not a payoff, ``q_probs`` has negative or non-finite masses or
            rows not summing to 1,
            or ``edges`` are not increasing with one more entry than ``q_probs`` has bins.
    """
    e = jnp.asarray(edges, jnp.asarray(q_probs).dtype)
    return jnp.asarray(q_probs) @ as_expectations(payoff).expect_uniform(x, forecast, e[:-1], e[1:])


def _mean(value, name, bound):
    m = RealArray(ndim=1).check(value, name, bound)
    d = bound["payoff"].dim
    if m.shape != (d,):
        raise ValueError(f"{name} must have the payoff's dimension ({d},), got {tuple(m.shape)}")
    return m


@declare(payoff=Custom(_payoff, "a payoff"), mean=Custom(_mean, "the payoff's running mean"))
def direction(payoff: AbstractPayoff, mean: Float[Array, " d"]) -> Float[Array, " d"]:
    """The vector Algorithm 1 makes a half-space for: $\\bar\\pi$, with the positive part taken on
    the semi-consistent coordinates (Proposition A.5).

    Raises:
        ValueError: ``payoff`` is not a payoff, or ``mean`` is not a finite vector of its
            dimension (in the graph when traced).
    """
    mask = jnp.asarray(payoff.semi)
    return jnp.where(mask, jnp.maximum(mean, 0), mean)


class DirectSum(AbstractExpectations):
    r"""The direct sum $\pi = \bigoplus_i \pi^{(i)}/\sqrt{B_i}$ (Marx et al. 2024, Prop. 4.4).

    Each block is divided by the square root of its own bound, so each has bound 1 and the sum
    has $B = n$ (the number of blocks). Algorithm 1 then gives every block
    $\|\bar\pi^{(i)}_T\|^2 \le n B_i / T$ in the block's own (unnormalised) units.
    ``normalise=False`` keeps the raw blocks ($B = \sum_i B_i$).

    Attributes:
        blocks: tuple of payoffs.
        normalise: divide each block by $\sqrt{B_i}$ (Prop. 4.4).
    """

    blocks: tuple
    normalise: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        if not isinstance(self.blocks, tuple) or not self.blocks:
            raise ValueError("blocks must be a non-empty tuple of payoffs")
        for b in self.blocks:
            if not isinstance(b, AbstractPayoff):
                raise ValueError(f"blocks must be payoffs, got {type(b).__name__}")

    @property
    def dim(self) -> int:
        return sum(b.dim for b in self.blocks)

    def scales(self) -> tuple[float, ...]:
        """$1/\\sqrt{B_i}$ per block (1 when not normalised)."""
        return tuple(1.0 / float(np.sqrt(b.bound())) if self.normalise else 1.0 for b in self.blocks)

    def slices(self) -> tuple[slice, ...]:
        """Where each block lives in the summed vector."""
        out, i = [], 0
        for b in self.blocks:
            out.append(slice(i, i + b.dim))
            i += b.dim
        return tuple(out)

    def __call__(self, x, forecast, y):
        return jnp.concatenate([b(x, forecast, y) * s for b, s in zip(self.blocks, self.scales())])

    def bound(self) -> float:
        if self.normalise:
            return float(len(self.blocks))
        return float(sum(b.bound() for b in self.blocks))

    @property
    def semi(self) -> np.ndarray:
        return np.concatenate([b.semi for b in self.blocks])

    def expect_uniform(self, x, forecast, lo, hi):
        return jnp.concatenate(
            [as_expectations(b).expect_uniform(x, forecast, lo, hi) * s for b, s in zip(self.blocks, self.scales())], axis=-1
        )

    def expect_bins(self, x, forecast, edges):
        return jnp.concatenate([as_expectations(b).expect_bins(x, forecast, edges) * s for b, s in zip(self.blocks, self.scales())], axis=-1)

    def expect_bins_along(self, x, forecast, edges, c):
        parts = [as_expectations(b).expect_bins_along(x, forecast, edges, c[sl] * s) for b, sl, s in zip(self.blocks, self.slices(), self.scales())]
        return sum(parts[1:], parts[0])

    def spike_values(self, x, forecast, edges, c, gammas):
        parts = [as_expectations(b).spike_values(x, forecast, edges, c[sl] * s, gammas) for b, sl, s in zip(self.blocks, self.slices(), self.scales())]
        return sum(parts[1:], parts[0])

    def along_at(self, x, forecast, c, ys):
        parts = [as_expectations(b).along_at(x, forecast, c[sl] * s, ys) for b, sl, s in zip(self.blocks, self.slices(), self.scales())]
        return sum(parts[1:], parts[0])

    def jumps(self, x, forecast):
        """Every block's jumps, concatenated (the scales do not move them)."""
        return jnp.concatenate([b.jumps(x, forecast) for b in self.blocks])


class Recipe(AbstractPayoff):
    r"""The general recipe $\pi(x,p,y) = c(x,p) \otimes (\mathbb E_{y'\sim p} w(y') - w(y))$ (Marx et al., §3).

    $w$ is the witness (what should match on average), $c$ the context function (the
    conditioning events); the payoff is consistent by construction. Users write their own
    calibration notion by choosing both.

    Attributes:
        context_fn: ``(x, p) -> (n_c,)``.
        witness: ``y -> (n_w,)``.
        expect_witness: ``p -> (n_w,)``, $\mathbb E_{y\sim p}w(y)$ (e.g. ``lambda p: p.expect(witness)``).
        n_context, n_witness: the two lengths (static).
        bound_value: $B \ge \sup\|c\|^2 \sup\|\mathbb E w - w\|^2$, given by the user.

    Example:
        >>> import jax.numpy as jnp
        >>> mean = Recipe(lambda x, p: jnp.ones(1), lambda y: jnp.stack([y]), lambda p: jnp.stack([p]),
        ...               n_context=1, n_witness=1, bound_value=1.0)
        >>> round(float(mean(None, jnp.asarray(0.3), jnp.asarray(1.0))[0]), 6)
        -0.7
    """

    context_fn: Callable
    witness: Callable
    expect_witness: Callable
    n_context: int = eqx.field(static=True, converter=Int(1, 2**24, what="context coordinates").converter("n_context"))
    n_witness: int = eqx.field(static=True, converter=Int(1, 2**24, what="witness coordinates").converter("n_witness"))
    bound_value: float = eqx.field(static=True, converter=Real(0.0, static=True).converter("bound_value"))

    def __check_init__(self):
        for name in ("context_fn", "witness", "expect_witness"):
            if not callable(getattr(self, name)):
                raise ValueError(f"{name} must be callable, got {type(getattr(self, name)).__name__}")

    @property
    def dim(self) -> int:
        return self.n_context * self.n_witness

    def __call__(self, x, forecast, y):
        c = jnp.asarray(self.context_fn(x, forecast))
        w = jnp.asarray(self.expect_witness(forecast)) - jnp.asarray(self.witness(y))
        return (c[:, None] * w[None, :]).reshape(-1)

    def bound(self) -> float:
        return float(self.bound_value)

r"""Specialised half-space oracles of Marx et al. (2024), App. C.

Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for Arbitrary
Sequences* (TMLR).

A half-space oracle receives the current direction $c$ (Algorithm 1's $\bar\pi_{t-1}$, positive
part taken on regret coordinates) and the context $x$ and returns a forecast $p$ with
$\max_y \langle c, \pi(x, p, y)\rangle \le 0$ (Eq. 4) — or, for the discretised oracles, at most
$\epsilon\|c\|_2$. Every oracle here returns a :class:`~jcalib.core.Forecast` whose
``certificate`` is $\max_y \langle c, \pi(x, p, y)\rangle$ for the forecast it publishes,
evaluated in closed form over every outcome the payoff admits (both ends of the outcome range
included), before the outcome is drawn. The certificate is exact for the strategy played; the
strategy itself may be approximate (:class:`ConformalOracle`'s LP fallback runs a fixed number
of mirror-prox steps, so its certificate can exceed the LP optimum by that solver's error), and
for :class:`QuantileStepOracle` it can be positive at $y = y_{min}$, where no step quantile
function makes the payoff non-positive.

Oracles (each with the payoff of :mod:`jcalib.payoffs.binary` / :mod:`jcalib.payoffs.grid` it
is built for, as ``oracle.payoff``):

- :class:`KakadeFoster` (C.2.1): deterministic fixed point of the tent interpolation
  $g(f) = \sum_v w_v(f)c_v$ (certificate 0), or quasi-deterministic (play the two vertices of
  its segment with the tent weights; certificate $\le \|c\|_2/m$).
- :class:`ConformalOracle` (C.1.1): jcalib's **correction** of the paper's randomised rule
  (the paper's own, ``rule="paper"``, kept to show where it fails) with an LP fallback solved by
  entropic mirror-prox for a fixed number of steps.
- :class:`SmoothConformalOracle` (C.1.1, deterministic, smoothed indicators): root of the tent
  interpolation of $c$; certificate 0.
- :class:`MomentOracle` (C.2.2): the fixed point $f = \Pi_K(f - g(f))$ on the Freudenthal
  triangulation of the $(\mu, \sigma)$ box, found by enumerating all $2M^2$ triangles, $4M$
  boundary edges and 4 corners ($O(M^2) = O(1/\epsilon^2)$ work, the paper's count);
  deterministic (certificate $\le 0$) or randomised over the triangle's vertices.
- :class:`QuantileStepOracle` (C.1.2): step quantile functions; the paper's case list (C.1.2,
  before Lemma C.3) is not self-consistent and the paper calls the oracle "not practical" —
  implemented over a grid of levels and tested by brute force over $y$.
There is no decision-calibration oracle in App. C (Theorem 5.1 only asserts one exists), and
the distribution-calibration oracle of C.2.3 is the fixed-point method of C.2.1 on a
triangulation of the simplex of pmfs on $M$ cells with $N$ ticks: its
$\binom{N+M-1}{M-1}$ vertices grow exponentially in $M$; for $M = 2$ it is
:class:`KakadeFoster` on the probability of the upper cell (App. C.2.3).
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, size_field
from .._validation import check_hyper, check_positive_int, Custom, declare, in_graph, Int, is_concrete, Real, RealArray
from ..core.types import Forecast, Mixture
from .base import AbstractPayoff
from .binary import BinaryCalibration, MixedBinaryCalibration, _tent_weights
from .grid import (
    ConformalPayoff,
    MixedMomentCalibration,
    MomentGridCalibration,
    SmoothConformalPayoff,
    moment_vertices,
)

__all__ = [
    "AbstractOracle",
    "ConformalOracle",
    "KakadeFoster",
    "MomentOracle",
    "QuantileStepOracle",
    "SmoothConformalOracle",
    "conformal_certificate",
    "game_value_mirror_prox",
    "tent_root",
]


class AbstractOracle(eqx.Module):
    r"""A half-space oracle: ``oracle(c, x, key) -> Forecast``, the one shape of every oracle in jcalib.

    Given the direction $c$ (Algorithm 1's $\bar\pi_{t-1}$, positive part on the payoff's
    semi-consistent coordinates: :func:`~jcalib.payoffs.direction`), the round's context $x$
    and a key (last and positional, like the forecasters' protocol methods; deterministic
    oracles ignore it), it returns the forecast to play: ``value`` the realised forecast,
    ``public`` the published (mixed) strategy and ``certificate``
    $= \max_y \langle c, \pi(x, \text{public}, y)\rangle$ for :attr:`payoff`, computed before
    the outcome. :class:`~jcalib.forecasters.BlackwellForecaster` plays any oracle (Algorithm 1);
    the oracles of App. C are in this module, that of Okoroafor et al. (2024) is
    :class:`~jcalib.forecasters.ApproachabilityOracle`.
    """

    @property
    @abc.abstractmethod
    def payoff(self) -> AbstractPayoff:
        """The payoff $\\pi$ the oracle is built for (its certificate is along it)."""
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def __call__(self, c: Float[Array, " d"], x, key: PRNGKeyArray) -> Forecast:
        """The forecast for direction ``c`` and context ``x``, with its certificate."""
        raise NotImplementedError  # abstract


def _two_points(c, name, bound):
    c = RealArray(ndim=1).check(c, name, bound)
    if c.shape[0] < 2:
        raise ValueError(f"{name} must hold one value per grid point, at least two, got shape {tuple(c.shape)}")
    return c


@declare(c=Custom(_two_points, "a direction on at least two grid points"))
def tent_root(c: Float[Array, " n_bins+1"]):
    r"""A point $f\in[0,1]$ with $g(f) (f - y) \le 0$ for all $y \in [0, 1]$, $g$ the tent interpolation of $c$.

    $c$ holds one value per point of the grid $\{0, 1/m, \dots, 1\}$ (``n_bins`` $= m$ cells,
    read from its length $m + 1$). $f = 0$ if $c_0 \ge 0$; $f = 1$ if $c_m \le 0$; otherwise the
    first crossing $c_i < 0 \le c_{i+1}$ and $f = (i + t)/m$ with $t = c_i/(c_i - c_{i+1})$, so
    $g(f) = 0$ (Kakade–Foster's fixed point, App. C.2.1).

    Args:
        c: the direction, shape ``(n_bins + 1,)`` (at least two grid points).

    Returns:
        ``(f, i, t)``: the point, its segment's left vertex and the weight of the right vertex.

    Raises:
        ValueError: ``c`` is not a finite 1-D array of at least two values (in the graph when
            traced).
    """
    m = c.shape[0] - 1
    cross = (c[:-1] < 0) & (c[1:] >= 0)
    i = jnp.argmax(cross).astype(jnp.int32)
    ci, cj = c[i], c[i + 1]
    t = jnp.clip(ci / jnp.where(ci - cj != 0, ci - cj, 1), 0, 1)
    left, right = c[0] >= 0, c[-1] <= 0
    i = jnp.where(left, 0, jnp.where(right, m - 1, i))
    t = jnp.where(left, 0.0, jnp.where(right, 1.0, t)).astype(c.dtype)
    return (i.astype(c.dtype) + t) / m, i, t


class KakadeFoster(AbstractOracle):
    r"""Kakade–Foster fixed point on the grid $\{0, 1/m, \dots, 1\}$ (Marx et al. 2024, App. C.2.1).

    Deterministic: forecast $f$ = :func:`tent_root` of $c$, payoff
    :class:`~jcalib.payoffs.BinaryCalibration`: $\langle c, \pi\rangle = g(f)(f - y) \le 0$ for
    every $y \in [0,1]$ (exactly 0 in the interior). Quasi-deterministic: play vertex $i/m$ with
    probability $1 - t$ and $(i+1)/m$ with $t$, payoff :class:`MixedBinaryCalibration`:
    $\langle c, \pi\rangle = \sum_v w_v c_v (v - f) \le \|c\|_2/m$ (Lemma C.6's $\epsilon$).
    Outcomes may be binary or in $[0,1]$ (mean calibration).

    ``sum_payoff`` generalises the deterministic oracle to any payoff of the form
    $\pi(f, y) = a(f)(f - y)$ with $a$ piecewise linear between the grid points $i/m$ — e.g. a
    :class:`~jcalib.payoffs.DirectSum` of :class:`BinaryCalibration` blocks whose grids divide
    $m$ (Prop. 4.4): $g_i = \langle c, a(i/m)\rangle$ with $a(f) = \pi(f, f - 1)$, then
    :func:`tent_root` of $g$.

    Attributes:
        n_bins: $m$ (static).
        quasi: quasi-deterministic (randomised over two neighbouring vertices) (static).
        sum_payoff: optional payoff of the form above (deterministic oracle only).
    """

    n_bins: int = size_field("n_bins", what="its per-grid-point coordinates", hi=MAX_GRID, why=GRID_WHY)
    quasi: bool = eqx.field(static=True, default=False)
    sum_payoff: AbstractPayoff | None = None

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")
        if self.quasi and self.sum_payoff is not None:
            raise ValueError("sum_payoff needs the deterministic oracle (quasi=False)")

    @property
    def payoff(self):
        if self.sum_payoff is not None:
            return self.sum_payoff
        return MixedBinaryCalibration(self.n_bins) if self.quasi else BinaryCalibration(self.n_bins)

    def _slope(self, x, f):
        f = jnp.asarray(f)
        return self.payoff(x, f, f - 1)  # a(f) (f - (f - 1)) = a(f)

    def __call__(self, c, x, key):
        c = jnp.asarray(c)
        if self.sum_payoff is not None:
            grid = jnp.arange(self.n_bins + 1, dtype=c.dtype) / self.n_bins
            g_grid = jax.vmap(lambda f: jnp.dot(self._slope(x, f), c))(grid)
            f, _, _ = _tent_root(g_grid)
        else:
            f, i, t = _tent_root(c)
        if not self.quasi:
            g = jnp.dot(self._slope(x, f), c)
            cert = jnp.maximum(g * f, g * (f - 1))  # max over y in {0, 1} of g (f - y): linear in y
            return Forecast(f, f, cert)
        m = self.n_bins
        support = jnp.stack([i, i + 1]).astype(c.dtype) / m
        probs = jnp.stack([1 - t, t])
        mix = Mixture(support, probs)
        a = self.payoff(x, mix, jnp.zeros((), c.dtype))  # q(v) v
        b = self.payoff(x, mix, jnp.ones((), c.dtype))
        cert = jnp.maximum(jnp.dot(c, a), jnp.dot(c, b))
        value = jnp.where(jax.random.bernoulli(key, t), support[1], support[0])
        return Forecast(value, mix, cert)


def _distribution(q, name, bound):
    q = RealArray(ndim=1, lo=0.0, hi=1.0, length_of="c").check(q, name, bound)
    off = jnp.abs(jnp.sum(q) - 1) > 1e-4  # float32 round-off of a solver's distribution
    if is_concrete(q) and bool(off):
        raise ValueError(f"{name} must sum to 1 (a distribution over the actions), got a sum of {float(jnp.sum(q)):.6g}")
    return in_graph(q, off, f"{name} must sum to 1 (a distribution over the actions)")


@declare(c=RealArray(ndim=1), q=Custom(_distribution, "a distribution over the actions"),
         beta=Real(0.0, 1.0, open_lo=True, open_hi=True))
def conformal_certificate(c, q, beta):
    r"""$\max_y \langle c, \pi(q, y)\rangle$ for :class:`ConformalPayoff`: exact, over every exceedance pattern.

    $e(a_i) = \mathbb 1\{i \ge j\}$ for a threshold $j \in \{1, \dots, M\}$ ($e(a_0) = 0$,
    $e(a_M) = 1$): the value is $\max_j \sum_{i\ge j} c_i q_i - \beta \sum_i c_i q_i$.

    Raises:
        ValueError: ``c`` not finite and 1-D, ``q`` not in [0, 1] or of another length, or
            ``beta`` outside (0, 1) (values in the graph when traced).
    """
    s = jnp.asarray(c) * jnp.asarray(q)
    suffix = jnp.cumsum(s[::-1])[::-1]  # suffix[j] = sum_{i >= j} s_i
    return jnp.max(suffix[1:]) - jnp.asarray(beta, s.dtype) * jnp.sum(s)


def _conformal_matrix(c, beta):
    m1 = c.shape[0]
    i = jnp.arange(m1)
    j = jnp.arange(1, m1)
    return c[None, :] * ((i[None, :] >= j[:, None]).astype(c.dtype) - jnp.asarray(beta, c.dtype))  # (M, M+1)


@declare(A=RealArray(ndim=2), n_steps=Int(1, 2**20, what="mirror-prox steps"))
def game_value_mirror_prox(A: Float[Array, "r n"], n_steps: int):
    r"""Approximate $\arg\min_{p\in\Delta_n}\max_{q\in\Delta_r} q^\top A p$ by entropic mirror-prox.

    ``n_steps`` extragradient steps with step $1/\max|A|$; returns the average of the
    intermediate $p$'s, whose duality gap is $O(\max|A|\,\log(rn)/n_{steps})$ (Nemirovski 2004).
    A fixed step count (no tolerance loop) so it vmaps.

    Raises:
        ValueError: ``A`` not a finite non-empty matrix, or ``n_steps`` not in [1, 2**20].
    """
    A = jnp.asarray(A)
    scale = jnp.maximum(jnp.max(jnp.abs(A)), jnp.finfo(A.dtype).tiny)
    eta = 1.0 / scale
    r, n = A.shape
    lp0 = jnp.full((n,), -jnp.log(n), A.dtype)
    lq0 = jnp.full((r,), -jnp.log(r), A.dtype)

    def step(carry, _):
        lp, lq, acc = carry
        p, q = jnp.exp(lp), jnp.exp(lq)
        lph = jax.nn.log_softmax(lp - eta * (A.T @ q))
        lqh = jax.nn.log_softmax(lq + eta * (A @ p))
        ph, qh = jnp.exp(lph), jnp.exp(lqh)
        lp = jax.nn.log_softmax(lp - eta * (A.T @ qh))
        lq = jax.nn.log_softmax(lq + eta * (A @ ph))
        return (lp, lq, acc + ph), None

    (_, _, acc), _ = jax.lax.scan(step, (lp0, lq0, jnp.zeros((n,), A.dtype)), None, length=n_steps)
    return acc / jnp.sum(acc)


class ConformalOracle(AbstractOracle):
    r"""Adaptive conformal inference as approachability (Marx et al. 2024, App. C.1.1), rule corrected.

    Actions $a_i = i/M$; payoff :class:`ConformalPayoff`. **The paper's randomised rule is
    wrong as written**: it mixes any sign-changing neighbours $a_i, a_{i+1}$ with weights
    $\propto |c|^{-1}$, but for a negative-to-positive bracket
    $\langle c, \pi\rangle = k(e_{i+1} - e_i) \ge 0$ (e.g. $c = (-1, -.5, -.2, .3, .7, 1)$,
    $\beta = .3$: the rule scores 0.12, while the best mixed strategy, an LP, scores 0.06 > 0:
    no exact half-space forecast exists). Corrected rule (jcalib's), in order:

    1. $c_0 \ge 0$: play $a_0$ ($\langle c,\pi\rangle = -\beta c_0 \le 0$);
    2. $c_M \le 0$: play $a_M$ ($(1-\beta)c_M \le 0$);
    3. some $c_a = 0$: play it (0);
    4. a positive-to-negative bracket $c_i > 0 > c_{i+1}$: mix with weights $\propto |c|^{-1}$
       ($k(e_i - e_{i+1}) \le 0$ since $e$ is non-decreasing in $a$);
    5. otherwise (signs $-\cdots-+\cdots+$): the matrix game
       $\min_q \max_j \sum_a c_a q_a(\mathbb 1\{a \ge j\} - \beta)$ by
       :func:`game_value_mirror_prox` (``lp_steps`` steps), keeping the better of it and the best
       pure action. The certificate is the LP value (checked against
       ``scipy.optimize.linprog`` in the tests). Lemma C.1's ball of radius $\epsilon > 1/M$ would
       bound it by $\epsilon\|c\|_2$; that is not true in general: at $c = (-a,-a,-a,b,\dots,b)$
       ($a = .0727$, $b = .0312$, $M = 8$, $\beta = .3$), reached by an adversary, the LP value
       is $0.148\|c\|_2 > \|c\|_2/8$. Algorithm 1 with this oracle then keeps
       $\|\bar\pi_T\| \le \epsilon + \sqrt{B/T}$ with $\epsilon$ the largest ratio reached.

    ``rule="paper"`` plays the paper's rule (any sign change, first found) for comparison.
    Forecast: ``public = Mixture(levels, q)`` (all $M+1$ levels), ``value`` = the drawn level.

    Attributes:
        beta: target level (float).
        n_actions: $M$ (static).
        rule: ``"corrected"`` or ``"paper"`` (static).
        lp_steps: mirror-prox steps of case 5 (static).
    """

    beta: float
    n_actions: int = size_field("n_actions", lambda n: n * n, what="its n_actions x n_actions game")
    rule: str = eqx.field(static=True, default="corrected")
    lp_steps: int = eqx.field(static=True, default=500, converter=Int(1, 2**20, what="solver steps per round").converter("lp_steps"))

    def __check_init__(self):
        check_positive_int(self.n_actions, "n_actions")
        check_positive_int(self.lp_steps, "lp_steps")
        check_hyper(self.beta, "beta", 0.0, 1.0, open_lo=True, open_hi=True)
        if self.rule not in ("corrected", "paper"):
            raise ValueError(f"rule must be 'corrected' or 'paper', got {self.rule!r}")

    @property
    def payoff(self):
        return ConformalPayoff(self.beta, self.n_actions)

    def mixed_strategy(self, c):
        c = jnp.asarray(c)
        m1 = c.shape[0]
        beta = jnp.asarray(self.beta, c.dtype)
        eye = jnp.eye(m1, dtype=c.dtype)
        inv = 1.0 / jnp.where(c != 0, jnp.abs(c), 1)

        def bracket(mask):
            i = jnp.argmax(mask)
            w = jnp.zeros(m1, c.dtype).at[i].set(inv[i]).at[i + 1].set(inv[i + 1])
            return w / jnp.sum(w)

        sign_change = (c[:-1] > 0) & (c[1:] < 0) | (c[:-1] < 0) & (c[1:] > 0)
        if self.rule == "paper":
            # App. C.1.1 as written: a_0 if all c >= 0, a_M if all c <= 0, else any sign change.
            return jnp.where(
                jnp.all(c >= 0), eye[0], jnp.where(jnp.all(c <= 0), eye[-1], bracket(sign_change))
            )
        pos_neg = (c[:-1] > 0) & (c[1:] < 0)
        zero = c == 0
        A = _conformal_matrix(c, beta)
        q_lp = _game_value_mirror_prox(A, self.lp_steps)
        pure_vals = jnp.max(A, axis=0)  # certificate of each pure action
        best_pure = eye[jnp.argmin(pure_vals)]
        q_fallback = jnp.where(
            _conformal_certificate(c, q_lp, beta) <= jnp.min(pure_vals), q_lp, best_pure
        )
        return jnp.where(
            c[0] >= 0,
            eye[0],
            jnp.where(
                c[-1] <= 0,
                eye[-1],
                jnp.where(
                    jnp.any(zero),
                    eye[jnp.argmax(zero)],
                    jnp.where(jnp.any(pos_neg), bracket(pos_neg), q_fallback),
                ),
            ),
        )

    def __call__(self, c, x, key):
        c = jnp.asarray(c)
        q = self.mixed_strategy(c)
        levels = jnp.arange(self.n_actions + 1, dtype=c.dtype) / self.n_actions
        mix = Mixture(levels, q)
        cert = _conformal_certificate(c, q, self.beta)
        return Forecast(mix.sample(key=key), mix, cert)


class SmoothConformalOracle(AbstractOracle):
    r"""Deterministic adaptive conformal inference with smoothed indicators (App. C.1.1, Lemma C.2).

    $\alpha$ = :func:`tent_root` of $c$; payoff :class:`SmoothConformalPayoff`:
    $\langle c, \pi\rangle = g(\alpha)(e(\alpha, y) - \beta)$ is 0 at an interior root,
    $-\beta g(0) \le 0$ at $\alpha = 0$ and $(1-\beta) g(1) \le 0$ at $\alpha = 1$.

    Attributes:
        beta: target level (float).
        n_actions: $M$ (static).
    """

    beta: float
    n_actions: int = size_field("n_actions", lambda n: n, what="its actions")

    def __check_init__(self):
        check_positive_int(self.n_actions, "n_actions")
        check_hyper(self.beta, "beta", 0.0, 1.0, open_lo=True, open_hi=True)

    @property
    def payoff(self):
        return SmoothConformalPayoff(self.beta, self.n_actions)

    def __call__(self, c, x, key):
        c = jnp.asarray(c)
        alpha, _, _ = _tent_root(c)
        g = jnp.dot(_tent_weights(alpha, self.n_actions), c)
        beta = jnp.asarray(self.beta, c.dtype)
        # e(α, y) ranges over {0, 1} for α in (0, 1) (any y), is 0 at α = 0 and 1 at α = 1
        e_lo = jnp.where(alpha >= 1, 1.0, 0.0)
        e_hi = jnp.where(alpha <= 0, 0.0, 1.0)
        cert = jnp.maximum(g * (e_lo - beta), g * (e_hi - beta))
        return Forecast(alpha, alpha, cert)


def _z_max(gx, gy, const):
    """$\\max_{y\\in[0,1]} const - g_x y - g_y y^2$ (endpoints and the vertex)."""
    yv = jnp.clip(-gx / jnp.where(gy != 0, 2 * gy, 1), 0, 1)
    ys = jnp.stack([jnp.zeros_like(gx), jnp.ones_like(gx), jnp.where(gy != 0, yv, 0.0)], -1)
    return jnp.max(const[..., None] - gx[..., None] * ys - gy[..., None] * ys * ys, -1)


class MomentOracle(AbstractOracle):
    r"""Moment calibration on a grid of $(\mu, \sigma)$, $\sigma = \mathbb E[y^2]$ (Marx et al. 2024, App. C.2.2).

    With $g(f) = \sum_v w_v(f) c_v$ (Freudenthal weights, piecewise affine), the forecast is a
    solution of the variational inequality $\langle g(f), f - z\rangle \le 0$ for all
    $z \in K = [0,1]^2$, i.e. the fixed point $f = \Pi_K(f - g(f))$ (Kakade–Foster's $\rho$
    with the sign of $\pi = f - z$). Found by enumeration of candidates — each triangle's zero
    of $g$, each boundary edge's point where $g$ is normal to the edge, each corner — keeping the
    one whose exact certificate is smallest (the edge cases in the proof of the paper's Lemma C.7
    are the edge and corner candidates). Work $O(M^2)$.

    Deterministic (``quasi=False``): payoff :class:`MomentGridCalibration`, certificate
    $\max_y \langle g(f), f - (y, y^2)\rangle \le 0$. Randomised (``quasi=True``): play the
    triangle's vertices with the barycentric weights, payoff :class:`MixedMomentCalibration`,
    certificate $\le \sum_v w_v \langle c_v, v - f\rangle \le \sqrt2\,\max_v\|c_v\|/M$.

    Attributes:
        n_ticks: $M$ (static).
        quasi: randomise over the triangle's vertices (static).
    """

    n_ticks: int = size_field("n_ticks", lambda n: n + 1, what="its grid of moments", hi=MAX_GRID, why=GRID_WHY)
    quasi: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        check_positive_int(self.n_ticks, "n_ticks")

    @property
    def payoff(self):
        return MixedMomentCalibration(self.n_ticks) if self.quasi else MomentGridCalibration(self.n_ticks)

    def candidates(self, c):
        """All candidate (vertex indices (k, 3), weights (k, 3)) of the enumeration."""
        m = self.n_ticks
        c = jnp.asarray(c).reshape((m + 1) ** 2, 2)
        dt = c.dtype
        ii, jj = jnp.meshgrid(jnp.arange(m), jnp.arange(m), indexing="ij")
        ii, jj = ii.reshape(-1), jj.reshape(-1)
        v00 = ii * (m + 1) + jj
        v10, v01, v11 = v00 + (m + 1), v00 + 1, v00 + m + 2
        tris = jnp.concatenate([jnp.stack([v00, v10, v11], -1), jnp.stack([v00, v01, v11], -1)])

        def tri_weights(idx):
            cc = c[idx]  # (3, 2)
            M3 = jnp.concatenate([cc.T, jnp.ones((1, 3), dt)])
            det = jnp.linalg.det(M3)
            ok = jnp.abs(det) > 1e-12 * (1 + jnp.max(jnp.abs(cc)) ** 2)
            lam = jnp.linalg.solve(jnp.where(ok, M3, jnp.eye(3, dtype=dt)), jnp.array([0.0, 0.0, 1.0], dt))
            lam = jnp.where(ok & jnp.all(jnp.isfinite(lam)), lam, jnp.full(3, 1 / 3, dt))
            lam = jnp.clip(lam, 0, None)
            tot = jnp.sum(lam)
            return jnp.where(tot > 0, lam / jnp.where(tot > 0, tot, 1), jnp.full(3, 1 / 3, dt))

        tri_w = jax.vmap(tri_weights)(tris)
        k = jnp.arange(m)
        sides = [  # (start vertex, step between vertices, tangential axis)
            (k * (m + 1), m + 1, 0),  # σ = 0 (bottom), moving in μ
            (k * (m + 1) + m, m + 1, 0),  # σ = 1
            (k, 1, 1),  # μ = 0, moving in σ
            (m * (m + 1) + k, 1, 1),  # μ = 1
        ]
        e_idx, e_w = [], []
        for start, stride, ax in sides:
            a, b = c[start, ax], c[start + stride, ax]
            t = jnp.clip(a / jnp.where(a != b, a - b, 1), 0, 1)
            e_idx.append(jnp.stack([start, start + stride, start + stride], -1))
            e_w.append(jnp.stack([1 - t, t, jnp.zeros_like(t)], -1))
        corners = jnp.array([0, m, m * (m + 1), (m + 1) ** 2 - 1])
        c_idx = jnp.stack([corners] * 3, -1)
        c_w = jnp.tile(jnp.array([1.0, 0.0, 0.0], dt), (4, 1))
        idx = jnp.concatenate([tris, *e_idx, c_idx]).astype(jnp.int32)
        w = jnp.concatenate([tri_w, *e_w, c_w])
        return idx, w

    def _certs(self, c, idx, w):
        m = self.n_ticks
        c = jnp.asarray(c).reshape((m + 1) ** 2, 2)
        V = moment_vertices(m, c.dtype)
        f = jnp.einsum("kj,kjd->kd", w, V[idx])
        g = jnp.einsum("kj,kjd->kd", w, c[idx])
        if self.quasi:
            const = jnp.einsum("kj,kjd,kjd->k", w, c[idx], V[idx])
        else:
            const = jnp.sum(g * f, -1)
        return f, _z_max(g[:, 0], g[:, 1], const)

    def __call__(self, c, x, key):
        c = jnp.asarray(c)
        idx, w = self.candidates(c)
        f, certs = self._certs(c, idx, w)
        best = jnp.argmin(jnp.where(jnp.isfinite(certs), certs, jnp.inf))
        fb = f[best]
        if not self.quasi:
            # recompute from the payoff's own (Freudenthal) weights at f: the published number
            # is max_y <c, π(f, y)> for the forecast actually played
            wts = self.payoff.weights(fb)
            g = jnp.einsum("v,vd->d", wts, c.reshape(-1, 2))
            cert = _z_max(g[0], g[1], jnp.dot(g, fb))
            return Forecast(fb, fb, cert)
        V = moment_vertices(self.n_ticks, c.dtype)
        mix = Mixture(V[idx[best]], w[best])
        return Forecast(mix.sample(key=key), mix, certs[best])


class QuantileStepOracle(AbstractOracle):
    r"""Quantile calibration with step quantile functions (Marx et al. 2024, App. C.1.2), on a grid of levels.

    Payoff (C.1.2): $\pi_a(Q, y) = \mathbb 1\{y \le Q(a)\} - a$ over levels $a_j = j/(m+1)$,
    for a quantile function $Q$ taking values in $\{y_{min}, y_{max}\}$ (the oracle's outputs are
    step functions: "not practical", after Lemma C.3). The paper's case list is not
    self-consistent; the rule implemented is the one its proof needs: with $Q(a) = y_{max}$ the
    coordinate $1 - a \ge 0$ for every $y$, with $Q(a) = y_{min}$ it is $\mathbb 1\{y \le y_{min}\} - a$
    ($= -a$ for $y > y_{min}$). So set $Q(a) = y_{max}$ exactly where $c_a \le 0$ and
    $y_{min}$ where $c_a > 0$: every term $c_a \pi_a \le 0$ for every outcome
    $y \in (y_{min}, y_{max}]$ (the outcome space of C.1.2, whose proof treats
    $\mathbb 1\{y \le y_{min}\}$ as 0).

    At $y = y_{min}$ itself every indicator is 1 whatever $Q$ is, so the payoff there is
    $\sum_a c_a (1 - a)$, which no step function can make non-positive when it is positive
    (outcomes at the lower end are common: zero wind hours, say). Only two indicator patterns
    occur over $y \in [y_{min}, y_{max}]$, so the certificate is the exact maximum of the two:
    $\max\big(\sum_a c_a(\mathbb 1\{Q(a) = y_{max}\} - a),\ \sum_a c_a(1 - a)\big)$,
    which is $\le 0$ whenever $\sum_a c_a(1 - a) \le 0$ and positive (honestly) otherwise.
    The forecast is the vector $(Q(a_j))_j$.

    Attributes:
        n_levels: $m$ (static).
        y_min, y_max: outcome range (floats).
    """

    n_levels: int = size_field("n_levels", lambda n: n, what="its quantile levels", hi=MAX_GRID)
    y_min: float = 0.0
    y_max: float = 1.0

    def __check_init__(self):
        check_positive_int(self.n_levels, "n_levels")
        check_hyper(self.y_min, "y_min")
        check_hyper(self.y_max, "y_max")
        if is_concrete(self.y_min) and is_concrete(self.y_max) and not float(self.y_min) < float(self.y_max):
            raise ValueError(f"need y_min < y_max, got y_min={self.y_min!r}, y_max={self.y_max!r}")

    @property
    def payoff(self):
        from .interval import QuantileStepPayoff

        return QuantileStepPayoff(self.n_levels)

    def __call__(self, c, x, key):
        c = jnp.asarray(c)
        lo, hi = jnp.asarray(self.y_min, c.dtype), jnp.asarray(self.y_max, c.dtype)
        Q = jnp.where(c <= 0, hi, lo)
        a = jnp.arange(1, self.n_levels + 1, dtype=c.dtype) / (self.n_levels + 1)
        # for y in (y_min, y_max] the indicators are 1 exactly where Q = y_max; at y = y_min
        # they are all 1: the exact maximum over y is the larger of the two patterns
        cert = jnp.maximum(jnp.dot(c, (Q >= hi).astype(c.dtype) - a), jnp.dot(c, 1 - a))
        return Forecast(Q, Q, cert)


# the kernels as the oracles call them, inside their rounds: on directions and games built from
# checked state, without the declared checks
_tent_root = tent_root.__wrapped__
_conformal_certificate = conformal_certificate.__wrapped__
_game_value_mirror_prox = game_value_mirror_prox.__wrapped__

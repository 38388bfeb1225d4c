r"""Online recalibration by Blackwell approachability (Okoroafor, Kleinberg, Sun 2024, Algorithm 1).

Okoroafor, Kleinberg, Sun (2024), *Faster Recalibration of an Online Predictor via
Approachability*, AISTATS; "paper §…", equation, lemma and theorem numbers below are theirs.

Each round a model (the "oracle") announces $q_t \in [0, 1]$ — the forecaster's context ``x``;
the forecaster publishes a mixed strategy $w_t$ over the grid $B_m = \{0, 1/m, \dots, 1\}$,
draws $p_t \sim w_t$, then sees $y_t$. It must be calibrated on every sequence *and* lose
little under a proper scoring rule $s$ against the model.

**Game** (paper §3.1, eqs 8–12). Vector payoff in $\mathbb R^{m+2}$:

$$u_i(p_j, y) = \mathbb 1[j = i]\,(y - p_i),\ i = 0..m, \qquad
u_{\mathrm{reg}}(p_j, y) = \frac{s(p_j, y) - s(q_t, y)}{L},$$

the regret coordinate **divided by** the rule's Lipschitz constant $L$ (paper §3.3, eqs 23–24). The
average payoff's calibration part is the grid-bucketed (ε, ℓ1) calibration vector and its last
coordinate the average regret over $L$.

**Halfspace oracle** (paper §3.3 and §5.2, eqs 21–22, 29–31). For a normal
$(\theta, \lambda)$, with $f(j)$ the payoff $\langle(\theta,\lambda), u(p_j, 0)\rangle$ and $g(j)$
the payoff for $y = 1$,

$$f(j) = -\theta_j p_j + \lambda\frac{s(p_j,0) - s(q,0)}{L},\quad
g(j) = \theta_j (1-p_j) + \lambda\frac{s(p_j,1) - s(q,1)}{L},\quad h = g - f:$$

play $0$ (or $1$) if $(f, g)$ there is in the third quadrant; otherwise bisect for $i$ with
$h(i) > 0 \ge h(i+1)$ — stopping early at a probed $j$ in the third quadrant — and play $p_i$
with probability $h(i+1)/(h(i+1) - h(i))$, else $p_{i+1}$: the mixed payoff is then the same
for both outcomes. Worst payoff $\le (\varepsilon/2)\|\theta\|_\infty + \lambda\varepsilon^2/4$
(Brier) and $\le (\varepsilon/2)(\|\theta\|_\infty + \lambda)$ for any rule, $\varepsilon = 1/m$
(Lemma 8); $(f, g)$ is evaluated at most at $2 + \lceil\log_2 m\rceil$ distinct grid points
(Theorem 9 allows $4 + \lceil\log_2 m\rceil$ evaluations; the final bracket's two ends are
computed a second time for the weight rather than carried through the search). The oracle is
:class:`ApproachabilityOracle`, a half-space oracle of :mod:`jcalib.payoffs`' shape
(``oracle(c, x, key) -> Forecast`` with $c = (\theta, \lambda)$, $x = q$ and the certificate
$\max_y \langle c, u\rangle$), for the game's payoff :class:`ApproachabilityPayoff`.

**Learning** (paper §3.3, eqs 16–24, §5.3; Abernethy–Bartlett–Hazan 2011). Online gradient
ascent (Zinkevich) on the normals, on the *expected* payoff of the published mixture:

$$(\theta, \lambda)_{t+1} = \Pi_K\big((\theta, \lambda)_t + \eta\, u(w_t, y_t)\big),\qquad
K = \{\|\theta\|_* \le 1\} \times [0, \Lambda],$$

with the ℓ∞ box for ℓ1 calibration (the projection is a clip of the two touched coordinates:
O(1) per round) and the ℓ2 ball for the ℓ2 variant (a rescaling of the whole $\theta$: O(m) per
round, a vector multiply, no search). $\eta = D/(G\sqrt T)$ with $D^2 = 4(m+1) + \Lambda^2$
(ℓ∞) or $4 + \Lambda^2$ (ℓ2) and $G = \sqrt 2$. **Follow-the-oracle** (paper §5.4, the remark
closing the proof of Lemma 10): while the running calibration error is already below ε, play
the grid point nearest $q_t$.

**Rates** (the exponents are the paper's, §1.3 and Theorems 12–13; the constants and the
settings of $\varepsilon$ and $\Lambda$ are jcalib's derivation, checked by the tests):
calibration $\le (\varepsilon/2)(1 + \Lambda) + O(\sqrt{(1/\varepsilon + \Lambda^2)/T})$ and
regret$/L$ $\le$ the same over $\Lambda$; $\varepsilon = T^{-\beta}$,
$\Lambda = T^{(3\beta-1)/2}$ (:func:`tradeoff_parameters`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._dtypes import float_dtype
from .._grid import GRID_WHY, MAX_GRID, grid_index, grid_points, size_field
from ..core.keys import check_horizon
from .._validation import HORIZON, Real, check_hyper, check_positive_int, declare, stage_check
from ..core.types import AbstractForecaster, Forecast, Mixture
from ..payoffs.base import AbstractPayoff
from ..payoffs.oracles import AbstractOracle
from ..scoring import AbstractScoringRule, Brier

__all__ = [
    "ApproachabilityOracle",
    "ApproachabilityPayoff",
    "ApproachabilityRecalibrator",
    "ApproachabilityState",
    "tradeoff_parameters",
]


@declare(T=HORIZON, beta=Real(1 / 3 - 1e-12, 0.5 + 1e-12, static=True))  # (the ends up to round-off)
def tradeoff_parameters(T: int, beta: float) -> tuple[float, float]:
    r"""The trade-off settings $\varepsilon = T^{-\beta}$, $\Lambda = T^{(3\beta - 1)/2}$ (jcalib's choice).

    The paper (§1.3, Theorem 12) states the trade-off this interpolates; the settings that
    realise it are jcalib's derivation, checked by the tests. They give regret $O(T^{-\beta})$
    and calibration $O(T^{-(1-\beta)/2})$: from $(1/3, 1/3)$ at $\beta = 1/3$ ($\Lambda = 1$)
    to $(1/4, 1/2)$ at $\beta = 1/2$ in (calibration exponent, regret exponent).

    Args:
        T: horizon (positive int).
        beta: in $[1/3, 1/2]$.

    Returns:
        ``(eps, Lambda)`` as Python floats.

    Example:
        >>> eps, lam = tradeoff_parameters(1_000_000, 0.5)
        >>> round(eps, 6), round(lam, 3)
        (0.001, 31.623)
    """
    b = beta
    return T ** (-b), T ** ((3 * b - 1) / 2)


def _point_mass(j, n_bins: int):
    """``(index, prob)`` of the point mass on grid point ``j`` in the two-point representation."""
    j = jnp.asarray(j, jnp.int32)
    i = jnp.minimum(j, n_bins - 1)
    return i, jnp.where(j <= n_bins - 1, 1.0, 0.0).astype(float_dtype())


def _mixture(i, w, n_bins: int) -> Mixture:
    support = grid_points(n_bins)[jnp.stack([i, i + 1])]
    return Mixture(support=support, probs=jnp.stack([w, 1.0 - w]))


def _check_game(n_bins, scoring):
    check_positive_int(n_bins, "n_bins")
    if not isinstance(scoring, AbstractScoringRule):
        raise ValueError(f"scoring must be a rule from jcalib.scoring, got {type(scoring).__name__}")


class ApproachabilityPayoff(AbstractPayoff):
    r"""The recalibration game's vector payoff $u \in \mathbb R^{m+2}$ (paper §3.1, eqs 8–12; §3.3, eqs 23–24).

    ``payoff(x, forecast, y)`` with ``x`` the model's forecast $q$, ``forecast`` the forecaster's
    strategy (a :class:`~jcalib.core.Mixture` over grid points, or one grid point) and
    $y \in \{0, 1\}$:

    $$u_i = w(p_i)\,(y - p_i),\ i = 0..m, \qquad u_{\mathrm{reg}} = \frac{\sum_i w(p_i)\,s(p_i, y) - s(q, y)}{L},$$

    $w$ the strategy's mass on grid point $p_i = i/m$ and $L$ the rule's Lipschitz constant.
    The regret coordinate is semi-consistent (:attr:`semi`; a proper rule makes its
    expectation under $y \sim p$ non-positive). $B = 2$: $\sum_i w_i^2 (y - p_i)^2 \le 1$ and
    $|u_{\mathrm{reg}}| \le 1$.

    Attributes:
        n_bins: $m$ (static; $m + 1$ grid points).
        scoring: the proper scoring rule (default Brier).

    Example:
        >>> import jax.numpy as jnp
        >>> u = ApproachabilityPayoff(4)
        >>> tuple(round(float(v), 3) for v in u(jnp.asarray(0.3), jnp.asarray(0.5), 1))
        (0.0, 0.0, 0.5, 0.0, 0.0, -0.12)
    """

    n_bins: int = size_field("n_bins", what="its per-grid-point state", hi=MAX_GRID, why=GRID_WHY)
    scoring: AbstractScoringRule = eqx.field(default_factory=Brier)

    def __check_init__(self):
        _check_game(self.n_bins, self.scoring)

    @property
    def dim(self) -> int:
        return self.n_bins + 2

    @property
    def semi(self) -> np.ndarray:
        return np.arange(self.dim) == self.dim - 1

    def grid_probs(self, forecast) -> Float[Array, " m+1"]:
        """The strategy's mass on each grid point, ``(m + 1,)``."""
        if isinstance(forecast, Mixture):
            idx = grid_index(forecast.support, self.n_bins)
            return jnp.zeros(self.n_bins + 1, forecast.probs.dtype).at[idx].add(forecast.probs)
        forecast = jnp.asarray(forecast)
        return jax.nn.one_hot(grid_index(forecast, self.n_bins), self.n_bins + 1, dtype=forecast.dtype)

    def __call__(self, x, forecast, y):
        w = self.grid_probs(forecast)
        fdt = w.dtype
        grid = grid_points(self.n_bins).astype(fdt)
        yi = jnp.asarray(y).astype(jnp.int32)
        L = jnp.asarray(self.scoring.lipschitz, fdt)
        q = jnp.asarray(x).astype(fdt)
        reg = (jnp.dot(w, self.scoring(grid, yi).astype(fdt)) - self.scoring(q, yi).astype(fdt)) / L
        return jnp.concatenate([w * (yi.astype(fdt) - grid), reg[None]])

    def bound(self) -> float:
        return 2.0


class ApproachabilityOracle(AbstractOracle):
    r"""Okoroafor et al.'s (2024) halfspace oracle (§5.2, eqs 29–31) as a half-space oracle: a mixed strategy on two adjacent grid points.

    ``oracle(c, x, key)``: the direction is $c = (\theta, \lambda)$, ``(m + 2,)`` (the
    calibration normal and the regret weight $\lambda \ge 0$), the context ``x`` the model's
    forecast $q \in [0, 1]$. Returns a :class:`~jcalib.core.Forecast` whose ``public`` is
    ``Mixture((p_i, p_{i+1}), (w, 1 - w))``, whose ``value`` is a draw from it, and whose
    ``certificate`` is $\max_{y\in\{0,1\}} \langle c, u(w, y)\rangle$ (:attr:`payoff` $= u$), at
    most $(\varepsilon/2)\|\theta\|_\infty + \lambda\varepsilon^2/4$ (Brier;
    $(\varepsilon/2)(\|\theta\|_\infty + \lambda)$ for any $L$-Lipschitz proper rule),
    $\varepsilon = 1/m$ (Lemma 8). The search is a bisection of fixed length
    $\lceil\log_2 m\rceil$ (a ``fori_loop``; rounds that stop early are masked, so a vmapped
    batch never waits) — never a scan over the grid — that evaluates $(f, g)$ at most at
    $2 + \lceil\log_2 m\rceil$ distinct grid points (Theorem 9 allows :attr:`max_evals`). See
    the module docstring for $f, g, h$.

    Attributes:
        n_bins: $m$ (static).
        scoring: the proper scoring rule (its ``lipschitz`` divides the regret coordinate).

    Example:
        >>> import jax, jax.numpy as jnp
        >>> oracle = ApproachabilityOracle(10)
        >>> fc = oracle(jnp.append(jnp.zeros(11), 1.0), 0.33, jax.random.key(0))
        >>> [round(float(v), 2) for v in fc.public.support], bool(fc.certificate <= 1 / 400)
        ([0.3, 0.4], True)
    """

    n_bins: int = size_field("n_bins", what="its per-grid-point state", hi=MAX_GRID, why=GRID_WHY)
    scoring: AbstractScoringRule = eqx.field(default_factory=Brier)

    def __check_init__(self):
        _check_game(self.n_bins, self.scoring)

    @property
    def payoff(self) -> ApproachabilityPayoff:
        return ApproachabilityPayoff(self.n_bins, self.scoring)

    @property
    def max_evals(self) -> int:
        """Theorem 9's budget of $(f, g)$ evaluations per round: $4 + \\lceil \\log_2 m \\rceil$."""
        return 4 + max(self.n_bins - 1, 0).bit_length()

    def __call__(self, c: Float[Array, " m+2"], x, key: PRNGKeyArray) -> Forecast:
        c = jnp.asarray(c)
        theta, lam = c[:-1], c[-1]
        q = check_context_prob(x)
        i, w, _ = _oracle(theta, lam, q, self.n_bins, self.scoring)
        mix = _mixture(i, w, self.n_bins)
        value = jnp.where(jax.random.bernoulli(key, w), mix.support[0], mix.support[1])
        return Forecast(value, mix, self._certificate(theta, lam, q, i, mix))

    def _certificate(self, theta, lam, q, i, mix):
        """$\\max_{y\\in\\{0,1\\}}\\langle(\\theta, \\lambda), u(w, y)\\rangle$ from the two touched coordinates (O(1))."""
        fdt = float_dtype()
        th = jax.lax.dynamic_slice_in_dim(jnp.asarray(theta).astype(fdt), i, 2)
        p, w = mix.support.astype(fdt), mix.probs.astype(fdt)
        lam_l = jnp.asarray(lam).astype(fdt) / jnp.asarray(self.scoring.lipschitz, fdt)

        def along(y):
            yi = jnp.asarray(y, jnp.int32)
            reg = jnp.sum(w * self.scoring(p, yi).astype(fdt)) - self.scoring(q, yi).astype(fdt)
            return jnp.sum(th * w * (yi.astype(fdt) - p)) + lam_l * reg

        return jnp.maximum(along(0), along(1))


def _bracket_codec(m: int):
    """``(pack, unpack)`` of the bisection's bracket ``(lo, hi)``: one int32 ``lo | hi << 16`` for
    $m < 2^{15}$, so that a probe updates one array — one XLA kernel per probe instead of one per
    carried value — and the pair itself for larger grids."""
    if m < 1 << 15:
        return (lambda lo, hi: lo | (hi << 16)), (lambda c: (c & 0xFFFF, c >> 16))
    return (lambda lo, hi: (lo, hi)), (lambda c: c)


def _oracle(theta, lam, q, m: int, scoring: AbstractScoringRule, preset=None):
    """The oracle's ``(index, prob, n_evals)``.

    ``preset = (mask, j)`` publishes the point mass on grid point ``j`` wherever ``mask`` holds,
    without a probe (the recalibrator's follow-the-oracle rule). A point mass — an end case, a
    preset, or a probe in the third quadrant — is the empty bracket ``lo = hi = j``, which later
    probes leave alone, so the loop carries the bracket only. The mixing weight needs $h$ at the
    final bracket's two ends: both were evaluated before (they are ends or probes), and their
    $h$ is recomputed after the loop instead of being carried through it, so ``n_evals`` (the
    distinct grid points evaluated) is unchanged.
    """
    fdt = float_dtype()
    theta = jnp.asarray(theta).astype(fdt)
    lam_l = jnp.asarray(lam).astype(fdt) / jnp.asarray(scoring.lipschitz, fdt)
    q = jnp.asarray(q).astype(fdt)
    zero, one = jnp.int32(0), jnp.int32(1)
    s0q, s1q = scoring(q, zero), scoring(q, one)
    grid = grid_points(m)

    def fg(j):
        p, th = grid[j], theta[j]
        f = -th * p + lam_l * (scoring(p, zero) - s0q)
        g = th * (1 - p) + lam_l * (scoring(p, one) - s1q)
        return f, g

    f0, g0 = fg(zero)
    fm, gm = fg(jnp.int32(m))
    third0 = (f0 <= 0) & (g0 <= 0)
    thirdm = (fm <= 0) & (gm <= 0)
    # The end cases: the third-quadrant tests at 0 and m (paper §3.3), then the two sign tests.
    # h(0) <= 0 and h(m) >= 0 cannot happen in exact arithmetic once the third-quadrant tests fail
    # (f(0) <= 0 and g(m) <= 0 always); they guard round-off.
    ends = third0 | thirdm | (g0 - f0 <= 0) | (gm - fm >= 0)
    take0 = third0 | (~thirdm & (g0 - f0 <= 0))
    point, j = ends, jnp.where(take0, zero, jnp.int32(m))
    if preset is not None:
        mask, j_preset = preset
        point, j = mask | ends, jnp.where(mask, jnp.asarray(j_preset, jnp.int32), j)
    pack, unpack = _bracket_codec(m)

    def body(_, c):
        bracket, n = c
        lo, hi = unpack(bracket)
        active = hi - lo > 1
        # lo + hi >= 0: a shift is the floor division without `//`'s sign fix-ups
        mid = jax.lax.shift_right_logical(lo + hi, jnp.int32(1))
        fmid, gmid = fg(mid)
        third = active & (fmid <= 0) & (gmid <= 0)  # early stop: the bracket closes on mid
        positive = gmid - fmid > 0  # h(mid) > 0: the sign change is right of mid
        lo = jnp.where(active & (third | positive), mid, lo)
        hi = jnp.where(active & (third | ~positive), mid, hi)
        return pack(lo, hi), n + active.astype(jnp.int32)

    n_iter = max(m - 1, 0).bit_length()  # ceil(log2 m)
    init = (pack(jnp.where(point, j, zero), jnp.where(point, j, jnp.int32(m))), jnp.int32(2))
    # A rolled loop (not unrolled like AOSA's bisection): its carry is materialised after every
    # probe. Unrolled, each probe's theta[mid] gather ended an XLA fusion and every later fusion
    # recomputed the whole chain of selects before it (see benchmarks/RESULTS.md). Vmapped
    # batches still never wait: the trip count is static.
    bracket, n = jax.lax.fori_loop(0, n_iter, body, init)
    lo, hi = unpack(bracket)
    # Mixing weight on p_lo: h(lo) > 0 >= h(hi) and hi = lo + 1 after the bisection.
    (flo, glo), (fhi, ghi) = fg(lo), fg(hi)
    hlo, hhi = glo - flo, ghi - fhi
    den = hlo - hhi
    w_mix = jnp.clip(jnp.where(den > 0, -hhi / jnp.where(den > 0, den, 1.0), 1.0), 0.0, 1.0)
    i, w_point = _point_mass(lo, m)  # the mixture's lower index is min(lo, m - 1) either way
    return i, jnp.where(lo == hi, w_point, w_mix).astype(fdt), n


class ApproachabilityState(NamedTuple):
    """The recalibrator's state (O(m) memory).

    Attributes:
        theta: calibration normal $\\theta$, ``(m + 1,)``, in the dual ball.
        lam: regret weight $\\lambda \\in [0, \\Lambda]$.
        cal: running sums of the expected calibration payoffs
            $U_i = \\sum_s w_s(p_i)(y_s - p_i)$, ``(m + 1,)`` (unnormalised).
        cal_norm: $\\|U\\|_1$ (ℓ1) or $\\|U\\|_2^2$ (ℓ2), kept incrementally (O(1) per round) for
            the follow-the-oracle rule.
        reg: $\\sum_s u_{\\mathrm{reg}}(w_s, y_s)$, the expected regret over $L$ (unnormalised).
        t: rounds played (int32).
    """

    theta: Float[Array, " m+1"]
    lam: Float[Array, ""]
    cal: Float[Array, " m+1"]
    cal_norm: Float[Array, ""]
    reg: Float[Array, ""]
    t: Int[Array, ""]


def check_context_prob(q, name: str = "q", guard=None):
    """``q`` as a float scalar, with a runtime error (``eqx.error_if``) if it is NaN or outside [0, 1].

    With ``guard`` (a pytree computed from ``q``), returns ``guard`` behind the same check instead.
    """
    q = jnp.asarray(q).astype(float_dtype())
    bad = jnp.isnan(q) | (q < 0) | (q > 1)
    msg = f"the model's forecast {name} must be a probability in [0, 1] (got NaN or a value outside)"
    return stage_check(q if guard is None else guard, bad, msg)


class ApproachabilityRecalibrator(AbstractForecaster):
    r"""Okoroafor–Kleinberg–Sun's (2024) approachability recalibrator (Algorithm 1; Theorems 9, 11).

    Context ``x`` = the model's forecast $q_t$. Each round: the halfspace oracle
    (:attr:`oracle`, an :class:`ApproachabilityOracle`) at the current normal
    $(\theta_t, \lambda_t)$ — or, by the
    follow-the-oracle rule (paper §5.4, remark after the proof of Lemma 10), the point mass on
    the grid point nearest $q_t$ while the running calibration error $\|U\|/t$ is below ``eps``
    — publishes ``Mixture((p_i, p_{i+1}), (w, 1 - w))``; ``Forecast.value`` is the draw. After $y_t$,
    projected online gradient ascent on $(\theta, \lambda)$ with the mixture's expected payoff
    $u(w_t, y_t)$ (paper §5.3: at most three non-zero coordinates, so the ℓ∞ step costs O(1)).

    Use :meth:`for_horizon` to set $m$, $\Lambda$, $\eta$ from $T$ and the trade-off $\beta$.

    Attributes:
        n_bins: grid size $m$ (static).
        step_size: OGD step $\eta$ (traced).
        Lambda: bound $\Lambda$ on $\lambda$ (traced; its value is jcalib's choice, see
            :func:`tradeoff_parameters`).
        eps: threshold of the follow-the-oracle rule (traced; ``None``: $1/m$).
        norm: ``"l1"`` (ℓ∞ box for θ, ℓ1 calibration) or ``"l2"`` (ℓ2 ball, ℓ2 calibration).
        scoring: a Lipschitz proper scoring rule from :mod:`jcalib.scoring` (default Brier).
        follow_oracle: apply the paper's follow-the-oracle rule (static; default True).
        allow_unbounded: accept a rule that is not Lipschitz (``LogScore``); the guarantees then
            scale with its clipped constant $1/c$ (static; default False: refused).

    Example:
        >>> import jax, jcalib
        >>> f = ApproachabilityRecalibrator.for_horizon(2000)
        >>> traj = jcalib.core.play(f, jcalib.natures.TwoLevelModel(), 2000, key=jax.random.key(0))
        >>> traj.forecast.shape
        (2000,)

    References:
        P. Okoroafor, R. Kleinberg, W. Sun (2023), *Faster Recalibration of an Online
        Predictor via Approachability*, Algorithm 1, Lemma 8, Theorems 9 and 11; J. Abernethy,
        P. Bartlett, E. Hazan (2011), *Blackwell approachability and no-regret learning are
        equivalent*, §5.2; M. Zinkevich (2003).
    """

    outcome_space = "binary"
    needs_context = True

    n_bins: int = size_field("n_bins", what="its per-grid-point state", hi=MAX_GRID, why=GRID_WHY)
    step_size: float
    Lambda: float = 1.0
    eps: float | None = None
    norm: str = eqx.field(static=True, default="l1")
    scoring: AbstractScoringRule = eqx.field(default_factory=Brier)
    follow_oracle: bool = eqx.field(static=True, default=True)
    allow_unbounded: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")
        if self.norm not in ("l1", "l2"):
            raise ValueError(f"norm must be 'l1' or 'l2', got {self.norm!r}")
        if not isinstance(self.scoring, AbstractScoringRule):
            raise ValueError(f"scoring must be a rule from jcalib.scoring, got {type(self.scoring).__name__}")
        if not self.scoring.lipschitz_bounded and not self.allow_unbounded:
            raise ValueError(
                f"scoring={type(self.scoring).__name__} is not Lipschitz (log loss is unbounded near 0 and 1); "
                "the guarantees of Okoroafor et al. (2024) need an L-Lipschitz rule (Brier, Spherical). "
                "Pass allow_unbounded=True to use it anyway, with L = 1/clip."
            )
        for name in ("step_size", "Lambda") + (("eps",) if self.eps is not None else ()):
            check_hyper(getattr(self, name), name, 0.0, open_lo=True)

    @classmethod
    def for_horizon(
        cls,
        T: int,
        beta: float | None = None,
        *,
        norm: str = "l1",
        scoring: AbstractScoringRule | None = None,
        follow_oracle: bool = True,
        allow_unbounded: bool = False,
    ) -> "ApproachabilityRecalibrator":
        r"""Settings for horizon $T$.

        ℓ1 (default): $\varepsilon, \Lambda$ = :func:`tradeoff_parameters`$(T, \beta)$ with
        $\beta = 1/3$ by default ($\varepsilon = T^{-1/3}$, $\Lambda = 1$); ℓ2: $\varepsilon =
        T^{-1/2}$, $\Lambda = 1$ (jcalib's ℓ2 setting, after the paper's Theorem 13;
        ``beta`` must be ``None``). Then $m = \lceil 1/\varepsilon \rceil$ and
        $\eta = D/(\sqrt 2 \sqrt T)$.
        """
        T = check_horizon(T)
        if norm == "l2":
            if beta is not None:
                raise ValueError("beta is for the l1 trade-off; the l2 variant uses eps = T^-1/2, Lambda = 1")
            eps, lam = T ** -0.5, 1.0
        else:
            eps, lam = tradeoff_parameters(T, 1 / 3 if beta is None else beta)
        m = max(1, math.ceil(1 / eps - 1e-9))
        D = math.sqrt((4 * (m + 1) if norm == "l1" else 4) + lam**2)
        return cls(
            n_bins=m,
            step_size=D / (math.sqrt(2) * math.sqrt(T)),
            Lambda=lam,
            eps=eps,
            norm=norm,
            scoring=Brier() if scoring is None else scoring,
            follow_oracle=follow_oracle,
            allow_unbounded=allow_unbounded,
        )

    @property
    def value_grid(self) -> int:
        """Forecasts lie on the grid {0, 1/m, …, 1}."""
        return self.n_bins

    @property
    def oracle(self) -> ApproachabilityOracle:
        """The half-space oracle each round calls (with the direction $(\\theta_t, \\lambda_t)$);
        its ``payoff`` is the game's vector payoff $u$, whose mean over the rounds is the state's
        ``cal``/``t`` and ``reg``/``t``."""
        return ApproachabilityOracle(self.n_bins, self.scoring)

    def init(self, key: PRNGKeyArray) -> ApproachabilityState:
        fdt = float_dtype()
        z = jnp.zeros((self.n_bins + 1,), fdt)
        zero = jnp.zeros((), fdt)
        return ApproachabilityState(z, zero, z, zero, zero, jnp.zeros((), jnp.int32))

    def _eps(self, fdt):
        return jnp.asarray(1.0 / self.n_bins if self.eps is None else self.eps).astype(fdt)

    def choose(self, state: ApproachabilityState, q) -> tuple[Int[Array, ""], Float[Array, ""]]:
        """``(index, prob)`` of this round's mixture (oracle or follow-the-oracle)."""
        m = self.n_bins
        fdt = float_dtype()
        preset = None
        if self.follow_oracle:
            # follow-the-oracle: the point mass nearest q, given to the oracle as a preset so
            # that following rounds skip its probes
            err = state.cal_norm if self.norm == "l1" else jnp.sqrt(jnp.maximum(state.cal_norm, 0.0))
            t = jnp.maximum(state.t, 1).astype(fdt)
            follow = (state.t > 0) & (err / t < self._eps(fdt))
            preset = (follow, jnp.clip(jnp.round(q * m), 0, m).astype(jnp.int32))
        i, w, _ = _oracle(state.theta, state.lam, q, m, self.scoring, preset)
        return i, w

    def predict(self, state: ApproachabilityState, x, key: PRNGKeyArray) -> Forecast:
        q = jnp.asarray(x).astype(float_dtype())
        # The check of q guards the choice made from it: eqx.error_if compiles to a conditional
        # whose outputs XLA keeps in memory, so (i, w) is computed once, instead of inside each
        # of the five fusions that read it (support, probabilities, draw, recorder, update).
        # (q is checked first too, so that a bad q is reported as the model's forecast, not by
        # the scoring rule the oracle evaluates at it)
        i, w = check_context_prob(q, guard=self.choose(state, check_context_prob(q)))
        mix = _mixture(i, w, self.n_bins)
        value = jnp.where(jax.random.bernoulli(key, w), mix.support[0], mix.support[1])
        return Forecast(value, mix)

    def update(self, state: ApproachabilityState, x, forecast: Forecast, y) -> ApproachabilityState:
        m = self.n_bins
        fdt = state.theta.dtype
        q = jnp.asarray(x).astype(fdt)
        mix = forecast.public
        # the lower support point's index (exact for m < 2^22, like AOSA's)
        i = jnp.clip(jnp.round(mix.support[0] * m).astype(jnp.int32), 0, m - 1)
        w = mix.probs.astype(fdt)
        p = mix.support.astype(fdt)  # = grid_points(m)[[i, i + 1]], published by predict
        yi = jnp.asarray(y, jnp.int32)
        yf = yi.astype(fdt)
        L = jnp.asarray(self.scoring.lipschitz, fdt)
        u_cal = w * (yf - p)  # the two touched calibration coordinates
        u_reg = (jnp.sum(w * self.scoring(p, yi).astype(fdt)) - self.scoring(q, yi).astype(fdt)) / L
        eta = jnp.asarray(self.step_size).astype(fdt)
        # the two touched coordinates i, i+1 are one contiguous window: one slice and one update
        # each (under vmap a gather and a scatter of a 2-wide window)
        window = lambda a: jax.lax.dynamic_slice_in_dim(a, i, 2)  # noqa: E731
        put = lambda a, v: jax.lax.dynamic_update_slice_in_dim(a, v, i, 0)  # noqa: E731
        old = window(state.cal)
        new = old + u_cal
        if self.norm == "l1":
            # Π onto the ℓ∞ box: only the two touched coordinates can leave it
            theta = put(state.theta, jnp.clip(window(state.theta) + eta * u_cal, -1.0, 1.0))
            cal_norm = state.cal_norm + jnp.sum(jnp.abs(new) - jnp.abs(old))
        else:
            # Π onto the ℓ2 ball: a rescaling of all of θ (O(m), a vector multiply)
            theta = state.theta.at[jnp.stack([i, i + 1])].add(eta * u_cal)
            theta = theta / jnp.maximum(1.0, jnp.sqrt(jnp.sum(theta**2)))
            cal_norm = state.cal_norm + jnp.sum(new**2 - old**2)
        lam = jnp.clip(state.lam + eta * u_reg, 0.0, jnp.asarray(self.Lambda).astype(fdt))
        return ApproachabilityState(
            theta=theta,
            lam=lam,
            cal=put(state.cal, new),
            cal_norm=cal_norm,
            reg=state.reg + u_reg,
            t=state.t + 1,
        )

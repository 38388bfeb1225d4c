r"""Bucket counts and regret sums for online recalibration (Okoroafor et al. 2024): memory O(m), any T.

:class:`RecalibrationCounts` keeps, per point of the grid $\{0, 1/m, \dots, 1\}$, the realised
counts and ones (int32, exact; DESIGN.md "Numbers") and the *expected* counts and ones under
each round's published mixture (floats), the realised and expected regret sums against the
model's forecast $q_t$ (the context), and the model's own forecasts in $K$ midpoint buckets (for
its reliability diagram). Everything the metrics of Okoroafor et al. (2024) need
(:mod:`jcalib.metrics.online`) is a function of the final :class:`RecalibrationSummary`, so a
sweep of $10^6$ rounds never keeps a history.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._dtypes import float_dtype
from .._grid import GRID_WHY, MAX_GRID, grid_index, off_grid, size_field
from .._validation import check_positive_int
from .base import AbstractRecorder, Round
from ..core.types import as_mixture
from ..metrics.online import calibration_from_buckets, grid_to_midpoint
from ..scoring import AbstractScoringRule, Brier

__all__ = ["RecalibrationCounts", "RecalibrationSummary"]


class RecalibrationSummary(NamedTuple):
    """The result of :class:`RecalibrationCounts` (leading batch axes from a sweep allowed on
    the arrays, but the methods below expect one run's summary; ``jax.vmap`` them for a batch).

    Attributes:
        counts, ones: int32 ``(m+1,)``: realised forecasts per grid point and their ones.
        exp_counts, exp_ones: floats ``(m+1,)``: the same in expectation over the mixtures.
        regret_sum: $\\sum_t s(p_t, y_t) - s(q_t, y_t)$ for the realised draws (not over L).
        exp_regret_sum: the same with the mixture's expected score.
        model_counts, model_ones: int32 ``(K,)``: the model's forecasts in K midpoint buckets.
        model_sum_q: floats ``(K,)``: sum of the model's forecasts per bucket.
        off_grid: rounds with a support point off the grid (0 for grid forecasters).
        T: rounds recorded (int32).
    """

    counts: Int[Array, " m+1"]
    ones: Int[Array, " m+1"]
    exp_counts: Float[Array, " m+1"]
    exp_ones: Float[Array, " m+1"]
    regret_sum: Float[Array, ""]
    exp_regret_sum: Float[Array, ""]
    model_counts: Int[Array, " K"]
    model_ones: Int[Array, " K"]
    model_sum_q: Float[Array, " K"]
    off_grid: Int[Array, ""]
    T: Int[Array, ""]

    def calibration(self, order: float = 1, form: str = "mean", *, expected: bool = True, n_buckets: int | None = None):
        """(ε, ℓp)-calibration (normalised) with $p$ = ``order``: grid bucketing, or midpoint
        buckets of width ``1/n_buckets`` (grid points mapped by integer arithmetic); see
        :func:`jcalib.metrics.online.calibration_from_buckets`."""
        n = self.exp_counts if expected else self.counts
        o = self.exp_ones if expected else self.ones
        m = n.shape[-1] - 1
        fdt = float_dtype()
        if n_buckets is None:
            return calibration_from_buckets(n, o, jnp.arange(m + 1).astype(fdt) / m, self.T, order=order, form=form)
        K = check_positive_int(n_buckets, "n_buckets")
        k = grid_to_midpoint(jnp.arange(m + 1), m, K)
        nb = jnp.zeros((K,), fdt).at[k].add(jnp.asarray(n).astype(fdt))
        ob = jnp.zeros((K,), fdt).at[k].add(jnp.asarray(o).astype(fdt))
        return calibration_from_buckets(nb, ob, (jnp.arange(K).astype(fdt) + 0.5) / K, self.T, order=order, form=form)

    def regret(self, *, expected: bool = True) -> Float[Array, ""]:
        """Average regret against the model (normalised by T; not divided by L)."""
        s = self.exp_regret_sum if expected else self.regret_sum
        return s / self.T.astype(s.dtype)

    def model_calibration(self, order: float = 1, form: str = "mean") -> Float[Array, ""]:
        """The model's own (ε, ℓp)-calibration ($p$ = ``order``) in its K midpoint buckets."""
        K = self.model_counts.shape[-1]
        fdt = float_dtype()
        return calibration_from_buckets(self.model_counts, self.model_ones, (jnp.arange(K).astype(fdt) + 0.5) / K, self.T, order=order, form=form)


class RecalibrationCounts(AbstractRecorder):
    r"""Record a :class:`RecalibrationSummary` (memory O(m + K)).

    Rounds must carry the model's forecast $q_t$ as the context and binary outcomes. Support
    points of a published :class:`~jcalib.core.Mixture` (any length: two grid points for the
    approachability recalibrator, N + 1 for Kuleshov–Ermon) are bucketed by their integer grid
    index; a deterministic forecaster's value counts as a point mass.

    Attributes:
        n_bins: grid size $m$ (static): forecasts are counted on $\{0, 1/m, \dots, 1\}$.
        scoring: the rule of the regret sums (default Brier).
        n_model_buckets: K midpoint buckets for the model's forecasts (static; default
            ``n_bins``).

    Example:
        >>> import jax, jcalib
        >>> from jcalib.forecasters import ApproachabilityRecalibrator
        >>> f = ApproachabilityRecalibrator.for_horizon(1000)
        >>> s = jcalib.core.play(f, jcalib.natures.TwoLevelModel(), 1000, key=jax.random.key(0),
        ...                 record=RecalibrationCounts(f.n_bins))
        >>> int(s.T), int(s.counts.sum())
        (1000, 1000)
    """

    n_bins: int = size_field("n_bins", lambda n: 6 * (n + 1), what="its per-grid-point sums", hi=MAX_GRID, why=GRID_WHY)
    scoring: AbstractScoringRule = eqx.field(default_factory=Brier)
    n_model_buckets: int | None = size_field("n_model_buckets", lambda n: 3 * n, what="its per-bucket sums",
                                             optional=True, default=None)

    def __check_init__(self):
        if not isinstance(self.scoring, AbstractScoringRule):
            raise ValueError(f"scoring must be a scoring rule (jcalib.scoring), got {type(self.scoring).__name__}")

    @property
    def _K(self) -> int:
        return self.n_bins if self.n_model_buckets is None else self.n_model_buckets

    def init(self) -> RecalibrationSummary:
        fdt = float_dtype()
        zi = jnp.zeros((self.n_bins + 1,), jnp.int32)
        zf = jnp.zeros((self.n_bins + 1,), fdt)
        zk = jnp.zeros((self._K,), jnp.int32)
        s0 = jnp.zeros((), fdt)
        i0 = jnp.zeros((), jnp.int32)
        return RecalibrationSummary(zi, zi, zf, zf, s0, s0, zk, zk, jnp.zeros((self._K,), fdt), i0, i0)

    def step(self, s: RecalibrationSummary, rnd: Round):
        m, K = self.n_bins, self._K
        fdt = float_dtype()
        y = jnp.asarray(rnd.y)
        if not (jnp.issubdtype(y.dtype, jnp.integer) or y.dtype == jnp.bool_):
            raise ValueError(f"RecalibrationCounts needs binary (integer 0/1) outcomes, got dtype {y.dtype}")
        y = y.astype(jnp.int32)
        if rnd.x is None:
            raise ValueError("RecalibrationCounts needs the model's forecast q_t as the round's context")
        q = jnp.asarray(rnd.x).astype(fdt)
        mix = as_mixture(rnd.forecast.public)
        support = jnp.asarray(mix.support).astype(fdt)
        w = mix.probs.astype(fdt)
        js, off = grid_index(support, m), jnp.any(off_grid(support, m))
        v = jnp.asarray(rnd.forecast.value).astype(fdt)
        j = grid_index(v, m)
        yf = y.astype(fdt)
        sq = self.scoring(q, y).astype(fdt)
        exp_score = jnp.sum(w * self.scoring(support, y).astype(fdt))
        kq = jnp.clip(jnp.floor(q * K), 0, K - 1).astype(jnp.int32)  # the model's q is off any grid
        s = RecalibrationSummary(
            counts=s.counts.at[j].add(1),
            ones=s.ones.at[j].add(y),
            exp_counts=s.exp_counts.at[js].add(w),
            exp_ones=s.exp_ones.at[js].add(w * yf),
            regret_sum=s.regret_sum + (self.scoring(v, y).astype(fdt) - sq),
            exp_regret_sum=s.exp_regret_sum + (exp_score - sq),
            model_counts=s.model_counts.at[kq].add(1),
            model_ones=s.model_ones.at[kq].add(y),
            model_sum_q=s.model_sum_q.at[kq].add(q),
            off_grid=s.off_grid + off.astype(jnp.int32),
            T=s.T + 1,
        )
        return s, None

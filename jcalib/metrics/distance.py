r"""Distance to calibration of a binary sequence, and its lower distance (an LP relaxation).

$$\mathrm{CalDist}(p, y) = \min_{q \in \mathcal C(y)} \sum_t |p_t - q_t|, \qquad
\mathcal C(y) = \{q : \mathrm{ECE}(q, y) = 0\}$$
(Arunachaleswaran et al. 2024, §2, following Qiao and Zheng 2024; Błasiok, Gopalan, Hu, Nakkiran
2023 for the distributional version). Both quantities here are **unnormalised** sums over rounds
(divide by $T$ for the normalised distance of the empirical distribution).

Host-side code: :func:`distance_to_calibration` and :func:`lower_distance_to_calibration` run in
NumPy/SciPy on the host and are **not** jit- or vmap-able. The exact value is a combinatorial
minimum over partitions (NP-hard in general; Qiao 2026), and the lower distance is a linear
program solved with HiGHS (through highspy); neither has a fixed-shape, fixed-step
form worth tracing. :func:`atoms_from_counts` is pure ``jax.numpy``.

Everything works over *atoms*: distinct (forecast, outcome) pairs with multiplicities. Integer
``sample_weight`` is exactly such a multiplicity (weight $k$ = $k$ identical rounds), so a grid
forecaster's summary of $10^7$ rounds (``counts``, ``ones`` per grid point) is at most
$2(m+1)$ atoms: see :func:`atoms_from_counts`.

How the interval is certified:

* **Structure.** For $S \subseteq [T]$ put $\bar y_S$ = the frequency of ones in $S$. Then
  $\mathrm{CalDist} = \min_{\text{partitions } P} \sum_{S \in P} \sum_{t \in S} |p_t -
  \bar y_S|$, and (exchange argument: $|x - y|$ is submodular) some optimal partition, ordered
  by $\bar y_S$, takes a *contiguous* block of the $p$-sorted rounds with $y = 1$ and a
  contiguous block of the $p$-sorted rounds with $y = 0$. A partition is thus a monotone
  lattice path from $(0, 0)$ to $(n_1, n_0)$ whose step $(\Delta i, \Delta j)$ is one group with
  value $\Delta i / (\Delta i + \Delta j)$ (jcalib's formulation).
* **Exact (small $T$).** jcalib's dynamic programme over all lattice points,
  $O(n_1^2 n_0^2)$ with prefix sums; checked against brute force over all set partitions.
* **Upper end (any $T$).** The cost of an explicit perfectly calibrated $q$ (returned as
  ``witness``): the best of (a) the same DP restricted to paths through atom boundaries in
  $(p, y)$ order with contiguous groups, which contains grouping by forecast value (so the
  upper end is at most the ECE, Lemma 1 of Arunachaleswaran et al. 2024) and, for the
  Almost-One-Step-Ahead forecaster, the grouping of its look-ahead forecasts (so it is at most
  $T/m + m + 1$, Theorem 1); and (b) rounding the lower-distance LP's fractional solution into
  an integral partition (Qiao–Zheng 2024 bound the rounding loss by $O(\sqrt T)$): a DP over
  lattice points next to each vertex of the LP's monotone path (floor, ceiling, nearest atom
  boundaries), where a group may also skip vertices (merging groups), then the same DP around
  the best path found, twice (local improvement).
* **Lower end.** :func:`lower_distance_to_calibration`, certified by an explicit dual-feasible
  solution (see its docstring).

Input checks: both run on the host (NumPy/SciPy), not under ``jit``: every input is concrete
and checked at the Python boundary (``ValueError`` naming the argument).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sps
from jaxtyping import Array, Float, Int

from .._validation import BINS, BinaryLabels, BinaryProbs, Bool, Custom, Integer, Optional, Real, Weights, declare
from .binary import grid_counts_arg

__all__ = [
    "CalibratedWitness",
    "CalibrationDistance",
    "atoms_from_counts",
    "distance_to_calibration",
    "lower_distance_to_calibration",
]

# Exact DP by default when (n1 + 1)(n0 + 1) is at most this (about T = 100 balanced rounds;
# the DP does ~(n1 n0)^2 / 4 vectorised work).
_EXACT_DEFAULT_STATES = 2601
# exact=True refuses beyond this many lattice states (about T = 400 balanced rounds).
_EXACT_MAX_STATES = 40401
# The lower-distance LP's first solve is by dual simplex up to this many breakpoints (fastest on
# grid summaries), by interior point beyond (many distinct forecasts).
_IPM_BREAKPOINTS = 4000
# A gap whose closed-form violation exceeds this gets a new cut (below it, the certificate's
# local repair costs at most this times the weight of two atoms).
_CUT_TOL = 1e-10


class CalibratedWitness(NamedTuple):
    """A perfectly calibrated forecast sequence $q$, as weighted pieces of the input rounds.

    Row $r$ says: ``weight[r]`` of the multiplicity of input element ``index[r]`` is forecast
    ``q[r]``. With unit weights every round is one row. ``ECE(q, labels[index], weight) == 0``
    and ``sum(weight * |probs[index] - q|)`` is the upper end of the distance interval.
    """

    index: np.ndarray
    weight: np.ndarray
    q: np.ndarray


class CalibrationDistance(NamedTuple):
    """Result of :func:`distance_to_calibration` (unnormalised, a sum over rounds).

    Attributes:
        lower: certified lower end of CalDist.
        upper: certified upper end: the cost of ``witness``.
        exact: True when ``lower == upper`` is the exact distance (exact DP, or the LP lower end
            met the upper end).
        witness: the perfectly calibrated forecasts that achieve ``upper``.
    """

    lower: float
    upper: float
    exact: bool
    witness: CalibratedWitness

    @property
    def value(self) -> float:
        """The exact distance; raises ``ValueError`` when only an interval is known."""
        if not self.exact:
            raise ValueError(
                f"distance to calibration not computed exactly; it lies in [{self.lower}, {self.upper}]"
            )
        return self.upper


# ------------------------------------------------------------------------------------------
# atoms


@declare(n_bins=BINS, counts=Custom(grid_counts_arg, "rounds per grid point, shape (n_bins + 1,)"),
         ones=Custom(grid_counts_arg, "rounds with y = 1 per grid point, 0 <= ones <= counts"))
def atoms_from_counts(
    counts: Int[Array, " n_bins+1"],
    ones: Int[Array, " n_bins+1"],
    n_bins: int,
) -> tuple[Float[Array, " 2m+2"], Int[Array, " 2m+2"], Int[Array, " 2m+2"]]:
    r"""Atoms (forecast, outcome, multiplicity) of a grid forecaster's summary.

    ``counts[i]`` rounds forecast $i/m$ ($m$ = ``n_bins``) and ``ones[i]`` of them had $y=1$. Returns
    ``(probs, labels, weights)`` of fixed length $2(m+1)$: first the $y=1$ atoms
    $(i/m, 1, \mathrm{ones}_i)$, then the $y=0$ atoms $(i/m, 0, \mathrm{counts}_i -
    \mathrm{ones}_i)$ (zero-weight atoms included, so the shape is static). Passing them as
    ``sample_weight`` to any metric here equals expanding the summary into its rounds. Pure
    ``jax.numpy`` (jit- and vmap-able); the weights keep the input's dtype so counts stay exact.

    Examples:
        >>> import jax.numpy as jnp
        >>> p, y, w = atoms_from_counts(jnp.array([3, 5, 2]), jnp.array([1, 2, 2]), 2)
        >>> p.tolist(), y.tolist(), w.tolist()
        ([0.0, 0.5, 1.0, 0.0, 0.5, 1.0], [1, 1, 1, 0, 0, 0], [1, 2, 2, 2, 3, 0])
    """
    m = n_bins
    grid = jnp.arange(m + 1, dtype=jnp.result_type(float)) / m
    probs = jnp.concatenate([grid, grid])
    labels = jnp.concatenate([jnp.ones(m + 1, jnp.int32), jnp.zeros(m + 1, jnp.int32)])
    dt = jnp.result_type(counts.dtype, ones.dtype)
    weights = jnp.concatenate([ones.astype(dt), (counts - ones).astype(dt)])
    return probs, labels, weights


_RTOL = Real(0, 1, open_lo=True, open_hi=True, static=True)  # the LP's relative tolerance


def _on_host(spec, dtype):
    """``spec``'s check, then the caller's values as a NumPy array of ``dtype`` (float64: JAX's
    default float32 would round them); traced values are refused (the solvers run on the host)."""
    def check(value, name, bound):
        if isinstance(value, jax.core.Tracer) or any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(value)):
            raise ValueError(f"{name} must be concrete: the calibration distance runs on the host "
                             "(call it outside jit/vmap)")
        if value is None:
            return np.ones(bound["probs"].shape, np.float64)
        spec.check(value, name, bound)
        return np.asarray(value).astype(dtype)
    return Custom(check, f"{spec!r}, concrete, as NumPy {np.dtype(dtype).name}")


# binary forecasts, 0/1 outcomes and weights (ones by default) as float64 / int64 NumPy arrays
_HOST_INPUTS = dict(probs=_on_host(BinaryProbs(), np.float64),
                    labels=_on_host(BinaryLabels(length_of="probs"), np.int64),
                    sample_weight=_on_host(Weights(length_of="probs"), np.float64))


def _host_inputs(p, y, w, integer_weights: bool):
    """The declared host arrays ``p, y, w`` and the indices of the rounds with positive weight."""
    if integer_weights and not np.all(w == np.round(w)):
        raise ValueError("sample_weight must be integer multiplicities for distance_to_calibration")
    keep = np.nonzero(w > 0)[0]
    return p, y, w, keep


class _Side:
    """One label's rounds sorted by forecast, as atoms with multiplicities and prefix sums.

    ``P(c, a)`` = sum over the first ``c`` sorted rounds of ``|p - a|`` (vectorised). The
    element order (``order``, ``E``) is kept to map rank ranges back to input elements.
    """

    def __init__(self, v: np.ndarray, w: np.ndarray):
        order = np.argsort(v, kind="stable")
        self.order = order
        self.E = np.concatenate([[0.0], np.cumsum(w[order])])  # element boundaries
        self.v, inv = np.unique(v[order], return_inverse=True)
        self.w = np.bincount(inv, weights=w[order], minlength=self.v.size)
        self.C = np.concatenate([[0.0], np.cumsum(self.w)])  # atom boundaries
        self.S = np.concatenate([[0.0], np.cumsum(self.w * self.v)])
        self.n = self.C[-1]
        self._at_bounds = self._sum_first(self.C)  # _sum_first at every atom boundary (for P)

    def _sum_first(self, c):
        if self.v.size == 0:
            return np.zeros(np.shape(c))
        k = np.clip(np.searchsorted(self.C, c, side="right") - 1, 0, self.v.size - 1)
        return self.S[k] + (c - self.C[k]) * self.v[k]

    def P(self, c, a, *more):
        """``P(c, a)``; with more counts ``P(c, a, c2, ...)`` is ``(P(c, a), P(c2, a), ...)``, the
        search for ``a`` done once."""
        a = np.asarray(a, np.float64)
        cs = [np.asarray(x, np.float64) for x in (c, *more)]
        if self.v.size == 0:
            out = [np.zeros(np.broadcast_shapes(x.shape, a.shape)) for x in cs]
        else:
            idx = np.searchsorted(self.v, a, side="right")
            below, at_below = self.C[idx], self._at_bounds[idx]  # rounds with p <= a, their sum
            out = [self._P(x, a, below, at_below) for x in cs]
        return out[0] if not more else tuple(out)

    def _P(self, c, a, below, at_below):
        k = np.minimum(c, below)
        # _sum_first(k) with k = min(c, below), without a search per element: _sum_first(c) on
        # c's own (unbroadcast) shape, and _sum_first at the atom boundaries, tabulated once
        # (the same float operations on the same values, so the same numbers)
        sc = self._sum_first(c)
        sk = np.where(c <= below, sc, at_below)
        return a * k - sk + (sc - sk) - a * (c - k)


def _group_cost(one: _Side, zero: _Side, i0, j0, i1, j1):
    """Cost of the group taking y=1 ranks (i0, i1] and y=0 ranks (j0, j1] (vectorised)."""
    di, dj = i1 - i0, j1 - j0
    den = np.where(di + dj > 0, di + dj, 1)
    a = di / den
    (p1, p0), (q1, q0) = one.P(i1, a, i0), zero.P(j1, a, j0)
    cost = p1 - p0 + q1 - q0
    return np.where(di + dj > 0, cost, np.inf)


def _path_cost(one, zero, path):
    path = np.asarray(path, np.float64)
    return float(np.sum(_group_cost(one, zero, path[:-1, 0], path[:-1, 1], path[1:, 0], path[1:, 1])))


# ------------------------------------------------------------------------------------------
# exact DP over all lattice points (jcalib's; see the module docstring)


# Work sizes of the vectorised DPs below: about this many (point, candidate) pairs per NumPy
# step (small enough to stay in cache where the per-step work is light, larger for the exact
# DP, whose steps are table lookups), and lookup tables of at most this many entries.
_BLOCK = 1 << 14
_EXACT_BLOCK = 1 << 18
_TABLE = 1 << 23


def _exact_path(one: _Side, zero: _Side, block: int = _EXACT_BLOCK, table: int = _TABLE):
    """F(i, j) = min over lattice points (i', j') <= (i, j) of F(i', j') + cost of the group
    between them, filled one anti-diagonal i + j = d at a time (a point depends only on points
    of smaller i + j), every point of a diagonal in one vectorised step (about ``block`` pairs,
    each point's candidates one segment of a flat array).

    The candidates of each point are scanned in row-major (i', j') order and the first minimum
    wins, so ties resolve as in a point-by-point loop. A group's cost depends on its ends only
    through its sizes (di, dj) and its four end ranks, so when they fit in ``table`` entries the
    terms ``one.P(c, a(di, dj))`` and ``zero.P(c, a(di, dj))`` are tabulated once (each entry the
    same float operations as :func:`_group_cost`, so the costs are bit for bit the same).
    """
    n1, n0 = int(one.n), int(zero.n)
    F = np.full((n1 + 1, n0 + 1), np.inf)
    F[0, 0] = 0.0
    back = np.zeros((n1 + 1, n0 + 1, 2), np.int64)
    ci, cj = (g.ravel() for g in np.meshgrid(np.arange(n1 + 1), np.arange(n0 + 1), indexing="ij"))
    Fflat = F.reshape(-1)  # a view: diagonal d reads the values written for diagonals < d
    if ci.size * (n1 + n0 + 2) <= table:
        size = (ci + cj).reshape(n1 + 1, n0 + 1)
        a = ci.reshape(n1 + 1, n0 + 1) / np.where(size > 0, size, 1)  # a(di, dj), as in _group_cost
        P1 = one.P(np.arange(n1 + 1)[:, None, None], a[None])  # P1[c, di, dj] = one.P(c, a(di, dj))
        P0 = zero.P(np.arange(n0 + 1)[:, None, None], a[None])

        def cost_of(i0, j0, i1, j1):
            di, dj = i1 - i0, j1 - j0
            cost = P1[i1, di, dj] - P1[i0, di, dj] + P0[j1, di, dj] - P0[j0, di, dj]
            return np.where(di + dj > 0, cost, np.inf)
    else:
        def cost_of(i0, j0, i1, j1):
            return _group_cost(one, zero, i0, j0, i1, j1)

    for d in range(1, n1 + n0 + 1):
        diag_i = np.arange(max(0, d - n0), min(n1, d) + 1)
        rows_per_step = max(1, block // int(((diag_i + 1) * (d - diag_i + 1)).max()))
        for s in range(0, diag_i.size, rows_per_step):
            i = diag_i[s : s + rows_per_step]
            j = d - i
            # the candidates (i', j') <= (i, j) of each point, row-major, one segment per point
            # (the point itself costs inf: an empty group)
            cnt = (i + 1) * (j + 1)
            starts = np.cumsum(cnt) - cnt
            seg = np.repeat(np.arange(i.size), cnt)
            pos = np.arange(int(cnt.sum())) - starts[seg]
            ip, jp = np.divmod(pos, (j + 1)[seg])
            cost = Fflat[ip * (n0 + 1) + jp] + cost_of(ip, jp, i[seg], j[seg])
            best = np.minimum.reduceat(cost, starts)
            hit = np.flatnonzero(cost == best[seg])
            k = hit[np.searchsorted(hit, starts)]  # each segment's first minimum
            F[i, j] = best
            back[i, j, 0], back[i, j, 1] = ip[k], jp[k]
    path = [(n1, n0)]
    while path[-1] != (0, 0):
        i, j = path[-1]
        path.append(tuple(int(x) for x in back[i, j]))
    return float(F[n1, n0]), np.array(path[::-1], np.float64)


# ------------------------------------------------------------------------------------------
# upper end: DPs over restricted sets of lattice points


def _staircase_path(one: _Side, zero: _Side, span: int, block: int = _BLOCK):
    """Best partition into groups contiguous in (p, y)-sorted atom order (span <= ``span`` atoms).

    A group's cost does not depend on F, so the costs of all groups ending at a block of atoms
    are computed in one vectorised step; the loop over atoms only adds and takes minima.
    """
    v = np.concatenate([zero.v, one.v])
    y = np.concatenate([np.zeros(zero.v.size), np.ones(one.v.size)])
    w = np.concatenate([zero.w, one.w])
    o = np.lexsort((y, v))
    I = np.concatenate([[0.0], np.cumsum(w[o] * y[o])])
    J = np.concatenate([[0.0], np.cumsum(w[o] * (1 - y[o]))])
    A = w.size
    F = np.full(A + 1, np.inf)
    F[0] = 0.0
    arg = np.zeros(A + 1, np.int64)
    span = max(1, min(span, A))
    rows = max(1, block // span)
    off = np.arange(span)
    for k0 in range(1, A + 1, rows):
        # costs[k - k0, s] is the group (k - span + s, k]; starts below 0 are never read
        ks = np.arange(k0, min(A + 1, k0 + rows))
        starts = np.maximum(ks[:, None] - span + off[None, :], 0)
        costs = _group_cost(one, zero, I[starts], J[starts], I[ks][:, None], J[ks][:, None])
        for k in ks:
            lo = max(0, k - span)
            cost = F[lo:k] + costs[k - k0, span - (k - lo):]
            a = int(np.argmin(cost))
            arg[k], F[k] = lo + a, cost[a]
    ks = [A]
    while ks[-1] != 0:
        ks.append(int(arg[ks[-1]]))
    ks = np.array(ks[::-1])
    return float(F[A]), np.stack([I[ks], J[ks]], axis=1)


def _layered_path(one: _Side, zero: _Side, guide: np.ndarray, reach: int = 3, block: int = _BLOCK):
    """Round a monotone polyline ``guide`` (k + 1 vertices from (0, 0) to (n1, n0)) to a partition.

    Layer k holds lattice points near vertex k: each coordinate is the vertex's floor or ceil,
    or one of the two nearest atom boundaries on either side (each distinct point once). A
    group joins a point of layer k to a point of one of the ``reach`` previous layers (skipping
    a layer merges two groups).
    Exact DP over this layered graph, one vectorised step per layer; the group costs (which do
    not depend on the DP's values) for a block of layers are computed in one step.
    """
    g = np.asarray(guide, np.float64)

    def cands(x, C):
        lo = np.searchsorted(C, x, side="right") - 1
        idx = np.stack([lo - 1, lo, lo + 1, lo + 2], axis=1)
        at = C[np.clip(idx, 0, C.size - 1)]
        return np.concatenate([np.floor(x)[:, None], np.ceil(x)[:, None], at], axis=1)

    ci, cj = cands(g[:, 0], one.C), cands(g[:, 1], zero.C)
    K, c = g.shape[0], ci.shape[1]
    si = np.repeat(ci, c, axis=1)  # (K, c*c): every pair of candidates
    sj = np.tile(cj, (1, c))
    si[0], sj[0] = 0.0, 0.0
    si[-1], sj[-1] = one.n, zero.n
    # a layer's repeated points (a boundary at the floor or ceil, a guide vertex on the lattice)
    # are dropped, the first copies kept in order: a copy has its original's costs and value and
    # comes after it, so the minima and the points chosen are the same; rows with fewer distinct
    # points keep some copies to stay rectangular
    S = si.shape[1]
    earlier = np.tri(S, k=-1, dtype=bool)  # [s, s']: s' < s
    copy = ((si[:, :, None] == si[:, None, :]) & (sj[:, :, None] == sj[:, None, :]) & earlier).any(-1)
    order = np.argsort(copy, axis=1, kind="stable")[:, : int((~copy).sum(1).max())]
    si, sj = np.take_along_axis(si, order, 1), np.take_along_axis(sj, order, 1)
    S = si.shape[1]
    F = np.full((K, S), np.inf)
    F[0] = 0.0
    back = np.zeros((K, S, 2), np.int64)
    rows = max(1, block // (reach * S * S))
    for k0 in range(1, K, rows):
        ks = np.arange(k0, min(K, k0 + rows))
        # previous layers k - reach .. k - 1, clipped at layer 0 (the clipped columns of the
        # first layers are never read)
        prev = np.maximum(ks[:, None] - reach + np.arange(reach)[None, :], 0)
        PI, PJ = si[prev].reshape(ks.size, 1, reach * S), sj[prev].reshape(ks.size, 1, reach * S)
        NI, NJ = si[ks][:, :, None], sj[ks][:, :, None]
        costs = _group_cost(one, zero, PI, PJ, NI, NJ)
        bads = (PI > NI) | (PJ > NJ)
        for k in ks:
            lo = max(0, k - reach)
            cols = slice((reach - (k - lo)) * S, None)
            cost, bad = costs[k - k0][:, cols], bads[k - k0][:, cols]
            pf = F[lo:k].ravel()
            tot = np.where(bad, np.inf, cost + pf[None, :])
            a = np.argmin(tot, axis=1)
            F[k] = tot[np.arange(S), a]
            back[k, :, 0], back[k, :, 1] = lo + a // S, a % S
    if not np.isfinite(F[-1, 0]):
        return np.inf, None
    path, k, s = [], K - 1, 0
    while k > 0:
        path.append((si[k, s], sj[k, s]))
        k, s = back[k, s]
    path.append((0.0, 0.0))
    return float(F[-1, 0]), np.array(path[::-1])


# ------------------------------------------------------------------------------------------
# lower distance: the LP, solved in its dual (1-D transport) form with exact cuts


class _Solver:
    """min ``c @ z`` s.t. ``A z <= b`` (``z`` free) in HiGHS, whose rows can be added and the LP
    re-solved from the last optimal basis: a cutting-plane round costs a few dual simplex steps
    instead of a solve from scratch (``scipy.optimize.linprog`` builds a new solver per call).

    ``method="ipm"`` solves the first LP by interior point with crossover (to a basic solution,
    as ``linprog(method="highs-ipm")``) and the later ones by dual simplex from its basis. Uses
    highspy's core class: the public ``highspy.Highs`` logs a banner on construction, before
    ``output_flag`` can be turned off."""

    _INF = 1e30  # HiGHS's infinity

    def __init__(self, c, A, b, method: str):
        from highspy import _core

        self._h = _core._Highs()
        for name, value in (("output_flag", False), ("primal_feasibility_tolerance", 1e-10),
                            ("dual_feasibility_tolerance", 1e-10), ("solver", method), ("simplex_strategy", 1)):
            self._h.setOptionValue(name, value)
        n = c.size
        self._h.addVars(n, np.full(n, -self._INF), np.full(n, self._INF))
        self._h.changeColsCost(n, np.arange(n, dtype=np.int32), np.asarray(c, np.float64))
        self.add_rows(A, b)

    def add_rows(self, A, b) -> None:
        A = sps.csr_matrix(A)
        self._h.addRows(A.shape[0], np.full(A.shape[0], -self._INF), np.asarray(b, np.float64), A.nnz,
                        A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data.astype(np.float64))

    def solve(self):
        """``(optimal value, primal z, row duals)``; the row duals are ``linprog``'s
        ``ineqlin.marginals`` (non-positive for the binding rows of a minimisation)."""
        self._h.run()
        status = self._h.modelStatusToString(self._h.getModelStatus())
        if status != "Optimal":  # pragma: no cover - the LP is always feasible (f = 0) and bounded
            raise RuntimeError(f"lower-distance LP failed: {status}")
        self._h.setOptionValue("solver", "simplex")  # later rounds: dual simplex from this basis
        sol = self._h.getSolution()
        return self._h.getInfo().objective_function_value, np.array(sol.col_value), np.array(sol.row_dual)


def _lower_lp(v1, w1, v0, w0, rtol: float, max_iter: int, cuts_per_gap: int = 4):
    r"""Certified lower distance over atoms; returns (value, lp_value, support u, masses mu).

    Dual of the lower-distance LP with $u$ ranging over all of $[0,1]$ (1-D transport duality):
    maximise $\sum_{y_i=1} w_i f_1(v_i) + \sum_{y_i=0} w_i f_0(v_i)$ over 1-Lipschitz
    $f_1, f_0$ with $u f_1(u) + (1-u) f_0(u) \le 0$ for all $u \in [0, 1]$. Only the values at
    the breakpoints $x_0 < \dots < x_L$ (atom positions, 0 and 1) matter; between two breakpoints
    the constraint is checked on the smallest 1-Lipschitz interpolants, which reduces it to
    $\max_{u \in [x_r, x_{r+1}]} u f_1(x_r) + (1-u) f_0(x_{r+1}) - h_r(u) \le 0$ with
    $h_r(u) = 2u^2 - u(1 + x_r + x_{r+1}) + x_{r+1}$ (the other three branch pairs are implied
    by the breakpoint constraints and the Lipschitz bounds). That convex constraint is imposed
    by tangent cuts at a few $u$, plus a cut at the exact maximiser of every violated interval,
    until the certificate below is within ``rtol``.
    """
    x = np.unique(np.concatenate([v1, v0, [0.0, 1.0]]))
    L = x.size
    d = np.diff(x)
    i1, i0 = np.searchsorted(x, v1), np.searchsorted(x, v0)
    c = np.zeros(2 * L)
    np.add.at(c, i1, -w1)
    np.add.at(c, L + i0, -w0)
    W = float(w1.sum() + w0.sum())
    r = np.arange(L - 1)
    # fixed rows: Lipschitz (4 per gap) and the breakpoint constraints
    rows, cols, vals = [], [], []
    k = 0
    for off in (0, L):
        for sgn in (1.0, -1.0):
            rows += [np.arange(k, k + L - 1)] * 2
            cols += [off + r + 1, off + r]
            vals += [np.full(L - 1, sgn), np.full(L - 1, -sgn)]
            k += L - 1
    rows += [np.arange(k, k + L)] * 2
    cols += [np.arange(L), L + np.arange(L)]
    vals += [x, 1 - x]
    k += L
    base = sps.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(k, 2 * L))
    base_b = np.concatenate([d, d, d, d, np.zeros(L)])
    frac = (np.arange(1, cuts_per_gap + 1) / (cuts_per_gap + 1))
    cut_r = np.repeat(r, cuts_per_gap)
    cut_u = (x[:-1, None] + d[:, None] * frac[None, :]).ravel()

    def h(rr, u):
        return 2 * u * u - u * (1 + x[rr] + x[rr + 1]) + x[rr + 1]

    solver = _Solver(c, base, base_b, method="simplex" if L <= _IPM_BREAKPOINTS else "ipm")
    new_r, new_u = cut_r, cut_u
    lp_val, best, best_dual = np.inf, -np.inf, None
    for _ in range(max_iter):
        # only the new cuts are added: HiGHS re-solves from the last optimal basis (a few dual
        # simplex steps), not from scratch
        nc = new_r.size
        solver.add_rows(
            sps.csr_matrix((np.concatenate([new_u, 1 - new_u]),
                            (np.concatenate([np.arange(nc)] * 2), np.concatenate([new_r, L + new_r + 1]))),
                           shape=(nc, 2 * L)),
            h(new_r, new_u))
        value, primal, dual = solver.solve()
        lp_val = min(lp_val, -value)
        f1, f0 = primal[:L].copy(), primal[L:].copy()
        # ---- certificate: repair (f1, f0) into an exactly feasible point of the continuous dual.
        # Every constraint has non-negative coefficients, so lowering values never breaks one:
        # lower each violated breakpoint / gap by its violation, then take the largest
        # 1-Lipschitz minorant (which only lowers values further).
        a, b = f1[:-1], f0[1:]
        ustar = np.clip((a - b + 1 + x[:-1] + x[1:]) / 4, x[:-1], x[1:])
        viol_gap = ustar * a + (1 - ustar) * b - h(r, ustar)
        viol_bp = np.maximum(x * f1 + (1 - x) * f0, 0.0)
        f1 -= viol_bp
        f0 -= viol_bp
        vg = np.maximum(viol_gap, 0.0)
        f1[:-1] -= vg
        f0[1:] -= vg
        for f in (f1, f0):  # min_s f_s + |x - x_s|: forward then backward running minima
            f[:] = np.minimum(f, np.minimum.accumulate(f - x) + x)
            f[:] = np.minimum(f, np.minimum.accumulate((f + x)[::-1])[::-1] - x)
        cert = float(np.dot(w1, f1[i1]) + np.dot(w0, f0[i0]))
        if cert > best:
            best, best_dual = cert, dual
        new = viol_gap > _CUT_TOL
        if lp_val - best <= rtol * max(1.0, abs(lp_val)) or not new.any():
            break
        new_r, new_u = r[new], ustar[new]
        cut_r = np.concatenate([cut_r, new_r])
        cut_u = np.concatenate([cut_u, new_u])
    # fractional path of the LP optimum: masses at breakpoints and at the cut points
    lam = -best_dual
    mu_bp = lam[base.shape[0] - L : base.shape[0]]
    mu_cut = lam[base.shape[0] :]
    u = np.concatenate([x, cut_u[: mu_cut.size]])
    mu = np.concatenate([mu_bp, mu_cut])
    keep = mu > 1e-12 * max(W, 1.0)
    return max(best, 0.0), lp_val, u[keep], mu[keep]


def _atoms(p, y, w):
    """Distinct (value, weight) per label."""
    out = []
    for lab in (1, 0):
        sel = y == lab
        v, inv = np.unique(p[sel], return_inverse=True)
        out.append((v, np.bincount(inv, weights=w[sel], minlength=v.size)))
    return out


@declare(**_HOST_INPUTS, rtol=_RTOL, max_iter=Integer(1, 2**16, what="LP refinement rounds"))
def lower_distance_to_calibration(
    probs: Float[Array, " T"],
    labels: Int[Array, " T"],
    *,
    sample_weight: Float[Array, " T"] | None = None,
    rtol: float = 1e-7,
    max_iter: int = 40,
) -> float:
    r"""Lower distance to calibration: the LP relaxation of CalDist, **unnormalised**.

    $$\underline{\mathrm{dCE}} = \min_{\pi \ge 0} \sum_{i, u} \pi_{iu} |v_i - u| \quad
    \text{s.t.}\quad \sum_u \pi_{iu} = w_i,\qquad \sum_i \pi_{iu}(y_i - u) = 0\ \ \forall u,$$
    over atoms $(v_i, y_i, w_i)$ (Błasiok, Gopalan, Hu, Nakkiran 2023, the lower
    distance of the empirical distribution times $T$). Here $u$ ranges over **all of**
    $[0, 1]$: the limit of the LP over ever finer grids $U$. Any grid containing every $k/n$,
    $n \le T$ (all possible group frequencies) gives a value between this one and CalDist, so
    this is a lower bound on the distance to calibration. With the normalised smooth
    calibration error, $\tfrac12\,\underline{\mathrm{dCE}} \le W \cdot \mathrm{smCE} \le
    2\,\underline{\mathrm{dCE}}$ (Błasiok et al. 2023; $W$ = total weight).

    Solved as the structured transport problem it is: for binary $y$ the target $u$ must
    receive $y{=}1$ and $y{=}0$ mass in ratio $u : (1-u)$, and 1-D transport duality turns the
    LP into: maximise $\sum_i w_i f_{y_i}(v_i)$ over 1-Lipschitz $f_0, f_1$ with
    $u f_1(u) + (1-u) f_0(u) \le 0$ on $[0,1]$. Its variables are the values at the distinct
    forecasts only (sparse, $O(A)$ rows with two nonzeros each for $A$ atoms), and the
    continuum of constraints between two breakpoints reduces to one convex quadratic
    inequality, imposed by tangent cuts (cutting planes, HiGHS through highspy, each round
    re-solved from the last basis).

    Certified: the returned value is $\sum_i w_i f_{y_i}(v_i)$ at an *exactly* feasible dual
    point (the solver's point, scaled to Lipschitz constant 1 and shifted down by its largest
    constraint violation, computed in closed form), so it never exceeds the true value; it is
    within ``rtol`` (relative) of the LP optimum unless ``max_iter`` rounds of cuts run out.

    Runs on the host (NumPy/SciPy), not jit-able: it is an LP solved by HiGHS with a
    data-dependent number of cutting-plane rounds. A grid summary with $m = 1000$ (about 2000
    atoms, any $T$) takes 0.3-2 s; the cost grows faster than linearly in the number of
    distinct forecasts (about 15 s for $10^4$). The value is 1-Lipschitz in
    $\sum_t w_t |p_t - p'_t|$, so rounding forecasts to a grid of spacing $h$ before calling
    moves it by at most $hW/2$.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(T,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(T,)``.
        sample_weight: optional non-negative weights (multiplicities), shape ``(T,)``.
        rtol: relative gap between the certified value and the LP optimum at which to stop,
            in $(0, 1)$.
        max_iter: cap on cutting-plane rounds (a positive integer).

    Returns:
        Python float, unnormalised.

    References:
        Błasiok, Gopalan, Hu, Nakkiran (2023), *A unifying theory of distance from
        calibration* (lower distance); Qiao, Zheng (2024), *On the distance from
        calibration in sequential prediction*; Arunachaleswaran et al. (2024), §2 (CalDist of a
        sequence).
    """
    p, y, w, keep = _host_inputs(probs, labels, sample_weight, integer_weights=False)
    (v1, w1), (v0, w0) = _atoms(p[keep], y[keep], w[keep])
    return _lower_lp(v1, w1, v0, w0, rtol, max_iter)[0]


def _witness(one: _Side, zero: _Side, idx1, idx0, path):
    """Per-piece (index, weight, q) of the calibrated forecasts given by a lattice path."""
    path = np.asarray(path, np.float64)
    di, dj = np.diff(path[:, 0]), np.diff(path[:, 1])
    alpha = di / np.where(di + dj > 0, di + dj, 1)
    out = []
    for side, idx, col in ((one, idx1, 0), (zero, idx0, 1)):
        if side.v.size == 0:
            continue
        E = side.E  # element boundaries (cumulative multiplicities) in sorted order
        G = path[:, col]
        cuts = np.unique(np.concatenate([E, G]))
        lo, hi = cuts[:-1], cuts[1:]
        elem = np.searchsorted(E, lo, side="right") - 1
        grp = np.searchsorted(G, lo, side="right") - 1
        out.append((idx[side.order[elem]], hi - lo, alpha[np.clip(grp, 0, alpha.size - 1)]))
    index, weight, q = (np.concatenate(z) for z in zip(*out))
    o = np.argsort(index, kind="stable")
    return CalibratedWitness(index[o], weight[o], q[o])


def _rounded_distance(p, y, w, G, exact, rtol) -> CalibrationDistance:
    """The ``n_bins=G`` path of :func:`distance_to_calibration`: round, solve, widen by δ."""
    r = np.round(p * G) / G
    delta = float(np.sum(w * np.abs(p - r)))
    d = distance_to_calibration(r, y, sample_weight=w, exact=exact, rtol=rtol)
    wit = d.witness
    upper = float(np.sum(wit.weight * np.abs(p[wit.index] - wit.q)))  # the witness against p itself
    lower = max(0.0, d.lower - delta)
    return CalibrationDistance(lower, upper, bool(d.exact and delta == 0.0), wit)


@declare(**_HOST_INPUTS, exact=Optional(Bool()), rtol=_RTOL, n_bins=Optional(BINS))
def distance_to_calibration(
    probs: Float[Array, " T"],
    labels: Int[Array, " T"],
    *,
    sample_weight: Int[Array, " T"] | None = None,
    exact: bool | None = None,
    rtol: float = 1e-7,
    n_bins: int | None = None,
) -> CalibrationDistance:
    r"""Distance to calibration of a sequence, **unnormalised**, exactly or as a certified interval.

    $\mathrm{CalDist}(p, y) = \min_{q : \mathrm{ECE}(q, y) = 0} \sum_t |p_t - q_t|$
    (Arunachaleswaran et al. 2024, §2). Returns ``CalibrationDistance(lower, upper, exact,
    witness)`` with ``lower <= CalDist <= upper``; ``lower == upper`` (and ``exact`` True) when
    the value is exact. ``witness`` holds a perfectly calibrated $q$ whose cost is ``upper``.

    * ``exact=None`` (default): the exact DP when $(n_1+1)(n_0+1) \le 2601$ rounds-pairs
      (about $T \le 100$), otherwise the interval.
    * ``exact=True``: the exact DP ($O(n_1^2 n_0^2)$; refused beyond $(n_1+1)(n_0+1) > 40401$).
    * ``exact=False``: the interval [lower distance, best constructed $q$]; it is reported as
      exact when the two ends meet (within ``rtol``).

    See the module docstring for the structure used and how each end is certified. On
    Almost-One-Step-Ahead runs the upper end stays below $T/m + m + 1$ (the construction
    contains the look-ahead grouping used in the proof of Theorem 1 of Arunachaleswaran et al. 2024).

    Runs on the host (NumPy/SciPy), not jit-able: a combinatorial DP and an LP with
    data-dependent work. Cost: the lower-distance LP, an $O(A \cdot \min(A, 512))$ DP over
    $A$ atoms and three layered DPs along the LP path: one to two seconds for a grid summary
    with $m = 1000$ at any $T$ (measured 1.4 s at $T = 10^6$ on an idle 2-core CPU), about 15 s
    for $10^4$ distinct forecasts (summarise or round such data first; see
    :func:`lower_distance_to_calibration`).

    Args:
        probs: forecasts in $[0, 1]$, shape ``(T,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(T,)``.
        sample_weight: optional non-negative **integer** multiplicities (e.g. from
            :func:`atoms_from_counts`), shape ``(T,)``.
        exact: see above.
        rtol: relative tolerance of the lower-distance LP (and of "the ends meet").
        n_bins: $G$, for many distinct forecasts (continuous forecasters): round the forecasts
            to the grid $\{0, 1/G, \dots, 1\}$ first, so at most $2(G+1)$ atoms remain, and widen the
            interval by $\delta = \sum_t |p_t - \mathrm{round}(p_t)| \le T/(2G)$. CalDist is
            1-Lipschitz in $\ell_1$ (a triangle inequality, as in the proof of Theorem 1), so
            $[\mathrm{lower}(r(p)) - \delta,\ \mathrm{upper}(r(p)) + \delta]$ still contains it;
            the upper end is the witness's cost against the original $p$.

    Returns:
        :class:`CalibrationDistance` (Python floats; unnormalised).

    Examples:
        >>> import numpy as np
        >>> r = distance_to_calibration(np.array([0.2, 0.2, 0.9]), np.array([0, 1, 1]))
        >>> r.exact, round(r.value, 6)
        (True, 0.7)

    References:
        Arunachaleswaran, Collina, Roth, Shi (2024), §2 (CalDist, Lemma 1) and Theorem 1;
        Qiao, Zheng (2024), *On the distance from calibration in sequential prediction*;
        Błasiok, Gopalan, Hu, Nakkiran (2023); Qiao (2026), *Computational and statistical
        hardness of calibration distance* (NP-hardness in general).
    """
    p, y, w, keep = _host_inputs(probs, labels, sample_weight, integer_weights=True)
    if n_bins is not None:
        return _rounded_distance(p, y, w, n_bins, exact, rtol)
    sel1, sel0 = keep[y[keep] == 1], keep[y[keep] == 0]
    one, zero = _Side(p[sel1], w[sel1]), _Side(p[sel0], w[sel0])
    states = (one.n + 1) * (zero.n + 1)
    if exact is None:
        exact = states <= _EXACT_DEFAULT_STATES
    if exact:
        if states > _EXACT_MAX_STATES:
            raise ValueError(
                f"exact=True needs (n1 + 1)(n0 + 1) <= {_EXACT_MAX_STATES} (got {int(states)}); "
                "use exact=None or False for a certified interval"
            )
        val, path = _exact_path(one, zero)
        return CalibrationDistance(val, val, True, _witness(one, zero, sel1, sel0, path))
    (v1, w1), (v0, w0) = _atoms(p[keep], y[keep], w[keep])
    lower, lp_val, u, mu = _lower_lp(v1, w1, v0, w0, rtol, 40)
    # candidate 1: contiguous groups in (p, y) atom order
    best, best_path = _staircase_path(one, zero, span=512 if one.v.size + zero.v.size <= 20000 else 64)
    # candidate 2: round the LP's fractional path, then improve around the best path so far
    o = np.argsort(u, kind="stable")
    guide = np.concatenate([[[0.0, 0.0]], np.stack([np.cumsum(u[o] * mu[o]), np.cumsum((1 - u[o]) * mu[o])], axis=1)])
    guide[-1] = (one.n, zero.n)
    val, path = _layered_path(one, zero, guide)  # LP rounding
    if path is not None and val < best:
        best, best_path = val, path
    for _ in range(2):  # two rounds of local improvement; a round that changed nothing would repeat itself
        val, path = _layered_path(one, zero, best_path)
        if path is None or val >= best:
            break
        best, best_path = val, path
    upper = _path_cost(one, zero, best_path)
    is_exact = upper - lower <= rtol * max(1.0, upper)
    if is_exact:
        lower = upper
    return CalibrationDistance(float(lower), float(upper), bool(is_exact), _witness(one, zero, sel1, sel0, best_path))

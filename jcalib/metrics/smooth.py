r"""Smooth calibration error (exact LP) and smooth ECE (Błasiok–Nakkiran 2023) of binary forecasts.

Both are **normalised** (divided by the total weight), pure ``jax.numpy``, jit- and vmap-able
(no Python branching on values; the bandwidth search is a fixed 10-step bisection).

Input checks: concrete inputs at the Python boundary (``ValueError`` naming the argument);
under ``jit``/``vmap``/``grad``, probabilities in [0, 1] (no NaN), labels in {0, 1} and non-negative finite weights are checked in the graph
with ``eqx.error_if`` unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int

from .._validation import (
    as_float_array,
    check_binary_inputs,
    check_binary_probs,
    check_finite,
    check_hyper,
    check_same_length,
    check_weights,
)
from ._groups import group_sums

__all__ = ["smooth_calibration_error", "smooth_ece", "smooth_ece_at_bandwidth"]


# ------------------------------------------------------------------------------------------
# smCE


def smooth_calibration_error(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Smooth calibration error, exact, **normalised**.

    $$\mathrm{smCE} = \sup_{\eta} \frac1W \sum_i w_i\,\eta(p_i)(y_i - p_i)$$
    over 1-Lipschitz $\eta: [0,1] \to [-1, 1]$ (Kakade–Foster 2008; Błasiok, Gopalan, Hu,
    Nakkiran 2023), $W = \sum_i w_i$. Only $\eta$ at the sorted distinct
    forecasts $v_1 < \dots < v_k$ matters, so it is the LP
    $\max \sum_j r_j \eta_j$ s.t. $|\eta_j| \le 1$, $|\eta_{j+1} - \eta_j| \le v_{j+1} - v_j$,
    with $r_j = \sum_{i: p_i = v_j} w_i (y_i - p_i)$.

    Solved exactly through its dual (a 1-D flat norm): with $R_j = \sum_{l \le j} r_l$ and
    $d_j = v_{j+1} - v_j$,
    $$W \cdot \mathrm{smCE} = \min_{A_0 = 0,\ A_k = R_k} \sum_{j=1}^{k} |A_j - A_{j-1}|
    + \sum_{j=1}^{k-1} d_j\,|A_j - R_j|,$$
    a dynamic programme whose value functions are convex and piecewise linear with kinks only
    at $\{0, R_1, \dots, R_k\}$. One ``lax.scan`` step per forecast adds $d_j|A - R_j|$ and takes
    the 1-Lipschitz lower envelope on that fixed grid, carried as the function's slopes (the
    envelope of a convex function clips its slopes to $[-1, 1]$ and keeps its minimum) plus its
    value at its minimiser: elementwise operations and two reductions per step, exact, jit-
    and vmap-able, $O(n^2)$ time and $O(n)$ memory (Hu, Jambulapati, Tian, Yang 2024 give an
    $O(n \log^2 n)$ algorithm for the same LP; this one trades the log factors for a plain
    fixed-shape scan). Differentiable almost everywhere.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(n,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        sample_weight: optional non-negative weights (multiplicities), shape ``(n,)``.

    Returns:
        Scalar in $[0, 1]$, normalised. ($W \cdot \mathrm{smCE}$ lies between half and twice
        the unnormalised :func:`~jcalib.metrics.lower_distance_to_calibration`.)

    Examples:
        >>> import jax.numpy as jnp
        >>> round(float(smooth_calibration_error(jnp.array([0.2, 0.8]), jnp.array([1, 0]))), 4)
        0.24

    References:
        Kakade, Foster (2008), *Deterministic calibration and Nash equilibrium*; Błasiok,
        Gopalan, Hu, Nakkiran (2023), *A unifying theory of distance from calibration*
        (smCE, and $\tfrac12\underline{\mathrm{dCE}} \le \mathrm{smCE} \le
        2\,\underline{\mathrm{dCE}}$); Hu, Jambulapati, Tian, Yang (2024), *Testing calibration
        in nearly-linear time* (the LP and its flow form).
    """
    p, y, w = check_binary_inputs(probs, labels, sample_weight)
    return _smce(p, y, w)


@jax.jit
def _smce(p, y, w):
    vs, _, (r,) = group_sums(p, w * (y - p))
    # Equal forecasts: r sits at the first of them, the others have r = 0 and gap 0, which
    # leaves the value function unchanged, so no compaction is needed.
    R = jnp.cumsum(r)
    d = jnp.diff(vs)
    grid = jnp.sort(jnp.concatenate([jnp.zeros((1,), R.dtype), R]))
    dx = jnp.diff(grid)
    kR = jnp.searchsorted(grid, R).astype(jnp.int32)  # grid index of each R_j
    i = jnp.arange(dx.size, dtype=jnp.int32)
    # U is convex and piecewise linear on the grid: carry its slopes on the grid intervals and
    # its value at its minimiser (grid index ia). Start: U_0(A) = |A|.
    k0 = jnp.searchsorted(grid, jnp.zeros((), grid.dtype)).astype(jnp.int32)
    s0 = jnp.where(i < k0, -1.0, 1.0).astype(grid.dtype)

    def seg_sum(sl, a, b):  # integral of the slopes from grid point a to grid point b
        lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
        tot = jnp.sum(jnp.where((i >= lo) & (i < hi), sl * dx, 0))
        return jnp.where(b >= a, tot, -tot)

    def step(carry, inp):
        sl, ia, Ua = carry
        dj, kj = inp
        # V = U + d_j |A - R_j|: slopes move by -d_j left of R_j and +d_j right of it
        sv = sl + jnp.where(i < kj, -dj, dj)
        Va = Ua + dj * jnp.abs(grid[ia] - grid[kj])
        im = jnp.sum(sv < 0).astype(ia.dtype)  # minimiser of the convex V: where its slope turns non-negative
        Vm = Va + seg_sum(sv, ia, im)
        # 1-Lipschitz lower envelope of a convex function: clip its slopes, keep its minimum
        return (jnp.clip(sv, -1.0, 1.0), im, Vm), None

    (sl, ia, Ua), _ = lax.scan(step, (s0, k0, jnp.zeros((), grid.dtype)), (d, kR[:-1]))
    val = Ua + seg_sum(sl, ia, kR[-1])
    return val / jnp.sum(w)


# ------------------------------------------------------------------------------------------
# smECE, following relplot's discretisation exactly

_KDE_EPS = 1e-4  # relplot BaseKernelMixin.smooth: density + 1e-4
_SIGMA_EPS = 1e-3  # relplot smECE(eps=0.001): bandwidths below it count as "too small"
_REFINE = 10  # relplot search_param(refine=10)
_MIN_SIGMA = 2.0 / 2**_REFINE  # smallest bandwidth the bisection evaluates (1/1024 < eps)


def _grid_sizes(sigma):
    # relplot: GaussianKernel.apply uses max(2000, round(20/sigma)) // 2 + 1 grid points, and
    # smooth_ece evaluates on max(round(10/sigma), 200) points (ties cannot occur at the
    # bisection's dyadic bandwidths).
    E = jnp.maximum(2000, jnp.round(20.0 / sigma).astype(jnp.int32)) // 2 + 1
    N = jnp.maximum(jnp.round(10.0 / sigma).astype(jnp.int32), 200)
    return E, N


def _static_max(min_sigma: float) -> tuple[int, int]:
    return max(2000, round(20.0 / min_sigma)) // 2 + 1, max(round(10.0 / min_sigma), 200)


def _reflected_smooth(f, vals, sigma, E, Emax):
    """relplot ReflectedGaussianKernel.apply before interpolation, on a static buffer."""
    dt = f.dtype
    Em1 = (E - 1).astype(dt)
    # smooth_round_to_grid: split each mass linearly between its two grid neighbours
    b = jnp.clip(jnp.floor(f * Em1).astype(jnp.int32), 0, E - 2)
    frac = f * Em1 - b.astype(dt)
    grid_vals = jnp.zeros((Emax,), dt).at[b].add((1 - frac) * vals).at[b + 1].add(frac * vals)
    # ext = [flip(values)[:-1], values, flip(values)[1:]]: ext[e] = values[reflect(e - (E-1))]
    e = jnp.arange(3 * Emax, dtype=jnp.int32)
    z = e - (E - 1)
    z = jnp.where(z < 0, -z, jnp.where(z > E - 1, 2 * (E - 1) - z, z))
    ext = jnp.where(e < 3 * E - 2, grid_vals[jnp.clip(z, 0, Emax - 1)], 0)
    # kernel on linspace(0, 1, E), centred at 0.5, unnormalised on the grid (as relplot)
    m = jnp.arange(Emax, dtype=jnp.int32)
    t = m.astype(dt) * (1 / Em1)
    ker = jnp.where(m < E, jnp.exp(-(t - 0.5) ** 2 / (2 * sigma**2)) / (math.sqrt(2 * math.pi) * sigma), 0)
    # np.convolve(ext, ker, "valid")[E//2 : E//2 + E]; ker is symmetric, so
    # out[i] = sum_m ext[i + E//2 + m] ker[m]: a correlation, computed by FFT of a length that
    # holds ext (3 Emax) without wrapping onto the outputs used (indices below 2.5 Emax)
    L = 1 << (3 * Emax - 1).bit_length()
    corr = jnp.fft.irfft(jnp.fft.rfft(ext, L) * jnp.conj(jnp.fft.rfft(ker, L)), L)
    return corr[jnp.clip(jnp.arange(Emax, dtype=jnp.int32) + E // 2, 0, L - 1)]


def _interp(tgrid, y, E):
    """relplot kernels.interpolate on a grid of E points (static buffer ``y``)."""
    dt = y.dtype
    Em1 = (E - 1).astype(dt)
    inds = jnp.clip(jnp.floor(tgrid * Em1).astype(jnp.int32), 0, E - 2)
    bucket = 1 / Em1
    res = (tgrid - inds.astype(dt) * bucket) / bucket
    return y[inds] * (1 - res) + y[inds + 1] * res


def _smece_sigma(p, resid, w, sigma, Emax, Nmax):
    """relplot metrics.smooth_ece(f, y, sigma) with weights (a weight k = k repeated points)."""
    E, N = _grid_sizes(sigma)
    dt = p.dtype
    k = jnp.arange(Nmax, dtype=jnp.int32)
    tgrid = k.astype(dt) * (1 / (N - 1).astype(dt))
    ys = _interp(tgrid, _reflected_smooth(p, w * resid, sigma, E, Emax), E)
    dens = _interp(tgrid, _reflected_smooth(p, w, sigma, E, Emax), E) + _KDE_EPS
    mask = k < N
    return jnp.sum(jnp.where(mask, jnp.abs(ys / dens) * dens, 0)) / jnp.sum(jnp.where(mask, dens, 0))


def smooth_ece_at_bandwidth(
    probs: Float[Array, " n"],
    residuals: Float[Array, " n"],
    sigma,
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""smECE$_\sigma$ at a given bandwidth $\sigma \ge 2^{-9}$ (Błasiok–Nakkiran 2023).

    The kernel-smoothed residual $\hat r_\sigma$ and density $\hat\delta_\sigma$ on [0, 1],
    $\mathrm{smECE}_\sigma = \int |\hat r_\sigma(t)|\,dt / \int \hat\delta_\sigma(t)\,dt$ on
    relplot's grid; :func:`smooth_ece` is this at the fixed point $\mathrm{smECE}_\sigma = \sigma$.
    Differentiable in ``probs``, ``residuals`` (usually ``probs - labels``) and ``sample_weight``
    (default: all ones);
    training losses (:mod:`jcalib.losses`) differentiate it at the metric's own $\sigma$.
    Checks: ``probs`` in [0, 1], finite ``residuals``, non-negative finite ``sample_weight`` of
    one length, and a finite scalar $\sigma \ge 2^{-9}$ (concrete values at the boundary; traced
    arrays in the graph, see :mod:`jcalib.config`).
    """
    p = check_binary_probs(probs, "probs")
    r = check_finite(as_float_array(residuals, "residuals"), "residuals")
    if p.ndim != 1 or r.ndim != 1:
        raise ValueError(f"probs and residuals must be 1-D, got shapes {tuple(p.shape)} and {tuple(r.shape)}")
    n = check_same_length(probs=p, residuals=r)
    w = check_weights(sample_weight, n, positive_total=True)
    w = jnp.ones_like(p) if w is None else w.astype(p.dtype)
    check_hyper(sigma, "sigma", _MIN_SIGMA)
    return _smece_sigma(p, r, w, sigma, *_static_max(_MIN_SIGMA))


def smooth_ece(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    return_bandwidth: bool = False,
) -> Float[Array, ""] | tuple[Float[Array, ""], Float[Array, ""]]:
    r"""SmoothECE of Błasiok and Nakkiran (2023), **normalised**, matching ``relplot.smECE``.

    $$\mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(t)|\,\hat\delta_\sigma(t)\,dt, \qquad
    \hat r_\sigma = \frac{K_\sigma * \sum_i w_i (p_i - y_i)\delta_{p_i}}{K_\sigma * \sum_i w_i
    \delta_{p_i}},\quad \hat\delta_\sigma = K_\sigma * \sum_i w_i \delta_{p_i}$$
    (normalised by the integral of $\hat\delta_\sigma$), with $K_\sigma$ the Gaussian kernel
    reflected at 0 and 1, and $\sigma$ the fixed point $\mathrm{smECE}_\sigma = \sigma$.

    Discretisation exactly as the reference implementation ``relplot`` (Apple, 2023), so the
    values agree to float round-off: masses are split linearly onto
    $E = \lfloor\max(2000, \mathrm{round}(20/\sigma))/2\rfloor + 1$ grid points, convolved
    with the Gaussian sampled on that grid (truncated to $|t| \le 1/2$, one reflection at each
    end), interpolated onto $\max(\mathrm{round}(10/\sigma), 200)$ evaluation points, and the
    density gets $+10^{-4}$; $\sigma$ is found by relplot's bisection (start at 1, 10 halvings,
    keep the smallest $\sigma$ with $\sigma \ge \mathrm{smECE}_\sigma$, bandwidths below
    $10^{-3}$ count as too small). Grids depend on $\sigma$, so they live in static buffers
    sized for the smallest bandwidth evaluated ($2^{-9}$) and are masked: jit- and vmap-able,
    differentiable in ``probs`` almost everywhere. Sample weights act as multiplicities.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(n,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        sample_weight: optional non-negative weights, shape ``(n,)``.
        return_bandwidth: also return the bandwidth $\sigma$.

    Returns:
        Scalar, normalised (and $\sigma$ if asked).

    References:
        Błasiok, Nakkiran (2023), *Smooth ECE: Principled reliability diagrams via kernel
        smoothing* (smECE, reflected kernel, fixed-point bandwidth);
        the ``relplot`` package (``relplot.metrics.smECE``).
    """
    p, y, w = check_binary_inputs(probs, labels, sample_weight)
    val, sigma = _smooth_ece(p, y, w)
    return (val, sigma) if return_bandwidth else val


@jax.jit
def _smooth_ece(p, y, w):
    Emax, Nmax = _static_max(_MIN_SIGMA)
    resid = p - y
    return _bisect(lambda s: _smece_sigma(p, resid, w, s, Emax, Nmax), p.dtype)


def _bisect(value, dt):
    """relplot's search_param(refine=10) for the smallest sigma with sigma >= smECE_sigma."""

    def too_small(s, v):  # relplot: alpha < eps or alpha < smooth_ece(alpha)
        return (s < _SIGMA_EPS) | (s < v)

    one = jnp.asarray(1.0, dt)
    v1 = value(one)

    def body(_, carry):
        start, end, vstart = carry
        mid = (start + end) / 2
        vm = value(jnp.maximum(mid, _MIN_SIGMA))  # below 2^-9 the value is not used
        small = too_small(mid, vm)
        return jnp.where(small, start, mid), jnp.where(small, mid, end), jnp.where(small, vstart, vm)

    # value may be batched (one bandwidth search per row of a batch): carries take its shape
    start, _, vstart = lax.fori_loop(0, _REFINE, body, (jnp.broadcast_to(one, v1.shape), jnp.zeros(v1.shape, dt), v1))
    done = too_small(one, v1)  # relplot returns sigma = 1 at once when it already qualifies
    return jnp.where(done, v1, vstart), jnp.where(done, one, start)


def reflected_kernel_sum(
    probs: Float[Array, " n"], values: Float[Array, " n"], sigma, points: Float[Array, " m"]
) -> Float[Array, " m"]:
    r"""$\sum_i v_i K_\sigma(t, p_i)$ at the points $t$, on relplot's grid (no checks).

    $K_\sigma$ is the Gaussian kernel reflected at 0 and 1, discretised exactly as
    :func:`smooth_ece` does (relplot's ``ReflectedGaussianKernel(sigma).apply``): smooth
    reliability curves and forecast densities (:func:`jcalib.stats.smooth_calibration_curve`)
    are ratios and normalisations of it. Needs $\sigma \ge 2^{-9}$; jit- and vmap-able.
    """
    Emax, _ = _static_max(_MIN_SIGMA)
    E, _ = _grid_sizes(sigma)
    return _interp(points, _reflected_smooth(probs, values, sigma, E, Emax), E)


# ------------------------------------------------------------------------------------------
# smECE of count vectors over fixed forecasts: the bootstrap's fast path


def _grid_classes() -> tuple[tuple[int, int], ...]:
    """The distinct relplot grids of the bisection's bandwidths k/1024 >= 2^-9: (E, largest N)."""
    by: dict[int, int] = {}
    for k in range(2, 2**_REFINE + 1):
        s = k / 2**_REFINE
        E, N = max(2000, round(20 / s)) // 2 + 1, max(round(10 / s), 200)
        by[E] = max(by.get(E, 0), N)
    return tuple(sorted(by.items()))


_CLASSES = _grid_classes()  # ((1001, 931), (1025, 1024), ..., (5121, 5120)): sigma >= 11/1024 is the first
_SLOT = 32  # rows per slot of the per-grid layouts


class _CountTables(NamedTuple):
    """Per-grid layouts of fixed forecasts for :func:`_smooth_ece_of_counts` (one entry per grid size).

    Rows are taken in sorted order of the forecasts, so the rows of one grid cell are
    consecutive; each cell's rows are cut into slots of ``_SLOT`` (padded with the index $n$ of
    an all-zero row). ``coef[c][t, s]`` holds the four masses row ``rows[c][t, s]`` puts on its
    two grid neighbours (weight and weighted residual, each split by the interpolation
    fraction), ``cell[c][t]`` the cell of slot ``t``.
    """

    rows: tuple
    coef: tuple
    cell: tuple
    place: Array  # flat position of each sorted forecast in the first grid's layout, (n,)
    occupied: Array  # which positions of that layout hold a forecast, (slots * _SLOT,)


def smooth_ece_count_tables(p, resid, w) -> _CountTables:
    """Layouts of forecasts ``p`` with residuals ``resid`` and weights ``w`` (traceable, O(n log n))."""
    n = p.shape[0]
    order = jnp.argsort(p)
    ps, vw = p[order], w[order]
    vr = vw * resid[order]
    dt = p.dtype
    rows, coef, cell = [], [], []
    for E, _ in _CLASSES:
        Em1 = jnp.asarray(E - 1, dt)
        b = jnp.clip(jnp.floor(ps * Em1).astype(jnp.int32), 0, E - 2)  # as _reflected_smooth splits
        frac = ps * Em1 - b.astype(dt)
        size = jax.ops.segment_sum(jnp.ones((n,), jnp.int32), b, num_segments=E - 1, indices_are_sorted=True)
        first = jnp.cumsum(size) - size
        n_slots = -(-size // _SLOT)
        slot0 = jnp.cumsum(n_slots) - n_slots
        k = jnp.arange(n, dtype=jnp.int32) - first[b]
        slot, pos = slot0[b] + k // _SLOT, k % _SLOT
        T = n // _SLOT + E  # static bound on the slots: each cell wastes less than one
        r = jnp.full((T, _SLOT), n, jnp.int32).at[slot, pos].set(jnp.arange(n, dtype=jnp.int32))
        a = jnp.stack([(1 - frac) * vw, frac * vw, (1 - frac) * vr, frac * vr], axis=1)
        a = jnp.concatenate([a, jnp.zeros((1, 4), dt)])
        rows.append(r)
        coef.append(a[r])
        cell.append(jnp.full((T,), E - 2, jnp.int32).at[slot].set(b))  # unused slots last: sorted
        if len(rows) == 1:
            place = slot * _SLOT + pos
            occupied = jnp.zeros((T * _SLOT,), bool).at[place].set(True)
    return _CountTables(tuple(rows), tuple(coef), tuple(cell), place, occupied)


def _counts_in_layout(counts, tables: _CountTables):
    """Count vectors per sorted forecast ``(B, n)`` placed in the first grid's layout, as
    :func:`_smooth_ece_of_counts` takes them."""
    return jnp.zeros((counts.shape[0], tables.occupied.shape[0]), counts.dtype).at[:, tables.place].set(counts)


def _class_spectrum(counts, tables, c):
    """rfft of the even periodic extension of grid c's two smoothed-to-be histograms, (P/2+1, 2).

    ``counts`` in the first grid's layout (see :func:`_counts_in_layout`)."""
    E = _CLASSES[c][0]
    if c == 0:  # already laid out: no gather
        M = counts.reshape(tables.rows[0].shape)
    else:  # back to sorted order, then into grid c's layout
        m_pad = jnp.concatenate([counts[tables.place], jnp.zeros((1,), counts.dtype)])
        M = m_pad[tables.rows[c]]
    sums = jnp.sum(M[:, :, None] * tables.coef[c], axis=1)  # (slots, 4): one fused multiply-reduce
    return _cells_spectrum(jax.ops.segment_sum(sums, tables.cell[c], num_segments=E, indices_are_sorted=True))


def _cells_spectrum(cells):
    """The spectrum of :func:`_class_spectrum` from the four masses per grid cell, ``(E, ..., 4)``."""
    E = cells.shape[0]
    lower, upper = cells[..., 0::2], cells[..., 1::2]  # masses on a cell's left and right grid point
    h = lower + jnp.concatenate([jnp.zeros_like(upper[:1]), upper[:-1]])  # (E, ..., 2): weight, residual
    # relplot reflects the grid values at both ends: an even sequence of period P = 2(E - 1)
    return jnp.fft.rfft(jnp.concatenate([h, h[E - 2 : 0 : -1]]), axis=0)


def _kernel_spectrum(sigma, c, dt):
    """The conjugate rfft of grid c's kernel at bandwidth sigma, placed for :func:`_class_value`."""
    E = _CLASSES[c][0]
    P = 2 * (E - 1)
    # out[i] = sum_m ker[m] ext[i + E//2 + m] with ext the periodic extension: a circular
    # correlation with the kernel placed at offsets m + E//2 - (E - 1) (mod P)
    m = (np.arange(P) - E // 2 + (E - 1)) % P
    t = jnp.asarray(np.minimum(m, E - 1), jnp.int32).astype(dt) * (1 / jnp.asarray(E - 1, dt))
    gauss = jnp.exp(-((t - 0.5) ** 2) / (2 * sigma**2)) / (math.sqrt(2 * math.pi) * sigma)
    return jnp.conj(jnp.fft.rfft(jnp.where(jnp.asarray(m < E), gauss, 0)))


def _class_value(spec, sigma, c, kspec=None):
    """smECE_sigma from a grid's spectrum: the same numbers as _smece_sigma, by periodic FFTs.

    ``kspec``: the kernel's :func:`_kernel_spectrum`, when it is already known."""
    E, Nmax = _CLASSES[c]
    P = 2 * (E - 1)
    dt = spec.real.dtype
    kspec = _kernel_spectrum(sigma, c, dt) if kspec is None else kspec
    out = jnp.fft.irfft(spec * kspec[:, None], P, axis=0)[:E]
    N = jnp.maximum(jnp.round(10.0 / sigma).astype(jnp.int32), 200)
    k = jnp.arange(Nmax, dtype=jnp.int32)
    tgrid = k.astype(dt) * (1 / (N - 1).astype(dt))
    E_ = jnp.asarray(E, jnp.int32)
    dens = _interp(tgrid, out[:, 0], E_) + _KDE_EPS
    ys = _interp(tgrid, out[:, 1], E_)
    mask = k < N
    return jnp.sum(jnp.where(mask, jnp.abs(ys / dens) * dens, 0)) / jnp.sum(jnp.where(mask, dens, 0))


def smooth_ece_of_draws(draws, tables: _CountTables, counts):
    r""":func:`_smooth_ece_of_counts` of a batch of bootstrap draws, values and bandwidths.

    ``draws`` is :func:`jcalib.stats._multinomial.multinomial_draws` on the first grid's layout
    (``tables.occupied`` as ``(slots, 32)``) with the coefficients ``tables.coef[0]``: its sums
    are the first grid's four masses per slot, so only a segment sum into the cells and the
    extra draws' coefficients remain (no count vector is laid out per resample). The bisection
    runs on that grid alone; when some resample's bisection evaluates a bandwidth below
    $11/1024$ (another grid; smooth ECE below about 0.01), the whole batch goes through
    :func:`_smooth_ece_of_counts` with the count vectors ``counts()`` (a real branch).
    """
    T, B, _ = draws.sums.shape
    E = _CLASSES[0][0]
    coef = tables.coef[0]
    cells = jax.ops.segment_sum(draws.sums[..., :4], tables.cell[0], num_segments=E, indices_are_sorted=True)
    pos = tables.place[draws.extra]  # (B, K) flat positions of the extra draws
    add = coef.reshape(-1, 4)[pos] * draws.live[..., None].astype(coef.dtype)
    cells = cells.at[tables.cell[0][pos // coef.shape[1]], jnp.arange(B)[:, None]].add(add)  # (E, B, 4)
    spec0 = jnp.moveaxis(_cells_spectrum(cells), 1, 0)  # (B, P/2 + 1, 2)

    # the bisection's bandwidths are multiples of 2^-10: their kernels' spectra once for all resamples
    steps = 2**_REFINE
    ks = jnp.arange(1, steps + 1, dtype=coef.dtype)
    kspecs = jax.vmap(lambda k: _kernel_spectrum(k / steps, 0, coef.dtype))(ks)  # (1024, P/2 + 1)

    def value(s):  # NaN where s needs another grid: the search then stays on such bandwidths
        s = jnp.broadcast_to(s, (B,))
        k = jnp.clip(jnp.round(s * steps).astype(jnp.int32), 1, steps)
        v = jax.vmap(lambda sp, si, ki: _class_value(sp, si, 0, kspecs[ki - 1]))(spec0, s, k)
        return jnp.where(_grid_sizes(s)[0] == E, v, jnp.nan)

    v, sigma = _bisect(value, coef.dtype)
    fine = jnp.isnan(v)

    def other_grids(vs):
        vf, sf = _smooth_ece_of_counts(counts().astype(coef.dtype), tables, spec0)
        return jnp.where(fine, vf, vs[0]), jnp.where(fine, sf, vs[1])

    return lax.cond(jnp.any(fine), other_grids, lambda vs: vs, (v, sigma))


def _smooth_ece_of_counts(counts, tables: _CountTables, spec0=None):
    r""":func:`smooth_ece` (values, bandwidths) of the forecasts in ``tables`` repeated ``counts`` times.

    ``counts`` is a batch of count vectors in the first grid's layout, ``(B, slots * 32)``
    (:func:`_counts_in_layout` puts vectors over the forecasts **in sorted order** there; a
    bootstrap resample's count vector needs no order, so it can be drawn in place:
    :func:`jcalib.stats._multinomial.counts_by_position` with ``tables.place``). ``spec0``:
    the first grid's spectra, ``(B, P/2 + 1, 2)``, when they are already known.
    Equal to ``smooth_ece`` of the repeated rows to float round-off, at $O(n)$ gathers and
    multiply-adds per count vector and FFTs of length $2(E - 1)$ batched over the $B$ rows (E =
    1001 for every $\sigma \ge 11/1024$) — no scatter of $n$ points. The other grids are built
    only when some row's bandwidth search reaches them (a real branch on the whole batch).
    """
    dt = tables.coef[0].dtype
    B = counts.shape[0]
    m_pad = counts.astype(dt)
    if spec0 is None:
        spec0 = jax.vmap(lambda m: _class_spectrum(m, tables, 0))(m_pad)
    sizes = jnp.asarray([E for E, _ in _CLASSES], jnp.int32)

    def value(s):
        s = jnp.broadcast_to(s, (B,))
        cls = jnp.searchsorted(sizes, _grid_sizes(s)[0])
        v = jax.vmap(lambda sp, si: _class_value(sp, si, 0))(spec0, s)
        for c in range(1, len(_CLASSES)):

            def other(v, c=c):
                vc = jax.vmap(lambda m, si: _class_value(_class_spectrum(m, tables, c), si, c))(m_pad, s)
                return jnp.where(cls == c, vc, v)

            v = lax.cond(jnp.any(cls == c), other, lambda v: v, v)
        return v

    return _bisect(value, dt)

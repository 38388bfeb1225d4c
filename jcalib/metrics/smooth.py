r"""Smooth calibration error (exact LP) and smooth ECE (Błasiok–Nakkiran 2023) of binary forecasts.

Both are **normalised** (divided by the total weight), pure ``jax.numpy``, jit- and vmap-able
(no Python branching on values; the bandwidth search is a fixed 10-step bisection).

Input checks: each public function declares its inputs (``jcalib._validation.declare``):
concrete inputs are checked at the Python boundary (``ValueError`` naming the argument); under
``jit``/``vmap``/``grad``, probabilities in [0, 1] (no NaN), labels in {0, 1}, non-negative
finite weights with a positive total and the bandwidth are checked in the graph with
``eqx.error_if`` unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int

from .._validation import BinaryProbs, Bool, Real, RealArray, Weights, binary_inputs, bucket_size, declare, pad_rows
from ._groups import group_sums

__all__ = ["smooth_calibration_error", "smooth_ece", "smooth_ece_at_bandwidth"]


# ------------------------------------------------------------------------------------------
# smCE


@declare(**binary_inputs())
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
    return _smce(probs, labels, sample_weight)  # checked by the declaration: float labels, weights filled


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
    """relplot ReflectedGaussianKernel.apply before interpolation, on a static buffer; ``vals``
    ``(n,)`` or ``(n, k)`` (k series smoothed together, each as on its own)."""
    dt = f.dtype
    Em1 = (E - 1).astype(dt)
    # smooth_round_to_grid: split each mass linearly between its two grid neighbours
    b = jnp.clip(jnp.floor(f * Em1).astype(jnp.int32), 0, E - 2)
    frac = (f * Em1 - b.astype(dt)).reshape((-1,) + (1,) * (vals.ndim - 1))
    grid_vals = jnp.zeros((Emax,) + vals.shape[1:], dt).at[b].add((1 - frac) * vals).at[b + 1].add(frac * vals)
    return _smooth_grid(grid_vals, sigma, E, Emax)


def _smooth_grid(grid_vals, sigma, E, Emax):
    """relplot's reflected convolution of the grid values ``(Emax, ...)`` (the first ``E`` used)."""
    dt = grid_vals.dtype
    Em1 = (E - 1).astype(dt)
    # ext = [flip(values)[:-1], values, flip(values)[1:]]: ext[e] = values[reflect(e - (E-1))]
    e = jnp.arange(3 * Emax, dtype=jnp.int32)
    z = e - (E - 1)
    z = jnp.where(z < 0, -z, jnp.where(z > E - 1, 2 * (E - 1) - z, z))
    inside = (e < 3 * E - 2).reshape((-1,) + (1,) * (grid_vals.ndim - 1))
    ext = jnp.where(inside, grid_vals[jnp.clip(z, 0, Emax - 1)], 0)
    # kernel on linspace(0, 1, E), centred at 0.5, unnormalised on the grid (as relplot)
    m = jnp.arange(Emax, dtype=jnp.int32)
    t = m.astype(dt) * (1 / Em1)
    ker = jnp.where(m < E, jnp.exp(-(t - 0.5) ** 2 / (2 * sigma**2)) / (math.sqrt(2 * math.pi) * sigma), 0)
    # np.convolve(ext, ker, "valid")[E//2 : E//2 + E]; ker is symmetric, so
    # out[i] = sum_m ext[i + E//2 + m] ker[m]: a correlation, computed by FFT of a length that
    # holds ext (3 Emax) without wrapping onto the outputs used (indices below 2.5 Emax)
    L = 1 << (3 * Emax - 1).bit_length()
    kspec = jnp.conj(jnp.fft.rfft(ker, L)).reshape((-1,) + (1,) * (grid_vals.ndim - 1))
    corr = jnp.fft.irfft(jnp.fft.rfft(ext, L, axis=0) * kspec, L, axis=0)
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
    # the density and the residual in one pass (one scatter and one pair of FFTs of two columns:
    # the same numbers as two passes, a smaller program)
    both = _reflected_smooth(p, jnp.stack([w, w * resid], axis=1), sigma, E, Emax)
    return _grid_value(both[:, 0], both[:, 1], E, N, Nmax)


def _grid_value(dens_grid, resid_grid, E, N, Nmax):
    """relplot metrics.smooth_ece from the smoothed density and residual on a grid of E points
    (static buffers): interpolated onto N evaluation points, density + 1e-4."""
    dt = dens_grid.dtype
    k = jnp.arange(Nmax, dtype=jnp.int32)
    tgrid = k.astype(dt) * (1 / (N - 1).astype(dt))
    ys = _interp(tgrid, resid_grid, E)
    dens = _interp(tgrid, dens_grid, E) + _KDE_EPS
    mask = k < N
    return jnp.sum(jnp.where(mask, jnp.abs(ys / dens) * dens, 0)) / jnp.sum(jnp.where(mask, dens, 0))


@declare(probs=BinaryProbs(), residuals=RealArray(length_of="probs"), sigma=Real(_MIN_SIGMA),
         sample_weight=Weights(length_of="probs", fill=True))
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
    return _smooth_ece_at(probs, residuals, sample_weight, sigma)


@jax.jit
def _smooth_ece_at(p, r, w, sigma):
    # one compiled program (operation by operation, a first call compiled dozens)
    return _smece_sigma(p, r, w, sigma, *_static_max(_MIN_SIGMA))


@declare(**binary_inputs(), return_bandwidth=Bool())
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
    Concrete inputs are padded with rows of zero weight to the next size of a ladder (256, then
    four sizes per doubling): one compiled program serves every $n$ of a bucket, and the
    padding changes no bit of the result.

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
    # checked by the declaration; concrete inputs padded with rows of zero weight to a size
    # bucket, so that one compiled program serves every n in the bucket (the same numbers: a
    # zero mass adds 0.0 to the grid, and nothing else sums over the rows)
    val, sigma = _smooth_ece(*pad_rows((probs, labels, sample_weight), bucket_size(probs.shape[0])))
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
        # below 10^-3 the value is not used (too small whatever it is): evaluated at 1 instead,
        # on the first grid, so that no finer grid is built for it
        vm = value(jnp.where(mid < _SIGMA_EPS, one, mid))
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
_E0 = _CLASSES[0][0]  # the grid of every bandwidth >= 11/1024
_FINE_E = tuple(E for E, _ in _CLASSES[1:])  # the finer grids of the bandwidths 2/1024 ... 10/1024
_EMAX, _NMAX = _static_max(_MIN_SIGMA)  # the finest grid: (5121, 5120)
# the one bisection bandwidth k/1024 of each finer grid (k = 10, 9, ..., 2)
_FINE_K = tuple(next(k for k in range(2, 11) if max(2000, round(20 * 2**_REFINE / k)) // 2 + 1 == E) for E in _FINE_E)
_SLOT = 32  # rows per slot of the first grid's layout
# cells of finer grid c that one slot of the first grid can meet: its rows lie in one cell of
# width 1/1000, so their cells of grid c span ceil((E_c - 1)/1000) + 1, one more for rounding
_FINE_J = tuple(-(-(E - 1) // 1000) + 2 for E in _FINE_E)


class _FineTables(NamedTuple):
    """The finer grids' coefficients on the first grid's layout (see :class:`_CountTables`):
    grid ``c`` (0 to 8: $E = 1025, ..., 5121$) in entry ``c`` of each array."""

    coef: Array  # (9, slots, 32, 4): the row's four masses on grid c's two neighbours (0: none)
    local: Array  # (9, slots, 32): its cell of grid c minus the cell of its slot's first row
    base: Array  # (9, slots): the cell of grid c of each slot's first row
    kspecs: tuple  # each finer grid's kernel spectrum at its one bisection bandwidth, (P_c/2 + 1,)


class _CountTables(NamedTuple):
    """Fixed forecasts laid out for :func:`smooth_ece_of_counts` and :func:`smooth_ece_of_draws`.

    Rows are taken in sorted order of the forecasts, so the rows of one cell of the first grid
    ($E_0 = 1001$ points) are consecutive; each cell's rows are cut into slots of ``_SLOT``
    (padded with the index $n$ of an all-zero row). ``coef[t, s]`` holds the four masses row
    ``rows[t, s]`` puts on its two grid neighbours (weight and weighted residual, each split by
    the interpolation fraction $x$), ``cell[t]`` the cell of slot ``t``.

    The nine finer grids ($E = 1025, ..., 5121$, one per bisection bandwidth $2/1024, ...,
    10/1024$) use the same layout, with coefficients of their own in ``fine`` (``None`` until
    built: :func:`smooth_ece_fine_tables`): each row's four masses on that grid, and its cell
    of that grid relative to the cell of its slot's first row (a slot meets a few cells of a
    finer grid, so a batch of count vectors reduces to them in one matrix product per slot).
    """

    rows: Array  # (slots, 32) sorted row at each position (n: none)
    coef: Array  # (slots, 32, 4)
    cell: Array  # (slots,)
    place: Array  # flat position of each sorted forecast in the layout, (n,)
    occupied: Array  # which positions of the layout hold a forecast, (slots * 32,)
    order: Array  # the row of each sorted forecast, (n,)
    kspecs: Array  # the first grid's kernel spectra at the bandwidths k/1024, (1024, P/2 + 1)
    fine: _FineTables | None = None


def _slot_layout(ps, E, S: int, cells: int):
    """Sorted forecasts ``ps`` cut into slots of ``S`` rows per cell of grid E (traced E allowed,
    at most ``cells + 1`` points): (slot, place in slot, cell, fraction) of each row."""
    n = ps.shape[0]
    dt = ps.dtype
    Em1 = (jnp.asarray(E, jnp.int32) - 1).astype(dt)
    b = jnp.clip(jnp.floor(ps * Em1).astype(jnp.int32), 0, E - 2)  # as _reflected_smooth splits
    frac = ps * Em1 - b.astype(dt)
    size = jax.ops.segment_sum(jnp.ones((n,), jnp.int32), b, num_segments=cells, indices_are_sorted=True)
    first = jnp.cumsum(size) - size
    n_slots = -(-size // S)
    slot0 = jnp.cumsum(n_slots) - n_slots
    k = jnp.arange(n, dtype=jnp.int32) - first[b]
    return slot0[b] + k // S, k % S, b, frac


def _four_masses(frac, vw, vr):
    return jnp.stack([(1 - frac) * vw, frac * vw, (1 - frac) * vr, frac * vr], axis=1)


def smooth_ece_count_tables(p, resid, w, *, fine: bool = True) -> _CountTables:
    """Layouts of forecasts ``p`` with residuals ``resid`` and weights ``w`` (traceable, O(n log n));
    the finer grids' too unless ``fine=False`` (:func:`smooth_ece_fine_tables` adds them later)."""
    n = p.shape[0]
    order = jnp.argsort(p)
    ps, vw = p[order], w[order]
    vr = vw * resid[order]
    dt = p.dtype
    E = _E0
    T = n // _SLOT + E  # static bound on the slots: each cell wastes less than one
    slot, pos, b, frac = _slot_layout(ps, E, _SLOT, E - 1)
    rows = jnp.full((T, _SLOT), n, jnp.int32).at[slot, pos].set(jnp.arange(n, dtype=jnp.int32))
    coef = jnp.concatenate([_four_masses(frac, vw, vr), jnp.zeros((1, 4), dt)])[rows]
    cell = jnp.full((T,), E - 2, jnp.int32).at[slot].set(b)  # unused slots last: sorted
    place = slot * _SLOT + pos
    occupied = jnp.zeros((T * _SLOT,), bool).at[place].set(True)
    steps = 2**_REFINE
    kspecs = jax.vmap(lambda k: _kernel_spectrum(k / steps, dt))(jnp.arange(1, steps + 1, dtype=dt))
    tables = _CountTables(rows, coef, cell, place, occupied, order, kspecs)
    return smooth_ece_fine_tables(p, resid, w, tables) if fine else tables


def smooth_ece_fine_tables(p, resid, w, tables: _CountTables) -> _CountTables:
    """``tables`` (of the same ``p``, ``resid``, ``w``) with the finer grids' coefficients
    (:class:`_FineTables`), built in one program for the nine grids (traceable)."""
    order = tables.order
    ps, vw = p[order], w[order]
    vr = vw * resid[order]
    dt = p.dtype
    n = ps.shape[0]
    rows = tables.rows

    def layout(Ec):
        Em1 = (Ec - 1).astype(dt)
        b = jnp.clip(jnp.floor(ps * Em1).astype(jnp.int32), 0, Ec - 2)  # as _reflected_smooth splits
        frac = ps * Em1 - b.astype(dt)
        coef = jnp.concatenate([_four_masses(frac, vw, vr), jnp.zeros((1, 4), dt)])[rows]
        cell = jnp.concatenate([b, jnp.zeros((1,), jnp.int32)])[rows]  # (slots, 32); no row: 0
        base = jnp.where(rows[:, 0] < n, cell[:, 0], 0)  # a used slot's first place holds a row
        return coef, jnp.where(rows < n, cell - base[:, None], 0), base

    coef, local, base = lax.map(layout, jnp.asarray(_FINE_E, jnp.int32))
    steps = 2**_REFINE
    kspecs = tuple(_kernel_spectrum(jnp.asarray(k / steps, dt), dt, E) for k, E in zip(_FINE_K, _FINE_E))
    return tables._replace(fine=_FineTables(coef, local, base, kspecs))


def _counts_in_layout(counts, tables: _CountTables):
    """Count vectors per sorted forecast ``(B, n)`` placed in the layout, as
    :func:`smooth_ece_of_counts` takes them."""
    return jnp.zeros((counts.shape[0], tables.occupied.shape[0]), counts.dtype).at[:, tables.place].set(counts)


def _class_spectrum(counts, tables):
    """rfft of the even periodic extension of the first grid's two smoothed-to-be histograms,
    ``(P/2+1, 2)``, of a count vector in the layout (see :func:`_counts_in_layout`)."""
    M = counts.reshape(tables.rows.shape)
    sums = jnp.sum(M[:, :, None] * tables.coef, axis=1)  # (slots, 4): one fused multiply-reduce
    return _cells_spectrum(jax.ops.segment_sum(sums, tables.cell, num_segments=_E0, indices_are_sorted=True))


def _cells_spectrum(cells):
    """The spectrum of :func:`_class_spectrum` from the four masses per grid cell, ``(E, ..., 4)``."""
    E = cells.shape[0]
    lower, upper = cells[..., 0::2], cells[..., 1::2]  # masses on a cell's left and right grid point
    h = lower + jnp.concatenate([jnp.zeros_like(upper[:1]), upper[:-1]])  # (E, ..., 2): weight, residual
    # relplot reflects the grid values at both ends: an even sequence of period P = 2(E - 1)
    return jnp.fft.rfft(jnp.concatenate([h, h[E - 2 : 0 : -1]]), axis=0)


def _kernel_spectrum(sigma, dt, E=_E0):
    """The conjugate rfft of grid E's kernel at bandwidth sigma, placed for :func:`_class_value`."""
    P = 2 * (E - 1)
    # out[i] = sum_m ker[m] ext[i + E//2 + m] with ext the periodic extension: a circular
    # correlation with the kernel placed at offsets m + E//2 - (E - 1) (mod P)
    m = (np.arange(P) - E // 2 + (E - 1)) % P
    t = jnp.asarray(np.minimum(m, E - 1), jnp.int32).astype(dt) * (1 / jnp.asarray(E - 1, dt))
    gauss = jnp.exp(-((t - 0.5) ** 2) / (2 * sigma**2)) / (math.sqrt(2 * math.pi) * sigma)
    return jnp.conj(jnp.fft.rfft(jnp.where(jnp.asarray(m < E), gauss, 0)))


def _class_value(spec, sigma, kspec):
    """smECE_sigma (sigma >= 11/1024) from the first grid's spectrum and the kernel's
    :func:`_kernel_spectrum`: the same numbers as _smece_sigma, by periodic FFTs of length 2000."""
    E, Nmax = _CLASSES[0]
    out = jnp.fft.irfft(spec * kspec[:, None], 2 * (E - 1), axis=0)[:E]
    N = jnp.maximum(jnp.round(10.0 / sigma).astype(jnp.int32), 200)
    return _grid_value(out[:, 0], out[:, 1], jnp.asarray(E, jnp.int32), N, Nmax)


def _fine_values(counts, sigma, tables: _CountTables, c: int):
    """smECE_sigma on finer grid ``c`` (0 to 8: E = 1025 ... 5121; sigma its one bisection
    bandwidth, 10/1024 ... 2/1024) of a batch of count vectors in the first grid's layout,
    with the batch axis between the slot axes, ``(slots, B, 32)``.

    A slot of the first grid (32 rows of one of its cells) meets at most ``_FINE_J[c]`` cells of
    grid ``c``, so its masses on them are one batched matrix product per slot, ``(B, 32)`` by
    ``(32, 4 J)`` (the rows' four masses, each in the column of its cell), added into the grid's
    cells; then relplot's reflected convolution as a periodic one on the grid's own length
    $2(E - 1)$."""
    ft = tables.fine
    E, Nmax = _CLASSES[c + 1]
    J = _FINE_J[c]
    T, B, S = counts.shape
    dt = ft.coef.dtype
    M = counts.astype(dt)
    onehot = (ft.local[c][:, :, None] == jnp.arange(J, dtype=jnp.int32)[None, None]).astype(dt)  # (T, S, J)
    W = (ft.coef[c][:, :, None, :] * onehot[..., None]).reshape(T, S, 4 * J)
    m = lax.dot_general(W, M, (((1,), (2,)), ((0,), (0,))))  # (T, 4 J, B)
    cell = jnp.minimum(ft.base[c][:, None] + jnp.arange(J, dtype=jnp.int32)[None], E - 1)  # (T, J)
    cells = jnp.zeros((E, 4, B), dt).at[cell.reshape(-1)].add(m.reshape(T * J, 4, B))
    lower, upper = cells[:, 0::2], cells[:, 1::2]  # (E, 2, B): weight, residual
    h = lower + jnp.concatenate([jnp.zeros_like(upper[:1]), upper[:-1]])
    spec = jnp.fft.rfft(jnp.concatenate([h, h[E - 2 : 0 : -1]]), axis=0)
    out = jnp.fft.irfft(spec * ft.kspecs[c][:, None, None], 2 * (E - 1), axis=0)[:E]
    N = jnp.maximum(jnp.round(10.0 / sigma).astype(jnp.int32), 200)
    grid = lambda o, n_: _grid_value(o[:, 0], o[:, 1], jnp.asarray(E, jnp.int32), n_, Nmax)  # noqa: E731
    return jax.vmap(grid, in_axes=(2, 0))(out, N)


def _coarse(spec, sigma, tables: _CountTables):
    """smECE at a bandwidth of the first grid (>= 11/1024) from that grid's spectrum."""
    steps = 2**_REFINE
    k = jnp.clip(jnp.round(sigma * steps).astype(jnp.int32), 1, steps)
    return _class_value(spec, sigma, tables.kspecs[k - 1])


def smooth_ece_coarse(spec0, tables: _CountTables):
    """(values, bandwidths) of smooth ECE for a batch of count vectors, from their first grid's
    spectra ``(B, P/2 + 1, 2)``, with the value NaN for each one whose bandwidth search reaches a
    bandwidth below $11/1024$ (another grid; smooth ECE below about 0.01, as on well-calibrated
    forecasts): those are for :func:`smooth_ece_fine`."""
    B = spec0.shape[0]

    def value(s):  # NaN where s needs another grid: the search then stays on such bandwidths
        s = jnp.broadcast_to(s, (B,))
        v = jax.vmap(lambda sp, si: _coarse(sp, si, tables))(spec0, s)
        return jnp.where(_grid_sizes(s)[0] == _E0, v, jnp.nan)

    return _bisect(value, tables.coef.dtype)


def smooth_ece_fine(counts, spec0, values, sigma, tables: _CountTables):
    """:func:`smooth_ece_coarse`'s ``(values, sigma)`` completed where the value is NaN: those
    count vectors (``counts``, in the layout, ``(B, slots * 32)``) search again with the finer
    grids (:func:`_fine_values`). Each finer grid is the grid of one bisection bandwidth, so it
    is evaluated at most once in the search, batched over the resamples that reach it (a real
    branch per grid and step; when at most a quarter of the batch reaches it, only those
    resamples are gathered and evaluated)."""
    dt = tables.coef.dtype
    B = spec0.shape[0]
    redo = jnp.isnan(values)
    T, S = tables.rows.shape
    M = jnp.moveaxis(counts.astype(dt).reshape(B, T, S), 1, 0)  # (slots, B, 32), once for every grid
    fine_E = jnp.asarray(_FINE_E, jnp.int32)
    K = max(1, B // 4)  # a grid that few resamples reach evaluates a batch of K, not B

    def value(s):
        s = jnp.broadcast_to(s, (B,))
        E = _grid_sizes(s)[0]
        v = jax.vmap(lambda sp, si: _coarse(sp, si, tables))(spec0, s)
        for c in range(len(_FINE_E)):
            on_c = redo & (E == fine_E[c])

            def fine(v, c=c, on_c=on_c):
                def evaluate(idx):
                    return _fine_values(M[:, idx], s[idx], tables, c)

                def few(v):  # at most K resamples on this grid: only they are evaluated
                    idx = jnp.argsort(~on_c, stable=True)[:K]  # those on the grid first
                    return v.at[idx].set(jnp.where(on_c[idx], evaluate(idx), v[idx]))

                every = lambda v: jnp.where(on_c, _fine_values(M, s, tables, c), v)  # noqa: E731
                return lax.cond(jnp.sum(on_c) <= K, few, every, v)

            v = lax.cond(jnp.any(on_c), fine, lambda v: v, v)
        return v

    v, sg = _bisect(value, dt)
    return jnp.where(redo, v, values), jnp.where(redo, sg, sigma)


def _values_of_spectra(spec0, tables: _CountTables, counts):
    """:func:`smooth_ece_coarse`, then :func:`smooth_ece_fine` with ``counts()`` if some value
    needs another grid (a real branch on the whole batch)."""
    v, sigma = smooth_ece_coarse(spec0, tables)
    fine = lambda vs: smooth_ece_fine(counts(), spec0, vs[0], vs[1], tables)  # noqa: E731
    return lax.cond(jnp.any(jnp.isnan(v)), fine, lambda vs: vs, (v, sigma))


def smooth_ece_draws_spectra(draws, tables: _CountTables):
    """The first grid's spectra ``(B, P/2 + 1, 2)`` of a batch of bootstrap draws (see
    :func:`smooth_ece_of_draws`)."""
    T, B, _ = draws.sums.shape
    coef = tables.coef
    cells = jax.ops.segment_sum(draws.sums[..., :4], tables.cell, num_segments=_E0, indices_are_sorted=True)
    pos = tables.place[draws.extra]  # (B, K) flat positions of the extra draws
    add = coef.reshape(-1, 4)[pos] * draws.live[..., None].astype(coef.dtype)
    cells = cells.at[tables.cell[pos // coef.shape[1]], jnp.arange(B)[:, None]].add(add)  # (E, B, 4)
    return jnp.moveaxis(_cells_spectrum(cells), 1, 0)


def smooth_ece_counts_spectra(counts, tables: _CountTables):
    """The first grid's spectra ``(B, P/2 + 1, 2)`` of count vectors in the layout ``(B, slots * 32)``."""
    return jax.vmap(lambda c: _class_spectrum(c, tables))(counts.astype(tables.coef.dtype))


def smooth_ece_of_draws(draws, tables: _CountTables, counts):
    r""":func:`smooth_ece` (values, bandwidths) of a batch of bootstrap draws.

    ``draws`` is :func:`jcalib.stats._multinomial.multinomial_draws` on the layout
    (``tables.occupied`` as ``(slots, 32)``) with the coefficients ``tables.coef``: its sums
    are the first grid's four masses per slot, so only a segment sum into the cells and the
    extra draws' coefficients remain (no count vector is laid out per resample).
    ``counts()`` gives the count vectors, needed only by resamples whose bandwidth search
    reaches another grid (see :func:`smooth_ece_fine`).
    """
    return _values_of_spectra(smooth_ece_draws_spectra(draws, tables), tables, counts)


def smooth_ece_of_counts(counts, tables: _CountTables):
    r""":func:`smooth_ece` (values, bandwidths) of the forecasts in ``tables`` repeated ``counts`` times.

    ``counts`` is a batch of count vectors in the layout, ``(B, slots * 32)``
    (:func:`_counts_in_layout` puts vectors over the forecasts **in sorted order** there; a
    bootstrap resample's count vector needs no order, so it can be drawn in place:
    :func:`jcalib.stats._multinomial.counts_by_position` with ``tables.place``). Equal to
    ``smooth_ece`` of the repeated rows to float round-off, at $O(n)$ multiply-adds per count
    vector and FFTs of length $2(E_0 - 1) = 2000$ batched over the rows; a row whose bandwidth
    is below $11/1024$ also takes $O(n)$ multiply-adds (a matrix product per slot) and a pair of
    FFTs of that grid's length per finer grid its search visits (:func:`smooth_ece_fine`;
    ``tables`` must have the finer grids' coefficients, as :func:`smooth_ece_count_tables`
    builds by default).
    """
    return _values_of_spectra(smooth_ece_counts_spectra(counts, tables), tables, lambda: counts)

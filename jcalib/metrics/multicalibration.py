r"""Multicalibration errors: calibration on every group of a rich, overlapping family.

A forecaster $p$ is $\alpha$-multicalibrated on a family of groups $\mathcal G$ when it is
calibrated, within $\alpha$, on each group and not only on average (Hébert-Johnson, Kim,
Reingold, Rothblum 2018, *Multicalibration: Calibration for the (Computationally-Identifiable)
Masses*, the definition of $\alpha$-multicalibration): for every $S \in \mathcal G$ and every forecast level $v$,
$|\mathbb E[y - p \mid x \in S, p = v]| \le \alpha$. Groups here are membership weights
$g_i \in [0, 1]^G$ per sample (indicators for ordinary groups), given as a matrix ``(n, G)`` or
as a function of the features; a weight function is the "weighted calibration" of Gopalan, Hu,
Rothblum (2024, Definition 2.2) restricted to functions of $x$ alone.

For a group $g$ with weight $W_g = \sum_i w_i g_i$ (``w`` the sample weights):

- **binned** (:func:`multicalibration_error`, ``method="binned"``): the group's binned ECE,
  **normalised by the group's weight**, $\mathrm{err}_g = \frac1{W_g}\sum_b \big|\sum_{i: b(p_i)
  = b} w_i g_i (p_i - y_i)\big|$, with the library's one bin-edge rule
  (:func:`~jcalib.metrics.bin_index`);
- **smooth** (``method="smooth"``): the kernel-smoothed version of Błasiok and Nakkiran (2023)
  at a fixed bandwidth $\sigma$, $\mathrm{err}_g = \int_0^1|\hat r_g(t)|\,dt / \int_0^1 \hat
  \delta_g(t)\,dt$ with $\hat r_g = K_\sigma * \sum_i w_i g_i (p_i - y_i)\delta_{p_i}$ and
  $\hat\delta_g = K_\sigma * \sum_i w_i g_i \delta_{p_i}$ ($K_\sigma$ Gaussian, reflected at 0
  and 1; masses split linearly onto a grid of ``n_bins + 1`` points);
- **the MCGrad paper's metric** (:func:`mcgrad_multicalibration_error`), the multicalibration
  error (MCE) of Guy, Haimovich, Linder, Okati, Perini, Tax, Tygert (2025), *Measuring
  multi-calibration*, that Tax, Perini, Linder et al. (2026), *MCGrad: Multicalibration at Web
  Scale* (KDD), report: the largest over groups of the Kuiper range of the cumulative
  calibration differences sorted by forecast (the estimated cumulative calibration error, ECCE,
  of Arrieta-Ibarra, Gujral, Tannen, Tygert, Xu 2022), divided by its standard deviation under
  calibration.

:func:`multicalibration_audit` adds a bootstrap p-value for "no group is miscalibrated by more
than $\alpha$". Every function computes all groups at once: the per-(group, bin) sums are one
matrix product $g^\top A$ (``A`` the samples' bin columns times their residuals), accumulated
over row blocks so memory stays $O(\text{block}\cdot G)$ — jit- and vmap-able.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._validation import (
    BINS,
    Choice,
    Custom,
    Int as IntSpec,
    Key,
    Real,
    as_float_array,
    binary_inputs,
    check_static_int,
    declare,
    in_graph,
    is_concrete,
    offending,
    shown,
)
from .binary import bin_index

__all__ = [
    "MulticalibrationAudit",
    "MulticalibrationError",
    "SparseGroups",
    "mcgrad_multicalibration_error",
    "multicalibration_audit",
    "multicalibration_error",
]

_BLOCK = 8192  # rows per block of the group-table product (memory O(block * G))


class MulticalibrationError(NamedTuple):
    """Per-group calibration errors and the worst group.

    Attributes:
        per_group: each group's error, shape ``(G,)`` (0 for an empty group).
        group_size: each group's weight $W_g = \\sum_i w_i g_i$, shape ``(G,)``.
        worst: the largest error over groups of size at least ``min_size``.
        worst_group: its index (int32).
        worst_size: its size $W_g$.
    """

    per_group: Float[Array, " G"]
    group_size: Float[Array, " G"]
    worst: Float[Array, ""]
    worst_group: Int[Array, ""]
    worst_size: Float[Array, ""]


class MulticalibrationAudit(NamedTuple):
    """A multicalibration audit: the errors, and a bootstrap test of "no group is miscalibrated
    by more than $\\alpha$" (small p-values are evidence that some group is).

    Attributes:
        error: the :class:`MulticalibrationError` on the data.
        statistic: the worst error (``error.worst``).
        p_value: the bootstrap p-value, in $(0, 1]$.
    """

    error: MulticalibrationError
    statistic: Float[Array, ""]
    p_value: Float[Array, ""]


class SparseGroups(eqx.Module):
    r"""Group memberships as lists: for each sample, the ids of the (few) groups it belongs to.

    ``ids[i]`` holds the groups of sample $i$, padded with $-1$: shape ``(n, k)`` with $k$ the
    most groups a sample belongs to. A family built from attributes — every value of each
    attribute and of each pair or triple of attributes, as MCGrad's segments are — puts each
    sample in a handful of groups however many groups there are, so the per-(group, bin) sums
    cost $O(nk)$ (one segment sum) instead of the $O(nG)$ of a dense matrix.

    With ``pattern``, ``ids`` holds the $P$ distinct membership patterns ``(P, k)`` and
    ``pattern[i]`` says which one sample $i$ has: an attribute family has few patterns (one per
    combination of attribute values), and the sums become one scatter of the $n$ samples into
    their patterns' cells and a small one of the $P$ patterns into the groups,
    $O(n + PkK)$. :meth:`from_dense` builds this form.

    Attributes:
        ids: int32 group ids in $[-1, G)$, shape ``(n, k)`` (or ``(P, k)`` with ``pattern``).
        n_groups: $G$ (static).
        pattern: optional int32 pattern of each sample, shape ``(n,)``, in $[0, P)$.

    Examples:
        >>> import numpy as np
        >>> s = SparseGroups.from_dense(np.array([[1, 0, 1], [0, 1, 0], [1, 0, 1]], bool))
        >>> s.ids.tolist(), s.pattern.tolist(), s.n_groups
        ([[1, -1], [0, 2]], [1, 0, 1], 3)
    """

    ids: Int[Array, "n k"]
    n_groups: int = eqx.field(static=True)
    pattern: Int[Array, " n"] | None = None

    @property
    def n_samples(self) -> int:
        return (self.ids if self.pattern is None else self.pattern).shape[0]

    def sample_ids(self) -> Int[Array, "n k"]:
        """Each sample's group ids ``(n, k)`` (the patterns expanded)."""
        return self.ids if self.pattern is None else self.ids[self.pattern]

    def __check_init__(self):
        check_static_int(self.n_groups, "n_groups", 1, 2**24)
        if not isinstance(self.ids, jax.core.Tracer):
            v = np.asarray(self.ids)
            if v.ndim != 2 or v.dtype.kind not in "iu":
                raise ValueError(f"ids must be a 2-D integer array (n, k), got {shown(self.ids)}")
            bad = (v < -1) | (v >= self.n_groups)
            if bad.any():
                raise ValueError(f"ids must lie in [-1, n_groups={self.n_groups}) ({offending(v, bad)})")
        if self.pattern is not None and not isinstance(self.pattern, jax.core.Tracer):
            q = np.asarray(self.pattern)
            if q.ndim != 1 or q.dtype.kind not in "iu":
                raise ValueError(f"pattern must be a 1-D integer array (n,), got {shown(self.pattern)}")
            bad = (q < 0) | (q >= np.shape(self.ids)[0])
            if bad.any():
                raise ValueError(f"pattern must index the rows of ids, [0, {np.shape(self.ids)[0]}) ({offending(q, bad)})")

    @classmethod
    def from_dense(cls, mask) -> "SparseGroups":
        """The lists of a boolean membership matrix ``(n, G)`` (on the host, NumPy)."""
        m = np.asarray(mask, bool)
        if m.ndim != 2 or m.shape[1] == 0:
            raise ValueError(f"mask must be a boolean matrix (n, G) with G >= 1, got shape {m.shape}")
        packed = np.ascontiguousarray(np.packbits(m, axis=1))  # each row's memberships as bytes
        _, first, pattern = np.unique(packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1),
                                      return_index=True, return_inverse=True)
        patterns = m[first]
        k = max(1, int(patterns.sum(1).max(initial=0)))
        ids = np.full((patterns.shape[0], k), -1, np.int32)
        rows, cols = np.nonzero(patterns)
        slot = np.arange(rows.size) - np.searchsorted(rows, rows)
        ids[rows, slot] = cols
        return cls(jnp.asarray(ids), m.shape[1], jnp.asarray(pattern.reshape(-1).astype(np.int32)))


# --------------------------------------------------------------------------------------------
# Inputs


def _check_group_shape(arr, name, probs) -> None:
    """A membership matrix is 2-D (n samples, G groups), one row per forecast, at least one group."""
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n samples, G groups), got shape {tuple(arr.shape)}")
    if probs is not None and arr.shape[0] != probs.shape[0]:
        raise ValueError(f"mismatched lengths: {name} must have one row per forecast ({probs.shape[0]}), "
                         f"got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no columns; at least one group is needed, got shape {tuple(arr.shape)}")


def check_groups(value, name, bound):
    """A membership matrix ``(n, G)`` with entries in [0, 1] (bools become 0/1), or a callable."""
    probs = bound.get("probs")
    if isinstance(value, SparseGroups):
        if probs is not None and value.n_samples != probs.shape[0]:
            raise ValueError(f"mismatched lengths: {name} must have one row per forecast ({probs.shape[0]}), "
                             f"got {value.n_samples}")
        return value
    if callable(value) and not hasattr(value, "shape"):
        return value
    arr = value
    if not isinstance(arr, jax.core.Tracer):
        arr = np.asarray(arr)
        if arr.dtype == object or not (arr.dtype.kind in "biuf"):
            raise TypeError(f"{name} must be a membership matrix (n, G) or a function of the features, "
                            f"got {shown(value)}")
        if arr.dtype.kind == "b":  # kept as booleans (1 byte each); blocks are cast where they are used
            _check_group_shape(arr, name, probs)
            return jnp.asarray(arr)
    elif arr.dtype == jnp.bool_:
        return arr
    arr = as_float_array(arr, name)
    if probs is not None and jnp.issubdtype(probs.dtype, jnp.floating):
        arr = arr.astype(probs.dtype)
    _check_group_shape(arr, name, probs)
    if isinstance(arr, jax.core.Tracer):
        return in_graph(arr, ~jnp.all((arr >= 0) & (arr <= 1)), f"{name} must hold memberships in [0, 1]")
    v = np.asarray(arr)
    bad = ~np.isfinite(v) | (v < 0) | (v > 1)
    if bad.any():
        raise ValueError(f"{name} must hold memberships in [0, 1] ({offending(v, bad)})")
    return arr


GROUPS = Custom(check_groups, "a membership matrix (n, G) in [0, 1], SparseGroups, or a function of the features")


def _check_features(value, name, bound):
    groups = bound.get("groups")
    if groups is None or not callable(groups) or hasattr(groups, "shape"):
        if value is not None:
            raise ValueError(f"{name} is only used when groups is a function of the features; "
                             "pass groups as a matrix (n, G) without features, or a function with them")
        return None
    if value is None:
        raise ValueError(f"{name} is required when groups is a function (groups(features) -> (n, G))")
    leaves = jax.tree_util.tree_leaves(value)
    probs = bound.get("probs")
    for leaf in leaves:
        if jnp.ndim(leaf) < 1 or (probs is not None and jnp.shape(leaf)[0] != probs.shape[0]):
            raise ValueError(f"{name} must have one row per forecast ({probs.shape[0] if probs is not None else 'n'}), "
                             f"got a leaf of shape {tuple(jnp.shape(leaf))}")
    return value


FEATURES = Custom(_check_features, "features (n, ...) when groups is a function, else None")


def _memberships(groups, features, dtype):
    """The membership matrix (n, G): the matrix itself, or the function applied to the features."""
    if features is None:
        return groups  # checked: a float matrix in the forecasts' dtype, or booleans
    g = jnp.asarray(groups(features))
    if g.ndim != 2:
        raise ValueError(f"groups(features) must return a matrix (n, G), got shape {tuple(g.shape)}")
    return g if g.dtype == jnp.bool_ else g.astype(dtype)


# --------------------------------------------------------------------------------------------
# Kernels


def _group_table(g, cols, frac, values, n_cells: int):
    """$T_{g,c,k} = \\sum_i g_{ig}\\,a_{ic}\\,v_{ik}$, shape ``(G, n_cells, K)``, with $a_i$ the
    one-hot column ``cols`` (``frac is None``) or the linear split $(1 - f_i)$ on ``cols`` and
    $f_i$ on ``cols + 1``.

    The entries (row, cell, multiplier) are sorted by cell and laid out in blocks that each hold
    one cell only (a cell's last block is padded with a row index past the end, which reads as
    zero), so each block adds one product $g_{\\text{block}}^\\top v_{\\text{block}}$ of shape
    ``(G, K)`` to its cell: $O(nGK)$ work, memory $O(\\text{block}\\cdot G)$, the rows of ``g``
    gathered block by block and never copied whole."""
    n, G = g.shape
    K = values.shape[1]
    if frac is None:
        rows, cell, mult = jnp.arange(n, dtype=jnp.int32), cols.astype(jnp.int32), None
    else:
        rows = jnp.concatenate([jnp.arange(n, dtype=jnp.int32), jnp.arange(n, dtype=jnp.int32)])
        cell = jnp.concatenate([cols, jnp.minimum(cols + 1, n_cells - 1)]).astype(jnp.int32)
        mult = jnp.concatenate([1 - frac, frac]).astype(values.dtype)
    m = rows.shape[0]
    block = max(8, min(_BLOCK, -(-m // n_cells)))  # at most about one block per cell when m is small
    order = jnp.argsort(cell, stable=True)
    cs = cell[order]
    counts = jnp.zeros((n_cells,), jnp.int32).at[cell].add(1)
    blocks_per = (counts + (block - 1)) // block
    first_block = jnp.cumsum(blocks_per) - blocks_per
    first_entry = jnp.cumsum(counts) - counts
    rank = jnp.arange(m, dtype=jnp.int32) - first_entry[cs]
    pos = first_block[cs] * block + rank
    nb = -(-m // block) + n_cells  # static upper bound on the blocks used
    src = jnp.full((nb * block,), m, jnp.int32).at[pos].set(order.astype(jnp.int32))
    block_cell = jnp.clip(jnp.searchsorted(jnp.cumsum(blocks_per), jnp.arange(nb, dtype=jnp.int32), side="right"),
                          0, n_cells - 1)

    def body(acc, k):
        e = jax.lax.dynamic_slice(src, (k * block,), (block,))  # entries of this block (m = none)
        r = jnp.where(e < m, rows.at[e].get(mode="fill", fill_value=0), jnp.int32(n))
        gb = g.at[r].get(mode="fill", fill_value=0).astype(values.dtype)  # (block, G); past the end -> 0
        vb = values.at[r].get(mode="fill", fill_value=0)
        if mult is not None:
            vb = vb * mult.at[e].get(mode="fill", fill_value=0)[:, None]
        return acc.at[:, block_cell[k], :].add(gb.T @ vb), None

    acc, _ = jax.lax.scan(body, jnp.zeros((G, n_cells, K), values.dtype), jnp.arange(nb, dtype=jnp.int32))
    return acc


def _sparse_table(s: SparseGroups, cols, frac, values, n_cells: int):
    """:func:`_group_table` for :class:`SparseGroups`: scatters of the (sample, group) pairs,
    $O(nk)$, or with patterns of the samples into their patterns' cells and of the patterns'
    cells into the groups, $O(n + P k\\,n_{cells})$."""
    G = s.n_groups
    ids = s.ids.astype(jnp.int32)
    valid = ids >= 0

    def scatter_groups(ids, valid, c, v):
        acc = jnp.zeros((G * n_cells, v.shape[1]), v.dtype)
        for j in range(ids.shape[1]):  # one scatter of n rows per id column (k of them, static):
            # faster on the CPU than one scatter of the n k pairs; padding ids fall out of bounds
            key = jnp.where(valid[:, j], ids[:, j] * n_cells + c, G * n_cells)
            acc = acc.at[key].add(v, mode="drop")
        return acc

    def add(c, mult):
        v = values if mult is None else values * mult[:, None]
        if s.pattern is not None:  # samples into their pattern's cells first: (P * n_cells, K)
            P = ids.shape[0]
            v = jnp.zeros((P * n_cells, v.shape[1]), v.dtype).at[s.pattern * n_cells + c].add(v)
            c = jnp.tile(jnp.arange(n_cells, dtype=jnp.int32), P)
            return scatter_groups(jnp.repeat(ids, n_cells, axis=0), jnp.repeat(valid, n_cells, axis=0), c, v)
        return scatter_groups(ids, valid, c, v)

    if frac is None:
        t = add(cols.astype(jnp.int32), None)
    else:
        t = add(cols.astype(jnp.int32), 1 - frac) + add(jnp.minimum(cols + 1, n_cells - 1).astype(jnp.int32), frac)
    return t.reshape(G, n_cells, values.shape[1])


def _table(g, cols, frac, values, n_cells):
    if isinstance(g, SparseGroups):
        return _sparse_table(g, cols, frac, values, n_cells)
    return _group_table(g, cols, frac, values, n_cells)


def group_bin_tables(p, y, w, g, n_bins):
    """Per (group, bin): weight and signed bias $\\sum w g (p - y)$, shapes ``(G, n_bins)``, of
    checked inputs (shared with :class:`jcalib.recalibration.Multicalibration`; not exported)."""
    idx = bin_index(p, n_bins)
    t = _table(g, idx, None, jnp.stack([w, w * (p - y)], axis=1), n_bins)
    return t[..., 0], t[..., 1]


def _smooth_kernel(n_bins: int, bandwidth: float, dtype):
    """Gaussian kernel between the grid points $j/m$, reflected at 0 and 1, shape ``(m+1, m+1)``."""
    t = jnp.arange(n_bins + 1, dtype=dtype) / n_bins
    h = jnp.asarray(bandwidth, dtype)
    d = t[:, None]
    k = sum(jnp.exp(-0.5 * ((d - s) / h) ** 2) for s in (t[None, :], -t[None, :], 2 - t[None, :]))
    return k / (h * math.sqrt(2 * math.pi))


def _smooth_errors(p, y, w, g, n_bins, bandwidth):
    u = p * n_bins
    lo = jnp.clip(jnp.floor(u), 0, n_bins - 1).astype(jnp.int32)
    f = u - lo.astype(p.dtype)
    t = _table(g, lo, f, jnp.stack([w, w * (p - y)], axis=1), n_bins + 1)
    K = _smooth_kernel(n_bins, bandwidth, p.dtype)
    dens = t[..., 0] @ K  # (G, m+1): kernel density of the group on the grid
    resid = t[..., 1] @ K
    trap = jnp.full((n_bins + 1,), 1.0, p.dtype).at[0].set(0.5).at[-1].set(0.5) / n_bins  # trapezoid rule
    num = jnp.abs(resid) @ trap
    den = dens @ trap
    size = jnp.sum(t[..., 0], axis=1)
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1), 0.0), size


def _summary(per, size, min_size):
    eligible = size >= jnp.asarray(min_size, size.dtype)
    masked = jnp.where(eligible, per, -jnp.inf)
    worst_group = jnp.argmax(masked).astype(jnp.int32)
    worst = jnp.where(jnp.any(eligible), per[worst_group], jnp.zeros((), per.dtype))
    return MulticalibrationError(per, size, worst, worst_group, size[worst_group])


def _errors(p, y, w, g, method, n_bins, bandwidth):
    if method == "binned":
        wb, bias = group_bin_tables(p, y, w, g, n_bins)
        size = jnp.sum(wb, axis=1)
        per = jnp.sum(jnp.abs(bias), axis=1)
        return jnp.where(size > 0, per / jnp.where(size > 0, size, 1), 0.0), size
    return _smooth_errors(p, y, w, g, n_bins, bandwidth)


_ERRORS = jax.jit(_errors, static_argnames=("method", "n_bins"))

METHOD = Choice("binned", "smooth")
BANDWIDTH = Real(0, 1, open_lo=True, static=True)
MIN_SIZE = Real(0)


# --------------------------------------------------------------------------------------------
# Public functions


@declare(**binary_inputs(), groups=GROUPS, features=FEATURES, method=METHOD, n_bins=BINS,
         bandwidth=BANDWIDTH, min_size=MIN_SIZE)
def multicalibration_error(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    groups: Float[Array, "n G"] | Callable[[Any], Float[Array, "n G"]],
    *,
    features: Any = None,
    method: str = "binned",
    n_bins: int = 10,
    bandwidth: float = 0.05,
    min_size: float = 0.0,
    sample_weight: Float[Array, " n"] | None = None,
) -> MulticalibrationError:
    r"""Calibration error of binary forecasts on each of $G$ groups, **normalised per group**,
    and the worst group with its size.

    With memberships $g_i \in [0, 1]^G$ and sample weights $w_i$, group $g$ has weight
    $W_g = \sum_i w_i g_{ig}$ and, for ``method="binned"`` (bins $b(p) = \lfloor K p\rfloor$ by
    :func:`~jcalib.metrics.bin_index`, $K$ = ``n_bins``),
    $$\mathrm{err}_g = \frac1{W_g}\sum_{b=1}^K\Big|\sum_{i: b(p_i) = b} w_i\,g_{ig}\,(p_i - y_i)\Big|,$$
    the group's binned ECE; $\max_g \mathrm{err}_g \le \alpha$ is (binned, $\ell_1$ over levels)
    $\alpha$-multicalibration in the sense of Hébert-Johnson et al. (2018).
    ``method="smooth"`` replaces the bins by a Gaussian kernel of bandwidth $\sigma$
    (``bandwidth``) reflected at 0 and 1, on the grid $\{j/K\}$ (masses split linearly onto
    it): $\mathrm{err}_g = \int|\hat r_g| / \int\hat\delta_g$ (Błasiok, Nakkiran 2023, at a fixed
    $\sigma$), continuous in the forecasts.

    The worst group is the largest $\mathrm{err}_g$ among groups with $W_g \ge$ ``min_size``
    (tiny groups have large, noisy errors; HKRR's definition asks for groups of mass at least
    $\gamma$). All groups are computed by one blocked matrix product, $O(n\,G\,K)$ work and
    $O(\text{block}\cdot G)$ memory.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(n,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        groups: memberships: a matrix ``(n, G)`` of booleans or weights in $[0, 1]$, a
            :class:`SparseGroups` (each sample's group ids; $O(nk)$ instead of $O(nG)$), or a
            function ``groups(features) -> (n, G)``.
        features: the features the ``groups`` function reads (only with a function).
        method: ``"binned"`` or ``"smooth"``.
        n_bins: $K$, bins (binned) or grid cells (smooth) (static).
        bandwidth: $\sigma \in (0, 1]$ of the smooth method.
        min_size: smallest group weight considered for the worst group.
        sample_weight: optional non-negative weights, shape ``(n,)``.

    Returns:
        A :class:`MulticalibrationError` (per-group errors and sizes, the worst group).

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.array([0.2, 0.2, 0.8, 0.8])
        >>> y = jnp.array([0, 1, 1, 1])
        >>> groups = jnp.array([[1, 0], [1, 1], [0, 1], [1, 1]], bool)
        >>> r = multicalibration_error(p, y, groups, n_bins=5)
        >>> [round(float(e), 3) for e in r.per_group], int(r.worst_group)
        ([0.267, 0.4], 1)

    References:
        Hébert-Johnson, Kim, Reingold, Rothblum (2018), *Multicalibration: Calibration for the
        (Computationally-Identifiable) Masses*, ICML; Błasiok, Nakkiran (2023),
        *Smooth ECE: Principled reliability diagrams via kernel smoothing*.
    """
    g = _memberships(groups, features, probs.dtype)
    per, size = _ERRORS(probs, labels, sample_weight, g, method, n_bins, bandwidth)
    return _summary(per, size, min_size)


@declare(**binary_inputs(), groups=GROUPS, features=FEATURES, alpha=Real(0, 1), key=Key(),
         n_resamples=IntSpec(1, 2**20), method=METHOD, n_bins=BINS, bandwidth=BANDWIDTH, min_size=MIN_SIZE)
def multicalibration_audit(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    groups: Float[Array, "n G"] | Callable[[Any], Float[Array, "n G"]],
    *,
    alpha: float,
    key: PRNGKeyArray,
    features: Any = None,
    n_resamples: int = 200,
    method: str = "binned",
    n_bins: int = 10,
    bandwidth: float = 0.05,
    min_size: float = 0.0,
    sample_weight: Float[Array, " n"] | None = None,
) -> MulticalibrationAudit:
    r"""Audit multicalibration: the per-group errors of :func:`multicalibration_error` and a
    bootstrap p-value for the null "no group is miscalibrated by more than $\alpha$".

    The statistic is $\hat\theta = \max_g \mathrm{err}_g$ (groups of weight $\ge$ ``min_size``)
    and the null is $H_0: \theta \le \alpha$. Each of $B$ = ``n_resamples`` bootstrap replicates
    reweights the samples by multinomial counts (the nonparametric bootstrap as weights, so all
    replicates are one ``vmap``) and recomputes $\hat\theta^*_b$; the p-value is that of the
    shifted bootstrap test (Efron, Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 16),
    $$p = \frac{1 + \#\{b : \hat\theta^*_b - \hat\theta \ge \hat\theta - \alpha\}}{B + 1},$$
    so a worst error far above $\alpha$, relative to its resampling spread, gives a small $p$.
    The binned error of a calibrated group is biased upwards (by about
    $\sqrt{K/(2\pi W_g)}$ per group), so the test is conservative for large groups and
    $\alpha$ should exceed that bias for small ones.

    Args:
        probs, labels, groups, features, method, n_bins, bandwidth, min_size, sample_weight: as
            in :func:`multicalibration_error`.
        alpha: the tolerance $\alpha \in [0, 1]$.
        key: PRNG key for the resamples.
        n_resamples: $B$ (static).

    Returns:
        A :class:`MulticalibrationAudit`.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p = jnp.full(400, 0.5)
        >>> y = (jnp.arange(400) % 2).astype(jnp.int32)
        >>> groups = jnp.stack([jnp.arange(400) < 200, jnp.arange(400) % 2 == 0], 1)
        >>> audit = multicalibration_audit(p, y, groups, alpha=0.1, key=jax.random.key(0))
        >>> round(float(audit.statistic), 2), bool(audit.p_value < 0.05)   # group 1 is all zeros
        (0.5, True)

    References:
        Hébert-Johnson, Kim, Reingold, Rothblum (2018) (the tolerance $\alpha$); Efron,
        Tibshirani (1993), ch. 16 (bootstrap tests).
    """
    g = _memberships(groups, features, probs.dtype)
    return _audit(probs, labels, sample_weight, g, key, alpha, min_size, method, n_bins, bandwidth, n_resamples)


def _audit_impl(p, y, w, g, key, alpha, min_size, method, n_bins, bandwidth, n_resamples):
    per, size = _errors(p, y, w, g, method, n_bins, bandwidth)
    err = _summary(per, size, min_size)
    n = p.shape[0]
    idx = jax.random.randint(key, (n_resamples, n), 0, n)

    def one(i):
        counts = jax.ops.segment_sum(jnp.ones((n,), p.dtype), i, num_segments=n)
        per_b, size_b = _errors(p, y, w * counts, g, method, n_bins, bandwidth)
        return _summary(per_b, size_b, min_size).worst

    boot = jax.lax.map(one, idx)
    theta = err.worst
    exceed = jnp.sum(boot - theta >= theta - jnp.asarray(alpha, p.dtype))
    p_value = (1 + exceed).astype(p.dtype) / (n_resamples + 1)
    return MulticalibrationAudit(err, theta, p_value)


_audit = jax.jit(_audit_impl, static_argnames=("method", "n_bins", "n_resamples"))


def _mcgrad_sparse(p, y, w, s: SparseGroups):
    """:func:`_mcgrad_ecce` for :class:`SparseGroups`: the (sample, group) pairs sorted by group
    then forecast (one sort of int32 keys), a segmented cumulative sum: $O(nk\\log(nk))$."""
    G = s.n_groups
    sid = s.sample_ids()
    n, k = sid.shape
    ids = sid.astype(jnp.int32).reshape(-1)
    by_p = jnp.argsort(p, stable=True).astype(jnp.int32)  # sample at each forecast rank
    rank = jnp.zeros((n,), jnp.int32).at[by_p].set(jnp.arange(n, dtype=jnp.int32))
    sample = jnp.repeat(jnp.arange(n, dtype=jnp.int32), k)
    gid = jnp.where(ids >= 0, ids, G)  # padding sorts last, into a dropped segment
    if (G + 1) * n < 2**31:
        # one int32 key per pair, group-major with the forecast rank within: sorting the keys
        # alone (no index payload) is several times faster than an argsort, and decodes exactly
        key = jnp.sort(gid * n + rank[sample])
        gs, ss = key // n, by_p[key % n]
    else:
        order = jnp.lexsort((rank[sample], gid))
        gs, ss = gid[order], sample[order]
    valid = gs < G
    r = jnp.where(valid, w[ss] * (y[ss] - p[ss]), 0.0)
    tot = jax.ops.segment_sum(jnp.where(valid, w[ss], 0.0), gs, num_segments=G + 1)[:-1]
    var = jax.ops.segment_sum(jnp.where(valid, w[ss] ** 2 * p[ss] * (1 - p[ss]), 0.0), gs, num_segments=G + 1)[:-1]
    # each group's running sum: a segmented scan that restarts at the group's first pair (no
    # global cumulative sum to subtract from, so no cancellation in float32)
    first = jnp.concatenate([jnp.ones((1,), bool), gs[1:] != gs[:-1]])

    def seg_add(a, b):
        return jnp.where(b[1], b[0], a[0] + b[0]), a[1] | b[1]

    rel, _ = jax.lax.associative_scan(seg_add, (r, first))
    hi = jnp.maximum(jax.ops.segment_max(rel, gs, num_segments=G + 1)[:-1], 0.0)  # C_g(0) = 0 counts
    lo = jnp.minimum(jax.ops.segment_min(rel, gs, num_segments=G + 1)[:-1], 0.0)
    safe = jnp.where(tot > 0, tot, 1)
    return (hi - lo) / safe, jnp.sqrt(var) / safe, tot


def _mcgrad_ecce(p, y, w, g):
    """Kuiper range of the cumulative differences and its standard deviation, per group; the
    sorted rows are scanned in blocks carrying each group's running sum, maximum and minimum,
    so memory is O(block * G)."""
    n, G = g.shape
    order = jnp.argsort(p, stable=True)
    ps, ys, ws, gs = p[order], y[order], w[order], g[order]
    block = min(_BLOCK, n)
    pad = (-n) % block
    if pad:  # padded rows have zero weight: they add nothing
        ps, ys, ws = jnp.pad(ps, (0, pad)), jnp.pad(ys, (0, pad)), jnp.pad(ws, (0, pad))
        gs = jnp.pad(gs, ((0, pad), (0, 0)))
    nb = (n + pad) // block
    zero = jnp.zeros((G,), p.dtype)

    def body(carry, xs):
        run, hi, lo, tot, var = carry
        pb, yb, wb, gb = xs
        wg = wb[:, None] * gb.astype(wb.dtype)
        c = run[None, :] + jnp.cumsum(wg * (yb - pb)[:, None], axis=0)
        return (c[-1], jnp.maximum(hi, jnp.max(c, axis=0)), jnp.minimum(lo, jnp.min(c, axis=0)),
                tot + jnp.sum(wg, axis=0), var + jnp.sum(wg ** 2 * (pb * (1 - pb))[:, None], axis=0)), None

    xs = (ps.reshape(nb, block), ys.reshape(nb, block), ws.reshape(nb, block), gs.reshape(nb, block, G))
    (_, hi, lo, tot, var), _ = jax.lax.scan(body, (zero, zero, zero, zero, zero), xs)
    safe = jnp.where(tot > 0, tot, 1)
    return (hi - lo) / safe, jnp.sqrt(var) / safe, tot


@declare(**binary_inputs(), groups=GROUPS, features=FEATURES, min_size=MIN_SIZE)
def mcgrad_multicalibration_error(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    groups: Float[Array, "n G"] | Callable[[Any], Float[Array, "n G"]],
    *,
    features: Any = None,
    min_size: float = 0.0,
    sample_weight: Float[Array, " n"] | None = None,
) -> MulticalibrationError:
    r"""The multicalibration error of the MCGrad paper: each group's estimated cumulative
    calibration error in units of its standard deviation, and the worst group.

    Sort the samples by forecast; for group $g$ with weights $w_i g_{ig}$ and total $W_g$, the
    cumulative differences $C_g(k) = \frac1{W_g}\sum_{j \le k} w_j g_{jg}(y_j - p_j)$ have the
    Kuiper range $\mathrm{ECCE}_g = \max_k C_g(k) - \min_k C_g(k)$ (with $C_g(0) = 0$;
    Arrieta-Ibarra et al. 2022), and under calibration the standard deviation
    $\sigma_g = \frac1{W_g}\big(\sum_i w_i^2 g_{ig}^2\, p_i(1 - p_i)\big)^{1/2}$. The per-group
    value is $\mathrm{ECCE}_g / \sigma_g$ (scale-free, in standard deviations), the worst is the
    maximum over groups of weight $\ge$ ``min_size``: ``mcgrad.metrics.MulticalibrationError``'s
    ``segments_ecce_sigma`` and ``mce_sigma`` for the same segments (its absolute ``mce`` is
    ``mce_sigma`` times $\sigma$ of the group of all samples). Ties among the forecasts are
    taken in input order. Groups with $\sigma_g = 0$ give 0.

    Args:
        probs, labels, groups, features, min_size, sample_weight: as in
            :func:`multicalibration_error`.

    Returns:
        A :class:`MulticalibrationError` whose errors are $\mathrm{ECCE}_g/\sigma_g$.

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.array([0.2, 0.4, 0.6, 0.8])
        >>> groups = jnp.ones((4, 1), bool)
        >>> r = mcgrad_multicalibration_error(p, jnp.array([0, 0, 1, 1]), groups)
        >>> round(float(r.worst), 4)   # Kuiper range 0.15, sigma sqrt(0.8) / 4
        0.6708

    References:
        Guy, Haimovich, Linder, Okati, Perini, Tax, Tygert (2025), *Measuring
        multi-calibration*; Tax, Perini, Linder et al. (2026), *MCGrad: Multicalibration at Web
        Scale*, KDD; Arrieta-Ibarra, Gujral, Tannen, Tygert, Xu (2022), *Metrics of calibration for
        probabilistic predictions*, JMLR (ECCE, the Kuiper statistic).
    """
    g = _memberships(groups, features, probs.dtype)
    kuiper, sigma, tot = (_mcgrad_sparse_jit if isinstance(g, SparseGroups) else _mcgrad_jit)(probs, labels, sample_weight, g)
    per = jnp.where(sigma > 0, kuiper / jnp.where(sigma > 0, sigma, 1), 0.0)
    return _summary(per, tot, min_size)


_mcgrad_jit = jax.jit(_mcgrad_ecce)
_mcgrad_sparse_jit = jax.jit(_mcgrad_sparse)

r"""Weighted multi-class calibration errors (Gopalan, Hu, Rothblum 2024, §2, §6, §7).

For a family $W$ of weight functions $w: \Delta_k \to [-1, 1]^k$, the $W$-calibration error of
a distribution of predictions and one-hot labels $(v, y)$ is (Definition 2.2)

$$CE_W(D) = \sup_{w \in W} \big|E\langle y - v, w(v)\rangle\big| .$$

Every value here is **normalised**: $E$ is the (optionally sample-weighted) mean over the
sample, i.e. $CE_W$ of the empirical distribution. For *product* families $W = H^k$ (one
function of $H$ per coordinate: projected smooth, full smooth, sigmoid, low-degree) the
supremum splits over coordinates, $CE_{H^k} = \sum_\ell \sup_{h\in H} E[(y_\ell - v_\ell)h(v)]$,
and ``per_class`` reports the terms.

| family | definition | function | what is computed |
| --- | --- | --- | --- |
| finite / user-supplied | Def. 2.2 | :func:`weighted_calibration_error` | exact max over the family |
| class-wise | §2 | :func:`max_classwise_calibration_error` | exact for $\phi$ constant on bins: $\max_\ell$ binned ECE$_\ell$ |
| confidence | §2 | :func:`jcalib.metrics.confidence_ece` | exact for binned $\phi$ (``order=1``) |
| top-label | §2 | :func:`jcalib.metrics.top_label_ece` | exact for binned $\phi$ (``order=1``) |
| decision, two actions | Def. 2.3 | :func:`two_action_decision_calibration_error` | lower bound (search) |
| $m$-subset smooth | Def. 2.4 | :func:`subset_smooth_calibration_error` | exact over the subsets enumerated |
| $m$-projected smooth | Def. 2.5 | :func:`projected_smooth_calibration_error` | lower bound (exact per direction); exact for $k=2$ |
| full smooth | Def. 2.6 | :func:`full_smooth_calibration_error` | exact LP (small $n$) |
| sigmoid $\Sigma_L$ | Def. 7.7 | :func:`sigmoid_calibration_error` | lower bound (gradient search) |
| low degree $P(d,1)$ | Def. 6.5 | :func:`low_degree_calibration_error` | exact (monomial enumeration) or kernel upper bound |

Lemma 2.7: $ssCE_m \le psCE_m \le fsCE$. The exact one-dimensional problems
$\sup_\phi E[r\,\phi(t)]$ over 1-Lipschitz $\phi$ with $|\phi| \le 1$ are linear programs on
the sorted distinct values of $t$ (only consecutive Lipschitz constraints are needed). The
subset family is the binary smooth calibration error of the events "label in $T$", so it calls
:func:`jcalib.metrics.smooth_calibration_error` (exact, jit-able). The projected and full
families have residuals that are not tied to the projection, so they solve their LPs with
SciPy's HiGHS on the host (not jit-able; meant for small and medium $n$).

Input checks: concrete inputs at the Python boundary (``ValueError`` naming the argument);
under ``jit``/``vmap``/``grad``, rows of predictions non-negative and summing to 1 (no NaN), labels in [0, C) and non-negative finite weights are checked in the graph
with ``eqx.error_if`` unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.sparse
from jax import lax
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._kernels import kernel_matmul, multinomial_kernel
from .._threefry import split
from .._validation import (
    BINS,
    Bool,
    Choice,
    Custom,
    Integer,
    Key,
    Optional,
    Real,
    RealArray,
    as_float_array,
    declare,
    is_concrete,
    multiclass_inputs,
)
from ..core.optim import optimise
from .binary import binned_ece
from .decision import decision_calibration_error
from .search import PartitionSearch, SigmoidSearch, check_search
from .smooth import smooth_calibration_error

__all__ = [
    "WeightedCE",
    "weighted_calibration_error",
    "max_classwise_calibration_error",
    "two_action_decision_calibration_error",
    "subset_smooth_calibration_error",
    "projected_smooth_calibration_error",
    "full_smooth_calibration_error",
    "sigmoid_calibration_error",
    "low_degree_calibration_error",
    "lipschitz_correlation",
]


class WeightedCE(NamedTuple):
    """A weighted calibration error with its witness (``return_witness=True``).

    Attributes:
        value: the error (normalised).
        per_class: ``(k,)`` per-coordinate terms for product families (they sum to
            ``value``); for other families the contribution of each class to the witness's
            correlation.
        witness: family-specific description of the maximising weight function (see each
            function's Returns section).
    """

    value: Any
    per_class: Any
    witness: Any


def _search_of(cls):
    def check(search, name, bound):
        return check_search(search, cls)
    return Custom(check, f"a jcalib.metrics.{cls.__name__}")


_MC = multiclass_inputs()  # predictions (n, k) on the simplex, labels, weights (ones by default)
_WITNESS = Bool()


def _inputs(probs, labels, sample_weight):
    """Declared predictions (n, k), residual y − v (n, k), normalised weights (n,) summing to 1."""
    v, y, w = probs, labels, sample_weight
    z = jax.nn.one_hot(y, v.shape[1], dtype=v.dtype) - v
    return v, y, z, w / jnp.sum(w)


# --------------------------------------------------------------------------------------------
# Generic finite family


@declare(**_MC, return_witness=_WITNESS)
def weighted_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    weight_fn: Callable[[Array], Array] | Array,
    *,
    sample_weight: Float[Array, " n"] | None = None,
    return_witness: bool = False,
):
    r"""$CE_W$ (Gopalan et al. 2024, Definition 2.2) for a finite family $W = \{w_1, \dots, w_M\}$,
    **normalised**: $\max_m |\frac1N\sum_i \omega_i\langle y_i - v_i, w_m(v_i)\rangle|$.

    Accepted families:

    * a callable ``weight_fn(probs) -> (n, k)`` (one weight function; e.g. the witness of
      :func:`jcalib.recalibration.kernel_audit`) or ``-> (M, n, k)`` (a finite family
      evaluated on the sample; a parametric family is handled by vmapping over its
      parameters inside the callable);
    * an array of weights already evaluated on the sample, shape ``(n, k)`` or ``(M, n, k)``.

    Values must lie in $[-1, 1]$ (checked on concrete arrays), as Definition 2.2 requires.
    Infinite families need their own sup: see the named families in this module.

    Args:
        probs: ``(n, k)`` predictions on the simplex.
        labels: ``(n,)`` integer labels.
        weight_fn: callable or array, as above.
        sample_weight: optional ``(n,)`` non-negative weights.
        return_witness: return :class:`WeightedCE` with ``witness = (index, sign)`` of the
            maximising member (and its per-class correlations) instead of the scalar.

    Returns:
        Scalar array (or :class:`WeightedCE`).

    Examples:
        >>> import jax.numpy as jnp
        >>> v = jnp.array([[0.7, 0.3], [0.6, 0.4]])
        >>> round(float(weighted_calibration_error(v, jnp.array([1, 1]), lambda p: jnp.ones_like(p) * jnp.array([[1.0, -1.0]]))), 4)
        1.3
    """
    v, _, z, w = _inputs(probs, labels, sample_weight)
    weights = weight_fn(v) if callable(weight_fn) else as_float_array(weight_fn, "weight_fn")
    weights = jnp.asarray(weights)
    if weights.ndim == 2:
        weights = weights[None]
    if weights.ndim != 3 or weights.shape[1:] != v.shape:
        raise ValueError(f"weight_fn must give (or be) weights of shape (n, k) or (M, n, k) with (n, k) = {v.shape}, got {tuple(weights.shape)}")
    if is_concrete(weights) and (
        not bool(jnp.all(jnp.isfinite(weights))) or bool(jnp.any(jnp.abs(weights) > 1 + 1e-6))
    ):
        raise ValueError("weight functions must be finite with values in [-1, 1] (Definition 2.2)")
    weights = weights.astype(v.dtype)
    per = jnp.einsum("i,mik,ik->mk", w, weights, z)  # (M, k) per-member, per-class correlations
    corr = jnp.sum(per, axis=1)
    best = jnp.argmax(jnp.abs(corr))
    value = jnp.abs(corr[best])
    if not return_witness:
        return value
    sign = jnp.sign(corr[best])
    return WeightedCE(value, sign * per[best], (best, sign))


# --------------------------------------------------------------------------------------------
# Class-wise, confidence, top-label (§2), decision (Def. 2.3)


@declare(**_MC, n_bins=BINS, strategy=Choice("uniform", "quantile"), return_witness=_WITNESS)
def max_classwise_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    n_bins: int = 15,
    strategy: str = "uniform",
    *,
    sample_weight: Float[Array, " n"] | None = None,
    return_witness: bool = False,
):
    r"""$CE_W$ for the class-wise family $W = \{\phi(v_\ell)e_\ell\}$ (Gopalan et al. 2024, §2),
    **normalised**, with $\phi$ constant on bins: $\max_\ell \mathrm{ECE}_\ell$.

    For one class the best $\phi$ is the sign of the bin's residual, giving that class's
    binned ECE (:func:`jcalib.metrics.binned_ece` of $(v_\ell, 1[y=\ell])$); the family picks
    one class, hence the maximum. :func:`jcalib.metrics.classwise_ece` (Kull et al. 2019)
    reports the *mean* over classes instead, so
    ``classwise_ece`` $\le$ this $\le k\cdot$``classwise_ece``. The confidence and top-label
    families of §2 are exactly :func:`jcalib.metrics.confidence_ece` and
    :func:`jcalib.metrics.top_label_ece` (with ``order=1``), so they are not repeated here.

    Returns:
        Scalar array, or :class:`WeightedCE` with ``per_class`` the binned ECE of every class
        and ``witness`` the maximising class.
    """
    v, y, _, w = _inputs(probs, labels, sample_weight)
    per = _per_class_ece(v, y, w, n_bins, strategy)
    value = jnp.max(per)
    return WeightedCE(value, per, jnp.argmax(per)) if return_witness else value


@functools.partial(jax.jit, static_argnames=("n_bins", "strategy"))
def _per_class_ece(v, y, w, n_bins, strategy):
    def one(ell):
        hit = (y == ell).astype(jnp.int32)
        return binned_ece(v[:, ell], hit, n_bins=n_bins, strategy=strategy, sample_weight=w)

    return lax.map(one, jnp.arange(v.shape[1], dtype=y.dtype), batch_size=min(v.shape[1], 64))


@declare(**_MC, key=Key(), search=_search_of(PartitionSearch))
def two_action_decision_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    *,
    key: PRNGKeyArray,
    search: PartitionSearch = PartitionSearch(),
    sample_weight: Float[Array, " n"] | None = None,
):
    r"""Two-action decision calibration error (Gopalan et al. 2024, Definition 2.3), **normalised**:

    $$decCE = \sup_{a\in\mathbb R^k, b\in\mathbb R}\ \|E[(y - v)1(\langle a, v\rangle > b)]\|_2
      + \|E[(y - v)1(\langle a, v\rangle \le b)]\|_2 .$$

    This is :func:`jcalib.metrics.decision_calibration_error` with ``n_actions=2`` (Zhao et al.
    2021, Eq. 8, K = 2): the cells $\arg\max(\langle v, w_1\rangle, \langle v, w_2\rangle)$ are the
    half-spaces $\langle w_1 - w_2, v\rangle > 0$, and footnote 6 of Gopalan et al. (2024) shows
    the offset $b$ can be absorbed since $\langle 1, v\rangle = 1$. Both use the sample mean, so
    the values agree exactly. The supremum is searched (softmax relaxation, random restarts), so
    ``.value`` is a **lower bound** (Theorem 5.1: no poly(k)-time auditor is expected).

    Args:
        probs, labels: as usual.
        key: PRNG key for the restarts (keyword-only, required).
        search: the search's settings, :class:`jcalib.metrics.PartitionSearch`.
        sample_weight: optional ``(n,)`` weights.

    Returns:
        :class:`jcalib.metrics.decision.DecisionCalibrationResult` (``.value``, ``.witness``
        the two rows $w_1, w_2$; the half-space normal is $a = w_1 - w_2$).
    """
    return decision_calibration_error(probs, labels, n_actions=2, key=key, search=search, sample_weight=sample_weight)


# --------------------------------------------------------------------------------------------
# One-dimensional Lipschitz LP (exact inner problem of the smooth families)


def _host_reals(value, name, bound):
    """A finite real array, concrete (the LP runs on the host)."""
    if isinstance(value, jax.core.Tracer):
        raise ValueError(f"{name} must be concrete: the linear program runs on the host (call it outside jit)")
    RealArray(ndim=None, nonempty=False).check(value, name, bound)
    return value


@declare(t=Custom(_host_reals, "finite reals, concrete"), r=Custom(_host_reals, "finite reals, concrete"),
         lipschitz=Real(0, open_lo=True, static=True))
def lipschitz_correlation(t, r, lipschitz: float = 1.0):
    r"""$\max_\phi \sum_j r_j\,\phi(t_j)$ over $\phi:\mathbb R\to[-1,1]$ that are
    ``lipschitz``-Lipschitz, exactly (a linear program; host-side, SciPy HiGHS).

    Equal $t$ values are merged (their $r$ summed); on the sorted distinct values
    $u_1 < \dots < u_U$ the constraints $|\phi(u_{j+1}) - \phi(u_j)| \le L(u_{j+1} - u_j)$
    imply all the others, and any feasible values extend to a Lipschitz function on
    $\mathbb R$ (linear interpolation, constant outside). With $r_j = \omega_j(y_j - t_j)$
    this is the binary smooth calibration error $\sup_\phi E[(y - t)\phi(t)]$.

    Args:
        t: ``(n,)`` points.
        r: ``(n,)`` signed weights (residuals times sample weights).
        lipschitz: Lipschitz constant $L > 0$.

    Returns:
        ``(value, u, phi)``: the maximum, the sorted distinct points and the maximiser's values
        at them.
    """
    t, r = np.asarray(t, np.float64), np.asarray(r, np.float64)  # the checks' arrays may be float32
    if t.ndim != 1 or r.shape != t.shape or not t.size:
        raise ValueError(f"t and r must be non-empty 1-D arrays of one length, got {t.shape} and {r.shape}")
    u, inv = np.unique(t, return_inverse=True)
    ru = np.bincount(inv.ravel(), weights=r, minlength=len(u))
    if len(u) == 1:
        phi = np.sign(ru)
        return float(abs(ru[0])), u, phi
    import scipy.optimize  # here, not at the top: it is 0.2-0.3 s of every `import jcalib`

    gaps = lipschitz * np.diff(u)
    m = len(u) - 1
    rows = np.repeat(np.arange(m), 2)
    cols = np.stack([np.arange(m), np.arange(1, m + 1)], 1).ravel()
    vals = np.tile([-1.0, 1.0], m)
    diff = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(m, m + 1))
    a_ub = scipy.sparse.vstack([diff, -diff]).tocsr()
    res = scipy.optimize.linprog(
        -ru, A_ub=a_ub, b_ub=np.concatenate([gaps, gaps]), bounds=(-1.0, 1.0), method="highs"
    )
    if res.status != 0:  # pragma: no cover - the LP is always feasible (phi = 0) and bounded
        raise RuntimeError(f"smooth calibration LP failed: {res.message}")
    return float(-res.fun), u, res.x


def _host_inputs(probs, labels, sample_weight):
    v, _, z, w = _inputs(probs, labels, sample_weight)
    if not (is_concrete(v) and is_concrete(z)):
        raise ValueError("this metric solves linear programs on the host: call it outside jit")
    return np.asarray(v, np.float64), np.asarray(z, np.float64), np.asarray(w, np.float64)


def _all_subsets(k, m, max_subsets):
    count = sum(math.comb(k, j) for j in range(1, m + 1))
    if count > max_subsets:
        raise ValueError(
            f"{count} subsets of size <= {m} of {k} classes exceed max_subsets={max_subsets}; "
            "pass subsets= (a candidate list; the result is then a lower bound) or raise max_subsets"
        )
    masks = np.zeros((count, k), bool)
    i = 0
    for j in range(1, m + 1):
        for comb in itertools.combinations(range(k), j):
            masks[i, list(comb)] = True
            i += 1
    return masks


def _as_masks(subsets, k):
    masks = np.asarray(subsets)
    if masks.ndim == 1 and masks.dtype != bool:  # a single subset given as class indices
        masks = np.isin(np.arange(k), masks)[None]
    elif masks.ndim == 2 and masks.dtype != bool:
        raise ValueError("subsets must be a boolean (S, k) mask array or a 1-D array of class indices")
    masks = np.atleast_2d(masks).astype(bool)
    if masks.shape[1] != k:
        raise ValueError(f"subset masks must have {k} columns, got shape {masks.shape}")
    return masks


@functools.partial(jax.jit, static_argnames=("batch",))
def _subset_values(v, y, w, masks, batch):
    onehot = jax.nn.one_hot(y, v.shape[1], dtype=v.dtype)

    def one(mask):
        mf = mask.astype(v.dtype)
        p_t = jnp.clip(v @ mf, 0.0, 1.0)  # ⟨1_T, v⟩; clip float round-off above 1
        y_t = (onehot @ mf > 0.5).astype(jnp.int32)  # 1[label ∈ T]
        return smooth_calibration_error(p_t, y_t, sample_weight=w)

    return lax.map(one, masks, batch_size=batch)


@declare(**_MC, max_subset_size=Optional(Integer(1)), max_subsets=Integer(1, 2**20, bytes_per=8, what="its subset masks (per class)"),
         return_witness=_WITNESS)
def subset_smooth_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    max_subset_size: int | None = None,
    *,
    subsets=None,
    sample_weight: Float[Array, " n"] | None = None,
    max_subsets: int = 4096,
    return_witness: bool = False,
):
    r"""$m$-subset smooth calibration error (Gopalan et al. 2024, Definition 2.4), **normalised**:

    $$ssCE_m = \sup_{T\subseteq[k],\,|T|\le m}\ \sup_{\phi\in\mathrm{Lip}}
      E\big[\langle 1_T, y - v\rangle\,\phi(\langle 1_T, v\rangle)\big],$$

    the worst binary smooth calibration error $smCE_T$ of the events "label in $T$" with
    forecasts $\langle 1_T, v\rangle$ (Lip: 1-Lipschitz $\phi$ with $|\phi|\le 1$). Each
    $smCE_T$ is :func:`jcalib.metrics.smooth_calibration_error` (exact), mapped over the subsets
    inside one ``jit``; the supremum over $T$ is exact when all subsets of size $\le m$ are
    enumerated (default; $\sum_{j\le m}\binom kj$ of them, refused above ``max_subsets``), and a
    **lower bound** when ``subsets`` lists candidates. jit/vmap-able (except
    ``return_witness``, which solves one LP on the host for $\phi$).

    Args:
        probs, labels: as usual.
        max_subset_size: the paper's $m$, the largest subset size $|T|$ (default $k$).
        subsets: optional candidate subsets: boolean ``(S, k)`` masks, or a 1-D array of class
            indices for a single subset.
        sample_weight: optional ``(n,)`` weights.
        max_subsets: refuse to enumerate more subsets than this.
        return_witness: return :class:`WeightedCE`; ``witness = (mask, u, phi)``: the
            maximising subset and $\phi$'s values at the sorted distinct forecasts $u$.

    Returns:
        Scalar array, or :class:`WeightedCE` (``per_class``: $E[(y_\ell - v_\ell)\phi(\langle
        1_T, v\rangle)]$ for $\ell\in T$, 0 elsewhere).
    """
    v, y, z, w = _inputs(probs, labels, sample_weight)
    k = v.shape[1]
    m = k if max_subset_size is None else max_subset_size
    masks = _all_subsets(k, min(m, k), max_subsets) if subsets is None else _as_masks(subsets, k)
    masks = masks[(masks.sum(1) >= 1) & (masks.sum(1) <= m)]
    if len(masks) == 0:
        raise ValueError(f"no candidate subset has between 1 and max_subset_size={m} classes")
    values = _subset_values(v, y, w, jnp.asarray(masks), batch=min(len(masks), 4))
    value = jnp.max(values)
    if not return_witness:
        return value
    vh, zh, wh = _host_inputs(probs, labels, sample_weight)
    mask = masks[int(jnp.argmax(values))]
    t = vh[:, mask].sum(1)
    _, u, phi = lipschitz_correlation(t, wh * zh[:, mask].sum(1))
    per = np.where(mask, (wh[:, None] * zh * np.interp(t, u, phi)[:, None]).sum(0), 0.0)
    return WeightedCE(value, jnp.asarray(per), (mask, u, phi))


def _default_directions(k, m, max_directions):
    """Vectors in {−1, 0, 1}^k with 1 ≤ ‖a‖² ≤ m, one per ± pair (ϕ(−t) is again Lipschitz)."""
    count = sum(math.comb(k, j) * 2 ** (j - 1) for j in range(1, min(m, k) + 1))
    if count <= max_directions:
        out = []
        for j in range(1, min(m, k) + 1):
            for comb in itertools.combinations(range(k), j):
                for signs in itertools.product((1.0, -1.0), repeat=j - 1):
                    a = np.zeros(k)
                    a[list(comb)] = (1.0,) + signs
                    out.append(a)
        return np.array(out)
    return _all_subsets(k, min(m, k), max_directions).astype(np.float64)


@declare(**_MC, max_sq_norm=Optional(Real(1, static=True)),
         max_directions=Integer(1, 2**20, bytes_per=8, what="its candidate directions (per class)"), return_witness=_WITNESS)
def projected_smooth_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    max_sq_norm: float | None = None,
    *,
    directions=None,
    sample_weight: Float[Array, " n"] | None = None,
    max_directions: int = 512,
    return_witness: bool = False,
):
    r"""$m$-projected smooth calibration error (Gopalan et al. 2024, Definition 2.5), **normalised**:
    a lower bound from a finite set of directions, each solved exactly.

    $$psCE_m = \sum_{\ell=1}^k\ \sup_{a\in[-1,1]^k,\ \|a\|_2^2\le m}\ \sup_{\phi\in\mathrm{Lip}}
      E\big[(y_\ell - v_\ell)\,\phi(\langle a, v\rangle)\big]$$

    (the family is a product over coordinates, so the supremum splits; $\phi$ is 1-Lipschitz
    with $|\phi| \le 1$ on the range $[-1, 1]$ of $\langle a, v\rangle$). The inner supremum over
    $\phi$ is computed exactly for each candidate $a$ (:func:`lipschitz_correlation`); the
    supremum over $a$ is not convex (Theorem 8.1: no $k^{O(\log^{0.99}(1/\alpha))}$ auditor is
    expected), so the value is a **lower bound** on $psCE_m$, the max over candidates.
    Candidates (default): every $a\in\{-1,0,1\}^k$ with $1\le\|a\|_2^2\le m$ (one per $\pm$
    pair), or — when there are more than ``max_directions`` of those — the subset indicators
    $1_T$, $|T|\le m$. Because subset indicators are candidates, the value is
    $\ge$ :func:`subset_smooth_calibration_error` with the same $m$ (the first inequality of
    Lemma 2.7 holds by construction, as in its proof).

    Exact for $k = 2$, $m \ge 2$: $\langle a, v\rangle = a_2 + (a_1 - a_2)v_1$, the class is all
    $|a_1 - a_2|$-Lipschitz functions of $v_1$, largest at $a = (1, -1)$, a default candidate.

    Args:
        probs, labels: as usual.
        max_sq_norm: the paper's $m$, the bound on $\|a\|_2^2$ (default $k$: every
            $a \in [-1, 1]^k$).
        directions: optional ``(D, k)`` candidate directions in $[-1, 1]^k$ (those with
            $\|a\|_2^2 > m$ are rejected).
        sample_weight: optional ``(n,)`` weights.
        max_directions: cap on the default signed candidates (see above).
        return_witness: return :class:`WeightedCE` with ``witness = (A, phis)``: the chosen
            direction of each class (``(k, k)``) and, per class, $(u, \phi(u))$.

    Returns:
        Scalar array, or :class:`WeightedCE` (``per_class``: each coordinate's term).
    """
    v, z, w = _host_inputs(probs, labels, sample_weight)
    k = v.shape[1]
    m = float(k) if max_sq_norm is None else max_sq_norm
    if directions is None:
        cand = _default_directions(k, int(math.floor(m + 1e-9)), max_directions)
    else:
        cand = np.atleast_2d(np.asarray(directions, np.float64))
        if cand.shape[1] != k or not np.all(np.isfinite(cand)) or np.any(np.abs(cand) > 1):
            raise ValueError(f"directions must be a (D, {k}) array with entries in [-1, 1]")
        if np.any(np.sum(cand**2, 1) > m + 1e-9):
            raise ValueError(f"every direction needs ||a||^2 <= max_sq_norm = {m}")
    per = np.zeros(k)
    arg = np.zeros((k, k))
    phis = [None] * k
    for a in cand:
        t = v @ a
        for ell in range(k):
            val, u, phi = lipschitz_correlation(t, w * z[:, ell])
            if val > per[ell] or phis[ell] is None:
                per[ell], arg[ell], phis[ell] = val, a, (u, phi)
    value = jnp.asarray(float(np.sum(np.maximum(per, 0.0))))
    return WeightedCE(value, jnp.asarray(per), (arg, phis)) if return_witness else value


@declare(**_MC, max_points=Integer(1, 2**16, what="the LP has O(max_points^2) constraints"), return_witness=_WITNESS)
def full_smooth_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    max_points: int = 600,
    return_witness: bool = False,
):
    r"""Full smooth calibration error (Gopalan et al. 2024, Definition 2.6), **normalised**, exactly:

    $$fsCE = \sum_\ell \sup_{h} E[(y_\ell - v_\ell)\,h(v)]$$

    over $h:\Delta_k\to[-1,1]$ with $|h(v) - h(v')| \le \|v - v'\|_1$. On the sample this is one
    LP per class with a variable per distinct prediction and a Lipschitz constraint per ordered
    pair (any feasible values extend to the whole simplex by McShane's extension, clipped to
    $[-1,1]$); $O(n^2)$ constraints, so it is refused above ``max_points`` distinct predictions.
    Theorem 3.4: estimating it needs $\exp(k)$ samples; here it serves small-case checks of
    Lemma 2.7 ($psCE_m \le fsCE$). Host-side (SciPy HiGHS).

    Returns:
        Scalar array, or :class:`WeightedCE` with ``witness = (points, H)``: the distinct
        predictions and the maximiser's values there, ``(U, k)``.
    """
    v, z, w = _host_inputs(probs, labels, sample_weight)
    pts, inv = np.unique(v, axis=0, return_inverse=True)
    inv = inv.ravel()
    U, k = pts.shape
    if U > max_points:
        raise ValueError(f"{U} distinct predictions exceed max_points={max_points} (the LP has O(n^2) constraints)")
    r = np.stack([np.bincount(inv, weights=w * z[:, ell], minlength=U) for ell in range(k)], 1)
    per, hs = np.zeros(k), np.zeros((U, k))
    if U == 1:
        per, hs = np.abs(r[0]), np.sign(r)
    else:
        import scipy.optimize  # here, not at the top (see above)

        i, j = np.triu_indices(U, 1)
        dist = np.abs(pts[i] - pts[j]).sum(1)
        p = len(i)
        rows = np.repeat(np.arange(p), 2)
        cols = np.stack([i, j], 1).ravel()
        diff = scipy.sparse.csr_matrix((np.tile([1.0, -1.0], p), (rows, cols)), shape=(p, U))
        a_ub = scipy.sparse.vstack([diff, -diff]).tocsr()
        b_ub = np.concatenate([dist, dist])
        for ell in range(k):
            res = scipy.optimize.linprog(-r[:, ell], A_ub=a_ub, b_ub=b_ub, bounds=(-1.0, 1.0), method="highs")
            if res.status != 0:  # pragma: no cover - always feasible and bounded
                raise RuntimeError(f"full smooth calibration LP failed: {res.message}")
            per[ell], hs[:, ell] = -res.fun, res.x
    value = jnp.asarray(float(np.sum(np.maximum(per, 0.0))))
    return WeightedCE(value, jnp.asarray(per), (pts, hs)) if return_witness else value


# --------------------------------------------------------------------------------------------
# Sigmoid family (Def. 7.7)


@jax.jit
def _sigmoid_search(key, v, z, w, L, search):
    k = v.shape[1]
    n_restarts = search.n_restarts
    lr = jnp.asarray(search.learning_rate, v.dtype)
    ka, kb = split(key)
    a0 = jax.random.uniform(ka, (k, n_restarts, k), v.dtype, minval=-1.0, maxval=1.0)
    b0 = jax.random.uniform(kb, (k, n_restarts), v.dtype, minval=-1.0, maxval=1.0) * L
    wz = w[:, None] * z  # (n, k)

    def corr(a, b):
        # a: (k_cls, R, k), b: (k_cls, R) → (k_cls, R): Σ_i ω_i z_iℓ tanh(L⟨a, v_i⟩ + b)
        t = jnp.einsum("ij,lrj->ilr", v, a)
        return jnp.einsum("il,ilr->lr", wz, jnp.tanh(L * t + b[None]))

    # Projected ascent: a is clipped back into [−1, 1]^k after every Adam step.
    params = optimise(
        lambda p: -jnp.sum(corr(*p)), (a0, b0), optax.adam(lr), search.n_steps,
        project=lambda p: (jnp.clip(p[0], -1.0, 1.0), p[1]), unroll=search.unroll,
    ).params
    c = corr(*params)
    best = jnp.argmax(c, axis=1)
    per = jnp.maximum(jnp.take_along_axis(c, best[:, None], 1)[:, 0], 0.0)  # a = 0, b = 0 gives 0
    a = jnp.take_along_axis(params[0], best[:, None, None], 1)[:, 0]
    b = jnp.take_along_axis(params[1], best[:, None], 1)[:, 0]
    return jnp.sum(per), per, a, b


@declare(**_MC, L=Real(1), key=Key(), search=_search_of(SigmoidSearch), return_witness=_WITNESS)
def sigmoid_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    L: float = 4.0,
    *,
    key: PRNGKeyArray,
    search: SigmoidSearch = SigmoidSearch(),
    sample_weight: Float[Array, " n"] | None = None,
    return_witness: bool = False,
):
    r"""Sigmoid calibration error $CE_{\Sigma_L^k}$ (Gopalan et al. 2024, Definition 7.7), **normalised**,
    a lower bound from projected gradient ascent:

    $$CE_{\Sigma_L^k} = \sum_\ell \sup_{a\in[-1,1]^k,\ b\in\mathbb R}
      E\big[(y_\ell - v_\ell)\tanh(L\langle a, v\rangle + b)\big]$$

    (the family is closed under negation, so the absolute value is not needed). For each class,
    ``search.n_restarts`` starts ($a$ uniform in $[-1,1]^k$, $b$ uniform in $[-L, L]$) are
    ascended by Adam for ``search.n_steps`` fixed steps (one ``lax.scan``, all classes and restarts at once) with
    $a$ clipped to the box after each step; the best restart per class is kept. The value is a
    **lower bound** (the objective is not concave). $\Sigma_L$ is $L$-Lipschitz in
    $\|\cdot\|_1$, so $CE_{\Sigma_L^k} \le L\cdot fsCE$ (Lemma 8.2's argument).
    jit/vmap-able (L and the search's learning rate may be traced).

    Args:
        probs, labels: as usual.
        L: slope $L \ge 1$.
        key: PRNG key for the random starts (keyword-only, required).
        search: the ascent's settings, :class:`jcalib.metrics.SigmoidSearch` (restarts, Adam
            steps, learning rate, unroll).
        sample_weight: optional ``(n,)`` weights.
        return_witness: return :class:`WeightedCE`.

    Returns:
        Scalar array, or :class:`WeightedCE` with ``witness = (a, b)``, ``a`` ``(k, k)`` (row
        ℓ for class ℓ) and ``b`` ``(k,)``.
    """
    v, _, z, w = _inputs(probs, labels, sample_weight)
    value, per, a, b = _sigmoid_search(key, v, z, w, jnp.asarray(L, v.dtype), search)
    return WeightedCE(value, per, (a, b)) if return_witness else value


# --------------------------------------------------------------------------------------------
# Low-degree family P(d, 1) (Def. 6.5)


def _monomials(k: int, degree: int) -> np.ndarray:
    """All monomials of degree ≤ d in k variables as (M, d) index tuples into [v, 1] (index k
    is the constant 1): C(k + d, d) of them, constant first."""
    return np.array(list(itertools.combinations_with_replacement(range(k + 1), degree)), np.int32)[::-1]


@functools.partial(jax.jit, static_argnames=("degree", "tile"))
def _low_degree_exact(v, z, w, *, degree, tile):
    n, k = v.shape
    idx = _monomials(k, degree)
    M = idx.shape[0]
    nb = -(-M // tile)
    # pad with copies of the constant monomial (index k everywhere): duplicates do not change a max
    idx = np.concatenate([idx, np.full((nb * tile - M, degree), k, np.int32)]).reshape(nb, tile, degree)
    vext = jnp.concatenate([v, jnp.ones((n, 1), v.dtype)], axis=1)
    wz = w[:, None] * z

    def block(carry, ib):
        best, arg = carry
        feats = jnp.prod(vext[:, ib], axis=2)  # (n, tile): v^e for each monomial of the block
        c = feats.T @ wz  # (tile, k): E[z_ℓ v^e]
        j = jnp.argmax(jnp.abs(c), axis=0)
        cj = jnp.take_along_axis(c, j[None], 0)[0]
        better = jnp.abs(cj) > jnp.abs(best)
        return (jnp.where(better, cj, best), jnp.where(better[:, None], ib[j], arg)), None

    init = (jnp.zeros((k,), v.dtype), jnp.full((k, degree), k, jnp.int32))
    (best, arg), _ = lax.scan(block, init, jnp.asarray(idx))
    return jnp.sum(jnp.abs(best)), jnp.abs(best), arg, jnp.sign(best)


@declare(**_MC, degree=Integer(0, 64, what="C(k + degree, degree) monomials"), method=Choice("exact", "kernel"),
         tile=Integer(1, 2**20, what="rows per Gram block"), return_witness=_WITNESS)
def low_degree_calibration_error(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    degree: int = 2,
    *,
    method: str = "exact",
    sample_weight: Float[Array, " n"] | None = None,
    tile: int = 512,
    return_witness: bool = False,
):
    r"""Low-degree calibration error $CE_{P(d,1)^k}$ (Gopalan et al. 2024, Definition
    6.5, after GKSZ22), **normalised**.

    $P(d,1)$: polynomials $p(v) = \sum_{\deg e\le d} w_e v^e$ with $\sum_e|w_e| \le 1$ (so
    $|p| \le 1$ on the simplex, as every monomial is). A linear functional's supremum over an
    $\ell_1$ ball is the largest coefficient, so exactly

    $$CE_{P(d,1)^k} = \sum_\ell \max_{\deg e \le d} \big|E[(y_\ell - v_\ell)\,v^e]\big| .$$

    * ``method="exact"``: enumerates the $\binom{k+d}{d}$ monomials (the GKSZ22 auditor, time
      $O(n\binom{k+d}{d}(d + k))$, exponential in $d$), in blocks of ``tile`` monomials (memory
      $O(n\cdot\mathrm{tile}\cdot d)$). jit/vmap-able.
    * ``method="kernel"``: the **upper bound** $\sum_\ell \lambda_\ell$ (weighted analogue of
      Algorithm 2's $\lambda_\ell / n$) $= CE_{B_\Gamma(1)^k} \ge CE_{P(d,1)^k}$, since
      $P(d,1) \subseteq B_{\Gamma(d)}(1)$ (proof of Corollary 6.6); polynomial in $k$ and $d$,
      $O(n^2(k + d))$ time.

    Returns:
        Scalar array, or :class:`WeightedCE` with (exact) ``witness = (monomials, signs)``:
        per class the maximising monomial as ``d`` indices into $[v_1..v_k, 1]$ and its sign.
    """
    v, _, z, w = _inputs(probs, labels, sample_weight)
    if method == "kernel":
        wz = w[:, None] * z
        lam2 = jnp.sum(wz * kernel_matmul(multinomial_kernel(degree), v, v, wz, tile), axis=0)
        per = jnp.sqrt(jnp.maximum(lam2, 0.0))
        value = jnp.sum(per)
        return WeightedCE(value, per, None) if return_witness else value
    if degree == 0:
        per = jnp.abs(jnp.sum(w[:, None] * z, axis=0))
        value = jnp.sum(per)
        return WeightedCE(value, per, (jnp.zeros((v.shape[1], 0), jnp.int32), jnp.sign(per))) if return_witness else value
    value, per, arg, sign = _low_degree_exact(v, z, w, degree=degree, tile=min(tile, math.comb(v.shape[1] + degree, degree)))
    return WeightedCE(value, per, (arg, sign)) if return_witness else value

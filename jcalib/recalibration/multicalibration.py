r"""Multicalibration by iterative patching (Hébert-Johnson, Kim, Reingold, Rothblum 2018).

HKRR's post-processing (Hébert-Johnson et al. 2018, *Multicalibration: Calibration for the
(Computationally-Identifiable) Masses*, ICML, Algorithm 1): start from the model's forecasts
$p$ and, while some group $S$ and forecast level $v$ (the bin $\{i \in S: b(p_i) = v\}$,
$b(p) = \lfloor K p \rfloor$) is miscalibrated, patch the forecasts of that cell towards its
frequency of ones:
$$\Delta_{S,v} = \frac{\sum_{i\in S_v} w_i\,g_{iS}\,(y_i - p_i)}{\sum_{i\in S_v} w_i\,g_{iS}},
\qquad p_i \leftarrow \Pi_{[0,1]}\big(p_i + g_{iS}\,\Delta_{S,v}\big)\ \ (i \in S_v),$$
with memberships $g_{iS} \in [0, 1]$ (indicators for ordinary groups).

**Stopping rule** (HKRR, Algorithm 1's loop condition): a cell is *violated* when
$|\Delta_{S,v}| > \alpha$ and its weight is at least $\alpha W_S / K$ (HKRR's
$\tau = \alpha\lambda|S|$ with $\lambda = 1/K$: smaller cells are too small to matter). Each
round patches the violated cell with the largest mass-weighted bias $W_{S,v}|\Delta_{S,v}|$ and
the loop stops at the first round with no violated cell, or after ``max_rounds`` rounds.
Each patch lowers the squared error $\sum_i w_i (p_i - y_i)^2$ by
$W_{S,v}\Delta_{S,v}^2 \ge \alpha^3 W_S / K$ (HKRR's potential argument), so at most
$K / \alpha^3$ patches are made per unit of data weight.

**Overfitting check on a second split**: the data are split by position into a patching part
and a validation part (every ``round(1 / validation_fraction)``-th sample). Patches are chosen
on the patching part only; after each round the worst group error
(:func:`~jcalib.metrics.multicalibration_error`, same bins) is measured on the validation
part, and the fitted map keeps the patches up to the round with the smallest validation error
(HKRR bound the generalisation of the patches by the size of the held-out set; this is the
empirical check). ``validation_fraction=0`` uses every sample and keeps every patch.

The rounds are a ``lax.scan`` of fixed length (a stopped run makes zero patches), so ``fit``
jits and vmaps.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._validation import BINS, Custom, Int as IntSpec, Real, Weights, as_float_array, check_fields, declare
from ..metrics.binary import bin_index
from ..metrics.multicalibration import check_groups, group_bin_tables
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = ["FittedMulticalibration", "Multicalibration", "MulticalibrationHistory"]


class MulticalibrationHistory(NamedTuple):
    """What each round of the patching did.

    Attributes:
        train_error: worst group error on the patching part before each round, ``(R,)``.
        validation_error: worst group error on the validation part after each round, ``(R,)``
            (NaN without a validation part).
        patched: whether the round made a patch, ``(R,)`` bool.
    """

    train_error: Float[Array, " R"]
    validation_error: Float[Array, " R"]
    patched: Array


def _binary_or_two_columns(value, name, bound):
    """Binary forecasts ``(n,)``, or rows ``(n, C)`` on the simplex; n >= 1."""
    from .._validation import check_binary_probs, check_simplex_probs

    arr = as_float_array(value, name)
    if arr.ndim == 2:
        arr = check_simplex_probs(arr, name)
    else:
        arr = check_binary_probs(arr, name)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be binary forecasts (n,) or rows (n, C) on the simplex, got shape {tuple(arr.shape)}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one forecast is needed, got shape {tuple(arr.shape)}")
    return arr


def _labels(value, name, bound):
    from .._validation import check_binary_labels

    probs = bound["probs"]
    if probs.ndim == 2 and probs.shape[1] > 2:
        from .._validation import check_class_labels

        y = check_class_labels(value, probs.shape[1], name)
    else:
        y = check_binary_labels(value, name)
    if y.ndim != 1 or y.shape[0] != probs.shape[0]:
        raise ValueError(f"mismatched lengths: {name} must have shape ({probs.shape[0]},), got {tuple(y.shape)}")
    return y


def _groups_or_all(value, name, bound):
    if value is None:
        probs = bound["probs"]
        return jnp.ones((probs.shape[0], 1), probs.dtype)
    if callable(value) and not hasattr(value, "shape"):
        raise TypeError(f"{name} must be a membership matrix (n, G); evaluate your group function on the "
                        "features first (groups=my_groups(X))")
    g = check_groups(value, name, bound)
    return g


PROBS = Custom(_binary_or_two_columns, "binary forecasts (n,) or simplex rows (n, C)")
GROUPS = Custom(_groups_or_all, "a membership matrix (n, G) in [0, 1], or None for the one group of all samples")


def _positive(p):
    return p[:, 1] if p.ndim == 2 else p


def _as_input_shape(q, probs):
    return jnp.stack([1 - q, q], axis=1) if probs.ndim == 2 else q


def _patch(p, g, group, b, delta, n_bins):
    """One patch: $p_i \\leftarrow \\Pi_{[0,1]}(p_i + g_{i,group}\\,\\Delta)$ where $b(p_i) = b$."""
    hit = (bin_index(p, n_bins) == jnp.asarray(b, jnp.int32)).astype(p.dtype) * g[:, group]
    return jnp.clip(p + hit * delta, 0.0, 1.0)


def _worst(p, y, w, g, n_bins):
    wb, bias = group_bin_tables(p, y, w, g, n_bins)
    size = jnp.sum(wb, axis=1)
    per = jnp.where(size > 0, jnp.sum(jnp.abs(bias), axis=1) / jnp.where(size > 0, size, 1), 0.0)
    return jnp.max(per)


class FittedMulticalibration(AbstractFittedRecalibrator):
    r"""The patches of a fitted :class:`Multicalibration`, replayed in order on new forecasts.

    ``fitted(probs, groups)``: the memberships of the new samples in the same $G$ groups (columns
    in the order used in ``fit``); ``groups=None`` is allowed when the fit used the one group of
    all samples. A group defined by a function of the features is passed as its value on the new
    features, ``groups=my_groups(X_new)``.

    Attributes:
        group: the patched group of each round, ``(R,)`` int32 (a leading class axis for
            one-vs-rest, $C > 2$).
        bin: the patched bin, ``(R,)`` int32.
        delta: the shift $\Delta$ (0 for rounds that made no patch or were cut by the
            validation check), ``(R,)``.
        n_groups: $G$ (static).
        n_bins: $K$ (static).
        history: the :class:`MulticalibrationHistory` of the fit.
    """

    group: Int[Array, " R"]
    bin: Int[Array, " R"]
    delta: Float[Array, " R"]
    history: MulticalibrationHistory
    n_groups: int = eqx.field(static=True)
    n_bins: int = eqx.field(static=True)

    def __call__(self, probs, groups=None):
        p = _binary_or_two_columns(probs, "probs", {})
        if groups is None:
            if self.n_groups != 1:
                raise ValueError(f"groups is required: this map was fitted on {self.n_groups} groups; pass their "
                                 "memberships (n, G) for the new samples")
            g = jnp.ones((p.shape[0], 1), p.dtype)
        else:
            g = check_groups(groups, "groups", {"probs": p})
            if g.shape[1] != self.n_groups:
                raise ValueError(f"groups must have {self.n_groups} columns (the groups seen in fit), got {g.shape[1]}")
        g = g.astype(p.dtype)
        if p.ndim == 2 and p.shape[1] > 2:  # one-vs-rest: one patch list per class, rows renormalised
            if self.delta.ndim != 2 or self.delta.shape[0] != p.shape[1]:
                raise ValueError(f"probs must have the {self.delta.shape[0] if self.delta.ndim == 2 else 2} columns seen in fit, "
                                 f"got {p.shape[1]}")
            q = jax.vmap(lambda f, col: _apply(f, col, g), in_axes=(0, 1), out_axes=1)(self, p)
            tot = jnp.sum(q, axis=1, keepdims=True)
            return jnp.where(tot > 0, q / jnp.where(tot > 0, tot, 1), 1.0 / p.shape[1])
        if self.delta.ndim != 1:
            raise ValueError(f"probs must have the {self.delta.shape[0]} columns seen in fit, got shape {tuple(p.shape)}")
        q = _apply(self, _positive(p), g)
        return _as_input_shape(q, p)


def _apply(fitted, p, g):
    def step(p, patch):
        group, b, delta = patch
        return _patch(p, g, group, b, delta.astype(p.dtype), fitted.n_bins), None

    p, _ = jax.lax.scan(step, p, (fitted.group, fitted.bin, fitted.delta))
    return p


class Multicalibration(AbstractRecalibrator):
    r"""HKRR multicalibration of binary forecasts on a family of groups, by iterative patching
    on held-out data (module docstring: the update, the stopping rule, the validation check).

    ``Multicalibration(alpha=0.02).fit(probs, labels, groups=G)`` returns a
    :class:`FittedMulticalibration`; ``fitted(new_probs, groups=G_new)`` applies it. ``groups``
    is a membership matrix ``(n, G)`` (booleans or weights in $[0, 1]$); ``None`` is the one
    group of all samples (plain calibration by bins). Forecasts are ``(n,)`` probabilities of
    the positive class or simplex rows ``(n, C)`` (the output has the input's shape): with
    $C = 2$ the positive column is patched; with $C > 2$ each class is patched one-vs-rest (the
    classes vmapped) and the rows are renormalised.

    Attributes:
        alpha: the tolerance $\alpha \in (0, 1)$ of the stopping rule.
        n_bins: $K$, forecast levels $[k/K, (k+1)/K)$ (static).
        max_rounds: $R$, the most patches (static).
        validation_fraction: share of the samples held out for the overfitting check, in
            $[0, 1/2]$ (static; 0 keeps every patch).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> n = 2000
        >>> a = jnp.arange(n) % 2 == 0                      # two groups: even and odd rows
        >>> groups = jnp.stack([a, ~a], 1)
        >>> truth = jnp.where(a, 0.3, 0.7)
        >>> y = (jax.random.uniform(jax.random.key(0), (n,)) < truth).astype(jnp.int32)
        >>> p = jnp.full(n, 0.5)                             # calibrated on average only
        >>> fitted = Multicalibration(alpha=0.05, n_bins=10).fit(p, y, groups=groups)
        >>> q = fitted(p, groups)
        >>> round(float(q[0]), 1), round(float(q[1]), 1)
        (0.3, 0.7)

    References:
        Hébert-Johnson, Kim, Reingold, Rothblum (2018), *Multicalibration: Calibration for the
        (Computationally-Identifiable) Masses*, ICML, Algorithm 1.
    """

    alpha: float = 0.02
    n_bins: int = eqx.field(static=True, default=10, converter=BINS.converter("n_bins"))
    max_rounds: int = eqx.field(static=True, default=200, converter=IntSpec(1, 2**20).converter("max_rounds"))
    validation_fraction: float = eqx.field(static=True, default=0.3)

    def __check_init__(self):
        check_fields(self, alpha=Real(0, 1, open_lo=True, open_hi=True),
                     validation_fraction=Real(0, 0.5, static=True))

    @declare(probs=PROBS, labels=Custom(_labels, "binary outcomes (n,)"), groups=GROUPS,
             sample_weight=Weights(length_of="probs", fill=True))
    def fit(self, probs, labels, *, groups=None, sample_weight=None) -> FittedMulticalibration:
        """Patch on held-out ``probs`` ``(n,)`` or ``(n, C)``, ``labels`` ``(n,)`` and ``groups``
        ``(n, G)`` (``None``: one group of all samples)."""
        p = _positive(probs) if probs.ndim == 1 or probs.shape[1] == 2 else probs[:, 0]
        n = p.shape[0]
        frac = float(self.validation_fraction)
        if frac > 0:
            stride = max(2, round(1 / frac))
            val = (jnp.arange(n) % stride) == 0
            if n < 2 * stride:
                raise ValueError(f"probs has {n} samples: too few to hold out every {stride}-th for validation_fraction="
                                 f"{frac:g}; pass more data or validation_fraction=0")
        else:
            val = jnp.zeros((n,), bool)
        args = (groups.astype(p.dtype), sample_weight, val, self.alpha, self.n_bins, self.max_rounds, frac > 0)
        if probs.ndim == 2 and probs.shape[1] > 2:  # one-vs-rest, the classes vmapped
            onehot = jax.nn.one_hot(labels, probs.shape[1], dtype=probs.dtype)
            return jax.vmap(lambda col, yc: _fit(col, yc, *args), in_axes=(1, 1))(probs, onehot)
        return _fit(p, labels.astype(p.dtype), *args)


def _fit_impl(p, y, g, w, val, alpha, n_bins, max_rounds, validate):
    dt = p.dtype
    alpha = jnp.asarray(alpha, dt)
    w_fit = jnp.where(val, 0.0, w).astype(dt)
    w_val = jnp.where(val, w, 0.0).astype(dt)
    G = g.shape[1]

    def round_(carry, _):
        q, stopped = carry
        wb, bias = group_bin_tables(q, y, w_fit, g, n_bins)  # bias = sum w g (q - y)
        size = jnp.sum(wb, axis=1, keepdims=True)
        delta = jnp.where(wb > 0, -bias / jnp.where(wb > 0, wb, 1), 0.0)  # mean (y - q) of the cell
        big_enough = wb >= alpha * size / n_bins
        violated = big_enough & (jnp.abs(delta) > alpha) & (wb > 0)
        score = jnp.where(violated, wb * jnp.abs(delta), -1.0)
        flat = jnp.argmax(score.reshape(-1))
        grp, b = (flat // n_bins).astype(jnp.int32), (flat % n_bins).astype(jnp.int32)
        make = jnp.any(violated) & ~stopped
        d = jnp.where(make, delta[grp, b], 0.0)
        train_err = jnp.max(jnp.where(size[:, 0] > 0, jnp.sum(jnp.abs(bias), axis=1) / jnp.where(size[:, 0] > 0, size[:, 0], 1), 0.0))
        q_new = _patch(q, g, grp, b, d, n_bins)
        val_err = _worst(q_new, y, w_val, g, n_bins) if validate else jnp.full((), jnp.nan, dt)
        return (q_new, stopped | ~make), (grp.astype(jnp.int32), b.astype(jnp.int32), d, train_err, val_err, make)

    (_, _), (grp, b, d, tr, va, made) = jax.lax.scan(round_, (p, jnp.zeros((), bool)), None, length=max_rounds)
    if validate:
        # keep the rounds up to the smallest validation error (ties: the earliest); the error
        # before any patch competes as "keep nothing"
        before = _worst(p, y, w_val, g, n_bins)
        errs = jnp.concatenate([before[None], va])
        keep = jnp.argmin(errs)  # number of rounds kept
        d = jnp.where(jnp.arange(max_rounds) < keep, d, 0.0)
    return FittedMulticalibration(grp, b, d, MulticalibrationHistory(tr, va, made), G, n_bins)


_fit = jax.jit(_fit_impl, static_argnames=("n_bins", "max_rounds", "validate"))

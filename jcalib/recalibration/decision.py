"""Decision recalibration: Algorithm 1 and its softmax version (Zhao et al. 2021, §4.3–4.4).

Zhao, Kim, Sahoo, Ma, Ermon (NeurIPS 2021), *Calibrating Predictions to Decisions*.

Each stage t finds the partition witness w_t that most violates decision calibration on the
current predictions P̂ (``jcalib.metrics.decision.partition_search``), then moves every
prediction by the least-squares correction of the residual on that partition:

    W = b(P̂; w_t)                   (N × K cells: softmax of P̂ w_tᵀ, or argmax one-hot)
    D_t = (WᵀW)⁻¹ Wᵀ (Y − P̂)        (K × C; rows sum to 0 since the rows of Y − P̂ do)
    P̂ ← P̂ + W D_t

With argmax cells WᵀW is diagonal and D_t's rows are the per-cell mean residuals d_a of
Algorithm 1, line 4; with softmax cells this is the soft version (the paper's Algorithm 2 in
Appendix A, as in the public reference code, TorchUQ ``DecisionCalibrator``). D_t minimises
‖Y − P̂ − W D‖², and D = 0 is feasible, so no stage raises the L2 error on the fitting data
(the "without degrading" half of Theorem 2.2). At prediction time the stages are applied in
order and the result is clipped to [1e-7, 1 − 1e-7] and renormalised.

`DecisionCalibration` holds the settings (the witness search as one
:class:`jcalib.metrics.PartitionSearch`); its ``fit`` is one jitted ``lax.scan`` over stages
and returns a `FittedDecisionCalibration`, which applies the stages to new predictions.
``fit_with_history`` runs the same stages one by one with a progress bar and records, after
every stage, the loss gap and accuracy of validation sets.

A decision maker's own losses (``losses=``, one ``(n_actions, C)`` matrix or a stack
``(L, n_actions, C)``) replace the search: each stage corrects the Bayes-decision partition of
the given loss whose Eq. (8) value (Eq. 9 with soft cells) is largest, i.e. Algorithm 1 for
the finite loss class (Definition 2's calibration with respect to those losses). Nothing is
drawn at random then: the fit's key is unused (``None`` is accepted).

Departure (``projection="simplex"``, the default): after every stage the predictions are
projected (Euclidean) onto the simplex, in fitting and at prediction time alike, so every
stage searches and corrects valid probability vectors. Algorithm 1, line 5 allows "projecting
onto [0, 1] if necessary"; the reference code instead lets intermediate stages leave the
simplex and clips once at the end (``projection="none"``). A stage moves every prediction of a
cell by the same vector, so with many small probabilities (C ≥ 100) a third of the entries can
go negative, and the single final clip then undoes part of the correction: on the C = 100
synthetic task of ``experiments/decision_calibration.py`` the random-loss gap *rose* with the
stages under "none" and fell under "simplex". The projection keeps the L2 guarantee: Y lies in
the simplex, a convex set, so projecting onto it cannot move a prediction away from Y.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar, Mapping, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray
from tqdm.auto import tqdm

from .._simplex import project_simplex
from .._threefry import fold_in, split, split_into
from .._validation import (
    Choice,
    Custom,
    Integer,
    Key,
    Optional,
    Bool,
    Real,
    RealArray,
    SimplexProbs,
    as_float_array,
    as_int,
    check_class_labels,
    check_fields,
    check_finite,
    check_float_scalar,
    check_key,
    check_same_length,
    check_simplex_probs,
    checked_at_the_boundary,
    declare,
    is_concrete,
    multiclass_inputs,
    to_device,
)
from .._weights import normalised_weights
from ..metrics.decision import (
    check_loss_matrices,
    decision_loss_gap,
    family_values,
    partition_search,
    partition_weights,
)
from ..metrics.search import PartitionSearch
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = ["DecisionCalibration", "FittedDecisionCalibration", "StageInfo"]

_CLIP = 1e-7  # Final clip of the reference code, before renormalising.


class StageInfo(NamedTuple):
    """Diagnostics of one stage (stacked over stages in `FittedDecisionCalibration.info`).

    Attributes:
        value: Eq. (8) (argmax cells) of the stage's witness on the predictions it corrects.
        soft_value: Eq. (9) (softmax cells) of the same witness.
        l2_error: mean ‖p̂ − y‖₂² on the fitting data after the stage (before the final clip).
    """

    value: Float[Array, ""]
    soft_value: Float[Array, ""]
    l2_error: Float[Array, ""]


def _finalise(probs):
    # Clip then renormalise (reference code clips only; the renormalisation puts rows back on
    # the simplex, which the clip can leave by up to C · 1e-7).
    p = jnp.clip(probs, _CLIP, 1.0 - _CLIP)
    return p / jnp.sum(p, axis=1, keepdims=True)


def _project(probs, project):
    if not project:
        return probs
    return project_simplex(probs)  # bisection, see jcalib._simplex


def _solve_adjustment(cells, residual, weights, ridge):
    # D = (WᵀW)⁻¹ Wᵀ (Y − P̂) with empirical (weighted) means, solved by least squares on the
    # K × K normal equations (an empty hard cell makes WᵀW singular; lstsq then gives that
    # cell D = 0). Departure: a ridge of `ridge` × mean diagonal of WᵀW is added, so two soft
    # cells that almost coincide give a bounded D. The ridge keeps D's rows summing to 0 and
    # the L2 error non-increasing (D minimises ‖R − W D‖² + λ‖D‖², and D = 0 is feasible).
    cw = cells * weights[:, None]
    gram = cw.T @ cells
    k = gram.shape[0]
    lam = ridge * jnp.trace(gram) / k
    return jnp.linalg.lstsq(gram + lam * jnp.eye(k, dtype=gram.dtype), cw.T @ residual)[0]


# The search's learning rate and scale, the ridge and the losses are traced (one compilation
# for all their values); the search's counts are static fields of `search`.
@partial(jax.jit, static_argnames=("n_actions", "hard", "project"))
@checked_at_the_boundary
def _stage(key, current, onehot, weights, search, ridge, losses, *, n_actions, hard, project):
    residual = onehot - current
    if losses is None:
        found = partition_search(current, residual, weights, key=key, n_actions=n_actions, search=search)
    else:
        # The Bayes rule of L, argmin_a ⟨L_a, q⟩ (Definition 1), is the argmax partition of −L.
        found = family_values(-losses, current, residual, weights)
    # Keep the candidate that is best for the cells the update uses.
    best = jnp.argmax(found.value if hard else found.soft_value)
    w = found.witness[best]
    cells = partition_weights(w, current, hard=hard)
    d = _solve_adjustment(cells, residual, weights, ridge)
    new = _project(current + cells @ d, project)
    l2 = jnp.sum(weights * jnp.sum((new - onehot) ** 2, axis=1))
    return new, w, d, StageInfo(found.value[best], found.soft_value[best], l2)


@partial(jax.jit, static_argnames=("n_stages", "n_actions", "hard", "project"))
def _fit_stages(key, probs, onehot, sample_weight, search, ridge, losses, *, n_stages, n_actions, hard, project):
    # All stages in one compiled scan (a scan outside jit would compile its body on every call);
    # the weights normalised in it too (on their own, two more programs on a first call)
    weights = normalised_weights(sample_weight, probs)

    def body(current, k):
        new, w, d, info = _stage(k, current, onehot, weights, search, ridge, losses,
                                 n_actions=n_actions, hard=hard, project=project)
        return new, (w, d, info)

    keys = None if key is None else split(key, n_stages)
    return jax.lax.scan(body, probs, keys, length=n_stages)[1]


@partial(jax.jit, static_argnames=("hard", "project"))
@checked_at_the_boundary
def _next(w, d, current, *, hard, project):
    # One fitted stage on new predictions (the body of `_apply`'s scan).
    return _project(current + partition_weights(w, current, hard=hard) @ d, project)


@jax.jit
def _apply(fitted, probs, n_stages):
    active = jnp.arange(fitted.witness.shape[0]) < n_stages

    def body(current, stage):
        w, d, on = stage
        new = _next(w, d, current, hard=fitted.hard, project=fitted.project)
        return jnp.where(on, new, current), None

    out, _ = jax.lax.scan(body, probs, (fitted.witness, fitted.adjustment, active))
    return _finalise(out)


class FittedDecisionCalibration(AbstractFittedRecalibrator):
    """Stacked stages of a fitted decision recalibration; calling it applies them.

    Attributes:
        witness: ``(S, K, C)`` the partition w_t of every stage.
        adjustment: ``(S, K, C)`` the correction D_t of every stage.
        info: :class:`StageInfo` of every stage (fields of shape ``(S,)``), on the fitting
            data.
        hard: argmax cells (Algorithm 1) instead of softmax cells (soft version); static.
        project: project onto the simplex after every stage (see the module docstring);
            static.
    """

    witness: Float[Array, "S K C"]
    adjustment: Float[Array, "S K C"]
    info: StageInfo
    hard: bool = eqx.field(static=True, default=False)
    project: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        check_fields(self, witness=RealArray(ndim=3, nonempty=False), adjustment=RealArray(ndim=3, nonempty=False, shape_of="witness"),
                     hard=Bool(), project=Bool())
        if self.witness.shape[-1] < 2 or self.witness.shape[-2] < 1:
            raise ValueError(f"witness must have shape (S, K, C) with K >= 1 actions and C >= 2 classes, got {tuple(self.witness.shape)}")

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "N C"], *, n_stages: int | Int[Array, ""] | None = None) -> Float[Array, "N C"]:
        """Apply the stages in order (projecting onto the simplex after each if ``project``),
        then clip to [1e-7, 1 − 1e-7] and renormalise.

        Args:
            probs: ``(N, C)`` predictions of the same model on new data.
            n_stages: apply only the first ``n_stages`` stages (may be traced: later stages
                are masked, not sliced, so every prefix shares one compilation); ``None`` for
                all.

        Returns:
            ``(N, C)`` recalibrated probabilities on the simplex.
        """
        if probs.shape[1] != self.witness.shape[2]:
            raise ValueError(f"probs must have {self.witness.shape[2]} columns (the classes seen in fit), got {probs.shape[1]}")
        total = self.witness.shape[0]
        if n_stages is not None and not isinstance(n_stages, jax.core.Tracer):
            n_stages = as_int(n_stages)
            if isinstance(n_stages, bool) or not isinstance(n_stages, int) or not 0 <= n_stages <= total:
                raise ValueError(f"n_stages must be None or an int in [0, {total}], got {n_stages!r}")
        return _apply(self, probs, to_device(total if n_stages is None else n_stages))


def _check_validation(validation, n_classes):
    if validation is None:
        sets = {}
    elif isinstance(validation, Mapping):
        sets = dict(validation)
    else:
        sets = {"val": validation}
    monitor = {}
    for name, pair in sets.items():
        if not isinstance(pair, (tuple, list)) or len(pair) not in (2, 3):
            raise ValueError(f"validation set {name!r} must be a (probs, labels) pair "
                             "or a (probs, labels, true_probs) triple")
        vp = check_simplex_probs(pair[0], f"{name} probs")
        if vp.shape[1] != n_classes:
            raise ValueError(f"validation set {name!r} has {vp.shape[1]} classes, expected {n_classes}")
        vl = check_class_labels(pair[1], vp.shape[1], f"{name} labels")
        check_same_length(probs=vp, labels=vl)
        vt = None
        if len(pair) == 3:
            vt = check_simplex_probs(pair[2], f"{name} true_probs")
            if vt.shape != vp.shape:
                raise ValueError(f"{name} true_probs must have shape {tuple(vp.shape)}, got {tuple(vt.shape)}")
        monitor[name] = (vp, vl, vt)
    return monitor


def _search(search, name, bound):
    if not isinstance(search, PartitionSearch):
        raise TypeError(f"{name} must be a jcalib.metrics.PartitionSearch, got {type(search).__name__}")
    return search


_SEARCH = Custom(_search, "a jcalib.metrics.PartitionSearch")


class DecisionCalibration(AbstractRecalibrator):
    """Decision recalibration (Zhao et al. 2021, Algorithm 1 and its soft version), ``n_stages`` stages.

    ``fit`` is one jitted ``lax.scan`` over stages, each running the vmapped multi-restart
    partition search (itself a ``lax.scan`` of Adam steps): it jits and vmaps (over keys,
    datasets, sample weights, the float settings ``ridge``, ``search.learning_rate`` and
    ``search.scale``, or given losses).

    Attributes:
        n_actions: K, cells per stage (the decision makers' number of actions); default 2, or
            the number of actions of ``losses`` (static).
        n_stages: T, the number of stages (reference code: 20–100) (static).
        search: the witness search's settings, :class:`jcalib.metrics.PartitionSearch`; the
            default has 4 restarts (reference: 1) and ascends the squared objective
            Σ_a ‖E[(Y − P̂) b(a)]‖₂² (the reference code's). Steps: reference 5000 at step 1e-2,
            here 300 with ``scale`` 100 (see :func:`jcalib.metrics.decision.partition_search`).
        partition: ``"soft"`` (softmax cells; the paper's experiments and the reference code)
            or ``"hard"`` (argmax cells, Algorithm 1 as printed) (static).
        ridge: relative ridge in the least-squares solve for D (see the module docstring); a
            leaf.
        projection: ``"simplex"`` projects onto the simplex after every stage (default; see
            the module docstring) or ``"none"`` (reference code: only the final clip)
            (static).
        losses: optional loss matrices ``(n_actions, C)`` or ``(L, n_actions, C)`` (the loss of
            action a under outcome c; n_actions ≥ 2, finite): each stage then corrects the
            worst of their Bayes-decision partitions instead of searching (with soft cells the
            softmax of −⟨L_a, q⟩ at temperature 1, in the units of the losses); the fit then
            draws nothing and its ``key`` is unused (``None`` is accepted).

    Examples:
        >>> import jax
        >>> logits = jax.random.normal(jax.random.key(0), (2000, 4))
        >>> labels = jax.random.categorical(jax.random.key(1), logits)
        >>> probs = jax.nn.softmax(2.0 * logits, axis=1)  # over-confident
        >>> fitted = DecisionCalibration(n_stages=3).fit(probs, labels, key=jax.random.key(2))
        >>> fitted(probs).shape
        (2000, 4)

    References:
        Zhao, Kim, Sahoo, Ma, Ermon (2021), *Calibrating Predictions to Decisions*,
        Definition 2, Algorithm 1, Theorem 2.2, Section 4.4.
    """

    n_actions: int | None = eqx.field(static=True, default=None, converter=as_int)
    n_stages: int = eqx.field(static=True, default=20, converter=as_int)
    search: PartitionSearch = PartitionSearch(n_restarts=4, objective="squared")
    partition: str = eqx.field(static=True, default="soft")
    ridge: float | Float[Array, ""] = 1e-6
    projection: str = eqx.field(static=True, default="simplex")
    losses: Float[Array, "L K C"] | None = None

    needs_key: ClassVar[bool] = True

    def __check_init__(self):
        check_fields(self, n_actions=Optional(Integer(1, 2**12, what="actions")), n_stages=Integer(1, 2**16, what="stages"),
                     search=_SEARCH, partition=Choice("soft", "hard"), projection=Choice("simplex", "none"), ridge=Real(0))
        if self.losses is not None:
            arr = as_float_array(self.losses, "losses")
            if arr.ndim not in (2, 3) or arr.shape[-2] < 2 or arr.shape[-1] < 1 or (arr.ndim == 3 and arr.shape[0] < 1):
                raise ValueError(
                    "losses must have shape (n_actions, C) or (L, n_actions, C) with n_actions >= 2 "
                    f"(the loss of action a under outcome c), got shape {tuple(arr.shape)}"
                )
            check_finite(arr, "losses")
            if self.n_actions is not None and self.n_actions != arr.shape[-2]:
                raise ValueError(f"n_actions must be None or {arr.shape[-2]} (the losses' number of actions), got {self.n_actions!r}")

    def _prepare(self, probs, labels, key, sample_weight):
        # With given losses nothing is drawn: the key may be None and is not used.
        if self.losses is None:
            key = check_key(key)
        else:
            check_key(key, optional=True)
            key = None
        c = probs.shape[1]
        losses = None if self.losses is None else check_loss_matrices(self.losses, c).astype(probs.dtype)
        onehot = (to_device(np.eye(c, dtype=probs.dtype)[np.asarray(labels)]) if is_concrete(labels)
                  else jax.nn.one_hot(labels, c, dtype=probs.dtype))
        settings = dict(
            n_actions=(2 if self.n_actions is None else self.n_actions) if losses is None else losses.shape[1],
            hard=self.partition == "hard",
            project=self.projection == "simplex",
        )
        traced = (self.search, check_float_scalar(self.ridge, "ridge", probs.dtype, non_negative=True), losses)
        return key, probs, labels, onehot, sample_weight, traced, settings

    @declare(**multiclass_inputs(), key=Key(optional=True))
    def fit(
        self,
        probs: Float[Array, "N C"],
        labels: Int[Array, " N"],
        *,
        key: PRNGKeyArray | None,
        sample_weight: Float[Array, " N"] | None = None,
    ) -> FittedDecisionCalibration:
        """Fit the stages on held-out predictions (one jitted ``lax.scan`` over stages).

        Args:
            probs: ``(N, C)`` held-out predictions on the simplex.
            labels: ``(N,)`` integer labels.
            key: PRNG key (keyword-only, required); stage t draws its random restarts from the
                t-th of ``jax.random.split(key, n_stages)``. Unused with ``losses`` (where
                ``None`` is accepted).
            sample_weight: optional ``(N,)`` non-negative weights (weighted means throughout).

        Returns:
            :class:`FittedDecisionCalibration`, with the per-stage :class:`StageInfo`.

        Raises:
            ValueError: invalid probabilities, labels, weights, or losses whose number of
                classes is not C.
            TypeError: a key that is not a PRNG key (an int, or None without ``losses``).
        """
        key, probs, _, onehot, sample_weight, traced, settings = self._prepare(probs, labels, key, sample_weight)
        ws, ds, info = _fit_stages(key, probs, onehot, sample_weight, *traced, n_stages=self.n_stages, **settings)
        return FittedDecisionCalibration(ws, ds, info, settings["hard"], settings["project"])

    @declare(**multiclass_inputs(), key=Key(optional=True))
    def fit_with_history(
        self,
        probs: Float[Array, "N C"],
        labels: Int[Array, " N"],
        *,
        key: PRNGKeyArray | None,
        sample_weight: Float[Array, " N"] | None = None,
        validation: tuple[Any, ...] | Mapping[str, tuple[Any, ...]] | None = None,
        monitor_losses: Float[Array, "L K C"] | None = None,
        progress: bool = True,
    ) -> tuple[FittedDecisionCalibration, dict[str, np.ndarray]]:
        """``fit``, one stage at a time with a progress bar, recording every stage.

        The same stages as :meth:`fit` (same keys, same fitted result up to float rounding),
        run from Python so that a tqdm bar advances and validation sets are evaluated after
        every stage (monitoring only: nothing is selected on them).

        Args:
            probs, labels, key, sample_weight: as in :meth:`fit`.
            validation: optional ``(probs, labels)`` (recorded as ``val_*``) or a dict
                ``name -> (probs, labels)``. A triple ``(probs, labels, true_probs)`` with
                known p* (synthetic data) also records ``<name>_pop_mean_gap`` /
                ``<name>_pop_max_gap``: Eq. (10) with the true loss in expectation under p*
                (``decision_loss_gap(..., true_probs=...)``).
            monitor_losses: the loss matrices ``(L, K, C)`` of the recorded gaps; default the
                recalibrator's ``losses`` if given, else 500 matrices with i.i.d. N(0, 1)
                entries drawn from ``jax.random.fold_in(key, 1)`` (the same at every stage).
            progress: show the progress bar.

        Returns:
            ``(fitted, history)``: the :class:`FittedDecisionCalibration` and a dict of NumPy
            arrays of length ``n_stages + 1`` (row s = after s stages; row 0 = the input):
            ``stage``; ``witness_value`` and ``witness_soft_value`` (Eq. 8 and Eq. 9 of the
            witness of stage s on the predictions it corrected; NaN at s = 0); ``l2_error``
            on the fitting data (before the final clip; non-increasing); and for each
            validation set ``<name>_mean_gap``, ``<name>_max_gap`` (Eq. 10),
            ``<name>_decision_loss``, ``<name>_accuracy``, ``<name>_l2_error`` of the
            clipped, renormalised predictions after s stages.
        """
        key, probs, _, onehot, sample_weight, traced, settings = self._prepare(probs, labels, key, sample_weight)
        weights = normalised_weights(sample_weight, probs)
        monitor = _check_validation(validation, probs.shape[1])
        if monitor_losses is not None:
            monitor_losses = check_loss_matrices(monitor_losses, probs.shape[1], "monitor_losses")
        elif traced[2] is not None:
            monitor_losses = traced[2]
        elif monitor:
            monitor_losses = jax.random.normal(
                fold_in(key, 1), (500, settings["n_actions"], probs.shape[1]), probs.dtype
            )
        hard, project = settings["hard"], settings["project"]
        history: dict[str, list[float]] = {
            "stage": [0], "witness_value": [np.nan], "witness_soft_value": [np.nan],
            "l2_error": [float(jnp.sum(weights * jnp.sum((probs - onehot) ** 2, axis=1)))],
        }
        running = {name: vp for name, (vp, _, _) in monitor.items()}

        def record(name, p, y, p_true):
            p = _finalise(p)
            g = decision_loss_gap(p, y, losses=monitor_losses)
            for field in ("mean_gap", "max_gap", "decision_loss", "accuracy", "l2_error"):
                history.setdefault(f"{name}_{field}", []).append(float(getattr(g, field)))
            if p_true is not None:
                g = decision_loss_gap(p, y, losses=monitor_losses, true_probs=p_true)
                history.setdefault(f"{name}_pop_mean_gap", []).append(float(g.mean_gap))
                history.setdefault(f"{name}_pop_max_gap", []).append(float(g.max_gap))

        for name, (vp, vl, vt) in monitor.items():
            record(name, vp, vl, vt)
        current = probs
        ws, ds, infos = [], [], []
        keys = [None] * self.n_stages if key is None else split_into(key, self.n_stages)
        for t in tqdm(range(self.n_stages), desc="decision calibration", disable=not progress):
            current, w, d, info = _stage(keys[t], current, onehot, weights, *traced, **settings)
            ws.append(w)
            ds.append(d)
            infos.append(info)
            history["stage"].append(t + 1)
            history["witness_value"].append(float(info.value))
            history["witness_soft_value"].append(float(info.soft_value))
            history["l2_error"].append(float(info.l2_error))
            for name, (_, vl, vt) in monitor.items():
                running[name] = _next(w, d, running[name], hard=hard, project=project)
                record(name, running[name], vl, vt)
        info = jax.tree.map(lambda *xs: jnp.stack(xs), *infos)
        fitted = FittedDecisionCalibration(jnp.stack(ws), jnp.stack(ds), info, hard, project)
        return fitted, {k: np.asarray(v) for k, v in history.items()}

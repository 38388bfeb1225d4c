"""Decision recalibration: Algorithm 1 and its softmax version (paper 004, §4.3–4.4).

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
from typing import Any, Mapping, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray
from tqdm.auto import tqdm

from .._validation import (
    check_key,
    check_class_labels,
    check_float_scalar,
    check_positive_int,
    check_same_length,
    check_simplex_probs,
    check_weights,
)
from .._simplex import project_simplex
from .._weights import normalised_weights
from ..metrics.decision import decision_loss_gap, partition_search, partition_weights
from .base import Recalibrator

__all__ = [
    "DecisionCalibrationParams",
    "DecisionCalibrator",
    "StageInfo",
    "decision_calibration_apply",
    "decision_calibration_fit",
    "decision_calibration_stage",
]

_CLIP = 1e-7  # Final clip of the reference code, before renormalising.


class DecisionCalibrationParams(eqx.Module):
    """Stacked stages of a fitted decision recalibration.

    Attributes:
        witness: ``(S, K, C)`` the partition w_t of every stage.
        adjustment: ``(S, K, C)`` the correction D_t of every stage.
        hard: argmax cells (Algorithm 1) instead of softmax cells (soft version); static.
        project: project onto the simplex after every stage (see module docstring); static.
    """

    witness: Float[Array, "S K C"]
    adjustment: Float[Array, "S K C"]
    hard: bool = eqx.field(static=True, default=False)
    project: bool = eqx.field(static=True, default=True)


class StageInfo(NamedTuple):
    """Diagnostics of one stage (stacked over stages by :func:`decision_calibration_fit`).

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


# learning_rate, scale and ridge are traced arguments (one compilation for all their values).
@partial(
    jax.jit,
    static_argnames=("n_actions", "n_restarts", "n_steps", "hard", "squared", "project", "unroll"),
)
def _stage(key, current, onehot, weights, *, n_actions, n_restarts, n_steps, learning_rate,
           scale, hard, squared, ridge, project, unroll=None):
    residual = onehot - current
    search = partition_search(
        key, current, residual, weights,
        n_actions=n_actions, n_restarts=n_restarts, n_steps=n_steps,
        learning_rate=learning_rate, scale=scale, squared=squared, unroll=unroll,
    )
    # Keep the restart that is best for the cells the update uses.
    best = jnp.argmax(search.value if hard else search.soft_value)
    w = search.witness[best]
    cells = partition_weights(w, current, hard=hard)
    d = _solve_adjustment(cells, residual, weights, ridge)
    new = _project(current + cells @ d, project)
    l2 = jnp.sum(weights * jnp.sum((new - onehot) ** 2, axis=1))
    return new, w, d, StageInfo(search.value[best], search.soft_value[best], l2)


@partial(
    jax.jit,
    static_argnames=("n_actions", "n_restarts", "n_steps", "hard", "squared", "project", "unroll"),
)
def _fit_stages(keys, probs, onehot, weights, **settings):
    # All stages in one compiled scan (a scan outside jit would compile its body on every call).
    def body(current, k):
        new, w, d, info = _stage(k, current, onehot, weights, **settings)
        return new, (w, d, info)

    return jax.lax.scan(body, probs, keys)[1]


@partial(jax.jit, static_argnames=("hard", "project"))
def _next(w, d, current, *, hard, project):
    # One fitted stage on new predictions (the body of `_apply`'s scan).
    return _project(current + partition_weights(w, current, hard=hard) @ d, project)


def _check_settings(n_actions, n_stages, n_restarts, n_steps, partition, objective,
                    projection="simplex", unroll=None):
    check_positive_int(n_actions, "n_actions")
    check_positive_int(n_stages, "n_stages")
    check_positive_int(n_restarts, "n_restarts")
    check_positive_int(n_steps, "n_steps")
    _unroll(unroll)
    if partition not in ("soft", "hard"):
        raise ValueError(f"partition must be 'soft' or 'hard', got {partition!r}")
    if objective not in ("squared", "norm"):
        raise ValueError(f"objective must be 'squared' or 'norm', got {objective!r}")
    if projection not in ("simplex", "none"):
        raise ValueError(f"projection must be 'simplex' or 'none', got {projection!r}")


def _unroll(unroll):
    # a static argument of the jitted stages, checked; NumPy integers become Python ints
    return None if unroll is None else check_positive_int(unroll, "unroll")


def _traced_settings(learning_rate, scale, ridge, dtype):
    """The float settings as arrays of ``dtype`` (traced by ``_stage``: no recompilation per
    value), checked where concrete."""
    return dict(
        learning_rate=check_float_scalar(learning_rate, "learning_rate", dtype, positive=True),
        scale=check_float_scalar(scale, "scale", dtype, positive=True),
        ridge=check_float_scalar(ridge, "ridge", dtype, non_negative=True),
    )


def decision_calibration_stage(
    key: PRNGKeyArray,
    probs: Float[Array, "N C"],
    labels: Int[Array, " N"],
    *,
    n_actions: int = 2,
    n_restarts: int = 4,
    n_steps: int = 300,
    learning_rate: float = 1e-2,
    scale: float = 100.0,
    partition: str = "soft",
    objective: str = "squared",
    ridge: float = 1e-6,
    projection: str = "simplex",
    sample_weight: Float[Array, " N"] | None = None,
    unroll: int | None = None,
) -> tuple[Float[Array, "N C"], Float[Array, "K C"], Float[Array, "K C"], StageInfo]:
    """One stage of Algorithm 1 on the current predictions ``probs`` (for a custom loop).

    ``probs`` need not lie on the simplex (with ``projection="none"`` intermediate stages leave
    it, exactly as at prediction time); only shapes and labels are checked. The settings are
    those of :func:`decision_calibration_fit`.

    Returns:
        ``(new_probs, w, D, info)``: the corrected predictions P̂ + W D (projected onto the
        simplex unless ``projection="none"``), the stage's witness
        ``(K, C)``, its adjustment ``(K, C)`` and :class:`StageInfo`.
    """
    _check_settings(n_actions, 1, n_restarts, n_steps, partition, objective, projection, unroll)
    current = jnp.asarray(probs)
    if current.ndim != 2 or not jnp.issubdtype(current.dtype, jnp.floating):
        raise ValueError(f"probs must be a float (n, C) array, got {current.dtype} {current.shape}")
    labels = check_class_labels(labels, current.shape[1])
    n = check_same_length(probs=current, labels=labels)
    sample_weight = check_weights(sample_weight, n, positive_total=True)
    onehot = jax.nn.one_hot(labels, current.shape[1], dtype=current.dtype)
    return _stage(
        key, current, onehot, normalised_weights(sample_weight, n, current.dtype),
        n_actions=n_actions, n_restarts=n_restarts, n_steps=n_steps, hard=partition == "hard",
        squared=objective == "squared", project=projection == "simplex", unroll=_unroll(unroll),
        **_traced_settings(learning_rate, scale, ridge, current.dtype),
    )


def decision_calibration_fit(
    key: PRNGKeyArray,
    probs: Float[Array, "N C"],
    labels: Int[Array, " N"],
    n_actions: int = 2,
    n_stages: int = 20,
    *,
    n_restarts: int = 4,
    n_steps: int = 300,
    learning_rate: float = 1e-2,
    scale: float = 100.0,
    partition: str = "soft",
    objective: str = "squared",
    ridge: float = 1e-6,
    projection: str = "simplex",
    sample_weight: Float[Array, " N"] | None = None,
    return_info: bool = False,
    unroll: int | None = None,
) -> DecisionCalibrationParams | tuple[DecisionCalibrationParams, StageInfo]:
    """Fit ``n_stages`` stages of decision recalibration (Algorithm 1 / soft version).

    One jitted ``lax.scan`` over stages, each running the vmapped multi-restart partition search
    (itself a ``lax.scan`` of Adam steps): jit- and vmap-friendly (vmap over keys, datasets or
    the float settings).

    Args:
        key: PRNG key; stage t uses the t-th split for its random restarts.
        probs: ``(N, C)`` held-out predictions on the simplex.
        labels: ``(N,)`` integer labels.
        n_actions: K, the number of cells (actions) per stage; the reference uses 2 or 3.
        n_stages: T, the number of stages (reference code: 20–100).
        n_restarts: random restarts of the witness search per stage (reference: 1).
        n_steps: Adam steps of the witness search (reference: 5000 at step 1e-2; see
            ``scale``).
        learning_rate: Adam learning rate of the search (reference 1e-2).
        scale: the search's w = scale · v reparametrisation (step in w = scale ×
            learning_rate); see :func:`jcalib.metrics.decision.partition_search`.
            ``learning_rate``, ``scale`` and ``ridge`` are traced (floats or scalar arrays):
            new values reuse the compiled fit, and a ``jax.vmap`` over them is one program.
        partition: ``"soft"`` (softmax cells; the paper's experiments and the reference
            code) or ``"hard"`` (argmax cells, Algorithm 1 as printed).
        objective: ``"squared"`` ascends Σ_a ‖E[(Y − P̂) b(a)]‖₂² (reference code) or
            ``"norm"`` the unsquared Eq. (9).
        ridge: relative ridge in the least-squares solve for D (see module docstring).
        projection: ``"simplex"`` projects onto the simplex after every stage (default; see
            module docstring) or ``"none"`` (reference code: only the final clip).
        sample_weight: optional ``(N,)`` non-negative weights (weighted means throughout).
        return_info: also return the stacked per-stage :class:`StageInfo`.
        unroll: Adam steps per iteration of the search's compiled loop (an int ≥ 1; ``None``:
            the backend's default); see :func:`jcalib.metrics.decision.partition_search`.

    Returns:
        :class:`DecisionCalibrationParams` (and :class:`StageInfo` with a leading stage axis if
        ``return_info``).

    Raises:
        ValueError: invalid probabilities/labels/weights or settings (a concrete
            ``learning_rate`` or ``scale`` that is not positive, a negative ``ridge``).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> logits = jax.random.normal(jax.random.key(0), (2000, 4))
        >>> labels = jax.random.categorical(jax.random.key(1), logits)
        >>> probs = jax.nn.softmax(2.0 * logits, axis=1)  # over-confident
        >>> params = decision_calibration_fit(jax.random.key(2), probs, labels, n_stages=3)
        >>> decision_calibration_apply(params, probs).shape
        (2000, 4)

    References:
        Zhao, Kim, Sahoo, Ma, Ermon (2021), Algorithm 1, Theorem 2.2, Section 4.4.
    """
    check_key(key)
    _check_settings(n_actions, n_stages, n_restarts, n_steps, partition, objective, projection, unroll)
    probs = check_simplex_probs(probs)
    labels = check_class_labels(labels, probs.shape[1])
    n = check_same_length(probs=probs, labels=labels)
    if n == 0:
        raise ValueError("probs and labels are empty; fitting needs at least one sample")
    sample_weight = check_weights(sample_weight, n, positive_total=True)
    onehot = jax.nn.one_hot(labels, probs.shape[1], dtype=probs.dtype)
    weights = normalised_weights(sample_weight, n, probs.dtype)
    hard, project = partition == "hard", projection == "simplex"
    ws, ds, info = _fit_stages(
        jax.random.split(key, n_stages), probs, onehot, weights,
        n_actions=n_actions, n_restarts=n_restarts, n_steps=n_steps, hard=hard,
        squared=objective == "squared", project=project, unroll=_unroll(unroll),
        **_traced_settings(learning_rate, scale, ridge, probs.dtype),
    )
    params = DecisionCalibrationParams(ws, ds, hard, project)
    return (params, info) if return_info else params


def decision_calibration_apply(
    params: DecisionCalibrationParams,
    probs: Float[Array, "N C"],
    n_stages: int | Int[Array, ""] | None = None,
) -> Float[Array, "N C"]:
    """Apply fitted stages in order (projecting onto the simplex after each if the params say
    so), then clip to [1e-7, 1 − 1e-7] and renormalise.

    Args:
        params: from :func:`decision_calibration_fit`.
        probs: ``(N, C)`` predictions of the same model on new data.
        n_stages: apply only the first ``n_stages`` stages (may be traced: later stages are
            masked, not sliced, so every prefix shares one compilation); ``None`` for all.

    Returns:
        ``(N, C)`` recalibrated probabilities on the simplex.
    """
    probs = check_simplex_probs(probs)
    if probs.shape[1] != params.witness.shape[2]:
        raise ValueError(
            f"params were fitted on {params.witness.shape[2]} classes, got {probs.shape[1]}"
        )
    total = params.witness.shape[0]
    return _apply(params, probs, jnp.asarray(total if n_stages is None else n_stages))


@jax.jit
def _apply(params, probs, n_stages):
    active = jnp.arange(params.witness.shape[0]) < n_stages

    def body(current, stage):
        w, d, on = stage
        new = _next(w, d, current, hard=params.hard, project=params.project)
        return jnp.where(on, new, current), None

    out, _ = jax.lax.scan(body, probs, (params.witness, params.adjustment, active))
    return _finalise(out)


class DecisionCalibrator(Recalibrator):
    """Decision recalibration (paper 004, Algorithm 1 / soft version) as a fit/predict object.

    Args:
        n_actions: K, cells per stage (the decision makers' number of actions).
        n_stages: number of stages T.
        n_restarts, n_steps, learning_rate, scale, unroll: witness search settings (see
            :func:`decision_calibration_fit`).
        partition: ``"soft"`` (default) or ``"hard"`` cells.
        objective: ``"squared"`` (reference code) or ``"norm"`` search objective.
        ridge: relative ridge of the least-squares adjustment.
        projection: ``"simplex"`` (default) or ``"none"``; see the module docstring.
        n_losses: random loss matrices for the validation loss gap in ``history_``.
        progress: show a tqdm bar over stages.

    Attributes:
        params_: :class:`DecisionCalibrationParams` after ``fit``.
        history_: dict of NumPy arrays of length ``n_stages + 1`` (row s = after s stages;
            row 0 = input): ``stage``; ``witness_value`` and ``witness_soft_value`` (Eq. 8 and
            Eq. 9 of the witness found at stage s on the predictions it corrected; NaN at
            s = 0); ``l2_error`` on the fitting data (before the final clip; non-increasing);
            and for each
            validation set ``<name>_mean_gap``, ``<name>_max_gap`` (Eq. 10),
            ``<name>_decision_loss``, ``<name>_accuracy``, ``<name>_l2_error`` of the
            clipped, renormalised predictions after s stages (plus ``<name>_pop_mean_gap``,
            ``<name>_pop_max_gap`` for sets given with true probabilities).

    Examples:
        >>> import jax
        >>> logits = jax.random.normal(jax.random.key(0), (2000, 4))
        >>> labels = jax.random.categorical(jax.random.key(1), logits)
        >>> probs = jax.nn.softmax(2.0 * logits, axis=1)
        >>> cal = DecisionCalibrator(n_actions=2, n_stages=3, progress=False)
        >>> cal.fit(probs, labels).predict_proba(probs).shape
        (2000, 4)
    """

    def __init__(
        self,
        n_actions: int = 2,
        n_stages: int = 20,
        *,
        n_restarts: int = 4,
        n_steps: int = 300,
        learning_rate: float = 1e-2,
        scale: float = 100.0,
        partition: str = "soft",
        objective: str = "squared",
        ridge: float = 1e-6,
        projection: str = "simplex",
        n_losses: int = 500,
        progress: bool = True,
        unroll: int | None = None,
    ):
        _check_settings(n_actions, n_stages, n_restarts, n_steps, partition, objective, projection, unroll)
        _traced_settings(learning_rate, scale, ridge, jnp.result_type(float))
        self.n_actions = n_actions
        self.n_stages = n_stages
        self.n_restarts = n_restarts
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.scale = scale
        self.partition = partition
        self.objective = objective
        self.ridge = ridge
        self.projection = projection
        self.n_losses = check_positive_int(n_losses, "n_losses")
        self.progress = progress
        self.unroll = unroll
        self._monitor: dict[str, tuple[Any, Any]] = {}

    def fit(
        self,
        probs,
        labels,
        *,
        key: PRNGKeyArray | None = None,
        validation: tuple[Any, Any] | Mapping[str, tuple[Any, Any]] | None = None,
    ) -> "DecisionCalibrator":
        """Fit on held-out ``probs`` (n, C) and ``labels`` (n,).

        Args:
            probs, labels: the recalibration data.
            key: PRNG key for the searches (default ``jax.random.key(0)``).
            validation: optional ``(probs, labels)`` (recorded as ``val_*``) or a dict
                ``name -> (probs, labels)``, monitored after every stage in ``history_``
                (monitoring only: nothing is selected on it). A triple
                ``(probs, labels, true_probs)`` with known p* (synthetic data) also records
                ``<name>_pop_mean_gap`` / ``<name>_pop_max_gap``: Eq. (10) with the true loss
                in expectation under p* (``decision_loss_gap(..., true_probs=...)``).
        """
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
            vl = check_class_labels(pair[1], vp.shape[1], f"{name} labels")
            check_same_length(probs=vp, labels=vl)
            vt = None
            if len(pair) == 3:
                vt = check_simplex_probs(pair[2], f"{name} true_probs")
                if vt.shape != vp.shape:
                    raise ValueError(f"{name} true_probs must have shape {tuple(vp.shape)}")
            monitor[name] = (vp, vl, vt)
        self._monitor = monitor
        try:
            super().fit(probs, labels, key=key)
        finally:
            self._monitor = {}
        return self

    def _fit(self, key, probs, labels):
        for name, (vp, _, _) in self._monitor.items():
            if vp.shape[1] != probs.shape[1]:
                raise ValueError(f"validation set {name!r} has {vp.shape[1]} classes, "
                                 f"expected {probs.shape[1]}")
        onehot = jax.nn.one_hot(labels, probs.shape[1], dtype=probs.dtype)
        weights = normalised_weights(None, probs.shape[0], probs.dtype)
        hard, project = self.partition == "hard", self.projection == "simplex"
        settings = dict(
            n_actions=self.n_actions, n_restarts=self.n_restarts, n_steps=self.n_steps, hard=hard,
            squared=self.objective == "squared", project=project, unroll=_unroll(self.unroll),
            **_traced_settings(self.learning_rate, self.scale, self.ridge, probs.dtype),
        )
        history: dict[str, list[float]] = {
            "stage": [0], "witness_value": [np.nan], "witness_soft_value": [np.nan],
            "l2_error": [float(jnp.mean(jnp.sum((probs - onehot) ** 2, axis=1)))],
        }
        running = {name: vp for name, (vp, _, _) in self._monitor.items()}

        def record(name, p, y, p_true):
            p = _finalise(p)
            g = decision_loss_gap(p, y, self.n_losses, self.n_actions)
            for field in ("mean_gap", "max_gap", "decision_loss", "accuracy", "l2_error"):
                history.setdefault(f"{name}_{field}", []).append(float(getattr(g, field)))
            if p_true is not None:
                g = decision_loss_gap(p, y, self.n_losses, self.n_actions, true_probs=p_true)
                history.setdefault(f"{name}_pop_mean_gap", []).append(float(g.mean_gap))
                history.setdefault(f"{name}_pop_max_gap", []).append(float(g.max_gap))

        for name, (vp, vl, vt) in self._monitor.items():
            record(name, vp, vl, vt)
        current = probs
        ws, ds = [], []
        keys = jax.random.split(key, self.n_stages)
        for t in tqdm(range(self.n_stages), desc="decision calibration", disable=not self.progress):
            current, w, d, info = _stage(keys[t], current, onehot, weights, **settings)
            ws.append(w)
            ds.append(d)
            history["stage"].append(t + 1)
            history["witness_value"].append(float(info.value))
            history["witness_soft_value"].append(float(info.soft_value))
            history["l2_error"].append(float(info.l2_error))
            for name, (_, vl, vt) in self._monitor.items():
                running[name] = _next(w, d, running[name], hard=hard, project=project)
                record(name, running[name], vl, vt)
        self.history_ = {k: np.asarray(v) for k, v in history.items()}
        return DecisionCalibrationParams(jnp.stack(ws), jnp.stack(ds), hard, project)

    def _apply(self, params, probs):
        return decision_calibration_apply(params, probs)

    def predict_proba(self, probs, n_stages: int | None = None) -> jax.Array:
        """Recalibrated probabilities for ``probs`` (n, C), using the first ``n_stages``
        stages (all by default)."""
        if n_stages is None:
            return super().predict_proba(probs)
        if self.params_ is None:
            raise ValueError(f"{type(self).__name__} is not fitted; call fit(probs, labels) first")
        if not (isinstance(n_stages, (int, np.integer)) and 0 <= n_stages <= self.n_stages):
            raise ValueError(f"n_stages must be an int in [0, {self.n_stages}], got {n_stages!r}")
        return decision_calibration_apply(self.params_, probs, int(n_stages))

"""Decision calibration error and the random-loss decision gap (Zhao et al. 2021).

Zhao, Kim, Sahoo, Ma, Ermon (NeurIPS 2021), *Calibrating Predictions to Decisions*.

A predictor p̂ is (L^K, ε)-decision calibrated (Definition 4) iff no linear partition of the
simplex into K cells separates predictions whose average residual is large (Proposition 2):

    sup_{w ∈ R^{K×C}}  Σ_{a=1}^K ‖ E[(Y − p̂(X)) b_w(p̂(X), a)] ‖₂  ≤ ε,          (Eq. 8)
    b_w(q, a) = 1[a = argmax_{a'} ⟨q, w_{a'}⟩]                                      (Eq. 6)

(the paper writes Ŷ − Y; the norm is the same since E[Ŷ b] = E[p̂ b]).  The search over w uses
the softmax relaxation b̄_w(q, a) = softmax_a(⟨q, w_a⟩) (Section 4.4, Eq. 9).  Proposition 3:
sup Eq. (9) ≥ sup Eq. (8), since hard cells are limits of soft ones (b̄_{s·w} → b_w as
s → ∞, away from ties).  The converse also holds on the simplex, so the two suprema are equal:
by the Gumbel-max identity b̄_w(q, a) = P_G[a = argmax_a' ⟨q, w_a'⟩ + G_a'] with i.i.d. Gumbel
G, and ⟨q, w_a⟩ + G_a = ⟨q, w_a + G_a 1⟩ because Σ_c q_c = 1, so a soft partition is a mixture
of hard linear ones and, the objective being convex in the cells,
Eq. (9)(w) ≤ E_G[Eq. (8)(w + G 1ᵀ)] (tested).  For one fixed w neither value bounds the other
(a hard cut outside the data can score 0 where the soft one does not); at the witnesses the
search returns, the soft value has been below the hard one in every run we made.

:func:`decision_calibration_error` runs the search — Adam on Eq. (9), a fixed number of steps
in one ``lax.scan``, all random restarts (and all values of K) updated together, with the
settings of one :class:`jcalib.metrics.PartitionSearch` — and reports the best witness with
its hard value (what Eq. 8 measures) and its relaxed value.
:func:`decision_loss_gap` measures the loss-estimation gap of Eq. (10) on random Gaussian
losses, the paper's evaluation (Section 5). Both also take a decision maker's own loss
matrices (``losses=``, shape ``(n_actions, C)`` or ``(L, n_actions, C)``): the gap is then
that of the given losses, and the decision calibration error is the maximum over their
Bayes-decision partitions (Definition 2's calibration with respect to a loss class), exact
and with nothing drawn at random.

The witness search (:func:`partition_search`) is shared with the recalibrator in
:mod:`jcalib.recalibration.decision`.

Input checks: concrete inputs at the Python boundary (``ValueError`` naming the argument);
under ``jit``/``vmap``/``grad``, rows of predictions non-negative and summing to 1 (no NaN), labels in [0, C) and non-negative finite weights are checked in the graph
with ``eqx.error_if`` unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from .._threefry import split
from .._validation import (
    Bool,
    Custom,
    Integer,
    Key,
    Optional,
    RealArray,
    SimplexProbs,
    Weights,
    as_float_array,
    check_finite,
    check_key,
    check_static_int,
    declare,
    multiclass_inputs,
)
from .._weights import normalised_weights
from ..core.optim import optimise
from .search import PartitionSearch, check_search

__all__ = [
    "DecisionCalibrationResult",
    "DecisionLossGapResult",
    "SearchResult",
    "decision_calibration_error",
    "decision_loss_gap",
    "decision_objective",
    "partition_weights",
    "partition_search",
]

class SearchResult(NamedTuple):
    """All restarts of one partition search.

    Attributes:
        witness: ``(R, K, C)`` the final w of every restart.
        soft_value: ``(R,)`` Eq. (9) (relaxed) objective at each witness, unsquared.
        value: ``(R,)`` Eq. (8) (hard, argmax partitions) objective at each witness.
    """

    witness: Float[Array, "R K C"]
    soft_value: Float[Array, " R"]
    value: Float[Array, " R"]


class DecisionCalibrationResult(NamedTuple):
    """Result of :func:`decision_calibration_error`.

    With an int ``n_actions`` the fields have the shapes below; with a tuple of J values of K
    every field gains a leading axis of length J, and witnesses are padded to K_max = max(K)
    rows: ``witness[j, :n_actions[j]]`` is the witness for the j-th K, the remaining rows are
    zero and ``action_mask[j]`` marks the live ones.

    Attributes:
        value: ``()`` Eq. (8) at the best witness: Σ_a ‖mean_i (y_i − p̂_i) b_w(p̂_i, a)‖₂
            with hard argmax cells. Not normalised further; lies in [0, √2]. A lower bound on
            the supremum of Eq. (8) (the search is a local one).
        soft_value: ``()`` Eq. (9) (softmax cells) at the same witness.
        witness: ``(K, C)`` the rows w_a of the best restart (largest hard value).
        action_mask: ``(K,)`` bool, which rows are live (all True for an int ``n_actions``).
        restart_values: ``(R,)`` hard value of every restart's witness.
        restart_soft_values: ``(R,)`` relaxed value of every restart's witness.
    """

    value: Float[Array, ""]
    soft_value: Float[Array, ""]
    witness: Float[Array, "K C"]
    action_mask: Bool[Array, " K"]
    restart_values: Float[Array, " R"]
    restart_soft_values: Float[Array, " R"]


class DecisionLossGapResult(NamedTuple):
    """Result of :func:`decision_loss_gap` (Zhao et al. 2021, Section 5, Eq. 10).

    Attributes:
        mean_gap: mean over the loss matrices of the normalised gap (Eq. 10).
        max_gap: largest normalised gap over the loss matrices (the "worst gap").
        gaps: ``(n_losses,)`` |predicted − true loss| / max_a ‖L_a‖₂ for every loss matrix.
        predicted_loss: ``(n_losses,)`` mean_i ⟨L_{a*(i)}, p̂_i⟩, unnormalised.
        true_loss: ``(n_losses,)`` mean_i L_{a*(i), y_i}, unnormalised.
        decision_loss: mean of ``true_loss`` over the loss matrices (the paper's "decision
            loss", Figure 2 right), unnormalised.
        accuracy: top-1 accuracy of ``probs``.
        l2_error: mean_i ‖p̂_i − y_i‖₂² (sum over classes, mean over samples).
    """

    mean_gap: Float[Array, ""]
    max_gap: Float[Array, ""]
    gaps: Float[Array, " L"]
    predicted_loss: Float[Array, " L"]
    true_loss: Float[Array, " L"]
    decision_loss: Float[Array, ""]
    accuracy: Float[Array, ""]
    l2_error: Float[Array, ""]


# --------------------------------------------------------------------------------------------
# Pure building blocks (traced; no validation)


_MAX_ACTIONS = 2**12  # actions of one decision maker (the searched witnesses are (K, C) each)


def _search(search, name, bound):
    return check_search(search)


_PREDICTIONS = RealArray(ndim=2)  # predictions (N, C): the recalibrator's stages may leave the simplex
_ACTION_MASK = Optional(Custom(lambda m, name, b: _action_mask(m, name), "a (K,) bool mask"))


def _action_mask(mask, name):
    arr = jnp.asarray(mask)
    if arr.ndim != 1 or arr.dtype != jnp.bool_:
        raise ValueError(f"{name} must be a 1-D bool array (one entry per action), got {arr.dtype} of shape {tuple(arr.shape)}")
    return arr


def _witness_of(value, name, bound):
    """A partition witness ``(K, C)`` (or ``(R, K, C)`` starts) with the columns of ``probs``."""
    w = RealArray(ndim=(2, 3)).check(value, name, bound)
    c = bound["probs"].shape[1]
    if w.shape[-1] != c:
        raise ValueError(f"{name} must have {c} columns (the classes of probs), got shape {tuple(w.shape)}")
    return w


_INNER = dict(probs=_PREDICTIONS, residual=RealArray(ndim=2, shape_of="probs"), weights=Weights(length_of="probs"))


@declare(probs=_PREDICTIONS, w=Custom(_witness_of, "a (K, C) witness"), action_mask=_ACTION_MASK, hard=Bool())
def partition_weights(
    w: Float[Array, "K C"],
    probs: Float[Array, "N C"],
    action_mask: Bool[Array, " K"] | None = None,
    *,
    hard: bool = False,
) -> Float[Array, "N K"]:
    """Cell memberships of every prediction: b̄_w (softmax, §4.4) or b_w (argmax, Eq. 6).

    Args:
        w: ``(K, C)`` one row per action.
        probs: ``(N, C)`` predictions q.
        action_mask: optional ``(K,)`` bool; masked actions get weight 0 (used to run several
            K in one padded computation).
        hard: argmax one-hot cells (Eq. 6) instead of the softmax relaxation.

    Returns:
        ``(N, K)`` non-negative rows summing to 1.
    """
    return _partition_weights(w, probs, action_mask, hard=hard)


def _partition_weights(w, probs, action_mask=None, *, hard=False):
    """:func:`partition_weights` of checked inputs (the searches and the recalibrator call it)."""
    logits = probs @ w.T
    if action_mask is not None:
        logits = jnp.where(action_mask[None, :], logits, -jnp.inf)
    if hard:
        return jax.nn.one_hot(jnp.argmax(logits, axis=1), w.shape[0], dtype=probs.dtype)
    return jax.nn.softmax(logits, axis=1)


def _cell_residuals(cells, residual, weights):
    # m_a = E[(Y − p̂) b(p̂, a)] with the expectation an (optionally weighted) sample mean.
    return (cells * weights[:, None]).T @ residual


@declare(**_INNER, w=Custom(_witness_of, "a (K, C) witness"), action_mask=_ACTION_MASK, hard=Bool(), squared=Bool())
def decision_objective(
    w: Float[Array, "K C"],
    probs: Float[Array, "N C"],
    residual: Float[Array, "N C"],
    weights: Float[Array, " N"],
    action_mask: Bool[Array, " K"] | None = None,
    *,
    hard: bool = False,
    squared: bool = False,
) -> Float[Array, ""]:
    """Σ_a ‖E[(Y − p̂) b(p̂, a)]‖₂ for one w (Eq. 8 with ``hard``, Eq. 9 without).

    Args:
        w: ``(K, C)``.
        probs: ``(N, C)`` predictions p̂.
        residual: ``(N, C)`` one-hot labels minus ``probs``.
        weights: ``(N,)`` non-negative sample weights summing to 1 (the empirical measure).
        action_mask: optional ``(K,)`` bool of live actions.
        hard: argmax cells (Eq. 8) instead of softmax cells (Eq. 9).
        squared: return Σ_a ‖·‖₂² instead (the surrogate the reference code ascends; it
            upper-bounds the L2 gain of one recalibration step).

    Returns:
        Scalar, unnormalised beyond the sample mean.
    """
    return _decision_objective(w, probs, residual, weights, action_mask, hard=hard, squared=squared)


def _decision_objective(w, probs, residual, weights, action_mask=None, *, hard=False, squared=False):
    """:func:`decision_objective` of checked inputs (the searches and the loss call it)."""
    m = _cell_residuals(_partition_weights(w, probs, action_mask, hard=hard), residual, weights)
    sq = jnp.sum(m**2, axis=1)
    if squared:
        return jnp.sum(sq)
    return jnp.sum(_safe_sqrt(sq))


def _safe_sqrt(x):
    # Exact √x with a zero (not NaN) gradient at x = 0, e.g. for the padded or empty cells.
    positive = x > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


def family_values(
    ws: Float[Array, "R K C"],
    probs: Float[Array, "N C"],
    residual: Float[Array, "N C"],
    weights: Float[Array, " N"],
    action_mask: Bool[Array, " K"] | None = None,
) -> SearchResult:
    """Eq. (9) (softmax cells) and Eq. (8) (argmax cells) of every witness in ``ws``: the
    values of a given family of partitions, in the layout of a search's result."""

    def values(w):
        return tuple(
            _decision_objective(w, probs, residual, weights, action_mask, hard=hard)
            for hard in (False, True)
        )

    soft, hard = jax.vmap(values)(ws)
    return SearchResult(ws, soft, hard)


@declare(**_INNER, action_mask=_ACTION_MASK, init=Optional(Custom(_witness_of, "(R, K, C) starts")),
         key=Key(optional=True), n_actions=Integer(1, _MAX_ACTIONS), search=Custom(_search, "a jcalib.metrics.PartitionSearch"))
def partition_search(
    probs: Float[Array, "N C"],
    residual: Float[Array, "N C"],
    weights: Float[Array, " N"],
    action_mask: Bool[Array, " K"] | None = None,
    init: Float[Array, "R K C"] | None = None,
    *,
    key: PRNGKeyArray | None,
    n_actions: int,
    search: PartitionSearch = PartitionSearch(),
) -> SearchResult:
    """Gradient ascent on the relaxed objective (Eq. 9) from ``search.n_restarts`` random starts.

    All restarts are one ``(R, K, C)`` parameter array: the objective is summed over restarts
    (each restart's gradient only involves its own w) and Adam is coordinatewise, so this is
    exactly R independent Adam runs, batched into one matmul per step. The step count is fixed
    (one :func:`jcalib.core.optimise` scan), so the search vmaps over datasets and over action
    masks. The search's ``learning_rate`` and ``scale`` are leaves of ``search``, traced: one
    compilation serves every value, and the search vmaps over them too.

    Settings of the public reference code (TorchUQ ``CriticDecision``): w initialised like a
    bias-free ``nn.Linear`` (uniform in ±1/√C), Adam with learning rate 1e-2, decayed ×0.8
    every 500 steps; the reference runs one restart of 5000 steps. Departure: Adam moves
    v with w = ``scale`` · v, so each step moves w by up to ``scale`` × ``learning_rate``
    (1.0 by default). Near-hard cells need logit gaps of order 10, i.e. |w| of order 10; at
    the reference's step 1e-2 that takes thousands of steps, at the default a few hundred
    (measured on planted witnesses, C = 3 … 1000).

    A pure building block (traced; its inputs are not validated): the public metric is
    :func:`decision_calibration_error`.

    Args:
        probs: ``(N, C)`` predictions p̂.
        residual: ``(N, C)`` one-hot labels minus ``probs``.
        weights: ``(N,)`` sample weights summing to 1.
        action_mask: optional ``(n_actions,)`` bool; False rows are padding (fewer actions).
        init: optional ``(search.n_restarts, n_actions, C)`` starting witnesses (replaces the
            random start; then nothing is drawn and ``key`` may be ``None``).
        key: PRNG key for the random starts (keyword-only).
        n_actions: K (rows of w); static.
        search: :class:`jcalib.metrics.PartitionSearch`, the search's settings.

    Returns:
        :class:`SearchResult` with every restart's final witness and its soft and hard values.

    Raises:
        TypeError: a key that is not a PRNG key (``None`` only with ``init``).
    """
    if init is None:
        key = check_key(key)  # the random starts draw; with init nothing is drawn
    return _partition_search(probs, residual, weights, action_mask, init, key, n_actions=n_actions, search=search)


@partial(jax.jit, static_argnames=("n_actions",))
def _partition_search(probs, residual, weights, action_mask, init, key, *, n_actions, search):
    n_classes = probs.shape[1]
    learning_rate = jnp.asarray(search.learning_rate, probs.dtype)
    scale = jnp.asarray(search.scale, probs.dtype)
    bound = 1.0 / jnp.sqrt(jnp.asarray(n_classes, probs.dtype))
    # Departure from the reference: Adam optimises v with w = scale · v, i.e. its step in w is
    # scale × learning_rate (Adam is invariant to gradient scale). The start w is the
    # reference's U(±1/√C) whatever the scale.
    if init is None:
        init = jax.random.uniform(
            key, (search.n_restarts, n_actions, n_classes), probs.dtype, minval=-bound, maxval=bound
        )
    v0 = init.astype(probs.dtype) / scale
    if action_mask is not None:
        v0 = jnp.where(action_mask[None, :, None], v0, 0.0)
    squared = search.objective == "squared"

    def objective(v):
        w = scale * v
        return _decision_objective(w, probs, residual, weights, action_mask, squared=squared)

    def loss(vs):
        return -jnp.sum(jax.vmap(objective)(vs))

    schedule = optax.exponential_decay(
        learning_rate, transition_steps=500, decay_rate=0.8, staircase=True
    )
    vs = optimise(loss, v0, optax.adam(schedule), search.n_steps, unroll=search.unroll).params
    return family_values(scale * vs, probs, residual, weights, action_mask)


# --------------------------------------------------------------------------------------------
# Public metrics (validate at the boundary, then call jitted cores)




def check_loss_matrices(losses, n_classes: int, name: str = "losses", *, min_actions: int = 2) -> jax.Array:
    """A decision maker's loss matrices as a float ``(L, n_actions, C)`` array (one ``(n_actions,
    C)`` matrix gains a leading axis): entry ``[l, a, c]`` is the loss of action a under outcome
    c. Concrete values must be finite; ``n_actions >= min_actions``, ``C == n_classes``."""
    arr = as_float_array(losses, name)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[0] < 1 or arr.shape[2] != n_classes or arr.shape[1] < min_actions:
        raise ValueError(
            f"{name} must have shape (n_actions, {n_classes}) or (L, n_actions, {n_classes}) with "
            f"n_actions >= {min_actions} and L >= 1 (the loss of action a under outcome c), "
            f"got shape {tuple(jnp.shape(losses))}"
        )
    return check_finite(arr, name)  # (the returned array carries the in-graph check when traced)


def _given_actions(n_actions, losses):
    # With given losses K is their second axis; an explicit n_actions must agree.
    k = losses.shape[1]
    if n_actions is not None and (isinstance(n_actions, (tuple, list)) or check_static_int(n_actions, "n_actions", 1) != k):
        raise ValueError(f"n_actions must be None or {k} (the losses' number of actions), got {n_actions!r}")
    return k


def _no_key(key, what="losses"):
    if key is not None:
        raise TypeError(f"with {what} given nothing is drawn at random; do not pass a key")


def _action_tuple(n_actions) -> tuple[int, ...]:
    if isinstance(n_actions, (tuple, list)):
        if len(n_actions) == 0:
            raise ValueError("n_actions must be a positive int or a non-empty tuple of them")
        return tuple(check_static_int(k, "n_actions", 1, _MAX_ACTIONS) for k in n_actions)
    return (check_static_int(n_actions, "n_actions", 1, _MAX_ACTIONS),)



def _true_probs(value, name, bound):
    """Rows on the simplex of the shape of ``probs`` (None: unknown)."""
    if value is None:
        return None
    tp = SimplexProbs().check(value, name, bound)
    if tp.shape != bound["probs"].shape:
        raise ValueError(f"{name} must have shape {tuple(bound['probs'].shape)} (that of probs), got {tuple(tp.shape)}")
    return tp


@partial(jax.jit, static_argnames=("actions", "single"))
def _dce_core(key, probs, labels, sample_weight, search, *, actions, single):
    c = probs.shape[1]
    residual = jax.nn.one_hot(labels, c, dtype=probs.dtype) - probs
    weights = normalised_weights(sample_weight, probs)
    k_max = max(actions)
    masks = jnp.arange(k_max)[None, :] < jnp.asarray(actions)[:, None]  # (J, K_max)
    keys = split(key, len(actions))

    def one(k, mask):
        res = _partition_search(probs, residual, weights, mask, None, k, n_actions=k_max, search=search)
        return _best(res, mask)

    # Every K runs padded to K_max with masked actions, so all K share one compiled search and
    # are vmapped together (cost per K is that of K_max).
    out = jax.vmap(one)(keys, masks)
    if single:
        out = jax.tree.map(lambda x: x[0], out)
    return out


def _best(res: SearchResult, mask) -> DecisionCalibrationResult:
    best = jnp.argmax(res.value)
    return DecisionCalibrationResult(
        value=res.value[best],
        soft_value=res.soft_value[best],
        witness=res.witness[best],
        action_mask=mask,
        restart_values=res.value,
        restart_soft_values=res.soft_value,
    )


@jax.jit
def _dce_losses_core(losses, probs, labels, sample_weight):
    c = probs.shape[1]
    residual = jax.nn.one_hot(labels, c, dtype=probs.dtype) - probs
    weights = normalised_weights(sample_weight, probs)
    # The Bayes rule of L, argmin_a ⟨L_a, q⟩ (Definition 1), is the argmax partition of w = −L.
    res = family_values(-losses, probs, residual, weights)
    return _best(res, jnp.ones(losses.shape[1], bool))


@declare(**multiclass_inputs(), key=Key(optional=True), search=Custom(_search, "a jcalib.metrics.PartitionSearch"))
def decision_calibration_error(
    probs: Float[Array, "N C"],
    labels: Int[Array, " N"],
    n_actions: int | Sequence[int] | None = None,
    *,
    key: PRNGKeyArray | None = None,
    losses: Float[Array, "L K C"] | None = None,
    search: PartitionSearch = PartitionSearch(),
    sample_weight: Float[Array, " N"] | None = None,
) -> DecisionCalibrationResult:
    """Worst-case decision miscalibration over K-action decision makers (Zhao et al. 2021, Prop. 2).

        DCE_K(p̂) = sup_{w ∈ R^{K×C}} Σ_{a=1}^K ‖ mean_i (y_i − p̂_i) b_w(p̂_i, a) ‖₂      (Eq. 8)

    with hard argmax cells b_w (Eq. 6). By Proposition 2 and Eq. (5), p̂ is (L^K, ε)-decision
    calibrated (Definition 4) iff DCE_K ≤ ε, i.e. DCE_K is the largest gap between predicted
    and true expected loss of any Bayes decision rule with K actions, divided by
    max_a ‖ℓ(·, a)‖₂ (Eq. 3, 4). The value is not normalised further (it lies in [0, √2]).

    Random search (``losses=None``): the supremum is estimated by Adam on the softmax
    relaxation (Eq. 9) from ``search.n_restarts`` random starts (:func:`partition_search`); the
    reported witness is the restart with the largest hard value, so ``value`` is a lower bound
    on the supremum up to sampling error.

    A decision maker's own losses (``losses`` given, one ``(K, C)`` matrix or a stack
    ``(L, K, C)``, entry ``[a, c]`` the loss of action a under outcome c): the supremum runs
    over the Bayes-decision partitions of the given losses only, δ_L(q) = argmin_a ⟨L_a, q⟩
    (Definition 1), i.e. the argmax cells of w = −L, and is exact (a maximum over the L
    matrices; nothing is searched or drawn, so no ``key``). In the terms of Definitions 2 and
    4 it is the smallest ε for which p̂ is (L^K; Δ_𝓛, ε)-decision calibrated, Δ_𝓛 the Bayes
    rules of the given class 𝓛: every K-action loss, scored under those decision rules, has a
    normalised gap ≤ the value. In particular each gap of :func:`decision_loss_gap` on the
    same matrices is at most its matrix's ``restart_values`` entry.

    Args:
        probs: ``(N, C)`` predicted class probabilities (rows on the simplex).
        labels: ``(N,)`` integer labels in [0, C).
        n_actions: K (default 2), or a tuple of K values: all are searched in one compiled,
            vmapped run, padded to max(K) rows with masked actions (so each K costs as much as
            max(K)). With ``losses`` it is their number of actions (``None`` or that number).
        key: PRNG key for the random starts (keyword-only; required unless ``losses`` is
            given, and refused then).
        losses: optional loss matrices ``(K, C)`` or ``(L, K, C)``, K ≥ 2, finite.
        search: the search's settings, :class:`jcalib.metrics.PartitionSearch` (restarts, Adam
            steps, learning rate, scale, objective, unroll); unused with ``losses``.
        sample_weight: optional ``(N,)`` non-negative weights (weighted means replace means).

    Returns:
        :class:`DecisionCalibrationResult` (``.value``, ``.soft_value``, ``.witness``, …);
        with a tuple ``n_actions`` every field has a leading axis over the K values. With
        ``losses`` the "restarts" are the given matrices: ``restart_values`` ``(L,)`` holds
        each one's Eq. (8) value and ``witness`` is −L of the worst one.

    Raises:
        ValueError: probabilities off the simplex, NaN, labels out of range, length mismatch,
            a non-positive ``n_actions``, loss matrices of the wrong shape or not finite.
        TypeError: a missing key (or an int or None) without ``losses``, a key with
            ``losses``, or a ``search`` that is not a :class:`PartitionSearch`.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> probs = jax.nn.softmax(jax.random.normal(jax.random.key(1), (1000, 4)), axis=1)
        >>> labels = jax.random.categorical(jax.random.key(2), jnp.log(probs))
        >>> res = decision_calibration_error(probs, labels, n_actions=2, key=jax.random.key(0),
        ...                                  search=PartitionSearch(n_steps=100))
        >>> bool(res.value < 0.2)
        True
        >>> L = jnp.array([[0.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.0, 0.0]])  # 2 actions, 4 outcomes
        >>> bool(decision_calibration_error(probs, labels, losses=L).value < 0.2)
        True

    References:
        Zhao, Kim, Sahoo, Ma, Ermon (2021), Definitions 1–4, Eq. (5)–(9), Propositions 2 and 3.
    """
    if losses is not None:
        _no_key(key)
        losses = check_loss_matrices(losses, probs.shape[1]).astype(probs.dtype)
        _given_actions(n_actions, losses)
        return _dce_losses_core(losses, probs, labels, sample_weight)
    key = check_key(key)
    n_actions = 2 if n_actions is None else n_actions
    return _dce_core(
        key,
        probs,
        labels,
        sample_weight,
        search,
        actions=_action_tuple(n_actions),
        single=not isinstance(n_actions, (tuple, list)),
    )


@partial(jax.jit, static_argnames=("chunk",))
def _loss_gap_core(losses, probs, labels, true_probs, sample_weight, *, chunk):
    c = probs.shape[1]
    n_actions = losses.shape[1]
    weights = normalised_weights(sample_weight, probs)
    onehot = jax.nn.one_hot(labels, c, dtype=probs.dtype)
    target = onehot if true_probs is None else true_probs.astype(probs.dtype)
    # Weighted predicted and true class distributions side by side: (N, 2C).
    both = jnp.concatenate([probs, target], axis=1) * weights[:, None]

    def one(loss):
        action = jnp.argmin(probs @ loss.T, axis=1)  # Bayes action under p̂ (Definition 1)
        # Per action a: Σ_i w_i 1[a*(i) = a] (p̂_i, y_i); the losses are ⟨L_a, ·⟩ summed over a.
        # Only matmuls (no gathers), so a chunk of losses is one batched product.
        per_cell = jax.nn.one_hot(action, n_actions, dtype=probs.dtype).T @ both  # (K, 2C)
        predicted = jnp.sum(loss * per_cell[:, :c])
        true = jnp.sum(loss * per_cell[:, c:])
        scale = jnp.max(jnp.sqrt(jnp.sum(loss**2, axis=1)))  # max_a ‖ℓ(·, a)‖₂ of Eq. (10)
        return predicted, true, scale

    predicted, true, scale = jax.lax.map(one, losses, batch_size=chunk)
    # A loss matrix of zeros has no gap; 0/0 would be NaN.
    gaps = jnp.where(scale > 0, jnp.abs(predicted - true) / jnp.where(scale > 0, scale, 1.0), 0.0)
    accuracy = jnp.sum(weights * (jnp.argmax(probs, axis=1).astype(labels.dtype) == labels).astype(probs.dtype))
    l2 = jnp.sum(weights * jnp.sum((probs - onehot) ** 2, axis=1))
    return DecisionLossGapResult(
        mean_gap=jnp.mean(gaps),
        max_gap=jnp.max(gaps),
        gaps=gaps,
        predicted_loss=predicted,
        true_loss=true,
        decision_loss=jnp.mean(true),
        accuracy=accuracy,
        l2_error=l2,
    )


@declare(**multiclass_inputs(), key=Key(optional=True), true_probs=Custom(_true_probs, "rows on the simplex, the shape of probs"),
         n_losses=Optional(Integer(1, 2**20, bytes_per=8 * 64, what="its random loss matrices (per action and class)")),
         n_actions=Optional(Integer(1, _MAX_ACTIONS)), chunk=Optional(Integer(1, 2**20, what="losses per compiled chunk")))
def decision_loss_gap(
    probs: Float[Array, "N C"],
    labels: Int[Array, " N"],
    n_losses: int | None = None,
    n_actions: int | None = None,
    *,
    key: PRNGKeyArray | None = None,
    losses: Float[Array, "L K C"] | None = None,
    true_probs: Float[Array, "N C"] | None = None,
    sample_weight: Float[Array, " N"] | None = None,
    chunk: int | None = None,
) -> DecisionLossGapResult:
    """Loss-estimation gap of Bayes decisions (Zhao et al. 2021, Section 5, Eq. 10).

    For each loss matrix L ∈ R^{K×C} (ℓ(y, a) = L_{a,y}) the Bayes action under p̂ is
    a*(i) = argmin_a ⟨L_a, p̂_i⟩ (Definition 1, first minimiser on ties) and

        gap(L) = | mean_i ⟨L_{a*(i)}, p̂_i⟩ − mean_i L_{a*(i), y_i} | / max_a ‖L_a‖₂      (Eq. 10)

    (predicted minus true loss of the Bayes rule, normalised by the loss's 2-norm as in
    Definition 4; 0 for an all-zero matrix). By Eq. (5), every gap is at most the decision
    calibration error DCE_K.

    The loss matrices are a decision maker's own (``losses``: one ``(K, C)`` matrix or a stack
    ``(L, K, C)``; nothing is drawn, no key) or, as in the paper's evaluation, ``n_losses``
    random ones with i.i.d. N(0, 1) entries, drawn as
    ``jax.random.normal(key, (n_losses, n_actions, C), probs.dtype)`` — passing those as
    ``losses`` gives the same result.

    Args:
        probs: ``(N, C)`` predicted class probabilities.
        labels: ``(N,)`` integer labels.
        n_losses: number of random loss matrices (default 500, the paper's); with ``losses``,
            ``None`` or their number.
        n_actions: K of the random losses (default 2); with ``losses``, ``None`` or theirs.
        key: PRNG key for the random loss matrices (keyword-only; required unless ``losses``
            is given, and refused then). Use one key to compare predictors on the same losses.
        losses: optional loss matrices ``(K, C)`` or ``(L, K, C)``, K ≥ 2, finite.
        true_probs: optional ``(N, C)`` known conditional distributions p*(x_i) (synthetic
            studies): the true loss is then its expectation mean_i ⟨L_{a*(i)}, p*_i⟩, free of
            label noise. Accuracy and L2 error still use ``labels``.
        sample_weight: optional ``(N,)`` non-negative weights.
        chunk: loss matrices evaluated at once (``lax.map`` batch size), bounding memory at
            O(chunk · N · K); ``None`` picks one so that chunk · N · K ≲ 2·10^7.

    Returns:
        :class:`DecisionLossGapResult` with ``mean_gap``, ``max_gap`` (normalised, Eq. 10),
        unnormalised predicted and true losses, the decision loss, accuracy and L2 error.

    Raises:
        ValueError: invalid probabilities or labels, length mismatch, bad counts, loss
            matrices of the wrong shape or not finite, counts that contradict ``losses``.
        TypeError: a missing key (or an int or None) without ``losses``, a key with ``losses``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> probs = jax.nn.softmax(jax.random.normal(jax.random.key(1), (2000, 5)), axis=1)
        >>> labels = jax.random.categorical(jax.random.key(2), jnp.log(probs))
        >>> res = decision_loss_gap(probs, labels, n_losses=100, key=jax.random.key(0))
        >>> bool(res.mean_gap < 0.05)
        True
        >>> L = jnp.array([[0.0, 1.0, 1.0, 1.0, 1.0], [0.3, 0.3, 0.3, 0.3, 0.3]])  # act or abstain
        >>> decision_loss_gap(probs, labels, losses=L).gaps.shape
        (1,)

    References:
        Zhao, Kim, Sahoo, Ma, Ermon (2021), Definition 1, Definition 4, Eq. (10), Section 5.
    """
    if losses is not None:
        _no_key(key)
        losses = check_loss_matrices(losses, probs.shape[1]).astype(probs.dtype)
        _given_actions(n_actions, losses)
        if n_losses is not None and n_losses != losses.shape[0]:
            raise ValueError(f"n_losses must be None or {losses.shape[0]} (the number of losses given), got {n_losses!r}")
    else:
        key = check_key(key)
        n_losses = 500 if n_losses is None else n_losses
        n_actions = 2 if n_actions is None else n_actions
        # The paper's evaluation losses (Section 5): i.i.d. N(0, 1) entries, ℓ(y, a) = L[a, y].
        losses = jax.random.normal(key, (n_losses, n_actions, probs.shape[1]), probs.dtype)
    n_losses, n_actions = losses.shape[:2]
    if chunk is None:
        chunk = max(1, min(n_losses, int(2e7) // max(1, probs.shape[0] * n_actions)))
    return _loss_gap_core(losses, probs, labels, true_probs, sample_weight, chunk=min(chunk, n_losses))

"""Decision calibration error and loss gap (Zhao et al. 2021): parity with the NumPy reference,
Proposition 2/3 and Eq. (5) relations, the planted-witness search, the 1/√N rate on calibrated
predictors, conformance (jit, vmap, no retracing) and input validation."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import count_compilations
from reference import decision as ref

from jcalib.metrics import PartitionSearch, decision_calibration_error, decision_loss_gap
from jcalib.metrics.decision import decision_objective, partition_search, partition_weights

K0 = jax.random.key(0)


def _calibrated(key, n, c, sharpness=1.5):
    """Predictions and labels drawn from them: a perfectly calibrated predictor."""
    k1, k2 = jax.random.split(key)
    probs = jax.nn.softmax(sharpness * jax.random.normal(k1, (n, c)), axis=1)
    labels = jax.random.categorical(k2, jnp.log(probs)).astype(jnp.int32)
    return probs, labels


def _planted(n, c, eps=0.25, seed=0):
    """p̂ ~ Dirichlet(1); the true law moves mass ε to class 0 on one side of the hyperplane
    ⟨q, u⟩ = median and to class 1 on the other. The planted witness is w = [u, median·1]."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(c), size=n)
    u = rng.normal(size=c)
    score = p @ u
    med = np.median(score)
    region = score > med
    target = np.where(region[:, None], np.eye(c)[0], np.eye(c)[1])
    pstar = (1 - eps) * p + eps * target
    labels = (rng.random(n)[:, None] > np.cumsum(pstar, axis=1)).sum(axis=1).clip(0, c - 1)
    w = np.stack([u, np.full(c, med)])  # ⟨q, w_1⟩ = med since Σ_c q_c = 1
    return p.astype(np.float32), labels.astype(np.int32), w.astype(np.float32), region


def _weights(n, dtype):
    return jnp.full((n,), 1.0 / n, dtype)


# ---------------------------------------------------------------------------------- parity


@pytest.mark.parametrize("hard", [False, True])
def test_objective_matches_reference(x64, hard):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=60)
    labels = rng.integers(0, 4, size=60)
    w = rng.normal(size=(3, 4)) * 3
    sw = rng.random(60)
    resid = jax.nn.one_hot(labels, 4, dtype=jnp.float64) - probs
    got = decision_objective(jnp.asarray(w), jnp.asarray(probs), resid, jnp.asarray(sw / sw.sum()), hard=hard)
    want = ref.objective(w, probs, labels, hard, sample_weight=sw)
    np.testing.assert_allclose(float(got), want, rtol=1e-10)


def test_loss_gap_matches_reference(x64):
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(5) * 0.5, size=80)
    labels = rng.integers(0, 5, size=80)
    sw = rng.random(80)
    key = jax.random.key(3)
    res = decision_loss_gap(probs, labels, n_losses=7, n_actions=3, key=key, sample_weight=sw, chunk=3)
    # The same loss matrices the library draws: N(0, 1) of shape (n_losses, K, C) from `key`.
    losses = np.asarray(jax.random.normal(key, (7, 3, 5), jnp.float64))
    want = ref.loss_gap(probs, labels, losses, sample_weight=sw)
    np.testing.assert_allclose(np.asarray(res.predicted_loss), want[:, 0], rtol=1e-10)
    np.testing.assert_allclose(np.asarray(res.true_loss), want[:, 1], rtol=1e-10)
    np.testing.assert_allclose(np.asarray(res.gaps), want[:, 2], rtol=1e-10)
    np.testing.assert_allclose(float(res.mean_gap), want[:, 2].mean(), rtol=1e-10)
    np.testing.assert_allclose(float(res.max_gap), want[:, 2].max(), rtol=1e-10)
    np.testing.assert_allclose(float(res.decision_loss), want[:, 1].mean(), rtol=1e-10)
    acc = np.sum(sw * (probs.argmax(1) == labels)) / sw.sum()
    l2 = np.sum(sw * ((probs - np.eye(5)[labels]) ** 2).sum(1)) / sw.sum()
    np.testing.assert_allclose([float(res.accuracy), float(res.l2_error)], [acc, l2], rtol=1e-10)


def test_loss_gap_with_true_probs_matches_reference(x64):
    rng = np.random.default_rng(12)
    probs = rng.dirichlet(np.ones(4), size=50)
    p_true = rng.dirichlet(np.ones(4), size=50)
    labels = rng.integers(0, 4, size=50)
    res = decision_loss_gap(probs, labels, n_losses=6, n_actions=2, key=jax.random.key(2), true_probs=p_true)
    losses = np.asarray(jax.random.normal(jax.random.key(2), (6, 2, 4), jnp.float64))
    want = ref.loss_gap(probs, labels, losses, true_probs=p_true)
    np.testing.assert_allclose(np.asarray(res.true_loss), want[:, 1], rtol=1e-10)
    np.testing.assert_allclose(np.asarray(res.gaps), want[:, 2], rtol=1e-10)
    # Predictions equal to the truth: the expected gap is exactly zero.
    exact = decision_loss_gap(p_true, labels, n_losses=6, n_actions=2, key=K0, true_probs=p_true)
    np.testing.assert_allclose(np.asarray(exact.gaps), 0.0, atol=1e-15)
    with pytest.raises(ValueError, match="true_probs"):
        decision_loss_gap(probs, labels, 6, 2, key=K0, true_probs=p_true[:, :3] / p_true[:, :3].sum(1, keepdims=True))


def test_integer_weights_equal_repeated_rows(x64):
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=40)
    labels = rng.integers(0, 3, size=40)
    reps = rng.integers(0, 4, size=40)
    w = rng.normal(size=(2, 3))
    rep_p, rep_y = np.repeat(probs, reps, axis=0), np.repeat(labels, reps)
    a = decision_loss_gap(probs, labels, 20, 2, key=K0, sample_weight=reps.astype(float))
    b = decision_loss_gap(rep_p, rep_y, 20, 2, key=K0)
    np.testing.assert_allclose(np.asarray(a.gaps), np.asarray(b.gaps), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(
        ref.objective(w, probs, labels, True, sample_weight=reps), ref.objective(w, rep_p, rep_y, True), rtol=1e-12
    )
    resid = jax.nn.one_hot(labels, 3, dtype=jnp.float64) - probs
    got = decision_objective(jnp.asarray(w), jnp.asarray(probs), resid, jnp.asarray(reps / reps.sum()), hard=True)
    np.testing.assert_allclose(float(got), ref.objective(w, rep_p, rep_y, True), rtol=1e-10)


# ------------------------------------------------------------- the paper's relations (theory)


def test_each_gap_is_bounded_by_its_bayes_partition(x64):
    """Eq. (5): |predicted − true| / max_a ‖L_a‖ ≤ Σ_a ‖m_a‖ for the cells of the Bayes rule,
    which is the hard partition with w = −L (argmin ⟨L_a, q⟩ = argmax ⟨−L_a, q⟩)."""
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=200)
    labels = rng.integers(0, 4, size=200)  # far from calibrated: gaps are large
    key = jax.random.key(5)
    res = decision_loss_gap(probs, labels, n_losses=30, n_actions=3, key=key)
    losses = np.asarray(jax.random.normal(key, (30, 3, 4), jnp.float64))
    bounds = np.array([ref.objective(-L, probs, labels, hard=True) for L in losses])
    assert np.all(np.asarray(res.gaps) <= bounds + 1e-12)
    assert np.max(np.asarray(res.gaps) / bounds) > 0.3  # the bound is not vacuous here


def test_hard_cells_are_limits_of_soft_cells(x64):
    """Proposition 3's direction: b̄_{s·w} → b_w, so Eq. (9) at s·w tends to Eq. (8) at w
    (hence sup Eq. 9 ≥ sup Eq. 8)."""
    rng = np.random.default_rng(6)
    probs = jnp.asarray(rng.dirichlet(np.ones(5), size=300))
    labels = rng.integers(0, 5, size=300)
    resid = jax.nn.one_hot(labels, 5, dtype=jnp.float64) - probs
    w = jnp.asarray(rng.normal(size=(3, 5)))
    wts = _weights(300, jnp.float64)
    hard = float(decision_objective(w, probs, resid, wts, hard=True))
    errs = [abs(float(decision_objective(s * w, probs, resid, wts)) - hard) for s in (1.0, 1e2, 1e8)]
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 1e-9


def test_soft_value_is_a_mixture_of_hard_values(x64):
    """Gumbel-max: b̄_w = E_G[b_{w + G 1ᵀ}] on the simplex, so by convexity
    Eq. (9)(w) ≤ E_G[Eq. (8)(w + G 1ᵀ)] ≤ sup Eq. (8): the two suprema coincide. A single
    witness obeys no inequality: a hard cut outside the data scores ~0, its soft version not."""
    rng = np.random.default_rng(7)
    n = 400
    t = rng.random(n)
    probs = np.stack([t, 1 - t], axis=1)
    # True P(class 0) is t + 0.3 below t = 0.5 and t − 0.3 above: mean residual ≈ 0.
    p0 = np.clip(t + np.where(t < 0.5, 0.3, -0.3), 0, 1)
    labels = (rng.random(n) > p0).astype(np.int32)
    w = np.array([[1.5, 0.5], [0.0, 0.0]])  # logit gap 0.5 + t > 0 on all of [0, 1]
    probs_j = jnp.asarray(probs)
    resid = jax.nn.one_hot(labels, 2, dtype=jnp.float64) - probs_j
    wts = _weights(n, jnp.float64)
    soft = float(decision_objective(jnp.asarray(w), probs_j, resid, wts))
    hard = float(decision_objective(jnp.asarray(w), probs_j, resid, wts, hard=True))
    assert soft > hard + 0.01  # per-witness "soft ≤ hard" fails

    def hard_shifted(g):
        return decision_objective(jnp.asarray(w) + g[:, None], probs_j, resid, wts, hard=True)

    draws = jax.vmap(hard_shifted)(jax.random.gumbel(jax.random.key(8), (20000, 2), jnp.float64))
    mean, se = float(jnp.mean(draws)), float(jnp.std(draws)) / np.sqrt(20000)
    assert soft <= mean + 4 * se  # 4 standard errors of the Monte-Carlo mean
    np.testing.assert_allclose(
        np.asarray(partition_weights(jnp.asarray(w), probs_j))[:, 0],
        1 / (1 + np.exp(-(0.5 + t))),
        rtol=1e-12,
    )


# ----------------------------------------------------------------------- the search itself


def test_search_finds_planted_witness():
    probs, labels, w_star, region = _planted(6000, 6)
    resid = jax.nn.one_hot(labels, 6, dtype=jnp.float32) - probs
    planted = float(decision_objective(jnp.asarray(w_star), jnp.asarray(probs), resid, _weights(6000, jnp.float32), hard=True))
    res = decision_calibration_error(probs, labels, n_actions=2, key=K0, search=PartitionSearch(n_restarts=4, n_steps=150))
    assert float(res.value) >= 0.95 * planted
    found = np.asarray(jnp.argmax(jnp.asarray(probs) @ res.witness.T, axis=1)) == 0
    agreement = max(np.mean(found == region), np.mean(found != region))  # up to relabelling
    assert agreement > 0.9
    # On the simplex the soft supremum equals the hard one; the soft value at the returned
    # witness is below its hard value (observed, not a theorem) and not far from it.
    assert 0.8 * float(res.value) <= float(res.soft_value) <= float(res.value) + 1e-6
    assert float(res.value) == pytest.approx(float(jnp.max(res.restart_values)))


def test_calibrated_error_shrinks_like_inverse_sqrt_n():
    """A calibrated predictor has DCE_K = 0; the estimate is sampling error of a class with
    low Rademacher complexity, O(√(KC/N)). All N share one shape (zero weights pad the rows),
    so there is one compilation."""
    sizes = np.array([250, 1000, 4000, 16000])
    n_max, seeds = int(sizes[-1]), 4
    keys = jax.random.split(jax.random.key(11), seeds)
    probs, labels = jax.vmap(lambda k: _calibrated(k, n_max, 3))(keys)
    masks = (jnp.arange(n_max)[None, :] < jnp.asarray(sizes)[:, None]).astype(jnp.float32)

    def value(p, y, m):
        return decision_calibration_error(p, y, 2, key=K0, search=PartitionSearch(n_restarts=2, n_steps=60), sample_weight=m).value

    vals = jax.vmap(lambda m: jax.vmap(lambda p, y: value(p, y, m))(probs, labels))(masks)
    mean = np.asarray(vals).mean(axis=1)
    slope = np.polyfit(np.log(sizes), np.log(mean), 1)[0]
    # Theory: −1/2. Four seeds per N leave ~10% noise per point; ±0.15 on the slope.
    assert -0.65 < slope < -0.35, (slope, mean)


def test_tuple_of_actions_runs_padded():
    probs, labels, _, _ = _planted(3000, 5)
    res = decision_calibration_error(probs, labels, n_actions=(1, 2, 3), key=K0, search=PartitionSearch(n_restarts=2, n_steps=100))
    assert res.value.shape == (3,) and res.witness.shape == (3, 3, 5)
    np.testing.assert_array_equal(np.asarray(res.action_mask), np.tril(np.ones((3, 3), bool)))
    assert np.all(np.asarray(res.witness)[~np.asarray(res.action_mask)] == 0)
    # K = 1 has a single cell: the value is ‖mean residual‖ exactly.
    mean_resid = np.mean(np.eye(5)[labels] - probs, axis=0)
    np.testing.assert_allclose(float(res.value[0]), np.linalg.norm(mean_resid), rtol=1e-4)
    # More actions can only help the supremum (a K-partition is a (K+1)-partition).
    assert float(res.value[2]) >= 0.97 * float(res.value[1]) > float(res.value[0])
    # A padded witness scores as the unpadded one.
    resid = jax.nn.one_hot(labels, 5, dtype=jnp.float32) - probs
    wts = _weights(3000, jnp.float32)
    padded = decision_objective(res.witness[1], jnp.asarray(probs), resid, wts, res.action_mask[1], hard=True)
    np.testing.assert_allclose(float(padded), float(res.value[1]), rtol=1e-5)
    plain = decision_objective(res.witness[1, :2], jnp.asarray(probs), resid, wts, hard=True)
    np.testing.assert_allclose(float(plain), float(res.value[1]), rtol=1e-5)


# -------------------------------------------------------------------------------- conformance


def test_batched_restarts_equal_separate_runs():
    probs, labels = _calibrated(jax.random.key(1), 500, 4)
    resid = jax.nn.one_hot(labels, 4, dtype=jnp.float32) - probs
    wts = _weights(500, jnp.float32)
    init = jax.random.normal(jax.random.key(2), (3, 2, 4)) * 0.5
    batched = partition_search(probs, resid, wts, None, init, key=None, n_actions=2, search=PartitionSearch(3, 40))
    for r in range(3):
        single = partition_search(probs, resid, wts, None, init[r : r + 1], key=None, n_actions=2, search=PartitionSearch(1, 40))
        # float32 Adam over 40 steps; batched and single matmuls round differently.
        np.testing.assert_allclose(np.asarray(single.witness[0]), np.asarray(batched.witness[r]), rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(float(single.value[0]), float(batched.value[r]), rtol=1e-4)


def test_jit_vmap_over_datasets_and_keys_without_retracing():
    keys = jax.random.split(jax.random.key(3), 3)
    probs, labels = jax.vmap(lambda k: _calibrated(k, 300, 3))(keys)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched(p, y, k):
        res = decision_calibration_error(p, y, 2, key=k, search=PartitionSearch(n_restarts=2, n_steps=20))
        return res.value, res.soft_value, res.witness

    v1, s1, w1 = jax.vmap(batched, in_axes=(0, 0, None))(probs, labels, jax.random.key(0))
    chex.assert_shape(w1, (3, 2, 3))
    eager = decision_calibration_error(probs[1], labels[1], 2, key=K0, search=PartitionSearch(n_restarts=2, n_steps=20))
    np.testing.assert_allclose(float(v1[1]), float(eager.value), rtol=1e-4)
    # New data and new keys: same shapes, so no new trace (assert_max_traces would raise).
    probs2, labels2 = jax.vmap(lambda k: _calibrated(k, 300, 3))(jax.random.split(jax.random.key(4), 3))
    jax.vmap(batched, in_axes=(0, 0, None))(probs2, labels2, jax.random.key(1))
    v_keys = jax.vmap(batched, in_axes=(None, None, 0))(probs[0], labels[0], keys)
    chex.assert_shape(v_keys[0], (3,))
    gap = jax.jit(lambda p, y: decision_loss_gap(p, y, 50, 2, key=K0).mean_gap)
    chex.assert_shape(jax.vmap(gap)(probs, labels), (3,))


def test_loss_gap_chunking_does_not_change_values(x64):
    probs, labels = _calibrated(jax.random.key(5), 400, 6)
    a = decision_loss_gap(probs, labels, 37, 3, key=K0, chunk=37)
    b = decision_loss_gap(probs, labels, 37, 3, key=K0, chunk=5)
    # atol: a gap is a difference of O(1) means, so round-off is absolute (~1e-16).
    np.testing.assert_allclose(np.asarray(a.gaps), np.asarray(b.gaps), rtol=1e-12, atol=1e-14)


def test_float64_dtype_is_kept(x64):
    probs, labels = _calibrated(jax.random.key(6), 200, 3)
    assert probs.dtype == jnp.float64
    res = decision_calibration_error(probs, labels, 2, key=K0, search=PartitionSearch(n_restarts=1, n_steps=5))
    assert res.value.dtype == jnp.float64 and res.witness.dtype == jnp.float64
    assert decision_loss_gap(probs, labels, 10, key=K0).mean_gap.dtype == jnp.float64
    L = np.ones((2, 3))
    assert decision_calibration_error(probs, labels, losses=L).value.dtype == jnp.float64
    assert decision_loss_gap(probs, labels, losses=L).gaps.dtype == jnp.float64


# ------------------------------------------------------------------------------- bad input

_GOOD_P = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
_GOOD_Y = np.array([1, 0, 0])


@pytest.mark.parametrize(
    "probs, labels, kwargs, match",
    [
        (np.array([[0.2, 0.7], [0.5, 0.5], [0.9, 0.1]]), _GOOD_Y, {}, "sum to 1"),
        (np.array([[-0.2, 1.2], [0.5, 0.5], [0.9, 0.1]]), _GOOD_Y, {}, "non-negative"),
        (np.array([[np.nan, 0.8], [0.5, 0.5], [0.9, 0.1]]), _GOOD_Y, {}, "NaN"),
        (_GOOD_P, np.array([1, 2, 0]), {}, r"\[0, 2\)"),
        (_GOOD_P, np.array([1, 0]), {}, "mismatched"),
        (_GOOD_P[0], _GOOD_Y, {}, "shape"),
        (_GOOD_P, _GOOD_Y, {"n_actions": 0}, "n_actions"),
        (_GOOD_P, _GOOD_Y, {"sample_weight": np.array([1.0, -1.0, 1.0])}, "non-negative"),
    ],
)
def test_bad_input_raises(probs, labels, kwargs, match):
    with pytest.raises(ValueError, match=match):
        decision_calibration_error(probs, labels, key=K0, search=PartitionSearch(n_steps=2), **kwargs)
    with pytest.raises(ValueError, match=match):
        decision_loss_gap(probs, labels, 5, key=K0, **kwargs)


def test_bad_counts_raise():
    with pytest.raises(ValueError, match="n_actions"):
        decision_calibration_error(_GOOD_P, _GOOD_Y, n_actions=(2, 0), key=K0)
    with pytest.raises(ValueError, match="n_restarts"):
        PartitionSearch(n_restarts=0)
    with pytest.raises(ValueError, match="n_losses"):
        decision_loss_gap(_GOOD_P, _GOOD_Y, n_losses=0, key=K0)
    with pytest.raises(TypeError, match="PartitionSearch"):
        decision_calibration_error(_GOOD_P, _GOOD_Y, key=K0, search=dict(n_steps=2))


@pytest.mark.parametrize("key", [None, 0, 1.5])
def test_keys_are_required_and_keyword_only(key):
    """Random searches and random losses need a key, keyword-only, with no default."""
    for f in (decision_calibration_error, decision_loss_gap):
        with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
            f(_GOOD_P, _GOOD_Y, key=key)
    resid = np.eye(2)[_GOOD_Y] - _GOOD_P
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        partition_search(_GOOD_P, resid, np.full(3, 1 / 3), key=key, n_actions=2, search=PartitionSearch(1, 2))
    with pytest.raises(TypeError):
        decision_calibration_error(_GOOD_P, _GOOD_Y, 2, K0)  # no fourth positional argument
    with pytest.raises(TypeError):
        decision_loss_gap(_GOOD_P, _GOOD_Y, 5, 2, K0)


def test_new_learning_rates_and_scales_reuse_one_compilation():
    """learning_rate and scale are traced: after one call compiles the search, three new values
    of each compile nothing (static float arguments compiled once per value), and a vmap over
    learning rates is one program that agrees with the separate calls."""
    probs, labels = _calibrated(jax.random.key(21), 200, 3)
    kw = dict(n_restarts=2, n_steps=15)
    decision_calibration_error(probs, labels, 2, key=K0, search=PartitionSearch(learning_rate=1e-2, scale=100.0, **kw))
    with count_compilations() as c:
        for lr, scale in [(2e-2, 100.0), (5e-2, 30.0), (1e-3, 7.0)]:
            decision_calibration_error(probs, labels, 2, key=K0, search=PartitionSearch(learning_rate=lr, scale=scale, **kw))
    assert c.n == 0
    residual = jax.nn.one_hot(labels, 3, dtype=probs.dtype) - probs
    weights = jnp.full((200,), 1.0 / 200, probs.dtype)
    search = lambda lr: partition_search(  # noqa: E731
        probs, residual, weights, key=K0, n_actions=2, search=PartitionSearch(learning_rate=lr, **kw)
    ).value
    lrs = jnp.array([1e-3, 1e-2, 1e-1], probs.dtype)
    batched = jax.jit(jax.vmap(search))(lrs)
    for i, lr in enumerate([1e-3, 1e-2, 1e-1]):
        # batched and single float32 matmuls round differently over 15 Adam steps
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(search(lr)), rtol=1e-4)
    with pytest.raises(ValueError, match="learning_rate"):
        PartitionSearch(learning_rate=-1.0, **kw)
    with pytest.raises(ValueError, match="scale"):
        PartitionSearch(scale=0.0, **kw)


# ---------------------------------------------------------------------------------- unroll


def test_unrolled_search_equals_the_rolled_one_and_compiles_once_per_value():
    """``unroll`` changes how the Adam loop is compiled, not its steps: the same witnesses and
    values; each value is one compilation, reused by calls with new data of the same shape."""
    probs, labels = _calibrated(jax.random.key(7), 300, 4)
    kw = dict(n_restarts=3, n_steps=45)  # 45 steps: not a multiple of 2 or 4
    rolled = decision_calibration_error(probs, labels, (2, 3), key=K0, search=PartitionSearch(unroll=1, **kw))
    for unroll in (2, 4):
        got = decision_calibration_error(probs, labels, (2, 3), key=K0, search=PartitionSearch(unroll=unroll, **kw))
        # float32 Adam over 45 steps: XLA fuses the unrolled copies of a step differently, an ulp
        # a step at most, amplified by Adam's normalised steps (measured: below 1e-5)
        np.testing.assert_allclose(np.asarray(got.witness), np.asarray(rolled.witness), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(got.restart_soft_values), np.asarray(rolled.restart_soft_values),
                                   rtol=1e-4, atol=1e-6)
    probs2, labels2 = _calibrated(jax.random.key(8), 300, 4)
    with count_compilations() as c:
        decision_calibration_error(probs2, labels2, (2, 3), key=jax.random.key(1), search=PartitionSearch(unroll=np.int32(4), **kw))
    assert c.n == 0  # a NumPy integer is the same static value as the Python int


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "2"])
def test_bad_unroll_is_refused(bad):
    with pytest.raises(ValueError, match="unroll"):
        PartitionSearch(n_steps=2, unroll=bad)


# ------------------------------------------------------------- a decision maker's own losses


def test_given_losses_match_the_reference(x64):
    """With given losses the gap is Eq. (10) of those matrices and the decision calibration
    error is the maximum of Eq. (8) over their Bayes partitions (w = −L), as the slow
    reference computes them; no key is needed, and each gap is at most its matrix's value."""
    rng = np.random.default_rng(31)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=120)
    labels = rng.integers(0, 4, size=120)
    sw = rng.random(120)
    L = rng.normal(size=(6, 3, 4))
    gap = decision_loss_gap(probs, labels, losses=L, sample_weight=sw)
    want = ref.loss_gap(probs, labels, L, sample_weight=sw)
    np.testing.assert_allclose(np.asarray(gap.gaps), want[:, 2], rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gap.predicted_loss), want[:, 0], rtol=1e-10)
    res = decision_calibration_error(probs, labels, losses=L, sample_weight=sw)
    values = np.array([ref.dce_for_losses(probs, labels, Lm[None], sample_weight=sw) for Lm in L])
    np.testing.assert_allclose(np.asarray(res.restart_values), values, rtol=1e-10)
    np.testing.assert_allclose(float(res.value), ref.dce_for_losses(probs, labels, L, sample_weight=sw), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(res.witness), -L[int(np.argmax(values))])
    assert res.action_mask.shape == (3,) and bool(np.all(np.asarray(res.action_mask)))
    assert np.all(np.asarray(gap.gaps) <= np.asarray(res.restart_values) + 1e-12)
    # one (K, C) matrix is a stack of one; n_actions may restate K
    one = decision_calibration_error(probs, labels, 3, losses=L[2], sample_weight=sw)
    np.testing.assert_allclose(float(one.value), values[2], rtol=1e-10)
    assert decision_loss_gap(probs, labels, 1, 3, losses=L[2]).gaps.shape == (1,)


def test_given_random_losses_reproduce_the_random_loss_results(x64):
    """A user's matrices equal to the random ones give the random-loss result exactly."""
    rng = np.random.default_rng(32)
    probs = rng.dirichlet(np.ones(5), size=90)
    labels = rng.integers(0, 5, size=90)
    p_true = rng.dirichlet(np.ones(5), size=90)
    key = jax.random.key(7)
    drawn = jax.random.normal(key, (40, 3, 5), jnp.float64)
    for kw in ({}, {"true_probs": p_true}, {"sample_weight": rng.random(90)}):
        random = decision_loss_gap(probs, labels, 40, 3, key=key, **kw)
        given = decision_loss_gap(probs, labels, losses=drawn, **kw)
        for a, b in zip(random, given):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the search over all partitions dominates the maximum over the random losses' partitions
    res = decision_calibration_error(probs, labels, 3, key=key, search=PartitionSearch(n_restarts=4, n_steps=200))
    assert float(res.value) >= float(decision_calibration_error(probs, labels, losses=drawn).value) - 1e-6


def test_given_losses_are_validated():
    key_err = "do not pass a key"
    for f in (decision_calibration_error, decision_loss_gap):
        for bad, match in [
            (np.ones((1, 2)), "n_actions >= 2"),  # one action
            (np.ones((2, 3)), "shape"),  # C = 3 ≠ 2
            (np.ones(2), "shape"),
            (np.ones((2, 2, 2, 2)), "shape"),
            (np.zeros((0, 2, 2)), "shape"),
            (np.array([[0.0, np.nan], [1.0, 0.0]]), "losses"),
            (np.array([[0.0, np.inf], [1.0, 0.0]]), "losses"),
            ("abc", "losses"),
        ]:
            with pytest.raises(ValueError, match=match):
                f(_GOOD_P, _GOOD_Y, losses=bad)
        with pytest.raises(TypeError, match=key_err):
            f(_GOOD_P, _GOOD_Y, losses=np.eye(2), key=K0)
        with pytest.raises(ValueError, match="n_actions"):
            f(_GOOD_P, _GOOD_Y, n_actions=3, losses=np.eye(2))
    with pytest.raises(ValueError, match="n_actions"):
        decision_calibration_error(_GOOD_P, _GOOD_Y, (2, 3), losses=np.eye(2))
    with pytest.raises(ValueError, match="n_losses"):
        decision_loss_gap(_GOOD_P, _GOOD_Y, 4, losses=np.eye(2))
    # a zero matrix has no gap (not NaN)
    assert float(decision_loss_gap(_GOOD_P, _GOOD_Y, losses=np.zeros((2, 2))).max_gap) == 0.0


def test_traced_loss_matrices_with_non_finite_entries_fail_naming_losses():
    """check_loss_matrices returns the array that carries its in-graph check (a dropped check
    let an infinite loss reach a later, unnamed error)."""
    from jcalib.metrics.decision import check_loss_matrices

    f = jax.jit(lambda m: check_loss_matrices(m, 3).sum())
    assert np.isfinite(float(f(jnp.ones((2, 3)))))
    with pytest.raises(Exception, match="losses contains NaN or infinite values"):
        f(jnp.array([[1.0, jnp.inf, 0.0], [0.0, 1.0, 0.0]])).block_until_ready()


def test_dce_program_has_no_host_callback():
    """The search's compiled program holds no in-graph check of the parameters it drew itself
    (``optimise`` checks traced parameters for structure and dtype only): a host callback would
    keep it out of the persistent compilation cache, so every new process compiled it again."""
    from jcalib.metrics import decision as module

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 40).astype(np.float32)
    labels = rng.integers(0, 3, 40).astype(np.int32)
    jaxpr = jax.make_jaxpr(lambda k, p, y, w: module._dce_core(k, p, y, w, PartitionSearch(n_steps=5), actions=(2,),
                                                               single=True))(jax.random.key(0), probs, labels,
                                                                             np.ones(40, np.float32))
    assert "callback" not in str(jaxpr)

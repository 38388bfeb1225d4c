"""Decision recalibration (paper 004, Algorithm 1 and its soft version): parity of a stage with
the NumPy reference, Theorem 2.2's guarantees (L2 never increases on the fitting data,
decision calibration error falls), prediction-time behaviour, wrapper/functional agreement,
conformance and input validation."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from conformance import count_compilations
from reference import decision as ref

from jcalib.metrics import decision_calibration_error, decision_loss_gap
from jcalib.recalibration import (
    DecisionCalibrationParams,
    DecisionCalibrator,
    decision_calibration_apply,
    decision_calibration_fit,
)
from jcalib._simplex import project_simplex
from jcalib.recalibration.decision import decision_calibration_stage

# Small, shared settings: tests reuse the same compiled search where shapes agree.
FAST = dict(n_restarts=2, n_steps=60)


def _overconfident(key, n, c, temperature=2.0):
    """Labels from softmax(z); predictions softmax(temperature · z): miscalibrated along the
    temperature direction, which K = 2 partitions (confident vs unsure) expose."""
    k1, k2 = jax.random.split(key)
    z = 1.2 * jax.random.normal(k1, (n, c))
    labels = jax.random.categorical(k2, z).astype(jnp.int32)
    return jax.nn.softmax(temperature * z, axis=1), labels


def _l2(p, y):
    return float(jnp.mean(jnp.sum((p - jax.nn.one_hot(y, p.shape[1], dtype=p.dtype)) ** 2, axis=1)))


@pytest.mark.parametrize("partition", ["soft", "hard"])
def test_stage_matches_reference(x64, partition):
    probs, labels = _overconfident(jax.random.key(0), 300, 4)
    new, w, d, info = decision_calibration_stage(
        jax.random.key(1), probs, labels, partition=partition, ridge=0.0, projection="none", **FAST
    )
    want_d, want_new = ref.stage(np.asarray(w), np.asarray(probs), np.asarray(labels), partition == "hard")
    np.testing.assert_allclose(np.asarray(d), want_d, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(np.asarray(new), want_new, rtol=1e-8, atol=1e-12)
    hard_value = ref.objective(np.asarray(w), np.asarray(probs), np.asarray(labels), hard=True)
    np.testing.assert_allclose(float(info.value), hard_value, rtol=1e-8)
    # D's rows sum to 0, so corrected predictions still sum to 1 (before any clipping).
    np.testing.assert_allclose(np.asarray(d).sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(new).sum(axis=1), 1.0, atol=1e-12)


def test_hard_stage_is_algorithm_1_line_4(x64):
    """With argmax cells D's rows are d_a = E[(Y − p̂) b_a] / E[b_a], the per-cell mean residual."""
    probs, labels = _overconfident(jax.random.key(2), 400, 3)
    _, w, d, _ = decision_calibration_stage(
        jax.random.key(3), probs, labels, partition="hard", ridge=0.0, projection="none", **FAST
    )
    cells = ref.cells(np.asarray(w), np.asarray(probs), hard=True)
    resid = np.eye(3)[np.asarray(labels)] - np.asarray(probs)
    for a in range(2):
        if cells[:, a].sum() > 0:
            np.testing.assert_allclose(np.asarray(d)[a], resid[cells[:, a] == 1].mean(axis=0), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("partition, projection", [("soft", "simplex"), ("hard", "simplex"), ("soft", "none")])
def test_l2_never_increases_and_decision_error_falls(partition, projection):
    """Theorem 2.2: the stages do not degrade L2 on the fitting data and drive the decision
    calibration error down (with or without the per-stage projection onto the simplex)."""
    probs, labels = _overconfident(jax.random.key(4), 3000, 5)
    params, info = decision_calibration_fit(
        jax.random.key(5), probs, labels, n_actions=2, n_stages=6, partition=partition,
        projection=projection, return_info=True, **FAST
    )
    l2 = np.concatenate([[_l2(probs, labels)], np.asarray(info.l2_error)])
    # float32 sums over 3000 rows: allow round-off of ~1e-6 relative.
    assert np.all(np.diff(l2) <= 1e-6 * l2[:-1]), l2
    out = decision_calibration_apply(params, probs)
    assert _l2(out, labels) < l2[0]
    dce = dict(n_restarts=4, n_steps=150, key=jax.random.key(9))
    before = float(decision_calibration_error(probs, labels, 2, **dce).value)
    after = float(decision_calibration_error(out, labels, 2, **dce).value)
    assert after < 0.5 * before, (before, after)


def test_recalibration_lowers_loss_gap_on_fitting_data():
    """The paper's evaluation (Eq. 10, Figure 2): mean and worst gap over random losses fall."""
    probs, labels = _overconfident(jax.random.key(6), 3000, 5)
    cal = DecisionCalibrator(n_actions=2, n_stages=6, progress=False, n_losses=100, **FAST)
    cal.fit(probs, labels, validation=(probs, labels))
    h = cal.history_
    assert h["val_mean_gap"][-1] < 0.5 * h["val_mean_gap"][0]
    assert h["val_max_gap"][-1] < h["val_max_gap"][0]
    # The monitored set is the fitting set: its history row s equals a direct evaluation.
    direct = decision_loss_gap(cal.predict_proba(probs, n_stages=3), labels, 100, 2)
    np.testing.assert_allclose(h["val_mean_gap"][3], float(direct.mean_gap), rtol=1e-4)
    np.testing.assert_allclose(h["val_l2_error"][3], float(direct.l2_error), rtol=1e-4)


def test_projected_stage_is_the_simplex_projection_of_the_update(x64):
    """With the default projection a stage returns argmin_{q ∈ Δ} ‖q − (P̂ + W D)‖ row by row."""
    probs, labels = _overconfident(jax.random.key(15), 300, 6, temperature=4.0)
    kw = dict(ridge=0.0, **FAST)
    raw, w, d, _ = decision_calibration_stage(jax.random.key(1), probs, labels, projection="none", **kw)
    proj, w2, d2, _ = decision_calibration_stage(jax.random.key(1), probs, labels, **kw)
    np.testing.assert_allclose(np.asarray(w2), np.asarray(w), rtol=1e-10)
    raw, proj = np.asarray(raw), np.asarray(proj)
    assert raw.min() < -1e-3  # the unprojected update leaves the simplex here
    assert proj.min() >= 0 and np.allclose(proj.sum(axis=1), 1.0, atol=1e-12)
    # Optimality of the Euclidean projection: (raw − proj) · (q − proj) ≤ 0 for every vertex q.
    gaps = np.einsum("nc,nkc->nk", raw - proj, np.eye(6)[None, :, :] - proj[:, None, :])
    assert gaps.max() <= 1e-12
    y = np.eye(6)[np.asarray(labels)]
    assert np.all(((proj - y) ** 2).sum(axis=1) <= ((raw - y) ** 2).sum(axis=1) + 1e-12)
    # The bisection projection agrees with optax's sort-based one.
    v = jax.random.normal(jax.random.key(2), (500, 9), jnp.float64) * jnp.logspace(-3, 0, 500)[:, None]
    with jax.numpy_dtype_promotion("standard"):  # optax divides by an int index array
        want = jax.vmap(optax.projections.projection_simplex)(v)
    np.testing.assert_allclose(np.asarray(project_simplex(v)), np.asarray(want), atol=1e-14)


def test_wrapper_equals_functional_core():
    probs, labels = _overconfident(jax.random.key(7), 500, 3)
    key = jax.random.key(8)
    params = decision_calibration_fit(key, probs, labels, n_actions=2, n_stages=3, **FAST)
    cal = DecisionCalibrator(n_actions=2, n_stages=3, progress=False, **FAST).fit(probs, labels, key=key)
    # The wrapper loops over the same jitted stage the scan calls; float32 round-off only.
    np.testing.assert_allclose(np.asarray(cal.params_.witness), np.asarray(params.witness), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        np.asarray(cal.predict_proba(probs)), np.asarray(decision_calibration_apply(params, probs)), atol=1e-5
    )
    h = cal.history_
    assert set(h) == {"stage", "witness_value", "witness_soft_value", "l2_error"}
    assert all(len(v) == 4 for v in h.values()) and np.isnan(h["witness_value"][0])


def test_apply_outputs_simplex_and_prefixes():
    probs, labels = _overconfident(jax.random.key(10), 500, 3, temperature=4.0)
    params = decision_calibration_fit(jax.random.key(11), probs, labels, n_stages=3, **FAST)
    out = decision_calibration_apply(params, probs)
    assert float(out.min()) >= 1e-7 / 1.01 and float(out.max()) <= 1.0
    np.testing.assert_allclose(np.asarray(out.sum(axis=1)), 1.0, rtol=1e-6)
    # Zero stages: the input, up to the final clip/renormalisation.
    np.testing.assert_allclose(
        np.asarray(decision_calibration_apply(params, probs, 0)), np.asarray(probs), atol=1e-6
    )
    # A prefix of the stages equals fitting params sliced to that prefix.
    sliced = DecisionCalibrationParams(params.witness[:2], params.adjustment[:2], params.hard, params.project)
    np.testing.assert_allclose(
        np.asarray(decision_calibration_apply(params, probs, 2)),
        np.asarray(decision_calibration_apply(sliced, probs)),
        rtol=1e-6,
    )


def test_jit_vmap_over_keys_and_datasets_without_retracing():
    keys = jax.random.split(jax.random.key(12), 2)
    probs, labels = jax.vmap(lambda k: _overconfident(k, 200, 3))(keys)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def fit(k, p, y):
        return decision_calibration_fit(k, p, y, n_actions=2, n_stages=2, **FAST)

    over_data = jax.vmap(fit, in_axes=(None, 0, 0))(keys[0], probs, labels)
    chex.assert_shape(over_data.witness, (2, 2, 2, 3))
    over_keys = jax.vmap(fit, in_axes=(0, None, None))(keys, probs[0], labels[0])
    chex.assert_shape(over_keys.adjustment, (2, 2, 2, 3))
    single = decision_calibration_fit(keys[0], probs[1], labels[1], n_actions=2, n_stages=2, **FAST)
    # vmapped float32 matmuls round differently from unbatched ones.
    np.testing.assert_allclose(np.asarray(over_data.witness[1]), np.asarray(single.witness), rtol=1e-3, atol=1e-3)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def apply(params, p, s):
        return decision_calibration_apply(params, p, s)

    for s in range(3):  # every prefix shares one trace (stages are masked, not sliced)
        apply(single, probs[0], s)
    chex.assert_shape(jax.vmap(apply, in_axes=(0, 0, None))(over_data, probs, 2), (2, 200, 3))


def test_validation_history_and_predict_errors():
    probs, labels = _overconfident(jax.random.key(13), 300, 3)
    val = _overconfident(jax.random.key(14), 200, 3)
    cal = DecisionCalibrator(n_actions=2, n_stages=2, progress=False, n_losses=20, **FAST)
    with pytest.raises(ValueError, match="not fitted"):
        cal.predict_proba(probs)
    p_true = jax.nn.softmax(jnp.log(val[0]) / 2.0, axis=1)  # any valid "true" distributions
    cal.fit(probs, labels, validation={"a": val, "b": (probs, labels), "c": (*val, p_true)})
    for name in ("a", "b", "c"):
        for field in ("mean_gap", "max_gap", "decision_loss", "accuracy", "l2_error"):
            assert cal.history_[f"{name}_{field}"].shape == (3,)
    assert "a_pop_mean_gap" not in cal.history_
    np.testing.assert_allclose(cal.history_["c_mean_gap"], cal.history_["a_mean_gap"], rtol=1e-6)
    pop = decision_loss_gap(cal.predict_proba(val[0], n_stages=1), val[1], 20, 2, true_probs=p_true)
    np.testing.assert_allclose(cal.history_["c_pop_max_gap"][1], float(pop.max_gap), rtol=1e-4)
    first = decision_loss_gap(val[0], val[1], 20, 2)
    np.testing.assert_allclose(cal.history_["a_mean_gap"][0], float(first.mean_gap), rtol=1e-5)
    with pytest.raises(ValueError, match="classes"):
        cal.predict_proba(jnp.full((4, 4), 0.25))
    with pytest.raises(ValueError, match="n_stages"):
        cal.predict_proba(probs, n_stages=5)


_P = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
_Y = np.array([1, 0, 0])


@pytest.mark.parametrize(
    "probs, labels, match",
    [
        (np.array([[0.2, 0.7], [0.5, 0.5], [0.9, 0.1]]), _Y, "sum to 1"),
        (np.array([[-0.2, 1.2], [0.5, 0.5], [0.9, 0.1]]), _Y, "non-negative"),
        (np.array([[np.nan, 0.8], [0.5, 0.5], [0.9, 0.1]]), _Y, "NaN"),
        (_P, np.array([1, 2, 0]), r"\[0, 2\)"),
        (_P, np.array([1, 0]), "mismatched"),
    ],
)
def test_bad_input_raises(probs, labels, match):
    with pytest.raises(ValueError, match=match):
        DecisionCalibrator(n_stages=1, progress=False).fit(probs, labels)
    with pytest.raises(ValueError, match=match):
        decision_calibration_fit(jax.random.key(0), probs, labels, n_stages=1)
    with pytest.raises(ValueError, match=match):
        DecisionCalibrator(n_stages=1, progress=False).fit(_P, _Y, validation=(probs, labels))


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="partition"):
        DecisionCalibrator(partition="medium")
    with pytest.raises(ValueError, match="objective"):
        DecisionCalibrator(objective="l1")
    with pytest.raises(ValueError, match="n_stages"):
        DecisionCalibrator(n_stages=0)
    with pytest.raises(ValueError, match="n_actions"):
        decision_calibration_fit(jax.random.key(0), _P, _Y, n_actions=0)
    with pytest.raises(ValueError, match="pair"):
        DecisionCalibrator(n_stages=1, progress=False).fit(_P, _Y, validation=(_P,))
    with pytest.raises(ValueError, match="ridge"):
        DecisionCalibrator(ridge=-1.0)


def test_new_float_settings_reuse_one_compilation():
    """learning_rate, scale and ridge are traced arguments of the stage: after a first fit
    compiles it, fits and stages with new values compile nothing (each value of a static float
    argument compiled the stage again), and a vmap over ridges is one program."""
    probs, labels = _overconfident(jax.random.key(31), 200, 3)
    key = jax.random.key(0)
    decision_calibration_fit(key, probs, labels, n_stages=2, **FAST)
    decision_calibration_stage(key, probs, labels, **FAST)
    with count_compilations() as c:
        for lr, scale, ridge in [(2e-2, 50.0, 1e-5), (5e-3, 10.0, 1e-3), (1e-1, 200.0, 0.0)]:
            decision_calibration_fit(key, probs, labels, n_stages=2, learning_rate=lr, scale=scale,
                                     ridge=ridge, **FAST)
            decision_calibration_stage(key, probs, labels, learning_rate=lr, scale=scale, ridge=ridge,
                                       **FAST)
    assert c.n == 0
    ridges = jnp.array([0.0, 1e-3, 1e-1], probs.dtype)
    fit = jax.jit(jax.vmap(lambda r: decision_calibration_fit(key, probs, labels, n_stages=2, ridge=r,
                                                             **FAST).adjustment))
    adjustments = fit(ridges)
    single = decision_calibration_fit(key, probs, labels, n_stages=2, ridge=1e-1, **FAST).adjustment
    # batched and single float32 matmuls round differently
    np.testing.assert_allclose(np.asarray(adjustments[2]), np.asarray(single), rtol=1e-3, atol=1e-5)
    with pytest.raises(ValueError, match="ridge"):
        DecisionCalibrator(ridge=-1.0)


def test_empty_data_and_non_keys_are_refused():
    # n = 0 used to end in ZeroDivisionError
    with pytest.raises(ValueError, match="empty"):
        DecisionCalibrator(progress=False).fit(np.zeros((0, 3)), np.zeros(0, int))
    with pytest.raises(ValueError, match="empty"):
        decision_calibration_fit(jax.random.key(0), np.zeros((0, 3)), np.zeros(0, int))
    for key in (0, 1.5, None):
        with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
            decision_calibration_fit(key, np.array([[0.2, 0.8]]), np.array([1]))


def test_unrolled_search_fits_the_same_stages():
    """``unroll`` reaches the witness search of every stage (fit, stage and the wrapper) and
    gives the same fit as the rolled loop up to float rounding."""
    probs, labels = _overconfident(jax.random.key(41), 200, 3)
    key = jax.random.key(0)
    rolled = decision_calibration_fit(key, probs, labels, n_stages=2, unroll=1, **FAST)
    unrolled = decision_calibration_fit(key, probs, labels, n_stages=2, unroll=4, **FAST)
    # float32 Adam: the unrolled copies of a step fuse differently (an ulp per step), and the
    # second stage starts from the first's corrected predictions
    np.testing.assert_allclose(np.asarray(unrolled.witness), np.asarray(rolled.witness), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(unrolled.adjustment), np.asarray(rolled.adjustment), rtol=1e-3, atol=1e-5)
    # stage t of a fit draws its restarts from the t-th split of the key
    _, w, _, _ = decision_calibration_stage(jax.random.split(key, 2)[0], probs, labels, unroll=4, **FAST)
    np.testing.assert_allclose(np.asarray(w), np.asarray(rolled.witness[0]), rtol=1e-3, atol=1e-3)  # as above
    probs2, labels2 = _overconfident(jax.random.key(42), 200, 3)
    with count_compilations() as c:  # the stage compiled above, reused: same unroll, same shapes
        decision_calibration_stage(key, probs2, labels2, unroll=4, **FAST)
    assert c.n == 0
    cal = DecisionCalibrator(n_stages=2, unroll=np.int64(4), progress=False, **FAST).fit(probs, labels, key=key)
    # the wrapper runs the same stages one call at a time (no vmapped or scanned batch): equal
    np.testing.assert_allclose(np.asarray(cal.params_.witness), np.asarray(unrolled.witness), rtol=1e-5, atol=1e-5)
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="unroll"):
            DecisionCalibrator(unroll=bad)
        with pytest.raises(ValueError, match="unroll"):
            decision_calibration_fit(key, probs, labels, unroll=bad)
        with pytest.raises(ValueError, match="unroll"):
            decision_calibration_stage(key, probs, labels, unroll=bad)

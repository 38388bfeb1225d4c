"""Decision recalibration (Zhao et al. 2021, Algorithm 1 and its soft version): parity of a stage
with the NumPy reference, Theorem 2.2's guarantees (L2 never increases on the fitting data, decision
calibration error falls), prediction-time behaviour, ``fit`` / ``fit_with_history`` agreement, a
decision maker's own losses, conformance and input validation."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from conformance import count_compilations
from reference import decision as ref

from jcalib._simplex import project_simplex
from jcalib.metrics import PartitionSearch, decision_calibration_error, decision_loss_gap
from jcalib.recalibration import DecisionCalibration, FittedDecisionCalibration, SklearnRecalibrator

# Small, shared settings: tests reuse the same compiled search where shapes agree.
FAST = PartitionSearch(n_restarts=2, n_steps=60, objective="squared")


def _overconfident(key, n, c, temperature=2.0):
    """Labels from softmax(z); predictions softmax(temperature · z): miscalibrated along the
    temperature direction, which K = 2 partitions (confident vs unsure) expose."""
    k1, k2 = jax.random.split(key)
    z = 1.2 * jax.random.normal(k1, (n, c))
    labels = jax.random.categorical(k2, z).astype(jnp.int32)
    return jax.nn.softmax(temperature * z, axis=1), labels


def _l2(p, y):
    return float(jnp.mean(jnp.sum((p - jax.nn.one_hot(y, p.shape[1], dtype=p.dtype)) ** 2, axis=1)))


def _finalise(p):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("partition", ["soft", "hard"])
def test_stage_matches_reference(x64, partition):
    probs, labels = _overconfident(jax.random.key(0), 300, 4)
    method = DecisionCalibration(n_stages=1, search=FAST, partition=partition, ridge=0.0, projection="none")
    fitted = method.fit(probs, labels, key=jax.random.key(1))
    w, d = np.asarray(fitted.witness[0]), np.asarray(fitted.adjustment[0])
    want_d, want_new = ref.stage(w, np.asarray(probs), np.asarray(labels), partition == "hard")
    np.testing.assert_allclose(d, want_d, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(np.asarray(fitted(probs)), _finalise(want_new), rtol=1e-8, atol=1e-12)
    hard_value = ref.objective(w, np.asarray(probs), np.asarray(labels), hard=True)
    np.testing.assert_allclose(float(fitted.info.value[0]), hard_value, rtol=1e-8)
    # D's rows sum to 0, so corrected predictions still sum to 1 (before any clipping).
    np.testing.assert_allclose(d.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(want_new.sum(axis=1), 1.0, atol=1e-12)


def test_hard_stage_is_algorithm_1_line_4(x64):
    """With argmax cells D's rows are d_a = E[(Y − p̂) b_a] / E[b_a], the per-cell mean residual."""
    probs, labels = _overconfident(jax.random.key(2), 400, 3)
    method = DecisionCalibration(n_stages=1, search=FAST, partition="hard", ridge=0.0, projection="none")
    fitted = method.fit(probs, labels, key=jax.random.key(3))
    w, d = np.asarray(fitted.witness[0]), np.asarray(fitted.adjustment[0])
    cells = ref.cells(w, np.asarray(probs), hard=True)
    resid = np.eye(3)[np.asarray(labels)] - np.asarray(probs)
    for a in range(2):
        if cells[:, a].sum() > 0:
            np.testing.assert_allclose(d[a], resid[cells[:, a] == 1].mean(axis=0), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("partition, projection", [("soft", "simplex"), ("hard", "simplex"), ("soft", "none")])
def test_l2_never_increases_and_decision_error_falls(partition, projection):
    """Theorem 2.2: the stages do not degrade L2 on the fitting data and drive the decision
    calibration error down (with or without the per-stage projection onto the simplex)."""
    probs, labels = _overconfident(jax.random.key(4), 3000, 5)
    method = DecisionCalibration(n_actions=2, n_stages=6, search=FAST, partition=partition, projection=projection)
    fitted = method.fit(probs, labels, key=jax.random.key(5))
    l2 = np.concatenate([[_l2(probs, labels)], np.asarray(fitted.info.l2_error)])
    # float32 sums over 3000 rows: allow round-off of ~1e-6 relative.
    assert np.all(np.diff(l2) <= 1e-6 * l2[:-1]), l2
    out = fitted(probs)
    assert _l2(out, labels) < l2[0]
    dce = dict(search=PartitionSearch(n_restarts=4, n_steps=150), key=jax.random.key(9))
    before = float(decision_calibration_error(probs, labels, 2, **dce).value)
    after = float(decision_calibration_error(out, labels, 2, **dce).value)
    assert after < 0.5 * before, (before, after)


def test_recalibration_lowers_loss_gap_on_fitting_data():
    """The paper's evaluation (Eq. 10, Figure 2): mean and worst gap over random losses fall."""
    probs, labels = _overconfident(jax.random.key(6), 3000, 5)
    losses = jax.random.normal(jax.random.key(0), (100, 2, 5))
    method = DecisionCalibration(n_actions=2, n_stages=6, search=FAST)
    fitted, h = method.fit_with_history(
        probs, labels, key=jax.random.key(1), validation=(probs, labels), monitor_losses=losses, progress=False
    )
    assert h["val_mean_gap"][-1] < 0.5 * h["val_mean_gap"][0]
    assert h["val_max_gap"][-1] < h["val_max_gap"][0]
    # The monitored set is the fitting set: its history row s equals a direct evaluation.
    direct = decision_loss_gap(fitted(probs, n_stages=3), labels, losses=losses)
    np.testing.assert_allclose(h["val_mean_gap"][3], float(direct.mean_gap), rtol=1e-4)
    np.testing.assert_allclose(h["val_l2_error"][3], float(direct.l2_error), rtol=1e-4)


def test_projected_stage_is_the_simplex_projection_of_the_update(x64):
    """With the default projection a stage returns argmin_{q ∈ Δ} ‖q − (P̂ + W D)‖ row by row."""
    probs, labels = _overconfident(jax.random.key(15), 300, 6, temperature=4.0)
    key = jax.random.key(1)
    raw_fit = DecisionCalibration(n_stages=1, search=FAST, ridge=0.0, projection="none").fit(probs, labels, key=key)
    proj_fit = DecisionCalibration(n_stages=1, search=FAST, ridge=0.0).fit(probs, labels, key=key)
    np.testing.assert_allclose(np.asarray(proj_fit.witness), np.asarray(raw_fit.witness), rtol=1e-10)
    w, d = np.asarray(raw_fit.witness[0]), np.asarray(raw_fit.adjustment[0])
    raw = np.asarray(probs) + ref.cells(w, np.asarray(probs), hard=False) @ d
    proj = np.asarray(project_simplex(jnp.asarray(raw)))
    assert raw.min() < -1e-3  # the unprojected update leaves the simplex here
    assert proj.min() >= 0 and np.allclose(proj.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(proj_fit(probs)), _finalise(proj), atol=1e-12)
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


def test_fit_with_history_equals_fit():
    probs, labels = _overconfident(jax.random.key(7), 500, 3)
    key = jax.random.key(8)
    method = DecisionCalibration(n_actions=2, n_stages=3, search=FAST)
    fitted = method.fit(probs, labels, key=key)
    stepped, h = method.fit_with_history(probs, labels, key=key, progress=False)
    # The stepped fit loops over the same jitted stage the scan calls; float32 round-off only.
    np.testing.assert_allclose(np.asarray(stepped.witness), np.asarray(fitted.witness), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(stepped(probs)), np.asarray(fitted(probs)), atol=1e-5)
    np.testing.assert_allclose(np.asarray(stepped.info.l2_error), np.asarray(fitted.info.l2_error), rtol=1e-5)
    assert set(h) == {"stage", "witness_value", "witness_soft_value", "l2_error"}
    assert all(len(v) == 4 for v in h.values()) and np.isnan(h["witness_value"][0])
    np.testing.assert_allclose(h["l2_error"][1:], np.asarray(fitted.info.l2_error), rtol=1e-5)


def test_apply_outputs_simplex_and_prefixes():
    probs, labels = _overconfident(jax.random.key(10), 500, 3, temperature=4.0)
    fitted = DecisionCalibration(n_stages=3, search=FAST).fit(probs, labels, key=jax.random.key(11))
    out = fitted(probs)
    assert float(out.min()) >= 1e-7 / 1.01 and float(out.max()) <= 1.0
    np.testing.assert_allclose(np.asarray(out.sum(axis=1)), 1.0, rtol=1e-6)
    # Zero stages: the input, up to the final clip/renormalisation.
    np.testing.assert_allclose(np.asarray(fitted(probs, n_stages=0)), np.asarray(probs), atol=1e-6)
    # A prefix of the stages equals the fitted map sliced to that prefix.
    sliced = jax.tree.map(lambda x: x[:2], fitted)
    assert isinstance(sliced, FittedDecisionCalibration)
    np.testing.assert_allclose(np.asarray(fitted(probs, n_stages=2)), np.asarray(sliced(probs)), rtol=1e-6)
    with pytest.raises(ValueError, match="classes"):
        fitted(jnp.full((4, 4), 0.25))
    for bad in (5, -1, 1.5, True):
        with pytest.raises(ValueError, match="n_stages"):
            fitted(probs, n_stages=bad)


def test_jit_vmap_over_keys_datasets_and_weights_without_retracing():
    keys = jax.random.split(jax.random.key(12), 2)
    probs, labels = jax.vmap(lambda k: _overconfident(k, 200, 3))(keys)
    method = DecisionCalibration(n_actions=2, n_stages=2, search=FAST)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def fit(k, p, y):
        return method.fit(p, y, key=k)

    over_data = jax.vmap(fit, in_axes=(None, 0, 0))(keys[0], probs, labels)
    chex.assert_shape(over_data.witness, (2, 2, 2, 3))
    over_keys = jax.vmap(fit, in_axes=(0, None, None))(keys, probs[0], labels[0])
    chex.assert_shape(over_keys.adjustment, (2, 2, 2, 3))
    single = method.fit(probs[1], labels[1], key=keys[0])
    # vmapped float32 matmuls round differently from unbatched ones.
    np.testing.assert_allclose(np.asarray(over_data.witness[1]), np.asarray(single.witness), rtol=1e-3, atol=1e-3)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def apply(fitted, p, s):
        return fitted(p, n_stages=s)

    for s in range(3):  # every prefix shares one trace (stages are masked, not sliced)
        apply(single, probs[0], s)
    chex.assert_shape(jax.vmap(apply, in_axes=(0, 0, None))(over_data, probs, 2), (2, 200, 3))
    # bootstrap refits: one vmap over sample weights; unit weights are the unweighted fit
    w = jax.random.poisson(jax.random.key(3), 1.0, (3, 200)).astype(probs.dtype)
    refits = jax.vmap(lambda w: method.fit(probs[0], labels[0], key=keys[0], sample_weight=w))(w)
    chex.assert_shape(refits.witness, (3, 2, 2, 3))
    unit = method.fit(probs[0], labels[0], key=keys[0], sample_weight=jnp.ones(200, probs.dtype))
    np.testing.assert_allclose(np.asarray(unit.adjustment), np.asarray(over_keys.adjustment[0]), rtol=1e-4, atol=1e-5)


def test_validation_history():
    probs, labels = _overconfident(jax.random.key(13), 300, 3)
    val = _overconfident(jax.random.key(14), 200, 3)
    losses = jax.random.normal(jax.random.key(2), (20, 2, 3))
    method = DecisionCalibration(n_actions=2, n_stages=2, search=FAST)
    p_true = jax.nn.softmax(jnp.log(val[0]) / 2.0, axis=1)  # any valid "true" distributions
    fitted, h = method.fit_with_history(
        probs, labels, key=jax.random.key(0), validation={"a": val, "b": (probs, labels), "c": (*val, p_true)},
        monitor_losses=losses, progress=False,
    )
    for name in ("a", "b", "c"):
        for field in ("mean_gap", "max_gap", "decision_loss", "accuracy", "l2_error"):
            assert h[f"{name}_{field}"].shape == (3,)
    assert "a_pop_mean_gap" not in h
    np.testing.assert_allclose(h["c_mean_gap"], h["a_mean_gap"], rtol=1e-6)
    pop = decision_loss_gap(fitted(val[0], n_stages=1), val[1], losses=losses, true_probs=p_true)
    np.testing.assert_allclose(h["c_pop_max_gap"][1], float(pop.max_gap), rtol=1e-4)
    first = decision_loss_gap(val[0], val[1], losses=losses)
    np.testing.assert_allclose(h["a_mean_gap"][0], float(first.mean_gap), rtol=1e-5)
    # default monitoring losses: 500 N(0, 1) matrices drawn from fold_in(key, 1)
    _, h2 = method.fit_with_history(probs, labels, key=jax.random.key(0), validation={"a": val}, progress=False)
    drawn = jax.random.normal(jax.random.fold_in(jax.random.key(0), 1), (500, 2, 3))
    np.testing.assert_allclose(h2["a_mean_gap"][0], float(decision_loss_gap(*val, losses=drawn).mean_gap), rtol=1e-5)


def test_given_losses_replace_the_search(x64):
    """With a decision maker's losses each stage corrects the worst of their Bayes partitions
    (no search; the key is unused); one matrix with hard cells is Algorithm 1 on its partition."""
    probs, labels = _overconfident(jax.random.key(20), 400, 3)
    L = jax.random.normal(jax.random.key(21), (5, 2, 3), jnp.float64)
    method = DecisionCalibration(n_stages=2, partition="hard", ridge=0.0, projection="none", losses=L)
    fitted = method.fit(probs, labels, key=None)
    # nothing is drawn: any key gives the same fit
    again = method.fit(probs, labels, key=jax.random.key(5))
    np.testing.assert_array_equal(np.asarray(again.adjustment), np.asarray(fitted.adjustment))
    values = [ref.objective(-np.asarray(Lm), np.asarray(probs), np.asarray(labels), hard=True) for Lm in L]
    m = int(np.argmax(values))
    np.testing.assert_allclose(np.asarray(fitted.witness[0]), -np.asarray(L[m]))
    np.testing.assert_allclose(float(fitted.info.value[0]), values[m], rtol=1e-10)
    want_d, _ = ref.stage(-np.asarray(L[m]), np.asarray(probs), np.asarray(labels), True)
    np.testing.assert_allclose(np.asarray(fitted.adjustment[0]), want_d, rtol=1e-8, atol=1e-12)
    # the given losses' decision calibration error falls
    before = float(decision_calibration_error(probs, labels, losses=L).value)
    after = float(decision_calibration_error(fitted(probs), labels, losses=L).value)
    assert after < before
    # one (K, C) matrix is accepted; the scikit-learn adapter serves it
    DecisionCalibration(n_stages=1, losses=L[0]).fit(probs, labels, key=None)
    SklearnRecalibrator(DecisionCalibration(n_stages=1, losses=L), key=jax.random.key(0)).fit(probs, labels)
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        method.fit(probs, labels, key=0)
    with pytest.raises(ValueError, match="losses"):
        DecisionCalibration(losses=np.ones((2, 4))).fit(probs, labels, key=None)  # C = 4 ≠ 3
    for bad in (np.ones((1, 3)), np.ones(3), np.full((2, 3), np.nan), np.ones((2, 2, 2, 3))):
        with pytest.raises(ValueError, match="losses"):
            DecisionCalibration(losses=bad)
    with pytest.raises(ValueError, match="n_actions"):
        DecisionCalibration(n_actions=3, losses=np.ones((2, 3)))


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
    method = DecisionCalibration(n_stages=1)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=match):
        method.fit(probs, labels, key=key)
    with pytest.raises(ValueError, match=match):
        method.fit_with_history(_P, _Y, key=key, validation=(probs, labels), progress=False)


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="partition"):
        DecisionCalibration(partition="medium")
    with pytest.raises(ValueError, match="objective"):
        PartitionSearch(objective="l1")
    with pytest.raises(ValueError, match="n_stages"):
        DecisionCalibration(n_stages=0)
    with pytest.raises(ValueError, match="n_actions"):
        DecisionCalibration(n_actions=0)
    with pytest.raises(ValueError, match="projection"):
        DecisionCalibration(projection="clip")
    with pytest.raises(TypeError, match="PartitionSearch"):
        DecisionCalibration(search={"n_steps": 10})
    with pytest.raises(ValueError, match="pair"):
        DecisionCalibration(n_stages=1).fit_with_history(_P, _Y, key=jax.random.key(0), validation=(_P,))
    with pytest.raises(ValueError, match="ridge"):
        DecisionCalibration(ridge=-1.0)
    for bad in (dict(n_restarts=0), dict(n_steps=1.5), dict(learning_rate=-1.0), dict(scale=float("nan"))):
        with pytest.raises(ValueError, match=next(iter(bad))):
            PartitionSearch(**bad)


def test_new_float_settings_reuse_one_compilation():
    """The search's learning rate and scale and the ridge are traced: after a first fit
    compiles it, fits with new values compile nothing, and a vmap over ridges is one program."""
    probs, labels = _overconfident(jax.random.key(31), 200, 3)
    key = jax.random.key(0)
    DecisionCalibration(n_stages=2, search=FAST).fit(probs, labels, key=key)
    with count_compilations() as c:
        for lr, scale, ridge in [(2e-2, 50.0, 1e-5), (5e-3, 10.0, 1e-3), (1e-1, 200.0, 0.0)]:
            search = PartitionSearch(n_restarts=2, n_steps=60, learning_rate=lr, scale=scale, objective="squared")
            DecisionCalibration(n_stages=2, search=search, ridge=ridge).fit(probs, labels, key=key)
    assert c.n == 0
    ridges = jnp.array([0.0, 1e-3, 1e-1], probs.dtype)
    fit = jax.jit(jax.vmap(lambda r: DecisionCalibration(n_stages=2, search=FAST, ridge=r).fit(probs, labels, key=key).adjustment))
    adjustments = fit(ridges)
    single = DecisionCalibration(n_stages=2, search=FAST, ridge=1e-1).fit(probs, labels, key=key).adjustment
    # batched and single float32 matmuls round differently
    np.testing.assert_allclose(np.asarray(adjustments[2]), np.asarray(single), rtol=1e-3, atol=1e-5)


def test_a_fit_is_one_program():
    """A first fit lowers one program, the stages' scan with the weights' normalisation in it
    (lowerings are counted: a program read back from the persistent cache is lowered too)."""
    probs, labels = (np.asarray(a) for a in _overconfident(jax.random.key(32), 150, 3))
    key = jax.random.key(1)
    jax.block_until_ready(key)
    lowered = []

    def listen(event, duration, **kw):
        if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            lowered.append(kw.get("fun_name"))

    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        DecisionCalibration(n_stages=2, search=FAST).fit(probs, labels, key=key, sample_weight=np.ones(150))
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert lowered == ["jit(_fit_stages)"]


def test_empty_data_and_non_keys_are_refused():
    # n = 0 used to end in ZeroDivisionError
    with pytest.raises(ValueError, match="empty"):
        DecisionCalibration().fit(np.zeros((0, 3)), np.zeros(0, int), key=jax.random.key(0))
    for key in (0, 1.5, None):
        with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
            DecisionCalibration().fit(np.array([[0.2, 0.8]]), np.array([1]), key=key)
    assert DecisionCalibration().needs_key
    with pytest.raises(TypeError, match="key"):
        SklearnRecalibrator(DecisionCalibration())


def test_unrolled_search_fits_the_same_stages():
    """``unroll`` reaches the witness search of every stage and gives the same fit as the
    rolled loop up to float rounding."""
    probs, labels = _overconfident(jax.random.key(41), 200, 3)
    key = jax.random.key(0)

    def method(unroll):
        return DecisionCalibration(n_stages=2, search=PartitionSearch(n_restarts=2, n_steps=60, objective="squared", unroll=unroll))

    rolled = method(1).fit(probs, labels, key=key)
    unrolled = method(4).fit(probs, labels, key=key)
    # float32 Adam: the unrolled copies of a step fuse differently (an ulp per step), and the
    # second stage starts from the first's corrected predictions
    np.testing.assert_allclose(np.asarray(unrolled.witness), np.asarray(rolled.witness), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(unrolled.adjustment), np.asarray(rolled.adjustment), rtol=1e-3, atol=1e-5)
    stepped, _ = method(np.int64(4)).fit_with_history(probs, labels, key=key, progress=False)
    # the stepped fit runs the same stages one call at a time (no scanned batch): equal
    np.testing.assert_allclose(np.asarray(stepped.witness), np.asarray(unrolled.witness), rtol=1e-5, atol=1e-5)
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="unroll"):
            PartitionSearch(unroll=bad)


def test_stage_programs_have_no_host_callback():
    """A stage's fit and its application hold no in-graph check of the values they derive (their
    inputs were checked at fit's and the fitted map's boundary): a host callback would keep the
    programs out of the persistent compilation cache."""
    from jcalib.recalibration import decision as module

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 40).astype(np.float32)
    onehot = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 40)]
    w = np.full(40, 1 / 40, np.float32)
    fit = jax.make_jaxpr(lambda k: module._stage(k, probs, onehot, w, PartitionSearch(n_steps=3), np.float32(1e-6),
                                                 None, n_actions=2, hard=True, project=True))(jax.random.key(0))
    apply = jax.make_jaxpr(lambda wd: module._next(wd, wd, probs, hard=True, project=True))(np.zeros((2, 3), np.float32))
    assert "callback" not in str(fit) and "callback" not in str(apply)

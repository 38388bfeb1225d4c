"""Tests of temperature, vector, matrix and Dirichlet scaling (jcalib.recalibration.scaling):
parity with a grid search and with SciPy fits of the same objective, conformance (jit, vmap over
datasets and hyperparameters, no retrace), the claims (NLL never above the identity map's,
temperature scaling keeps the arg-max, ODIR shrinks off-diagonals), the scikit-learn adapter and
bad input; and
float32 against float64 on Gaussian naive Bayes's digits probabilities (exact zeros included),
against the ODIR optimum found by Newton's method."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import scaling as ref
from reference.nb_digits import nb_digits
from reference.odir_newton import fit_odir_newton

from jcalib.metrics import classwise_ece
from jcalib.recalibration import (
    DirichletCalibration,
    MatrixScaling,
    SklearnRecalibrator,
    TemperatureScaling,
    VectorScaling,
)
from jcalib.recalibration import scaling as scaling_module

KEY = jax.random.key(0)
METHODS = {
    "temperature": TemperatureScaling,
    "vector": VectorScaling,
    "matrix": MatrixScaling,
    "dirichlet": DirichletCalibration,
}


def _miscalibrated(seed, n=200, c=3, sharpen=2.5):
    """Labels drawn from softmax(s), predictions softmax(sharpen · s + shift): over-confident
    and biased towards class 0, so every map has something to fix."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(n, c)) * 1.5
    true = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(c, p=row) for row in true])
    logits = sharpen * scores
    logits[:, 0] += 0.7
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return probs, labels


def _nll(q, labels):
    q = np.asarray(q, np.float64)
    return -np.mean(np.log(q[np.arange(len(labels)), labels]))


def _as_ref(kind, params):
    if kind == "temperature":
        return {"T": float(np.exp(params.log_temperature))}
    if kind == "vector":
        return {"a": np.asarray(params.scale), "b": np.asarray(params.bias)}
    return {"W": np.asarray(params.weights), "b": np.asarray(params.bias)}


# ---------------------------------------------------------------------------------------------
# Parity with the references


def test_temperature_matches_grid_search(x64):
    probs, labels = _miscalibrated(0, n=150)
    params = TemperatureScaling().fit(probs, labels)
    t_grid = ref.fit_temperature_grid(probs, labels)["T"]
    t = float(jnp.exp(params.log_temperature))
    # grid spacing in log10 T is 2/4000: the grid minimiser is within one step of the optimum
    assert abs(np.log10(t) - np.log10(t_grid)) <= 2 / 4000
    obj = ref.objective("temperature", {"T": t}, probs, labels)
    assert obj <= ref.objective("temperature", {"T": t_grid}, probs, labels) + 1e-12
    assert t == pytest.approx(2.5, rel=0.25)  # the sharpening that made the data


@pytest.mark.parametrize(
    "kind, reg_lambda, reg_mu",
    [("vector", 0.0, 0.0), ("matrix", 0.0, 0.0), ("matrix", 0.5, 0.1), ("dirichlet", 1e-2, 1e-2), ("dirichlet", 2.0, 2.0)],
)
def test_fit_matches_scipy(x64, kind, reg_lambda, reg_mu):
    probs, labels = _miscalibrated(1, n=150, c=3)
    kwargs = {} if kind == "vector" else {"reg_lambda": reg_lambda, "reg_mu": reg_mu}
    params = _as_ref(kind, METHODS[kind](**kwargs).fit(probs, labels))
    want = ref.fit(kind, probs, labels, reg_lambda, reg_mu)
    got_obj = ref.objective(kind, params, probs, labels, reg_lambda, reg_mu)
    want_obj = ref.objective(kind, want, probs, labels, reg_lambda, reg_mu)
    # both are converged minimisers of the same convex objective: equal to 1e-8 relative
    assert got_obj == pytest.approx(want_obj, rel=1e-8)
    if kind == "vector":
        # identifiable up to a common shift of the bias
        np.testing.assert_allclose(params["a"], want["a"], atol=1e-4)
        np.testing.assert_allclose(params["b"] - params["b"].mean(), want["b"] - want["b"].mean(), atol=1e-4)
    elif reg_lambda > 0 and reg_mu > 0:
        # ODIR makes the objective strictly convex: the minimiser is unique
        np.testing.assert_allclose(params["W"], want["W"], atol=1e-4)
        np.testing.assert_allclose(params["b"], want["b"], atol=1e-4)


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_dirichlet_float32_and_float64_reach_the_odir_optimum_on_naive_bayes_digits(seed):
    """Gaussian naive Bayes on digits puts 80 % of its probabilities below 1e-15 (many exactly
    0), so most log-probabilities sit at the clip and the ODIR objective is a long, flat valley
    (the penalty's curvature λ/(C(C-1)) ≈ 1e-4 is all that some directions have). Both
    precisions, at the default 500 steps, end within 1e-4 of the optimum's objective (found by
    Newton's method) -- the fits on the raw log-probabilities ended up to 1.2e-3 above it -- and
    their held-out NLLs (with one clip, 1e-12) agree within 0.02: along the valley, points
    within 1e-4 of the optimum differ by several hundredths on held-out data, so no fixed-step
    fit pins it more closely in either precision (measured: the float32/float64 gap was 0.069
    on split 2 before the fit was preconditioned, 0.007 after)."""
    pc, yc, pt, yt = nb_digits(seed)
    lam = mu = 1e-2
    best = ref.objective("dirichlet", fit_odir_newton(pc, yc, lam, mu), pc, yc, lam, mu)
    held_out = []
    for dtype in (np.float32, np.float64):
        with jax.enable_x64(dtype == np.float64):
            params = DirichletCalibration(reg_lambda=lam, reg_mu=mu).fit(pc.astype(dtype), yc)
            q = np.asarray(params(pt.astype(dtype)), np.float64)
        assert ref.objective("dirichlet", _as_ref("dirichlet", params), pc, yc, lam, mu) - best < 1e-4
        held_out.append(-np.mean(np.log(np.clip(q[np.arange(len(yt)), yt], 1e-12, 1))))
    assert abs(held_out[0] - held_out[1]) < 0.02


def test_sample_weights_match_scipy(x64):
    probs, labels = _miscalibrated(2, n=150, c=3)
    w = np.random.default_rng(0).uniform(0, 2, size=150)
    params = _as_ref("dirichlet", DirichletCalibration(reg_lambda=0.1, reg_mu=0.1).fit(probs, labels, sample_weight=w))
    want = ref.fit("dirichlet", probs, labels, 0.1, 0.1, weights=w)
    np.testing.assert_allclose(params["W"], want["W"], atol=1e-4)
    t = float(TemperatureScaling().fit(probs, labels, sample_weight=w).temperature)
    assert abs(np.log10(t) - np.log10(ref.fit_temperature_grid(probs, labels, weights=w)["T"])) <= 2 / 4000


def test_apply_matches_reference(x64):
    probs, labels = _miscalibrated(3, n=150, c=3)
    for kind, method in METHODS.items():
        fitted = method().fit(probs, labels)
        np.testing.assert_allclose(fitted(probs), ref.apply(kind, _as_ref(kind, fitted), probs), rtol=1e-10)


def test_docstring_examples():
    result = doctest.testmod(scaling_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------------------------------------
# Claims


@pytest.mark.parametrize("kind", sorted(METHODS))
def test_recalibration_lowers_nll_on_fitting_split(kind):
    # every fit starts at the identity map, whose penalty is zero, and returns its best iterate:
    # the NLL after fitting is at most the identity's, and on these data far below it
    probs, labels = _miscalibrated(4)
    before = _nll(probs, labels)
    after = _nll(METHODS[kind]().fit(probs, labels)(probs), labels)
    assert after < before - 0.1


@pytest.mark.parametrize("seed", range(3))
def test_recalibration_generalises_to_held_out_split(seed):
    # fitted on one split, evaluated on another from the same miscalibrated model: held-out NLL
    # and class-wise ECE (Kull et al. 2019's evaluation) both fall for every map
    fit_p, fit_y = _miscalibrated(20 + 2 * seed)
    test_p, test_y = _miscalibrated(21 + 2 * seed)
    base_nll, base_ece = _nll(test_p, test_y), float(classwise_ece(test_p, test_y, n_bins=10))
    for method in METHODS.values():
        q = method().fit(fit_p, fit_y)(test_p)
        assert _nll(q, test_y) < base_nll - 0.05  # observed drops 0.11-0.29 (n = 200)
        assert float(classwise_ece(q, test_y, n_bins=10)) < base_ece


def test_temperature_scaling_keeps_argmax():
    probs, labels = _miscalibrated(5)
    out = TemperatureScaling().fit(probs, labels)(probs)
    np.testing.assert_array_equal(np.argmax(out, axis=1), np.argmax(probs, axis=1))


def test_odir_shrinks_off_diagonal_with_lambda():
    # for exact minimisers the penalised quantity is non-increasing in its weight λ
    probs, labels = _miscalibrated(6, n=150, c=4)
    lambdas = jnp.array([0.0, 0.1, 1.0, 10.0])
    params = jax.vmap(lambda lam: DirichletCalibration(reg_lambda=lam, reg_mu=0.1).fit(probs, labels))(lambdas)
    off = params.weights * (1 - jnp.eye(4))[None]
    norms = np.asarray(jnp.sum(off**2, axis=(1, 2)))
    assert np.all(np.diff(norms) <= 1e-4 * norms[:-1])  # float32 round-off at convergence
    assert norms[-1] < 0.2 * norms[0]


def test_integer_weights_equal_repetition(x64):
    # repetitions 0, 1, 2 in equal numbers keep n = 150, so no new shape is compiled
    probs, labels = _miscalibrated(7, n=150, c=3)
    reps = np.random.default_rng(1).permutation(np.repeat([0, 1, 2], 50))
    for method in METHODS.values():
        a = method().fit(probs, labels, sample_weight=reps.astype(float))
        b = method().fit(np.repeat(probs, reps, axis=0), np.repeat(labels, reps))
        # same objective, float64: fits agree far below the 1e-4 level of convergence
        chex.assert_trees_all_close(a, b, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# Conformance


@pytest.mark.parametrize("kind", sorted(METHODS))
def test_jit_vmap_over_datasets_no_retrace(kind):
    method = METHODS[kind]()
    data = [_miscalibrated(10 + i) for i in range(3)]
    probs = jnp.asarray(np.stack([d[0] for d in data]), jnp.float32)
    labels = jnp.asarray(np.stack([d[1] for d in data]))
    chex.clear_trace_counter()  # the counter is keyed by code, shared across parametrisations

    @jax.jit
    @chex.assert_max_traces(n=1)
    def fit_all(p, y):
        params = jax.vmap(method.fit)(p, y)
        return params, jax.vmap(lambda f, q: f(q))(params, p)

    params, out = fit_all(probs, labels)
    fit_all(probs[::-1], labels[::-1])  # new values, same shapes: no retrace
    chex.assert_shape(out, (3, 200, 3))
    one = method.fit(probs[1], labels[1])(probs[1])
    # Batched and single fits differ only by float32 reduction order, which can move the point
    # where the fit stops along directions in which the objective is flat to float32 precision
    # (NLL changes ~1e-7): the NLLs agree to that precision, the probabilities to ~1e-3.
    np.testing.assert_allclose(_nll(out[1], labels[1]), _nll(one, labels[1]), rtol=1e-5)
    np.testing.assert_allclose(out[1], one, atol=2e-3)


def test_fit_is_deterministic_and_key_free():
    probs, labels = _miscalibrated(8)
    a = DirichletCalibration().fit(probs, labels)
    b = DirichletCalibration().fit(probs, labels)
    chex.assert_trees_all_equal(a, b)
    with pytest.raises(TypeError, match="key"):
        DirichletCalibration().fit(probs, labels, key=jax.random.key(1))


def test_extra_steps_after_convergence_stay_put():
    # fixed step counts run past convergence; the parameters must not drift or turn NaN
    probs, labels = _miscalibrated(9)
    a = TemperatureScaling().fit(probs, labels)
    b = TemperatureScaling(n_steps=300).fit(probs, labels)
    assert np.isfinite(float(b.log_temperature))
    np.testing.assert_allclose(a.log_temperature, b.log_temperature, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# The scikit-learn adapter


@pytest.mark.parametrize("kind", sorted(METHODS))
def test_sklearn_adapter_matches_the_fitted_map(kind):
    probs, labels = _miscalibrated(11)
    method = METHODS[kind]()
    cal = SklearnRecalibrator(method)
    assert cal.fit(probs, labels) is cal
    chex.assert_trees_all_close(cal.fitted_, method.fit(probs, labels), atol=1e-6)
    np.testing.assert_allclose(cal.predict_proba(probs), cal.fitted_(probs), atol=1e-6)
    with pytest.raises(ValueError, match="classes"):
        cal.predict_proba(np.full((2, 4), 0.25))
    with pytest.raises(ValueError, match="not fitted"):
        SklearnRecalibrator(METHODS[kind]()).predict_proba(probs)


def test_temperature_attribute():
    probs, labels = _miscalibrated(12)
    ts = TemperatureScaling().fit(probs, labels)
    assert float(ts.temperature) == pytest.approx(float(jnp.exp(ts.log_temperature)))


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("kind", sorted(METHODS))
def test_bad_inputs_raise(kind):
    fit = METHODS[kind]().fit
    p = np.array([[0.6, 0.4], [0.1, 0.9]])
    y = np.array([0, 1])
    with pytest.raises(ValueError, match="NaN"):
        fit(np.array([[np.nan, 1.0], [0.1, 0.9]]), y)
    with pytest.raises(ValueError, match="sum to 1"):
        fit(np.array([[0.6, 0.6], [0.1, 0.9]]), y)
    with pytest.raises(ValueError, match="lie in"):
        fit(p, np.array([0, 2]))
    with pytest.raises(ValueError, match="mismatched"):
        fit(p, np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="n_steps"):
        METHODS[kind](n_steps=0)
    with pytest.raises(ValueError, match="sample_weight"):
        fit(p, y, sample_weight=np.array([1.0, -1.0]))
    fitted = fit(*_miscalibrated(0))  # a compiled shape, fitted once per kind
    with pytest.raises(ValueError, match="sum to 1"):
        fitted(np.array([[0.6, 0.3, 0.3]]))
    with pytest.raises(ValueError, match="NaN"):
        fitted(np.array([[np.nan, 0.5, 0.5]]))


@pytest.mark.parametrize("cls", [MatrixScaling, DirichletCalibration])
def test_bad_regularisation_raises(cls):
    with pytest.raises(ValueError, match="reg_lambda"):
        cls(reg_lambda=-1.0)
    with pytest.raises(ValueError, match="reg_mu"):
        cls(reg_mu=float("nan"))
    with pytest.raises(ValueError, match="reg_lambda"):
        cls(reg_lambda=np.ones(2))


def test_adapter_bad_inputs_raise():
    with pytest.raises(ValueError, match="NaN"):
        DirichletCalibration().fit(np.array([[np.nan, 1.0]]), np.array([0]))
    with pytest.raises(ValueError, match="lie in"):
        SklearnRecalibrator(TemperatureScaling()).fit(np.array([[0.5, 0.5]]), np.array([3]))
    with pytest.raises(ValueError, match="n_steps"):
        VectorScaling(n_steps=-3)


@pytest.mark.slow
def test_dirichlet_recovers_a_map_in_its_family():
    # labels drawn from softmax(W* log p + b*): with n = 20 000 the fitted map's probabilities
    # approach the true ones (the parameters themselves are identified only up to W + 1vᵀ)
    rng = np.random.default_rng(0)
    n, c = 20_000, 4
    logits = rng.normal(size=(n, c)) * 2.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    w_true = np.array([[0.6, 0.1, 0.0, -0.1], [0.0, 0.9, 0.2, 0.0], [0.1, 0.0, 0.5, 0.0], [0.0, -0.2, 0.0, 0.8]])
    b_true = np.array([0.3, -0.2, 0.0, 0.1])
    q_true = ref.apply("dirichlet", {"W": w_true, "b": b_true}, probs)
    labels = (q_true.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    q_fit = np.asarray(DirichletCalibration(reg_lambda=1e-4, reg_mu=1e-4).fit(probs, labels)(probs))
    q_ref = ref.apply("dirichlet", ref.fit("dirichlet", probs, labels, 1e-4, 1e-4), probs)
    # the float32 fit agrees with SciPy's float64 fit of the same objective
    assert float(np.max(np.abs(q_fit - q_ref))) < 2e-3  # observed 4e-4
    # and both are near the truth: sampling error of a 20-parameter fit on 20 000 samples, on
    # average a few 1e-3, larger (~0.09) at the few extreme inputs where |log p| is large
    err = np.abs(q_fit - q_true)
    assert float(np.mean(err)) < 0.01  # observed 0.0057
    assert float(np.quantile(err, 0.99)) < 0.03


@pytest.mark.parametrize("kind", sorted(METHODS))
@pytest.mark.parametrize("key", [0, 1.5, "seed", KEY])
def test_deterministic_fits_take_no_key(kind, key):
    # these fits draw no random numbers: they take no key, and the adapter refuses one
    p, y = np.array([[0.2, 0.8], [0.6, 0.4]]), np.array([1, 0])
    with pytest.raises(TypeError, match="key"):
        METHODS[kind]().fit(p, y, key=key)
    with pytest.raises(TypeError, match="draws no random numbers"):
        SklearnRecalibrator(METHODS[kind](), key=key)


def test_fit_refuses_empty_data():
    with pytest.raises(ValueError, match="empty"):
        TemperatureScaling().fit(np.zeros((0, 2)), np.zeros(0, int))

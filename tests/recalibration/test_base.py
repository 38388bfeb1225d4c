"""The one shape of the classifier recalibrators (jcalib.recalibration.base): every method's
``fit`` and fitted map jit (``eqx.filter_jit`` on the bound method, or ``jax.jit`` of a closure),
vmap over a batch of datasets without retracing, and return pytrees of arrays; 200 bootstrap
refits of temperature scaling are one ``jax.vmap`` and equal the refits one at a time; the
scikit-learn adapter serves every method."""

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.recalibration import (
    AbstractFittedRecalibrator,
    AbstractRecalibrator,
    BetaCalibration,
    DirichletCalibration,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    SklearnRecalibrator,
    TemperatureScaling,
    VectorScaling,
)

# short fits keep the suite fast; the methods' own tests run the default step counts
METHODS = {
    "temperature": TemperatureScaling(),
    "vector": VectorScaling(n_steps=50),
    "matrix": MatrixScaling(n_steps=50),
    "dirichlet": DirichletCalibration(n_steps=50),
    "platt": PlattScaling(),
    "beta": BetaCalibration(n_steps=50),
    "histogram": HistogramBinning(),
    "histogram-quantile": HistogramBinning(n_bins=5, strategy="quantile"),
    "isotonic": IsotonicCalibration(),
}


def _data(seed, n=120, c=3, sharpen=2.5, dtype=jnp.float32):
    """Labels drawn from softmax(s), probabilities softmax(sharpen · s): over-confident."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, c)) * 1.5
    true = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    labels = (true.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    probs = np.exp(sharpen * s) / np.exp(sharpen * s).sum(axis=1, keepdims=True)
    return jnp.asarray(probs, dtype), jnp.asarray(labels, jnp.int32)


def _apply(fitted, probs):
    return fitted(probs)


# ---------------------------------------------------------------------------------------------
# A thousand refits are one vmap (here 200)


def test_200_bootstrap_temperature_fits_in_one_vmap_equal_the_fits_one_at_a_time(x64):
    p, y = _data(0, n=150, dtype=jnp.float64)
    p_test, _ = _data(1, n=60, dtype=jnp.float64)
    n, B = p.shape[0], 200
    counts = jax.random.multinomial(jax.random.key(0), n, jnp.full((n,), 1 / n), shape=(B, n)).astype(p.dtype)
    method = TemperatureScaling()
    fits = jax.jit(jax.vmap(lambda w: method.fit(p, y, sample_weight=w)))(counts)
    assert isinstance(fits, AbstractFittedRecalibrator) and fits.log_temperature.shape == (B,)
    one_at_a_time = jnp.stack([method.fit(p, y, sample_weight=w).log_temperature for w in counts])
    # 1e-8: float64 L-BFGS on the same objective, batched (vmap: every step runs) against alone
    # (steps after convergence idle); in float32 the flat optimum lets the two stop 2e-4 apart
    np.testing.assert_allclose(np.asarray(fits.log_temperature), np.asarray(one_at_a_time), atol=1e-8)
    assert float(jnp.std(fits.log_temperature)) > 1e-2  # the resamples do differ
    # the stacked fitted pytree maps the test probabilities with one vmap
    mapped = jax.vmap(lambda f: f(p_test))(fits)
    chex.assert_shape(mapped, (B, *p_test.shape))
    for i in (0, 77, B - 1):
        one = method.fit(p, y, sample_weight=counts[i])(p_test)
        np.testing.assert_allclose(np.asarray(mapped[i]), np.asarray(one), atol=1e-8)


# ---------------------------------------------------------------------------------------------
# Conformance of every method


@pytest.mark.parametrize("name", sorted(METHODS))
def test_fit_returns_a_pytree_of_arrays_that_applies_itself(name):
    method = METHODS[name]
    assert isinstance(method, AbstractRecalibrator) and not method.needs_key
    p, y = _data(2)
    fitted = method.fit(p, y)
    assert isinstance(fitted, AbstractFittedRecalibrator)
    leaves = jax.tree.leaves(fitted)
    assert leaves and all(isinstance(leaf, jax.Array) for leaf in leaves)
    q = fitted(p)
    chex.assert_shape(q, p.shape)
    assert q.dtype == p.dtype
    np.testing.assert_allclose(np.asarray(q.sum(axis=1)), 1.0, atol=1e-5)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_fit_and_fitted_map_jit(x64, name):
    method = METHODS[name]
    p, y = _data(3, dtype=jnp.float64)
    eager = method.fit(p, y)
    by_filter_jit = eqx.filter_jit(method.fit)(p, y)
    by_jit = jax.jit(lambda a, b: method.fit(a, b))(p, y)
    # 1e-8: the same float64 program compiled whole against op by op (fusion reorders sums,
    # and 50 L-BFGS steps of an unconverged fit carry that round-off along)
    chex.assert_trees_all_close(by_filter_jit, eager, atol=1e-8)
    chex.assert_trees_all_close(by_jit, eager, atol=1e-8)
    np.testing.assert_allclose(np.asarray(jax.jit(_apply)(eager, p)), np.asarray(eager(p)), atol=1e-12)
    np.testing.assert_allclose(np.asarray(eqx.filter_jit(eager)(p)), np.asarray(eager(p)), atol=1e-12)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_vmap_over_datasets_without_retrace(x64, name):
    method = METHODS[name]
    data = [_data(10 + i, dtype=jnp.float64) for i in range(3)]
    P = jnp.stack([d[0] for d in data])
    Y = jnp.stack([d[1] for d in data])
    chex.clear_trace_counter()  # the counter is keyed by code, shared across parametrisations

    @jax.jit
    @chex.assert_max_traces(n=1)
    def fit_all(P, Y):
        fits = jax.vmap(method.fit)(P, Y)
        return fits, jax.vmap(_apply)(fits, P)

    fits, out = fit_all(P, Y)
    fit_all(P[::-1], Y[::-1])  # new values, same shapes: no retrace
    chex.assert_shape(out, P.shape)
    assert all(leaf.shape[0] == 3 for leaf in jax.tree.leaves(fits))
    one = method.fit(P[1], Y[1])
    # 1e-6: batched float64 fits run every step, a single one idles once converged
    np.testing.assert_allclose(np.asarray(out[1]), np.asarray(one(P[1])), atol=1e-6)


def test_vmap_over_a_regularisation_grid_without_retrace(x64):
    p, y = _data(4, dtype=jnp.float64)
    lambdas = jnp.array([1e-3, 1e-2, 1e-1, 1.0])
    chex.clear_trace_counter()

    @eqx.filter_jit
    @chex.assert_max_traces(n=1)
    def fit(method):
        return method.fit(p, y)

    grid = jax.vmap(lambda lam: DirichletCalibration(reg_lambda=lam, n_steps=50).fit(p, y))(lambdas)
    assert grid.weights.shape == (4, 3, 3)
    a = fit(DirichletCalibration(reg_lambda=1e-2, n_steps=50))
    fit(DirichletCalibration(reg_lambda=0.5, reg_mu=0.2, n_steps=50))  # new values: no retrace
    chex.assert_trees_all_close(a, jax.tree.map(lambda x: x[1], grid), atol=1e-8)  # float64, as above


# ---------------------------------------------------------------------------------------------
# The scikit-learn adapter


@pytest.mark.parametrize("name", sorted(METHODS))
def test_sklearn_adapter_serves_every_method(name):
    method = METHODS[name]
    p, y = _data(5)
    cal = SklearnRecalibrator(method)
    with pytest.raises(ValueError, match="not fitted"):
        cal.predict_proba(p)
    assert cal.fit(p, y) is cal
    assert cal.n_classes_ == 3 and isinstance(cal.fitted_, AbstractFittedRecalibrator)
    want = method.fit(p, y)(p)
    np.testing.assert_allclose(np.asarray(cal.predict_proba(p)), np.asarray(want), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(cal.predict(p)), np.asarray(jnp.argmax(want, axis=1)))
    with pytest.raises(ValueError, match="3 columns"):
        cal.predict_proba(np.full((2, 4), 0.25))
    with pytest.raises(TypeError, match="draws no random numbers"):
        SklearnRecalibrator(method, key=jax.random.key(0))
    assert cal.get_params() == {"method": method, "key": None}


def test_sklearn_adapter_refuses_what_is_not_a_method():
    with pytest.raises(TypeError, match="AbstractRecalibrator"):
        SklearnRecalibrator("temperature")
    with pytest.raises(TypeError, match="AbstractRecalibrator"):
        SklearnRecalibrator(TemperatureScaling)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_sklearn_clone_and_params_round_trip(name):
    base = pytest.importorskip("sklearn.base")
    method = METHODS[name]
    p, y = _data(6)
    cal = SklearnRecalibrator(method).fit(p, y)
    twin = base.clone(cal)
    assert twin is not cal and twin.fitted_ is None  # a clone is unfitted
    assert type(twin.method) is type(method)
    chex.assert_trees_all_equal(twin.method, method)
    np.testing.assert_allclose(np.asarray(twin.fit(p, y).predict_proba(p)), np.asarray(cal.predict_proba(p)), atol=1e-6)
    other = METHODS["temperature"] if name != "temperature" else METHODS["vector"]
    assert cal.set_params(method=other) is cal and cal.get_params()["method"] is other


# ---------------------------------------------------------------------------------------------
# The tutorial's bootstrap, run as written (with 100 refits instead of 1,000)


def test_tutorial_bootstrap_interval_runs(capsys):
    pytest.importorskip("sklearn")
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/tutorials/recalibrate_classifier.md").read_text()
    section = page.split("## A thousand refits in one vmap", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "n_refits, n = 1000, len(y_cal)" in code
    exec(compile(code.replace("n_refits, n = 1000,", "n_refits, n = 100,"), "recalibrate_classifier.md", "exec"), {})
    out = capsys.readouterr().out
    ece, lo, hi = (float(v) for v in re.search(
        r"temperature scaling: ([\d.]+), 95% bootstrap interval \[([\d.]+), ([\d.]+)\]", out).groups())
    before = float(re.search(r"test ECE before: ([\d.]+)", out).group(1))
    # the numbers the page prints (1,000 refits): before 0.0673, after 0.0365 in [0.0322, 0.0542]
    assert before == pytest.approx(0.0673, abs=1e-4) and ece == pytest.approx(0.0365, abs=1e-4)
    # 100 refits draw other resamples: the interval moves, but stays around the same numbers
    assert lo < hi and lo == pytest.approx(0.0322, abs=0.01) and hi == pytest.approx(0.0542, abs=0.015)
    assert ece < before


def test_docstring_examples():
    import doctest

    from jcalib.recalibration import base

    assert doctest.testmod(base, raise_on_error=True).attempted > 0

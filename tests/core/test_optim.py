"""The shared optax-in-scan helper: minimises, resumes bit for bit, vmaps over a traced
learning rate without retracing, and runs under strict dtype promotion."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jcalib.core import optimise
from jcalib.core.optim import DEFAULT_UNROLL, default_unroll


def _loss(w):
    return jnp.sum((w - jnp.arange(3.0)) ** 2)


def test_minimises_under_strict_promotion():
    res = optimise(_loss, jnp.zeros(3), optax.adam(0.05), 400)
    # Adam at lr 0.05 reaches the quadratic's minimum to well below its step size
    np.testing.assert_allclose(np.asarray(res.params), np.arange(3.0), atol=2e-2)
    assert res.losses.shape == (400,) and float(res.losses[-1]) < float(res.losses[0])


def test_resume_equals_one_long_run():
    opt = optax.adam(0.05)
    full = optimise(_loss, jnp.zeros(3), opt, 50)
    half = optimise(_loss, jnp.zeros(3), opt, 20)
    rest = optimise(_loss, half.params, opt, 30, state=half.state)
    np.testing.assert_array_equal(np.asarray(full.params), np.asarray(rest.params))
    np.testing.assert_array_equal(np.asarray(full.losses[20:]), np.asarray(rest.losses))


def test_vmapped_learning_rates_one_trace():
    def final_loss(lr):
        return optimise(_loss, jnp.zeros(3), optax.adam(lr), 30).losses[-1]

    chex.clear_trace_counter()
    run = jax.jit(chex.assert_max_traces(final_loss, n=1))
    lrs = jnp.asarray([0.01, 0.1, 0.3])
    batched = jax.vmap(final_loss)(lrs)
    for lr, b in zip(lrs, batched):  # new learning-rate values: one trace in all
        # a vmapped and an unbatched program fuse float arithmetic differently (an ulp)
        np.testing.assert_allclose(float(run(lr)), float(b), rtol=1e-6)


def test_projection_and_bad_steps():
    res = optimise(_loss, jnp.zeros(3), optax.sgd(0.1), 100, project=lambda w: jnp.clip(w, 0.0, 1.0))
    np.testing.assert_allclose(np.asarray(res.params), [0.0, 1.0, 1.0], atol=1e-6)
    with pytest.raises(ValueError, match="n_steps"):
        optimise(_loss, jnp.zeros(3), optax.sgd(0.1), 2.5)


# ------------------------------------------------------------------------------------ unroll


def _bumpy(w):
    # not a quadratic: Adam's iterates depend on every step's arithmetic
    return jnp.sum((w - jnp.arange(3.0)) ** 2) + jnp.sum(jnp.sin(3.0 * w))


@pytest.mark.parametrize("unroll", [2, 3, 7, 64])  # 3 and 7 do not divide 50; 64 > n_steps
def test_unrolled_loop_equals_the_rolled_one(unroll):
    clip = lambda w: jnp.clip(w, -0.5, 1.5)  # noqa: E731
    rolled = optimise(_bumpy, jnp.zeros(3), optax.adam(0.05), 50, project=clip, unroll=1)
    half = optimise(_bumpy, jnp.zeros(3), optax.adam(0.05), 20, project=clip, unroll=unroll)
    rest = optimise(_bumpy, half.params, optax.adam(0.05), 30, state=half.state, project=clip, unroll=unroll)
    # the same steps in the same order; XLA fuses the unrolled copies of a step differently,
    # which moves a loss by an ulp (measured: 5e-7 absolute on values of order 1)
    np.testing.assert_allclose(np.asarray(rest.params), np.asarray(rolled.params), rtol=1e-6, atol=1e-6)
    losses = np.concatenate([np.asarray(half.losses), np.asarray(rest.losses)])
    np.testing.assert_allclose(losses, np.asarray(rolled.losses), rtol=1e-6, atol=1e-6)


def test_default_unroll_is_the_backends():
    assert default_unroll() == DEFAULT_UNROLL.get(jax.default_backend(), 1)
    assert default_unroll("cpu") == 1 and default_unroll("no-such-backend") == 1
    implicit = optimise(_bumpy, jnp.zeros(3), optax.adam(0.05), 20)
    explicit = optimise(_bumpy, jnp.zeros(3), optax.adam(0.05), 20, unroll=default_unroll())
    np.testing.assert_array_equal(np.asarray(implicit.params), np.asarray(explicit.params))


@pytest.mark.parametrize("bad", [0, -2, True, False, 2.0, "4", np.bool_(True)])
def test_bad_unroll_is_refused(bad):
    with pytest.raises(ValueError, match="unroll"):
        optimise(_loss, jnp.zeros(3), optax.sgd(0.1), 10, unroll=bad)


def test_numpy_integer_unroll_and_no_retrace_for_new_learning_rates():
    np.testing.assert_array_equal(
        np.asarray(optimise(_loss, jnp.zeros(3), optax.adam(0.1), 9, unroll=np.int64(4)).params),
        np.asarray(optimise(_loss, jnp.zeros(3), optax.adam(0.1), 9, unroll=4).params),
    )

    def final(lr):
        return optimise(_bumpy, jnp.zeros(3), optax.adam(lr), 30, unroll=4).losses[-1]

    chex.clear_trace_counter()
    run = jax.jit(chex.assert_max_traces(final, n=1))
    for lr in (0.01, 0.1, 0.3):  # same unroll, new traced learning rates: one trace in all
        run(jnp.asarray(lr))


def test_inputs_are_checked_and_numpy_integers_accepted():
    import jcalib
    from jcalib.core import optax_update

    res = optimise(lambda w: jnp.sum(w**2), jnp.ones(2), optax.sgd(0.1), np.int64(3))
    assert res.losses.shape == (3,)
    for params, match in ((jnp.array([1.0, np.nan]), "params contains NaN"), (np.array(["a"]), "params must hold real floating arrays")):
        with pytest.raises(ValueError, match=match):
            optimise(lambda w: jnp.sum(w**2), params, optax.sgd(0.1), 3)
    with pytest.raises(ValueError, match="n_steps=1000000000000 exceeds"):
        optimise(lambda w: jnp.sum(w**2), jnp.ones(2), optax.sgd(0.1), 10**12)
    with pytest.raises(ValueError, match="optimizer must be an optax GradientTransformation"):
        optimise(lambda w: jnp.sum(w**2), jnp.ones(2), "sgd", 3)
    opt = optax.sgd(0.1)
    with pytest.raises(ValueError, match="grads must have the structure and shapes of params"):
        optax_update(opt, jnp.ones((2, 1)), opt.init(jnp.ones(2)), jnp.ones(2))
    with pytest.raises(ValueError, match="grads contains NaN"):
        optax_update(opt, jnp.array([np.nan, 1.0]), opt.init(jnp.ones(2)), jnp.ones(2))
    with pytest.raises(ValueError, match="module must be an equinox Module"):
        jcalib.core.as_traced_module("x")


# ---- newton_minimise: the recalibrators' fits of one to three parameters -----------------------


def _logistic(seed, n=400):
    """A weighted logistic regression (slope, intercept) with an unused third parameter."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(1.5 * x - 0.3)))).astype(np.float64)
    w = rng.uniform(0.5, 1.5, n)

    def loss(theta):
        z = theta[0] * x + theta[1]
        return jnp.sum(w * (jax.nn.softplus(z) - y * z)) / np.sum(w)

    return loss, x, y, w


def test_newton_matches_scipy_on_a_logistic_regression(x64):
    """The optimum of a convex fit, against scipy's BFGS run to a tight tolerance; the unused
    third parameter (gradient and Hessian row 0) keeps its initial value."""
    import scipy.optimize

    from jcalib.core.optim import newton_minimise

    for seed in range(3):
        loss, *_ = _logistic(seed)
        got = np.asarray(jax.jit(lambda t: newton_minimise(loss, t, 50))(jnp.array([1.0, 0.0, 7.0])))
        want = scipy.optimize.minimize(lambda t: float(loss(jnp.asarray(t))), [1.0, 0.0],
                                       jac=lambda t: np.asarray(jax.grad(loss)(jnp.asarray([*t, 0.0])))[:2],
                                       method="BFGS", options={"gtol": 1e-12}).x
        np.testing.assert_allclose(got[:2], want, rtol=1e-7)  # float64: both at the optimum
        assert got[2] == 7.0


def test_newton_one_step_on_a_quadratic_and_nonconvex_start():
    """A quadratic is minimised by its first Newton step; a nonconvex start (negative curvature:
    the steepest-descent fallback) still reaches the minimum; a pytree keeps its structure."""
    from jcalib.core.optim import newton_minimise

    A = jnp.array([[3.0, 1.0], [1.0, 2.0]])
    quad = lambda p: 0.5 * p["v"] @ A @ p["v"] - p["v"] @ jnp.array([1.0, 1.0])  # noqa: E731
    got = newton_minimise(quad, {"v": jnp.zeros(2)}, 1)["v"]
    # float32: one solve of a damped (lambda = sqrt(eps)(1 + 3)) 2x2 system
    np.testing.assert_allclose(np.asarray(got), np.linalg.solve(np.asarray(A), [1.0, 1.0]), rtol=2e-3)
    double_well = lambda x: (x**2 - 1) ** 2 + 0.1 * x  # noqa: E731  (f'' < 0 near 0)
    x = float(newton_minimise(double_well, jnp.asarray(0.1), 50))
    # downhill from 0.1 lies the local minimum near +1: the root of 4x^3 - 4x + 0.1 there
    root = max(np.roots([4.0, 0.0, -4.0, 0.1]).real)
    assert abs(x - root) < 1e-4, (x, root)  # float32, |x| ~ 1


def test_newton_vmapped_fits_equal_single_fits_and_trace_once():
    """Fits of several weightings in one vmap (bootstrap refits) stop where each alone stops,
    and new weights reuse the program."""
    from jcalib.core.optim import newton_minimise

    loss0, x, y, _ = _logistic(4)
    x, y = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)

    def fit(w):
        def loss(theta):
            z = theta[0] * x + theta[1]
            return jnp.sum(w * (jax.nn.softplus(z) - y * z)) / jnp.sum(w)
        return newton_minimise(loss, jnp.array([1.0, 0.0]), 30)

    W = jax.random.poisson(jax.random.key(0), 1.0, (6, x.shape[0])).astype(jnp.float32)
    run = jax.jit(jax.vmap(chex.assert_max_traces(fit, n=1)))
    batch = np.asarray(run(W))
    run(W[::-1])
    for i in range(6):
        # float32: reductions batched under vmap reorder; near the optimum the steps follow g, H
        np.testing.assert_allclose(batch[i], np.asarray(jax.jit(fit)(W[i])), rtol=1e-5, atol=1e-6)


# ---- lbfgs_minimise: the affine recalibrators' fits ---------------------------------------------


def _multinomial(seed, n=300, d=3, C=4):
    """A weighted multinomial logistic regression, (C, d + 1) parameters."""
    rng = np.random.default_rng(seed)
    x = np.c_[rng.normal(size=(n, d)), np.ones(n)]
    y = rng.integers(0, C, n)
    w = rng.uniform(0.5, 1.5, n)

    def loss(theta):
        logits = jnp.asarray(x) @ theta.reshape(C, d + 1).T
        nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), jnp.asarray(y)[:, None], 1)[:, 0]
        return jnp.sum(w * nll) / np.sum(w) + 1e-2 * jnp.sum(theta**2)  # ridge: one optimum

    return loss, C * (d + 1)


def test_lbfgs_matches_scipy_on_a_multinomial_regression(x64):
    """The optimum of a strictly convex fit of 16 parameters, against scipy's L-BFGS-B run to a
    tight tolerance."""
    import scipy.optimize

    from jcalib.core.optim import lbfgs_minimise

    for seed in range(3):
        loss, k = _multinomial(seed)
        got = np.asarray(jax.jit(lambda t: lbfgs_minimise(loss, t, 200))(jnp.zeros(k)))
        want = scipy.optimize.minimize(lambda t: float(loss(jnp.asarray(t))), np.zeros(k),
                                       jac=lambda t: np.asarray(jax.grad(loss)(jnp.asarray(t))),
                                       method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0}).x
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)  # float64: both at the optimum


def test_lbfgs_reaches_rosenbrocks_minimum_and_idles():
    """A nonconvex, ill-conditioned valley (steps the line search must shorten, pairs whose
    curvature is skipped); once converged the remaining steps change nothing; a pytree keeps
    its structure."""
    from jcalib.core.optim import lbfgs_minimise

    rosen = lambda p: 100 * (p["b"] - p["a"] ** 2) ** 2 + (1 - p["a"]) ** 2  # noqa: E731
    start = {"a": jnp.asarray(-1.2), "b": jnp.asarray(1.0)}
    fit = jax.jit(lambda n: lbfgs_minimise(rosen, start, n), static_argnums=0)
    got = fit(300)
    np.testing.assert_allclose([float(got["a"]), float(got["b"])], [1.0, 1.0], atol=2e-3)  # float32 valley floor
    assert jax.tree.map(float, fit(600)) == jax.tree.map(float, got)  # idle after convergence


def test_lbfgs_traces_the_loss_once_and_vmapped_fits_equal_single_fits():
    """The loss appears once in the program (one evaluation per step); fits of several
    weightings in one vmap stop where each alone stops."""
    from jcalib.core.optim import lbfgs_minimise

    loss0, x, y, _ = _logistic(5)
    x, y = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    traces = []

    def fit(w):
        def loss(theta):
            traces.append(1)
            z = theta[0] * x + theta[1]
            return jnp.sum(w * (jax.nn.softplus(z) - y * z)) / jnp.sum(w)
        return lbfgs_minimise(loss, jnp.array([1.0, 0.0]), 60)

    W = jax.random.poisson(jax.random.key(1), 1.0, (5, x.shape[0])).astype(jnp.float32)
    batch = np.asarray(jax.jit(jax.vmap(fit))(W))
    assert len(traces) == 1
    for i in range(5):
        # float32: reductions batched under vmap reorder
        np.testing.assert_allclose(batch[i], np.asarray(jax.jit(fit)(W[i])), rtol=1e-4, atol=1e-5)

"""The shared optax-in-scan helper: minimises, resumes bit for bit, vmaps over a traced
learning rate without retracing, and runs under strict dtype promotion."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jcalib.core import optimise


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

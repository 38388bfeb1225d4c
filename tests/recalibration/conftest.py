"""Shared conformance check of the classifier recalibrators: bootstrap refits in one vmap."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import classifier_recalibration as ref


def _check_bootstrap_refits(method, kind: str, n_refits: int = 8, seed: int = 5):
    """``jax.jit(jax.vmap(...))`` of ``method.fit(p, y, sample_weight=w)(p_test)`` over
    Poisson bootstrap weights: traces once (and not again for new weights), keeps the shapes,
    and refit ``i`` of the batch equals a single fit with the same weights. The logistic
    model's scores keep every fit well-posed (Naive Bayes's separable classes send maximum
    likelihood to infinity, where float32 round-off decides where a fixed-step fit stops)."""
    _, (_, y_cal), _, p_cal, p_te = ref.classifier_split(kind, seed=seed, model="logistic")
    p_cal, y_cal, p_te = jnp.asarray(p_cal, jnp.float32), jnp.asarray(y_cal), jnp.asarray(p_te, jnp.float32)
    W = jax.random.poisson(jax.random.key(1), 1.0, (n_refits, len(y_cal))).astype(jnp.float32)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def refits(W):
        return jax.vmap(lambda w: method.fit(p_cal, y_cal, sample_weight=w)(p_te))(W)

    out = refits(W)
    refits(W * 1.0)
    chex.assert_shape(out, (n_refits, *p_te.shape))
    i = n_refits // 2
    one = method.fit(p_cal, y_cal, sample_weight=W[i])(p_te)
    # 1e-4: float32 fits, batched under vmap against one alone (reductions reorder)
    np.testing.assert_allclose(np.asarray(out[i]), np.asarray(one), atol=1e-4)


@pytest.fixture
def check_bootstrap_refits():
    return _check_bootstrap_refits

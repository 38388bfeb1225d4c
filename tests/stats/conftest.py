"""Replications for the null and power checks of the calibration tests.

Data calibrated by construction: forecasts p ~ U(0, 1) and outcomes y ~ Bernoulli(p). The
stated miscalibration: the same outcomes, forecast by p^1.5 (too low everywhere inside (0, 1)).
Replications are vmapped in batches under lax.map, so 1000 of them are one compiled call.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest


def _replicate(test, n, reps, *, miscalibrated=False, seed=0, batch=50):
    """p-values of ``test(key, probs, labels)`` over ``reps`` replications at sample size n."""

    def one(k):
        kp, ky, kt = jax.random.split(k, 3)
        p = jax.random.uniform(kp, (n,))
        y = (jax.random.uniform(ky, (n,)) < p).astype(jnp.int32)
        return test(kt, p**1.5 if miscalibrated else p, y)

    keys = jax.random.split(jax.random.key(seed), reps).reshape(-1, batch)
    return np.asarray(jax.lax.map(jax.vmap(one), keys)).reshape(-1)


@pytest.fixture
def replicate():
    return _replicate

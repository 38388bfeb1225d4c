"""Sample weights as an empirical measure: uniform weights made on the host (no program
compiled), given weights normalised to sum to one, in the graph as well."""

import jax
import jax.numpy as jnp
import numpy as np
from conformance import count_compilations

from jcalib._weights import normalised_weights


def test_uniform_weights_are_made_without_compiling():
    with count_compilations() as c:
        w = jax.block_until_ready(normalised_weights(None, 37, jnp.float32))
    assert c.n == 0
    assert w.dtype == jnp.float32 and w.shape == (37,)
    np.testing.assert_array_equal(np.asarray(w), np.asarray(jnp.full((37,), 1.0 / 37, jnp.float32)))
    traced = jax.jit(lambda: normalised_weights(None, 37, jnp.float32))()
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(w))


def test_given_weights_sum_to_one():
    sw = jnp.asarray([1.0, 3.0, 0.0, 4.0])
    for w in (normalised_weights(sw, 4, jnp.float32), jax.jit(normalised_weights, static_argnums=(1, 2))(sw, 4, jnp.float32)):
        np.testing.assert_allclose(np.asarray(w), [0.125, 0.375, 0.0, 0.5], rtol=1e-7)  # float32 rounding

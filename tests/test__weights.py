"""Sample weights as an empirical measure: uniform weights made on the host for concrete
forecasts (no program compiled), in the graph for traced ones (no constant of length n baked in),
given weights normalised to sum to one."""

import jax
import jax.numpy as jnp
import numpy as np
from conformance import count_compilations

from jcalib._weights import normalised_weights


def test_uniform_weights_on_the_host_for_concrete_forecasts_in_the_graph_for_traced_ones():
    probs = jnp.full((37, 3), 1 / 3, jnp.float32)
    with count_compilations() as c:
        w = jax.block_until_ready(normalised_weights(None, probs))
    assert c.n == 0
    assert w.dtype == jnp.float32 and w.shape == (37,)
    np.testing.assert_array_equal(np.asarray(w), np.asarray(jnp.full((37,), 1.0 / 37, jnp.float32)))
    closed = jax.make_jaxpr(lambda p: normalised_weights(None, p))(probs)
    assert not closed.consts  # a host array inside a trace would be a constant of the program
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda p: normalised_weights(None, p))(probs)), np.asarray(w))


def test_given_weights_sum_to_one():
    sw, probs = jnp.asarray([1.0, 3.0, 0.0, 4.0]), jnp.zeros((4, 2), jnp.float32)
    for w in (normalised_weights(sw, probs), jax.jit(normalised_weights)(sw, probs)):
        np.testing.assert_allclose(np.asarray(w), [0.125, 0.375, 0.0, 0.5], rtol=1e-7)  # float32 rounding

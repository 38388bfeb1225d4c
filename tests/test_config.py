"""The in-graph check switch: a Python or NumPy bool, anything else refused by name."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib import config, distributions


def test_checks_accepts_numpy_bools_and_restores_the_previous_setting():
    assert config.checks_enabled()
    with config.checks(np.bool_(False)):
        assert config.checks_enabled() is False
    assert config.checks_enabled() is True


@pytest.mark.parametrize("bad", [1, "yes", None, jnp.asarray(True)])
def test_checks_refuses_non_bools(bad):
    with pytest.raises(TypeError, match="enabled must be a bool"):
        config.set_checks(bad)


def test_switch_is_read_at_trace_time():
    """Masses that do not sum to 1 fail in the graph with checks on, and pass unchecked when the
    function was traced with them off (the documented hot-loop escape)."""
    edges = (0.0, 0.5, 1.0)
    bad = jnp.array([0.7, 0.7])
    with pytest.raises(Exception, match="probs must sum to 1"):
        jax.jit(lambda p: distributions.PiecewiseConstant(p, edges).mean())(bad).block_until_ready()
    with config.checks(False):
        f = jax.jit(lambda p: distributions.PiecewiseConstant(p, edges).mean())
        assert np.isfinite(float(f(bad)))

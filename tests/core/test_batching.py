"""core.batching: modules' Python numbers become traced arrays (one program for every value)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.core import as_traced_module
from jcalib.forecasters import Constant


def test_python_numbers_become_arrays_and_arrays_stay():
    m = as_traced_module(Constant(0.3))
    assert isinstance(m.value, jax.Array) and abs(float(m.value) - 0.3) < 1e-7  # float32 round-off
    tree = as_traced_module({"a": 2, "b": True, "c": jnp.ones(2)})
    assert isinstance(tree["a"], jax.Array) and tree["b"] is True  # bools stay flags
    np.testing.assert_array_equal(tree["c"], np.ones(2))


def test_one_compilation_for_every_value():
    traces = []

    @jax.jit
    def f(m):
        traces.append(1)
        return m.value * 2

    for p in (0.1, 0.2, 0.3):
        f(as_traced_module(Constant(p)))
    assert len(traces) == 1


@pytest.mark.parametrize("bad", ["forecaster", b"x"])
def test_a_string_is_named(bad):
    with pytest.raises(ValueError, match="module must be an equinox Module"):
        as_traced_module(bad)


def test_stacking_concrete_modules_compiles_nothing_and_keeps_weak_types():
    from conformance import count_compilations

    from jcalib.core.batching import stack_modules
    from jcalib.natures import Bernoulli

    with count_compilations() as c:
        stacked, n = stack_modules([Bernoulli(np.float32(0.2)), Bernoulli(jnp.float32(0.7))], "natures")
        jax.block_until_ready(stacked.prob)
    assert c.n == 0 and n == 2 and not stacked.prob.aval.weak_type
    np.testing.assert_array_equal(np.asarray(stacked.prob), np.float32([0.2, 0.7]))
    weak, _ = stack_modules([Bernoulli(0.2), Bernoulli(0.7)], "natures")  # Python numbers stay weakly typed
    assert weak.prob.aval.weak_type
    np.testing.assert_array_equal(np.asarray(weak.prob), np.float32([0.2, 0.7]))
    traced = jax.jit(lambda p: stack_modules([Bernoulli(p), Bernoulli(0.4)], "natures")[0].prob)(jnp.float32(0.1))
    np.testing.assert_allclose(np.asarray(traced), [0.1, 0.4])  # float32 of 0.1 and 0.4: within rtol 1e-7

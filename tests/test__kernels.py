"""The kernels' settings (``jcalib._kernels``): integer degrees from Python, NumPy and 0-d arrays."""

import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.metrics import MultinomialKernel


@pytest.mark.parametrize("degree", [2, np.int64(2), np.asarray(2), jnp.asarray(2)])
def test_multinomial_degree_is_a_python_int(degree):
    k = MultinomialKernel(degree)
    assert type(k.degree) is int and k.degree == 2
    v = jnp.asarray([[0.2, 0.8], [0.5, 0.5]])
    # the kernel sum_{i<=2} (v.v')^i on the diagonal: 1 + 0.68 + 0.68^2 for the first row
    np.testing.assert_allclose(float(k(v, v)[0, 0]), 1 + 0.68 + 0.68**2, rtol=1e-6)  # float32 rounding


@pytest.mark.parametrize("degree", [-1, 2.5, True, "2"])
def test_multinomial_degree_refuses_non_integers(degree):
    with pytest.raises(ValueError, match="degree"):
        MultinomialKernel(degree)


@pytest.mark.parametrize("b", [np.float32(0.5), np.asarray(0.5), np.int64(2)])
def test_bandwidth_takes_numpy_scalars_as_a_static_float(b):
    from jcalib._kernels import GaussianKernel

    k = GaussianKernel(b)
    assert type(k.bandwidth) is float and k.bandwidth == float(b)


@pytest.mark.parametrize("b", [0.0, -1.0, float("inf"), True, "0.5", np.array([0.5, 0.5])])
def test_bandwidth_refuses_what_is_not_a_positive_finite_number(b):
    from jcalib._kernels import GaussianKernel

    with pytest.raises(ValueError, match="bandwidth must be a positive finite number"):
        GaussianKernel(b)

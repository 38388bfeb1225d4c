"""The one float dtype helper."""

import jax
import jax.numpy as jnp
import numpy as np

from jcalib._dtypes import float_dtype


def test_float_dtype_default_and_widening():
    assert float_dtype() == jnp.float32
    assert float_dtype(jnp.int32(1), np.bool_(True)) == jnp.float32
    assert float_dtype(jnp.zeros(2, jnp.float16)) == jnp.float16  # a Python float is weakly typed
    with jax.enable_x64(True):
        assert float_dtype() == jnp.float64
        assert float_dtype(jnp.zeros(2, jnp.float32)) == jnp.float32  # computes in the input's dtype

"""The shared simplex projection (jcalib._simplex) against a plain-NumPy sort-based reference,
under both x64 settings, with the re-exported name and the decision recalibrator's use of it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.kernel import project_simplex as reference_projection

from jcalib._simplex import project_simplex
from jcalib.recalibration import kernel


def _rows(rng, n, c):
    # Rows of very different scales: supports from one coordinate to all of them.
    return rng.normal(size=(n, c)) * np.logspace(-3, 1, n)[:, None] + 1.0 / c


@pytest.mark.parametrize("shape", [(200, 1), (300, 2), (300, 10), (40, 1000)])
def test_projection_matches_numpy_reference_float64(x64, shape):
    x = _rows(np.random.default_rng(shape[1]), *shape)
    got = np.asarray(project_simplex(jnp.asarray(x)))
    np.testing.assert_allclose(got, reference_projection(x), atol=1e-12)


@pytest.mark.parametrize("shape", [(1000, 10), (100, 1000)])
def test_projection_float32_is_exact_to_1e6(shape):
    x = _rows(np.random.default_rng(7), *shape).astype(np.float32)
    got = project_simplex(jnp.asarray(x))
    assert got.dtype == jnp.float32
    # 1e-6: float32 round-off of θ, a sum of up to 1000 terms (measured ≤ 1.5e-7).
    np.testing.assert_allclose(np.asarray(got, np.float64), reference_projection(x), atol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.sum(got, axis=1)), 1.0, atol=1e-5)


def test_points_on_the_simplex_are_fixed_and_batch_axes_vmap(x64):
    p = jax.nn.softmax(jax.random.normal(jax.random.key(0), (3, 50, 6)), axis=-1)
    np.testing.assert_allclose(np.asarray(project_simplex(p)), np.asarray(p), atol=1e-14)
    batched = jax.jit(jax.vmap(project_simplex))(p + 0.3)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(project_simplex(p + 0.3)), atol=1e-14)


def test_one_projection_for_both_recalibrators():
    assert kernel.project_simplex is project_simplex

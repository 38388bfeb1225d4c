"""Input checks at the Python boundary raise clear ValueErrors."""

import numpy as np
import pytest

from jcalib import _validation as V


@pytest.mark.parametrize("bad", [1.5, -0.1, np.array([0.2, 1.2]), np.array([[0.1], [np.nan]])])
def test_binary_probs_out_of_range_or_nan(bad):
    with pytest.raises(ValueError):
        V.check_binary_probs(bad)


def test_binary_labels():
    assert V.check_binary_labels([0, 1, 1]).dtype == np.int32
    with pytest.raises(ValueError, match="0 or 1"):
        V.check_binary_labels([0, 2])
    with pytest.raises(ValueError, match="NaN"):
        V.check_binary_labels([0.0, np.nan])


def test_simplex_probs():
    V.check_simplex_probs(np.array([[0.2, 0.8], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="sum to 1"):
        V.check_simplex_probs(np.array([[0.2, 0.7]]))
    with pytest.raises(ValueError, match="non-negative"):
        V.check_simplex_probs(np.array([[-0.2, 1.2]]))
    with pytest.raises(ValueError, match="shape"):
        V.check_simplex_probs(np.array([0.2, 0.8]))


def test_class_labels_and_lengths():
    with pytest.raises(ValueError, match="lie in"):
        V.check_class_labels([0, 3], 3)
    with pytest.raises(ValueError, match="integer"):
        V.check_class_labels([0.5], 3)
    with pytest.raises(ValueError, match="mismatched"):
        V.check_same_length(a=np.zeros(3), b=np.zeros(4))
    with pytest.raises(ValueError, match="positive integer"):
        V.check_positive_int(0, "T")
    with pytest.raises(ValueError, match="non-negative"):
        V.check_weights(np.array([1.0, -1.0]), 2)


def test_checks_on_concrete_arrays_inside_a_trace():
    import jax
    import jax.numpy as jnp

    captured = jnp.asarray([[0.2, 0.8], [0.6, 0.4]])

    def body(_, i):
        # a concrete array captured by a traced body is checked on its values, not staged
        return None, V.check_simplex_probs(captured)[i, 0]

    _, out = jax.lax.scan(body, None, jnp.arange(2))
    np.testing.assert_allclose(out, [0.2, 0.6])


def test_multiclass_inputs_fill_weights_and_refuse_empty_or_zero_weight():
    v, y, w = V.check_multiclass_inputs(np.array([[0.3, 0.7], [0.6, 0.4]]), [1, 0])
    np.testing.assert_array_equal(w, [1.0, 1.0])
    assert y.dtype == np.int32 and w.dtype == v.dtype
    with pytest.raises(ValueError, match="empty"):
        V.check_multiclass_inputs(np.zeros((0, 2)), np.zeros(0, int))
    with pytest.raises(ValueError, match="sums to zero"):
        V.check_multiclass_inputs(np.array([[0.3, 0.7]]), [1], np.array([0.0]))


def test_grid_counts():
    m, c, o = V.check_grid_counts([3, 5, 2], [1, 2, 2], 2)
    assert m == 2 and c.shape == o.shape == (3,)
    with pytest.raises(ValueError, match="shape"):
        V.check_grid_counts([3, 5], [1, 2], 2)
    with pytest.raises(ValueError, match="ones"):
        V.check_grid_counts([3, 5, 2], [1, 6, 2], 2)
    with pytest.raises(ValueError, match="finite"):
        V.check_grid_counts([3.0, np.nan, 2.0], [1.0, 0.0, 2.0], 2)


def test_checks_of_concrete_arrays_inside_a_users_jit():
    # weights, outcomes and settings captured as concrete arrays inside someone else's trace are
    # checked in NumPy: nothing is staged into that trace (no TracerBoolConversionError)
    import jax
    import jax.numpy as jnp

    from jcalib import metrics

    p = jnp.asarray([0.2, 0.7, 0.9])
    y = jnp.asarray([0, 1, 1])
    w = jnp.asarray([1.0, 2.0, 1.0])
    assert float(jax.jit(lambda: metrics.ece(p, y, sample_weight=w))()) >= 0
    zero = jnp.zeros(3)
    with pytest.raises(ValueError, match="sums to zero"):
        jax.jit(lambda: metrics.ece(p, y, sample_weight=zero))()

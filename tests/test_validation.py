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


def test_integers_accept_numpy_and_reject_bools_and_floats():
    for ok in (3, np.int64(3), np.int32(3), np.uint8(3), np.array(3)):
        out = V.check_positive_int(ok, "n")
        assert out == 3 and type(out) is int
    for bad in (True, np.bool_(True), 3.0, np.float64(3.0), "3", None, np.array([3])):
        with pytest.raises(ValueError, match="n must be"):
            V.check_positive_int(bad, "n")
    with pytest.raises(ValueError, match="positive"):
        V.check_positive_int(np.int64(0), "n")
    with pytest.raises(ValueError, match=">= 0"):
        V.check_int(-1, "n", minimum=0)
    assert type(V.as_int(np.int64(4))) is int and V.as_int(2.5) == 2.5 and V.as_int(True) is True


def test_numpy_integer_hyperparameters_everywhere():
    import jax

    from jcalib.forecasters import ApproachabilityRecalibrator

    # np.int64 used to reach int.bit_length() in the oracle and crash
    f = ApproachabilityRecalibrator(np.int64(10), 0.1)
    assert type(f.n_bins) is int
    state = f.init(jax.random.key(0))
    f.predict(state, 0.5, jax.random.key(1))
    with pytest.raises(ValueError, match="n_bins"):
        ApproachabilityRecalibrator(10.0, 0.1)


def test_keys():
    import jax

    V.check_key(jax.random.key(0))
    V.check_key(jax.random.PRNGKey(0))
    for bad in (0, 1.5, None, np.uint32(3), np.zeros(2, np.uint32)):
        with pytest.raises(TypeError, match=r"key must be a JAX PRNG key, e.g. jax.random.key\(0\)"):
            V.check_key(bad)
    assert V.check_key(None, optional=True) is None


def test_grid_counts_past_int32_get_a_true_message():
    import jax

    big = np.array([2**31, 5, 7], np.int64)
    with jax.enable_x64(False), pytest.raises(ValueError, match="2147483648.*jax_enable_x64"):
        V.check_grid_counts(big, np.array([3, 2, 1]), 2)
    with jax.enable_x64(True):
        m, c, o = V.check_grid_counts(big, np.array([3, 2, 1]), 2)
        assert int(c[0]) == 2**31


def test_in_graph_checks_and_the_switch():
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import jcalib

    # an eqx.error_if failure: EquinoxRuntimeError under eqx.filter_jit, JaxRuntimeError under jax.jit
    GRAPH_ERRORS = (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError)

    def labels(y):
        return V.check_binary_labels(y)

    with pytest.raises(GRAPH_ERRORS, match="0 or 1"):
        jax.jit(labels)(jnp.array([0, 1, 2]))
    with pytest.raises(GRAPH_ERRORS, match=r"\[0, 3\)"):
        jax.jit(lambda y: V.check_class_labels(y, 3))(jnp.array([0, 3]))
    with pytest.raises(GRAPH_ERRORS, match="NaN"):
        jax.jit(lambda p: V.check_binary_probs(p))(jnp.array([0.5, jnp.nan]))
    with pytest.raises(GRAPH_ERRORS, match="non-negative"):
        jax.jit(lambda w: V.check_weights(w, 2))(jnp.array([1.0, -1.0]))
    assert jcalib.config.checks_enabled()
    with jcalib.config.checks(False):
        assert not jcalib.config.checks_enabled()
        # read at trace time: a function traced now carries no check
        out = jax.jit(lambda y: V.check_binary_labels(y))(jnp.array([0, 1, 2]))
        assert out.shape == (3,)
    assert jcalib.config.checks_enabled()
    jcalib.config.set_checks(False)
    try:
        assert not jcalib.config.checks_enabled()
    finally:
        jcalib.config.set_checks(True)
    with pytest.raises(TypeError, match="bool"):
        jcalib.config.set_checks(0)


def test_error_messages_show_a_few_values_not_the_array():
    # a wrong call with 10,000 values: one short line naming the argument, the shape, the count
    # of bad entries and at most the first three with their indices
    bad = np.full(10_000, 0.5)
    bad[[7, 42, 4000, 9000]] = 1.5
    with pytest.raises(ValueError) as e:
        V.check_binary_probs(bad)
    msg = str(e.value)
    assert len(msg) < 200 and msg.startswith("probs ") and "(10000,)" in msg, msg
    assert "4 bad entries" in msg and "[7]=1.5" in msg and "[4000]=1.5" in msg and "[9000]" not in msg, msg
    with pytest.raises(ValueError) as e:
        V.check_binary_labels(np.full(10_000, 2))
    assert len(str(e.value)) < 200 and "labels" in str(e.value) and "10000 bad entries" in str(e.value)
    # a scalar setting given an array (central_interval_coverage's level, say)
    from jcalib.metrics import central_interval_coverage

    with pytest.raises(ValueError) as e:
        central_interval_coverage(np.linspace(0, 1, 500), level=np.ones(10_000))
    assert len(str(e.value)) < 200 and str(e.value).startswith("level "), str(e.value)
    with pytest.raises(ValueError) as e:
        central_interval_coverage(np.linspace(0, 2, 10_000))
    assert len(str(e.value)) < 200 and "pit_values" in str(e.value), str(e.value)
    assert V.shown(0.5) == "0.5" and V.shown("kmeans") == "'kmeans'"
    assert V.shown(np.arange(10_000)).startswith("ndarray of shape (10000,) and dtype int64 [0, 1, 2, ...]")

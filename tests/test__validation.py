"""Input checks at the Python boundary raise clear ValueErrors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import count_compilations

import jcalib
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


# --- the declared layer -------------------------------------------------------------------------

def _graph_errors():
    import equinox as eqx
    import jax

    return (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError)


def _declared_ece():
    import jax.numpy as jnp

    @V.declare(probs=V.BinaryProbs(), labels=V.BinaryLabels(length_of="probs", dtype_of="probs"),
               sample_weight=V.Weights(length_of="probs", fill=True), n_bins=V.Int(1, V.MAX_BINS, bytes_per=8))
    def f(probs, labels, *, sample_weight=None, n_bins=15):
        """Doc."""
        return jnp.sum(sample_weight * (probs - labels)) + n_bins

    return f


def test_declare_checks_plain_calls_and_converts():
    import inspect

    f = _declared_ece()
    assert f.__doc__ == "Doc." and list(inspect.signature(f).parameters) == ["probs", "labels", "sample_weight", "n_bins"]
    assert set(V.declared(f)) == {"probs", "labels", "sample_weight", "n_bins"}
    # lists, NumPy arrays, NumPy scalars and 0-d arrays are accepted and converted
    assert float(f([0.5, 0.5], np.array([1, 0]), n_bins=np.int64(3))) == 3.0
    assert float(f([0.5, 0.5], [1, 0], n_bins=np.array(3))) == 3.0
    for kwargs, err, match in [
        (dict(probs=[0.5, np.nan], labels=[0, 1]), ValueError, "probs"),
        (dict(probs=[0.5, 1.2], labels=[0, 1]), ValueError, r"probs must lie in \[0, 1\]"),
        (dict(probs=[[0.5]], labels=[0]), ValueError, "probs must be 1-D"),
        (dict(probs=[], labels=[]), ValueError, "probs is empty"),
        (dict(probs=[0.5, 0.5], labels=[0, 2]), ValueError, "labels must be 0 or 1"),
        (dict(probs=[0.5, 0.5], labels=[0, 1, 1]), ValueError, r"labels must have the length of probs \(2\)"),
        (dict(probs=[0.5, 0.5], labels=[0, 1], sample_weight=[0.0, 0.0]), ValueError, "sums to zero"),
        (dict(probs=[0.5, 0.5], labels=[0, 1], sample_weight=[1.0, -1.0]), ValueError, "non-negative"),
        (dict(probs=[0.5, 0.5], labels=[0, 1], n_bins=2.0), ValueError, "n_bins must be an integer"),
        (dict(probs=[0.5, 0.5], labels=[0, 1], n_bins=True), ValueError, "not a bool"),
        (dict(probs=[0.5, 0.5], labels=[0, 1], n_bins="3"), ValueError, "n_bins must be an integer"),
        (dict(probs=[0.5, 0.5], labels=[0, 1], n_bins=0), ValueError, "positive"),
    ]:
        with pytest.raises(err, match=match):
            f(**kwargs)


def test_declare_size_bound_names_the_limit_and_the_memory():
    f = _declared_ece()
    with pytest.raises(ValueError, match=r"n_bins=1000000000000 exceeds 2\*\*24: its tables would need 8 TB"):
        f([0.5], [1], n_bins=10**12)


def test_declare_under_jit_checks_in_the_graph():
    import jax
    import jax.numpy as jnp

    import jcalib

    f = _declared_ece()
    p, y = jnp.array([0.2, 0.8]), jnp.array([0, 1])
    assert float(jax.jit(lambda p, y: f(p, y))(p, y)) == pytest.approx(15.0)
    with pytest.raises(_graph_errors(), match="sums to zero"):
        jax.jit(lambda p, y, w: f(p, y, sample_weight=w))(p, y, jnp.zeros(2))
    with pytest.raises(_graph_errors(), match="NaN"):
        jax.jit(lambda p: f(p, y))(jnp.array([0.2, jnp.nan]))
    with pytest.raises(_graph_errors(), match="0 or 1"):
        jax.jit(lambda y: f(p, y))(jnp.array([0, 2]))
    # shapes are checked at trace time
    with pytest.raises(ValueError, match="length of probs"):
        jax.jit(lambda y: f(p, y))(jnp.array([0, 1, 1]))
    # a NumPy array closed over by the traced function is checked in NumPy
    assert float(jax.jit(lambda y: f(np.array([0.2, 0.8]), y))(y)) == pytest.approx(15.0)
    with pytest.raises(ValueError, match="probs"):
        jax.jit(lambda y: f(np.array([0.2, 1.8]), y))(y)
    # a traced size is refused with a message that says it must be static
    with pytest.raises(TypeError, match=r"`n_bins` must be a static Python int, not a traced value"):
        jax.jit(lambda n: f(p, y, n_bins=n))(3)
    # the switch: traced with checks off, no in-graph check
    with jcalib.config.checks(False):
        out = jax.jit(lambda p, y, w: f(p, y, sample_weight=w))(p, y, jnp.zeros(2))
    assert float(out) == 15.0


def test_each_spec():
    import jax
    import jax.numpy as jnp

    # Real: NumPy scalars accepted; bools, NaN, out of range refused; traced values checked in the graph
    r = V.Real(0, 1, open_lo=True)
    assert r.check(np.float32(0.5), "eps", {}) == 0.5 and type(r.check(np.float32(0.5), "eps", {})) is float
    for bad in (0.0, np.inf, np.nan, True, "0.5", [0.5]):
        with pytest.raises(ValueError, match="eps"):
            r.check(bad, "eps", {})
    with pytest.raises(_graph_errors(), match="eps"):
        jax.jit(lambda e: r.check(e, "eps", {}))(2.0)
    assert V.Real(0, static=True).check(np.float64(2.0), "beta", {}) == 2.0
    with pytest.raises(TypeError, match="static"):
        jax.jit(lambda e: V.Real(0, static=True).check(e, "beta", {}))(2.0)
    # Bool, Choice, Key, Optional, Custom
    assert V.Bool().check(np.bool_(True), "flag", {}) is True
    with pytest.raises(ValueError, match="flag must be a bool"):
        V.Bool().check(1, "flag", {})
    with pytest.raises(ValueError, match="strategy must be one of 'uniform', 'quantile'"):
        V.Choice("uniform", "quantile").check("kmeans", "strategy", {})
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        V.Key().check(0, "key", {})
    assert V.Optional(V.Int(1)).check(None, "n", {}) is None
    assert V.Custom(lambda v, n, b: v * 2).check(2, "x", {}) == 4
    # multi-class: the labels' range comes from the probs' columns
    probs = V.SimplexProbs().check([[0.3, 0.7], [0.5, 0.5]], "probs", {})
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        V.ClassLabels().check([0, 2], "labels", {"probs": probs})
    with pytest.raises(ValueError, match="length of probs"):
        V.ClassLabels().check([0, 1, 1], "labels", {"probs": probs})
    # real and integer arrays
    with pytest.raises(ValueError, match=r"u must lie in \[0, 1\]"):
        V.RealArray(lo=0, hi=1).check([0.5, 1.2], "u", {})
    with pytest.raises(ValueError, match="u contains NaN"):
        V.RealArray(lo=0, hi=1).check([0.5, np.nan], "u", {})
    with pytest.raises(_graph_errors(), match="u must be finite"):
        jax.jit(lambda u: V.RealArray(lo=0, hi=1).check(u, "u", {}))(jnp.array([0.5, 1.2]))
    assert V.IntArray(lo=0).check([1.0, 2.0], "k", {}).dtype == jnp.int32
    with pytest.raises(ValueError, match="k must be integers"):
        V.IntArray(lo=0).check([1.5], "k", {})


def test_check_fields_and_converters_for_modules():
    import equinox as eqx

    class M(eqx.Module):
        n_bins: int = eqx.field(static=True, converter=V.Int(1, V.MAX_BINS).converter("n_bins"))
        beta: float = 1.0

        def __check_init__(self):
            V.check_fields(self, beta=V.Real(0, open_lo=True))

    assert type(M(np.int64(4)).n_bins) is int
    with pytest.raises(ValueError, match="n_bins=1000000000000 exceeds"):
        M(10**12)
    with pytest.raises(ValueError, match="beta"):
        M(4, np.inf)


def test_declare_refuses_a_declaration_of_an_unknown_argument():
    with pytest.raises(TypeError, match="does not take"):
        V.declare(x=V.Int())(lambda y: y)


def test_the_declared_layer_closes_the_reported_holes():
    import jax
    import jax.numpy as jnp

    from jcalib import metrics, recalibration, scoring

    p, y = np.linspace(0.1, 0.9, 9), np.arange(9) % 2
    with pytest.raises(_graph_errors(), match="sums to zero"):
        jax.jit(lambda p, y, w: metrics.ece(p, y, sample_weight=w))(p, y, jnp.zeros(9))
    for bad in (jnp.nan, 1.2):
        with pytest.raises(_graph_errors(), match="pit_values"):
            jax.jit(metrics.pit_histogram)(jnp.array([0.1, bad, 0.5]))
    with pytest.raises(ValueError, match="probs"):
        metrics.bin_index([np.nan, np.inf, -0.2, 1.3], 10)
    with pytest.raises(ValueError, match="sample_weight"):
        metrics.quantile_bin_index(p, 3, sample_weight=np.ones(8))
    with pytest.raises(ValueError, match="does not match probs"):
        scoring.Brier()(p[:, None], y)
    with pytest.raises(ValueError, match="eps"):
        metrics.log_loss(p, y, eps=np.inf)
    with pytest.raises(ValueError, match="beta"):
        recalibration.KernelCalibration(beta=np.inf)
    with pytest.raises(ValueError, match=r"n_bins=1000000000000 exceeds 2\*\*24"):
        metrics.binned_ece(p, y, n_bins=10**12)
    # NumPy inputs closed over by jit, NumPy scalar settings
    out = jax.jit(lambda w: recalibration.pav(np.array([0.3, 0.1, 0.5]), w))(jnp.ones(3))
    np.testing.assert_allclose(out, [0.2, 0.2, 0.5], rtol=1e-6)
    probs2 = np.array([[0.3, 0.7], [0.5, 0.5]])  # float64: the host-side precision check must skip traced labels
    assert np.isfinite(float(jax.jit(lambda yy: metrics.nll(probs2, yy))(jnp.array([0, 1]))))
    assert recalibration.TemperatureScaling(n_steps=np.int64(3)).n_steps == 3


def test_choice_takes_a_numpy_string_as_the_string_it_holds():
    from jcalib._validation import Choice

    assert Choice("fair", "standard").check(np.str_("fair"), "estimator", {}) == "fair"
    with pytest.raises(ValueError, match="estimator must be one of"):
        Choice("fair", "standard").check(np.str_("other"), "estimator", {})


def test_deferred_checks_record_their_own_level_and_leave_nested_traces_alone():
    """Inside ``deferred_checks`` a check staged at the same level of tracing becomes a flag (no
    host callback: the program stays cacheable), one inside a nested loop stays an
    ``eqx.error_if``; the flags say which check failed."""
    import jax
    import jax.numpy as jnp

    from jcalib._validation import deferred_checks, stage_check

    def f(x, nested: bool):
        with deferred_checks() as box:
            y = stage_check(x, x < 0, "x must be non-negative")
            if nested:
                y = jax.lax.fori_loop(0, 2, lambda i, v: stage_check(v, v > 10, "v too large"), y)
        return y, box.any(), tuple(box.messages)

    assert "callback" not in str(jax.make_jaxpr(lambda x: f(x, False)[:2])(1.0))
    assert "callback" in str(jax.make_jaxpr(lambda x: f(x, True)[:2])(1.0))  # the loop's check
    _, failed, messages = f(jnp.float32(-1.0), False)
    assert messages == ("x must be non-negative",) and bool(failed[0])
    assert not bool(jax.jit(lambda x: f(x, False)[1])(jnp.float32(2.0))[0])
    with pytest.raises(Exception, match="v too large"):
        jax.block_until_ready(jax.jit(lambda x: f(x, True)[0])(jnp.float32(20.0)))


def test_cast_converts_concrete_arrays_without_compiling():
    """``cast`` of a concrete array converts in NumPy (no program compiled); a tracer is cast in
    the graph; the same dtype passes the array through."""
    import jax.monitoring

    from jcalib._validation import cast

    compiled = []

    def listen(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(kw.get("fun_name", ""))

    x = jnp.arange(5, dtype=jnp.int32)
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        y = cast(x, jnp.float32)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    # only JAX's transfer of the NumPy result ("stage") may compile, no conversion
    assert y.dtype == jnp.float32 and not [c for c in compiled if "stage" not in c], compiled
    np.testing.assert_array_equal(np.asarray(y), np.arange(5.0))
    assert cast(x, jnp.int32) is x
    assert jax.jit(lambda a: cast(a, jnp.float32))(x).dtype == jnp.float32


def test_checked_at_the_boundary_traces_no_in_graph_check():
    """A core traced under checked_at_the_boundary stages no check of the public functions it
    calls (no host callback in its program), still runs their trace-time checks, and leaves the
    checks on for everything traced after it."""
    from jcalib.metrics import ece

    def core(p, y):
        return ece(p, y)

    p, y = jnp.linspace(0.05, 0.95, 20), (jnp.arange(20) % 2).astype(jnp.float32)
    assert "callback" in str(jax.make_jaxpr(core)(p, y))
    assert "callback" not in str(jax.make_jaxpr(V.checked_at_the_boundary(core))(p, y))
    with pytest.raises(ValueError):  # a shape is still checked when traced
        jax.make_jaxpr(V.checked_at_the_boundary(core))(p, y[:3])
    assert "callback" in str(jax.make_jaxpr(core)(p, y))


@pytest.mark.parametrize("value, dtype", [
    (0.3, None), (3, None), (True, None), (np.int32(4), None), (np.bool_(True), None), (np.float64(2.5), None),
    (np.arange(6.0).reshape(2, 3), None), (np.arange(5), None), (np.uint64(7), None), (np.ones(3, bool), None),
    (2, jnp.int32), (0.5, jnp.float32), (np.arange(4), jnp.float32), (np.ones(3, np.float32), jnp.int32),
])
def test_to_device_is_jnp_asarray_without_compiling(value, dtype):
    """The array ``jnp.asarray`` makes (dtype canonicalised, Python scalars weakly typed), but
    put on the device without the program per shape and dtype that ``jnp.asarray`` compiles."""
    jax.clear_caches()  # so that an earlier test's program for this shape is not reused
    with count_compilations() as c:
        out = jax.block_until_ready(V.to_device(value, dtype))
    assert c.n == 0
    ref = jnp.asarray(value, dtype)
    assert isinstance(out, jax.Array) and not isinstance(out, jax.core.Tracer)
    assert (out.dtype, out.shape, out.aval.weak_type) == (ref.dtype, ref.shape, ref.aval.weak_type)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
    inside = []
    jax.jit(lambda: inside.append(V.to_device(value, dtype)) or 0)()  # concrete inside a trace too
    assert not isinstance(inside[0], jax.core.Tracer)


def test_bucket_sizes_are_a_ladder_with_at_most_a_quarter_of_padding():
    sizes = [V.bucket_size(n) for n in range(1, 5000)]
    assert sizes[:256] == [256] * 256
    assert sorted(set(sizes))[:9] == [256, 320, 384, 448, 512, 640, 768, 896, 1024]
    assert all(a <= b for a, b in zip(sizes, sizes[1:]))  # monotone
    assert all(V.bucket_size(s) == s for s in set(sizes))  # a bucket's size is its own bucket
    assert max(s / n for n, s in zip(range(257, 5000), sizes[256:])) <= 1.25
    assert V.bucket_size(10**7 + 1) == 10_485_760  # 2^23 * 5/4


def test_pad_rows_appends_zero_rows_on_the_host_and_leaves_traced_arrays():
    a, b = np.arange(6.0, dtype=np.float32).reshape(3, 2), jnp.asarray([1, 0, 1], jnp.int32)
    with count_compilations() as c:
        pa, pb, none = V.pad_rows((a, b, None), 5)
    assert c.n == 0
    assert none is None and (pa.shape, pa.dtype, pb.shape, pb.dtype) == ((5, 2), jnp.float32, (5,), jnp.int32)
    np.testing.assert_array_equal(np.asarray(pa), np.concatenate([a, np.zeros((2, 2), np.float32)]))
    np.testing.assert_array_equal(np.asarray(pb), [1, 0, 1, 0, 0])
    assert V.pad_rows((b,), 3)[0] is b  # already that size
    # one traced array: all unchanged (they meet in the caller's program, whose shapes stay)
    shapes = []
    jax.jit(lambda x: shapes.append([v.shape for v in V.pad_rows((x, a), 5)]) or x)(b)
    assert shapes == [[(3,), (3, 2)]]


def test_a_replayed_trace_stages_the_same_program():
    """trace_once's replay stages what tracing the function in place stages, operation for
    operation (so the chunk's and the bootstrap's programs, their cache keys and checkpoint
    fingerprints do not depend on it), with the output shapes of the one trace."""
    def f(x, y):
        return jnp.sin(x) * y + jnp.arange(3.0), (x > 0).sum()

    args = (jnp.ones(3), jnp.float32(2))
    shape, replay = V.trace_once(f, *args)
    assert shape == jax.eval_shape(f, *args)
    assert str(jax.make_jaxpr(replay)(*args)) == str(jax.make_jaxpr(f)(*args))


def test_signature_keys_what_a_trace_depends_on():
    """Equal for arrays of one shape and dtype (values do not matter); different for another
    shape, dtype, weak type (``lax.full`` of a Python float is weak), structure, non-array value
    (``2.0`` is not ``2``) or extra, and under 64-bit types, another promotion rule or jcalib's
    checks off; None where a leaf cannot be part of a key."""
    a = {"x": jnp.zeros(3), "n": 2}
    sig = V.signature(a, "extra")
    assert sig == V.signature({"x": jnp.ones(3), "n": 2}, "extra") and hash(sig) == hash(V.signature(a, "extra"))
    assert V.signature({"x": np.ones(3, np.float32), "n": 2}, "extra") == sig  # a host array of the same shape and dtype
    others = [({"x": jnp.zeros(4), "n": 2}, "extra"), ({"x": jnp.zeros(3, jnp.int32), "n": 2}, "extra"),
              ({"x": jax.lax.full((3,), 0.0), "n": 2}, "extra"), ({"x": jnp.zeros(3), "n": 2.0}, "extra"),
              ({"x": jnp.zeros(3), "n": 3}, "extra"), ({"y": jnp.zeros(3), "n": 2}, "extra"), (a, "other")]
    assert len({V.signature(*o) for o in others} | {sig}) == len(others) + 1
    assert V.signature(jnp.float32(1.0)) != V.signature(jnp.asarray(1.0))  # strong against weak float32
    with jax.enable_x64(True):
        assert V.signature(a, "extra") != sig
    with jax.numpy_dtype_promotion("standard" if jax.config.jax_numpy_dtype_promotion == "strict" else "strict"):
        assert V.signature(a, "extra") != sig
    with jcalib.config.checks(False):
        assert V.signature(a, "extra") != sig
    assert V.signature({"x": jnp.zeros(3), "n": {2}}) is None  # a set is a leaf, and unhashable


def test_once_per_signature_makes_once_per_key_and_drops_the_oldest():
    """``make`` runs once per signature, again after its entry was dropped for a newer one, and
    at every call whose tree cannot be a key."""
    made, table = [], {}
    make = lambda: made.append(1) or len(made)  # noqa: E731
    assert V.once_per_signature(table, make, jnp.zeros(2)) == 1
    assert V.once_per_signature(table, make, jnp.ones(2)) == 1  # same signature: kept
    assert V.once_per_signature(table, make, jnp.zeros(3)) == 2
    assert V.once_per_signature(table, make, [jnp.zeros(2)], size=2) == 3  # a third key: the oldest dropped
    assert len(table) == 2 and V.once_per_signature(table, make, jnp.zeros(2), size=2) == 4
    assert V.once_per_signature(table, make, {"n": {1}}) == 5 and V.once_per_signature(table, make, {"n": {1}}) == 6

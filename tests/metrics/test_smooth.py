"""Tests of jcalib.metrics.smooth: smCE against a dense LP, smECE against the relplot package,
the relation 1/2 lower <= smCE <= 2 lower (Błasiok et al. 2023), conformance
(jit, vmap, no retrace, gradients), weights as multiplicities, and input validation."""

import doctest

import chex
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import relplot
from hypothesis import given, settings
from reference import binary_metrics as ref

from jcalib.metrics import lower_distance_to_calibration, smooth_calibration_error, smooth_ece
from jcalib.metrics import smooth as smooth_module


def _data(seed, n, kind="calibrated"):
    rng = np.random.default_rng(seed)
    p = {
        "calibrated": rng.random(n),
        "grid": rng.integers(0, 11, n) / 10,
        "extreme": rng.beta(0.2, 0.2, n),
        "over": rng.random(n),
        "constant": np.full(n, 0.3),
    }[kind]
    q = 0.5 + 0.55 * (p - 0.5) if kind == "over" else p
    y = (rng.random(n) < q).astype(np.int32)
    return p, y


# ---------------------------------------------------------------------------------------------
# smCE


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 25).flatmap(
        lambda n: st.tuples(
            st.one_of(
                st.lists(st.floats(0, 1), min_size=n, max_size=n),
                st.lists(st.integers(0, 6).map(lambda k: k / 6), min_size=n, max_size=n),
            ),
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
            st.lists(st.floats(0.0, 3.0), min_size=n, max_size=n),
        )
    )
)
def test_smce_matches_dense_lp(data):
    p, y, w = (np.array(a) for a in data)
    if w.sum() < 1e-3:
        w[0] = 1.0
    with jax.enable_x64(True):
        got = float(smooth_calibration_error(p, y, sample_weight=w))
    np.testing.assert_allclose(got, ref.smooth_calibration_error_lp(p, y, w), rtol=1e-7, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 20).map(lambda k: k / 20), min_size=n, max_size=n),
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
        )
    )
)
def test_smce_within_factor_two_of_lower_distance(data):
    """Błasiok, Gopalan, Hu, Nakkiran (2023): 1/2 lower dCE <= smCE <= 2 lower dCE, both for
    distributions. Here smCE is normalised and the lower distance is a sum over rounds, so the
    relation reads 1/2 lower <= T smCE <= 2 lower (the empirical distribution's lower dCE is
    lower / T)."""
    p, y = (np.array(a) for a in data)
    with jax.enable_x64(True):
        s = float(smooth_calibration_error(p, y)) * len(p)
    lo = lower_distance_to_calibration(p, y)
    assert 0.5 * lo <= s + 1e-7 and s <= 2 * lo + 1e-7


def test_smce_zero_iff_calibrated_groups(x64):
    p = np.array([0.25] * 4 + [0.5] * 2 + [1.0])
    y = np.array([1, 0, 0, 0, 1, 0, 1])
    assert float(smooth_calibration_error(p, y)) == pytest.approx(0.0, abs=1e-12)
    y2 = y.copy()
    y2[1] = 1  # one more success at 0.25: the witness eta = -1 near 0.25 detects it
    assert float(smooth_calibration_error(p, y2)) > 0.05


def test_smce_scales_to_thousands_in_float32():
    p, y = _data(1, 5000, "over")
    got = float(smooth_calibration_error(p, y))
    with jax.enable_x64(True):
        want = float(smooth_calibration_error(p, y))
    np.testing.assert_allclose(got, want, rtol=1e-4)  # float32 prefix sums over 5000 residuals


# ---------------------------------------------------------------------------------------------
# smECE against relplot


@pytest.mark.parametrize(
    "n, kind",
    [(50, "calibrated"), (400, "over"), (2000, "calibrated"), (300, "grid"), (1000, "extreme"), (200, "constant")],
)
def test_smooth_ece_matches_relplot(x64, n, kind):
    p, y = _data(n, n, kind)
    want, sigma = relplot.smECE(p, y, return_width=True)
    got, s = smooth_ece(p, y, return_bandwidth=True)
    np.testing.assert_allclose(float(s), sigma, rtol=0, atol=1e-15)  # same bisection steps
    np.testing.assert_allclose(float(got), want, rtol=1e-9)  # same arithmetic but FFT vs direct sums


def test_smooth_ece_matches_relplot_in_float32():
    p, y = _data(7, 3000, "over")
    # float32 FFT convolution against relplot's float64 direct one; the brief asks for 1e-3
    np.testing.assert_allclose(float(smooth_ece(p, y)), relplot.smECE(p, y), rtol=1e-3)


def test_smooth_ece_bandwidth_is_the_fixed_point(x64):
    """smECE_sigma = sigma at the chosen bandwidth, up to the bisection's resolution 2^-10."""
    p, y = _data(3, 1500, "over")
    v, s = smooth_ece(p, y, return_bandwidth=True)
    assert float(v) <= float(s) <= float(v) + 2.0**-10 + 1e-3 * float(v)
    assert float(relplot.smECE_sigma(p, y, float(s) - 2.0**-10)) > float(s) - 2.0**-10  # below: too small


# ---------------------------------------------------------------------------------------------
# smECE of count vectors (the bootstrap's fast path)


def _dithered(seed, n):
    """Labels that follow the forecasts as closely as integers can: smECE small, bandwidths
    down to 2/1024, so every grid of the bisection is reached."""
    p = np.sort(np.random.default_rng(seed).random(n))
    y = np.diff(np.floor(np.concatenate([[0.0], np.cumsum(p)]))).astype(np.int32)
    return p, y


@pytest.mark.parametrize("n", [300, 2000, 5000, 20000])
def test_counts_equal_repeated_rows(x64, n):
    from jcalib.metrics.smooth import _counts_in_layout, smooth_ece_count_tables, smooth_ece_of_counts

    p, y = _dithered(n, n)
    rng = np.random.default_rng(n)
    w = rng.uniform(0.5, 2.0, n)
    M = np.stack([np.ones(n, np.int64), rng.poisson(1.0, n), rng.poisson(4.0, n) * (rng.random(n) < 0.3)])
    tables = jax.jit(smooth_ece_count_tables)(jnp.asarray(p), jnp.asarray(p - y, float), jnp.asarray(w))
    V, S = jax.jit(smooth_ece_of_counts)(_counts_in_layout(jnp.asarray(M), tables), tables)
    order = np.asarray(jnp.argsort(jnp.asarray(p)))  # counts refer to the forecasts in sorted order
    for i, m in enumerate(M):
        want, sigma = smooth_ece(p[order], y[order], sample_weight=w[order] * m, return_bandwidth=True)
        assert float(S[i]) == float(sigma)
        np.testing.assert_allclose(float(V[i]), float(want), rtol=1e-12)  # periodic vs zero-padded FFTs
    # relplot on the repeated rows of M[1], unit weights (the whole batch: the same shapes, so
    # the same compiled program, which takes most of this test's time)
    tables = jax.jit(smooth_ece_count_tables)(jnp.asarray(p), jnp.asarray(p - y, float), jnp.ones(n))
    V, S = jax.jit(smooth_ece_of_counts)(_counts_in_layout(jnp.asarray(M), tables), tables)
    want, sigma = relplot.smECE(np.repeat(p[order], M[1]), np.repeat(y[order], M[1]), return_width=True)
    assert float(S[1]) == sigma
    np.testing.assert_allclose(float(V[1]), want, rtol=1e-9)  # as test_smooth_ece_matches_relplot


def test_counts_reach_every_grid(x64):
    """The dithered data of the test above do take the bisection below sigma = 11/1024."""
    sig = [float(smooth_ece(*_dithered(n, n), return_bandwidth=True)[1]) for n in (2000, 5000, 20000)]
    assert min(sig) <= 3 / 1024 and max(sig) < 11 / 1024


def test_counts_in_float32():
    from jcalib.metrics.smooth import _counts_in_layout, smooth_ece_count_tables, smooth_ece_of_counts

    p, y = _data(5, 3000, "over")
    p = p.astype(np.float32)
    m = np.random.default_rng(5).poisson(1.0, 3000)
    # jitted, as the bootstrap runs them (operation by operation they compiled some 240 programs)
    tables = jax.jit(smooth_ece_count_tables)(jnp.asarray(p), jnp.asarray(p - y, jnp.float32), jnp.ones(3000, jnp.float32))
    V, _ = jax.jit(smooth_ece_of_counts)(_counts_in_layout(jnp.asarray(m[None]), tables), tables)
    order = np.argsort(p, kind="stable")
    # float32 FFTs of different lengths against each other
    np.testing.assert_allclose(float(V[0]), float(smooth_ece(p[order], y[order], sample_weight=m.astype(np.float32))), rtol=1e-5)



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_slot_meets_few_cells_of_each_finer_grid(dtype, request):
    """The finer grids' masses take, per slot of the first grid, the columns of _FINE_J[c]
    cells: every row's cell must lie within them, even for forecasts on the grids' boundaries
    (where rounding decides the cell) and for slots of 32 rows spanning a whole cell."""
    from jcalib.metrics.smooth import _FINE_E, _FINE_J, smooth_ece_count_tables

    if dtype == np.float64:
        request.getfixturevalue("x64")
    rng = np.random.default_rng(6)
    parts = [rng.random(3000)] + [np.arange(E) / (E - 1) for E in (1001,) + _FINE_E]
    p = np.concatenate(parts + [np.repeat(np.arange(1000) / 1000, 40)]).astype(dtype)
    t = jax.jit(smooth_ece_count_tables)(jnp.asarray(p), jnp.asarray(p - 0.5, p.dtype), jnp.ones(p.size, p.dtype))
    local = np.asarray(t.fine.local)
    assert local.min() >= 0
    assert all(local[c].max() < J for c, J in enumerate(_FINE_J)), [int(local[c].max()) for c in range(len(_FINE_J))]

# ---------------------------------------------------------------------------------------------
# Conformance

FNS = {  # weights third, as the tests below pass them
    "smce": lambda p, y, w=None: smooth_calibration_error(p, y, sample_weight=w),
    "smece": lambda p, y, w=None: smooth_ece(p, y, sample_weight=w),
}


@pytest.mark.parametrize("name", sorted(FNS))
def test_jit_vmap_no_retrace(name):
    fn = FNS[name]
    data = [_data(s, 64, "over") for s in range(3)]
    P, Y = (jnp.asarray(np.stack(z)) for z in zip(*data))
    W = jnp.asarray(np.random.default_rng(0).uniform(0.5, 2.0, (3, 64)), jnp.float32)
    chex.clear_trace_counter()  # the counter is keyed by code: parametrised cases share it

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched(P, Y, W):
        return jax.vmap(fn)(P, Y, W)

    out = batched(P, Y, W)
    batched(P * 0.5, Y, W)  # new values, same shapes: no retrace
    want = [float(fn(P[i], Y[i], W[i])) for i in range(3)]
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5)  # float32, batched vs single


def test_sizes_of_one_bucket_share_a_program_and_keep_every_bit(x64):
    """Concrete inputs are padded with zero-weight rows to a size bucket (1025 to 1280 rows here):
    one compiled program for the three sizes, and the values of the unpadded program bit for bit."""
    data = []
    for i, n in enumerate((1030, 1100, 1280)):
        p, y = _data(i, n, "over" if i % 2 else "extreme")
        data.append((p, y, np.random.default_rng(i).uniform(0, 2, n) if i == 1 else None))
    before = smooth_module._smooth_ece._cache_size()
    got = [smooth_ece(p, y, sample_weight=w, return_bandwidth=True) for p, y, w in data]
    assert smooth_module._smooth_ece._cache_size() - before <= 1  # 0 if the bucket was compiled before
    for (p, y, w), g in zip(data, got):
        want = smooth_module._smooth_ece(*(jnp.asarray(a, float) for a in (p, y, np.ones(len(p)) if w is None else w)))
        assert [np.asarray(v).tobytes() for v in g] == [np.asarray(v).tobytes() for v in want]


@pytest.mark.parametrize("sigma", [0.3, 0.05, 0.004])
def test_density_and_residual_smoothed_together_as_apart(x64, sigma):
    """smooth ECE smooths its two series (weights, weighted residuals) as two columns of one
    pass: each column is bit for bit the series smoothed on its own."""
    p, y = _data(3, 700, "over")
    w = np.random.default_rng(3).uniform(0, 2, 700)
    E, _ = smooth_module._grid_sizes(jnp.asarray(sigma))
    Emax, _ = smooth_module._static_max(smooth_module._MIN_SIGMA)
    smooth = jax.jit(smooth_module._reflected_smooth, static_argnums=4)
    together = smooth(p, np.stack([w, w * (p - y)], axis=1), sigma, E, Emax)
    for col, v in enumerate((w, w * (p - y))):
        np.testing.assert_array_equal(np.asarray(together[:, col]), np.asarray(smooth(p, v, sigma, E, Emax)))


def test_smooth_ece_at_bandwidth_is_one_program_and_its_jitted_self():
    p, y = _data(4, 300, "over")
    lowered = []

    def listen(event, duration, **kw):
        if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            lowered.append(kw.get("fun_name"))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        plain = smooth_module.smooth_ece_at_bandwidth(p, p - y, 0.07)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert len(lowered) <= 1  # 0 when an earlier test compiled this shape
    jitted = jax.jit(smooth_module.smooth_ece_at_bandwidth)(p, p - y, 0.07)
    assert np.asarray(plain).tobytes() == np.asarray(jitted).tobytes()


@pytest.mark.parametrize("name", sorted(FNS))
def test_integer_weights_equal_repetition(x64, name):
    p, y = _data(11, 40, "grid")
    reps = np.random.default_rng(11).integers(0, 4, 40)
    reps[0] = 1
    got = float(FNS[name](p, y, reps.astype(float)))
    want = float(FNS[name](np.repeat(p, reps), np.repeat(y, reps)))
    np.testing.assert_allclose(got, want, rtol=1e-9)


@pytest.mark.parametrize("name", sorted(FNS))
def test_gradients_are_finite(name):
    p, y = _data(12, 100, "over")
    g = jax.grad(lambda q: FNS[name](q, y))(jnp.asarray(p, jnp.float32))
    assert bool(jnp.all(jnp.isfinite(g))) and bool(jnp.any(g != 0))


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("name", sorted(FNS))
@pytest.mark.parametrize(
    "p, y, w, msg",
    [
        ([0.2, np.nan], [0, 1], None, "NaN"),
        ([0.2, 1.2], [0, 1], None, r"\[0, 1\]"),
        ([0.2, 0.4], [0, 3], None, "0 or 1"),
        ([0.2, 0.4, 0.1], [0, 1], None, "mismatched"),
        ([], [], None, "empty"),
        ([0.2, 0.4], [0, 1], [1, -1], "non-negative"),
    ],
)
def test_bad_input_raises(name, p, y, w, msg):
    with pytest.raises(ValueError, match=msg):
        FNS[name](np.array(p, float), np.array(y, int), None if w is None else np.array(w, float))


def test_docstring_examples():
    assert doctest.testmod(smooth_module, raise_on_error=True).attempted > 0


def test_smooth_ece_at_bandwidth_refuses_empty_input():
    import jax.numpy as jnp
    import pytest

    from jcalib.metrics import smooth_ece_at_bandwidth

    with pytest.raises(ValueError, match="empty"):
        smooth_ece_at_bandwidth(jnp.zeros(0), jnp.zeros(0), 0.1)

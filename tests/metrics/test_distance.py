"""Tests of jcalib.metrics.distance: the exact DP against brute force over all set partitions,
Lemma 1 (CalDist <= ECE) and lower distance <= CalDist, the lower-distance LP against a dense
LP, the certified interval and its witness, the 2 sqrt(T) + 1 guarantee of Almost-One-Step-Ahead
(Arunachaleswaran et al. 2024, Theorem 1) on the upper end, grid summaries as atoms, and input
validation."""

import doctest
import time

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sps
import pytest
from hypothesis import given, settings
from reference import binary_metrics as ref
from reference.forecasters import aosa

from jcalib.metrics import (
    atoms_from_counts,
    distance_to_calibration,
    ece,
    lower_distance_to_calibration,
)
from jcalib.metrics import distance as distance_module

# rounding in prefix sums of a few dozen values
TOL = 1e-9


@st.composite
def sequences(draw, max_T=8, grid=None):
    T = draw(st.integers(1, max_T))
    if grid is None:
        grid = draw(st.sampled_from([2, 3, 4, 5, 10, 0]))  # 0: continuous forecasts
    if grid:
        p = np.array(draw(st.lists(st.integers(0, grid), min_size=T, max_size=T))) / grid
    else:
        p = np.array(draw(st.lists(st.floats(0, 1), min_size=T, max_size=T)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=T, max_size=T)))
    return p, y


def _check_witness(p, y, w, res):
    """The witness is perfectly calibrated, covers every round once, and costs res.upper."""
    wit = res.witness
    w = np.ones(len(p)) if w is None else np.asarray(w, float)
    np.testing.assert_allclose(np.bincount(wit.index, weights=wit.weight, minlength=len(p)), w, rtol=0, atol=1e-9)
    assert ref.ece(wit.q, y[wit.index], wit.weight) <= 1e-9 * max(1.0, w.sum())
    cost = float(np.sum(wit.weight * np.abs(p[wit.index] - wit.q)))
    np.testing.assert_allclose(cost, res.upper, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Exact DP and the ordering facts


@settings(max_examples=60, deadline=None)
@given(sequences(max_T=8))
def test_exact_dp_equals_brute_force_over_all_partitions(seq):
    p, y = seq
    res = distance_to_calibration(p, y, exact=True)
    assert res.exact and res.lower == res.upper == res.value
    np.testing.assert_allclose(res.value, ref.distance_brute_force(p, y), rtol=0, atol=TOL)
    _check_witness(p, y, None, res)


@settings(max_examples=30, deadline=None)
@given(sequences(max_T=30))
def test_ece_ge_distance_ge_lower_distance(seq):
    """CalDist <= ECE (Arunachaleswaran et al. 2024, Lemma 1) and the LP relaxation (lower <= CalDist)."""
    p, y = seq
    d = distance_to_calibration(p, y, exact=True).value
    lo = lower_distance_to_calibration(p, y)
    assert lo <= d + TOL
    assert d <= ref.ece(p, y) + TOL


@settings(max_examples=30, deadline=None)
@given(sequences(max_T=40))
def test_interval_contains_exact_value(seq):
    p, y = seq
    exact = distance_to_calibration(p, y, exact=True).value
    res = distance_to_calibration(p, y, exact=False)
    assert res.lower <= exact + TOL and exact <= res.upper + TOL
    _check_witness(p, y, None, res)
    if res.exact:  # the ends met: then they equal the exact value
        np.testing.assert_allclose(res.lower, exact, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(sequences(max_T=6), st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_integer_weights_are_repetitions(seq, reps):
    p, y = seq
    w = np.array(reps[: len(p)])
    if w.sum() == 0:
        w[0] = 1
    d_w = distance_to_calibration(p, y, sample_weight=w, exact=True)
    d_rep = distance_to_calibration(np.repeat(p, w), np.repeat(y, w), exact=True)
    np.testing.assert_allclose(d_w.value, d_rep.value, atol=TOL)
    _check_witness(p, y, w, d_w)
    np.testing.assert_allclose(
        lower_distance_to_calibration(p, y, sample_weight=w), lower_distance_to_calibration(np.repeat(p, w), np.repeat(y, w)), atol=1e-6
    )
    _check_witness(p, y, w, distance_to_calibration(p, y, sample_weight=w, exact=False))


def test_default_switches_from_exact_to_interval():
    rng = np.random.default_rng(0)
    p, y = rng.random(40), rng.integers(0, 2, 40)
    assert distance_to_calibration(p, y).exact  # small: the DP
    p, y = rng.random(400), rng.integers(0, 2, 400)
    res = distance_to_calibration(p, y)
    assert res.lower <= res.upper
    with pytest.raises(ValueError, match="exact=True needs"):
        distance_to_calibration(np.repeat(p, 2), np.repeat(y, 2), exact=True)
    if not res.exact:
        with pytest.raises(ValueError, match="not computed exactly"):
            res.value


def test_interval_ends_meet_on_calibrated_input():
    # Forecasts already perfectly calibrated: distance 0, certified by both ends.
    p = np.array([0.25] * 4 + [0.5] * 2 + [1.0])
    y = np.array([1, 0, 0, 0, 1, 0, 1])
    res = distance_to_calibration(p, y, exact=False)
    assert res.exact and res.lower == res.upper and abs(res.value) < 1e-9


# ---------------------------------------------------------------------------------------------
# Lower distance against the dense LP


@pytest.mark.parametrize("seed", range(6))
def test_lower_distance_matches_dense_lp(seed):
    """The dense LP of Arunachaleswaran et al. (2024) over a grid U (every k/q, q <= T, and every k/400) is the same
    LP with u restricted to U. Restricting can only raise the value, by at most W * spacing(U)
    (move each unit of mass to the nearer grid point on each side, keeping the ratio)."""
    rng = np.random.default_rng(seed)
    T = int(rng.integers(2, 8))
    p = rng.random(T) if seed % 2 else rng.integers(0, 5, T) / 4
    y = rng.integers(0, 2, T)
    w = rng.integers(1, 3, T).astype(float)
    U = ref.farey_grid(int(w.sum()), extra=400)
    got = lower_distance_to_calibration(p, y, sample_weight=w)
    dense = ref.lower_distance_lp(p, y, w, U)
    assert got <= dense + 1e-9
    assert dense - got <= w.sum() * np.max(np.diff(U)) + 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_lower_distance_warm_started_rounds_equal_a_fresh_solve(seed, monkeypatch):
    """Each cutting-plane round re-solves from the last basis; a fresh solve of the final LP, the
    interior-point start (used beyond ``_IPM_BREAKPOINTS`` distinct forecasts, forced here on
    300) and ``scipy.optimize.linprog`` (HiGHS built by SciPy) reach the same optimum."""
    from scipy.optimize import linprog

    from jcalib.metrics import distance as D

    rng = np.random.default_rng(seed)
    p, y = rng.random(300), (rng.random(300) < rng.random(300) ** 1.5).astype(int)
    (v1, w1), (v0, w0) = D._atoms(p, y, np.ones(300))
    rounds: list = []
    real = D._Solver.solve
    monkeypatch.setattr(D._Solver, "solve", lambda self: rounds.append(self) or real(self))
    value, lp_value, _, _ = D._lower_lp(v1, w1, v0, w0, 1e-7, 40)
    assert len(rounds) > 1  # the warm start was exercised
    lp = rounds[-1]._h.getLp()  # the last round's LP, solved from scratch by linprog
    A = sps.csc_matrix((lp.a_matrix_.value_, lp.a_matrix_.index_, lp.a_matrix_.start_), shape=(lp.num_row_, lp.num_col_))
    fresh = linprog(lp.col_cost_, A_ub=A, b_ub=lp.row_upper_, bounds=(None, None), method="highs-ds",
                    options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    np.testing.assert_allclose(lp_value, -fresh.fun, rtol=1e-9)  # solver tolerance 1e-10, values O(10)
    assert value <= lp_value and lp_value - value <= 1e-7 * lp_value
    monkeypatch.setattr(D, "_IPM_BREAKPOINTS", 10)
    ipm_value, ipm_lp, _, _ = D._lower_lp(v1, w1, v0, w0, 1e-7, 40)
    np.testing.assert_allclose([ipm_value, ipm_lp], [value, lp_value], rtol=1e-7)  # within the LP's rtol


def test_lower_distance_is_below_the_farey_grid_lp_and_can_be_strictly_below():
    """u ranges over all of [0, 1], so the value can lie strictly below the LP over every k/q
    (q <= T). One y=1 round at 0.2 and one y=0 round at 0.6: merging them at u = 1/2 costs 0.4
    and nothing does better."""
    np.testing.assert_allclose(lower_distance_to_calibration([0.2, 0.6], [1, 0]), 0.4, atol=1e-7)
    np.testing.assert_allclose(ref.lower_distance_lp([0.2, 0.6], [1, 0]), 0.4, atol=1e-9)
    # A case where splitting mass at a frequency outside {k/q : q <= T} pays off.
    p, y = np.array([0.9, 0.8, 0.0]), np.array([0, 1, 1])
    got = lower_distance_to_calibration(p, y)
    assert got < ref.lower_distance_lp(p, y) - 0.1  # 0.8429 against 1.0333 (= CalDist here)
    # ... and a fine grid recovers it (within the grid's spacing, see the test above)
    assert abs(ref.lower_distance_lp(p, y, U=ref.farey_grid(3, extra=1000)) - got) <= 3 / 1000
    assert got <= distance_to_calibration(p, y).value + TOL


# ---------------------------------------------------------------------------------------------
# Almost-One-Step-Ahead: the upper end stays below 2 sqrt(T) + 1 (Arunachaleswaran et al. 2024, Theorem 1)


def _aosa_atoms(T, seed, kind):
    rng = np.random.default_rng(seed)
    t = np.arange(T)
    q = {
        "bernoulli": np.full(T, 0.3),
        "wave": 0.5 + 0.45 * np.sin(t / (T / 15)),
        "drift": t / T,
        "alternating": (t % 2).astype(float),
    }[kind]
    y = (rng.random(T) < q).astype(np.int64)
    m = round(np.sqrt(T))
    counts, ones = ref.aosa_counts(y, m)
    return (np.asarray(a) for a in atoms_from_counts(counts, ones, m)), m


def test_aosa_helper_matches_reference_forecaster():
    y = (np.random.default_rng(1).random(500) < 0.4).astype(int)
    counts, ones = ref.aosa_counts(y, 12)
    p = aosa(y, 12)[0]
    np.testing.assert_array_equal(counts, np.bincount(np.round(p * 12).astype(int), minlength=13))
    np.testing.assert_array_equal(ones, np.bincount(np.round(p * 12).astype(int), weights=y, minlength=13))


@pytest.mark.parametrize("T", [100, 1000, 10_000])
@pytest.mark.parametrize("kind", ["bernoulli", "wave", "drift", "alternating"])
def test_aosa_upper_end_below_theorem_1_bound(T, kind):
    (p, y, w), m = _aosa_atoms(T, T, kind)
    res = distance_to_calibration(p, y, sample_weight=w, exact=False)
    bound = 2 * np.sqrt(T) + 1
    assert res.lower <= res.upper < bound
    assert res.upper <= float(ece(p, y, sample_weight=w)) + TOL * T  # Lemma 1: never worse than the ECE
    _check_witness(p, y, w, res)


@pytest.mark.slow
@pytest.mark.parametrize("T", [100_000, 1_000_000])
@pytest.mark.parametrize("kind", ["bernoulli", "wave", "drift"])
def test_aosa_upper_end_below_bound_large_T(T, kind):
    (p, y, w), m = _aosa_atoms(T, T, kind)
    t0 = time.perf_counter()
    lo = lower_distance_to_calibration(p, y, sample_weight=w)
    t1 = time.perf_counter()
    res = distance_to_calibration(p, y, sample_weight=w, exact=False)
    t2 = time.perf_counter()
    bound = 2 * np.sqrt(T) + 1
    print(f"T={T} {kind}: [{res.lower:.2f}, {res.upper:.2f}], upper/bound={res.upper / bound:.3f}, "
          f"lower {t1 - t0:.2f}s, distance {t2 - t1:.2f}s")
    assert res.lower <= res.upper < bound
    np.testing.assert_allclose(lo, res.lower, rtol=1e-6)
    assert t1 - t0 < 60 and t2 - t1 < 60  # the stated budget: a minute each at T = 10^6
    _check_witness(p, y, w, res)


# ---------------------------------------------------------------------------------------------
# Atoms from grid summaries


def test_atoms_from_counts_equal_expanded_rounds(x64):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    counts, ones = ref.aosa_counts(y, 9)
    p, lab, w = atoms_from_counts(counts, ones, 9)
    assert p.shape == lab.shape == w.shape == (2 * 10,)
    pe = np.repeat(np.asarray(p), np.asarray(w))
    ye = np.repeat(np.asarray(lab), np.asarray(w))
    assert len(pe) == 300
    np.testing.assert_allclose(float(ece(p, lab, sample_weight=w)), ref.ece(pe, ye), rtol=1e-12)
    d_atoms = distance_to_calibration(p, lab, sample_weight=w, exact=False)
    d_rounds = distance_to_calibration(pe, ye, exact=False)
    np.testing.assert_allclose(d_atoms.lower, d_rounds.lower, rtol=1e-6)


def test_atoms_from_counts_jit_vmap():
    C = jnp.array([[3, 5, 2], [1, 0, 4]])
    O = jnp.array([[1, 2, 2], [0, 0, 3]])
    p, y, w = jax.jit(jax.vmap(lambda c, o: atoms_from_counts(c, o, 2)))(C, O)
    assert p.shape == y.shape == w.shape == (2, 6)
    np.testing.assert_array_equal(np.asarray(w[1]), [0, 0, 3, 1, 0, 1])
    assert w.dtype == C.dtype  # counts stay exact integers


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("fn", [distance_to_calibration, lower_distance_to_calibration])
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
def test_bad_input_raises(fn, p, y, w, msg):
    with pytest.raises(ValueError, match=msg):
        fn(np.array(p, float), np.array(y, int), sample_weight=None if w is None else np.array(w, float))


def test_distance_needs_integer_weights_and_host_arrays():
    with pytest.raises(ValueError, match="integer"):
        distance_to_calibration(np.array([0.2, 0.4]), np.array([0, 1]), sample_weight=np.array([1.5, 1.0]))
    with pytest.raises(ValueError, match="host"):
        jax.jit(lambda p, y: lower_distance_to_calibration(p, y))(jnp.array([0.2]), jnp.array([1]))
    with pytest.raises(ValueError, match="ones"):
        atoms_from_counts(np.array([1, 1]), np.array([2, 0]), 1)


def test_docstring_examples():
    assert doctest.testmod(distance_module, raise_on_error=True).attempted > 0


@pytest.mark.parametrize("seed", range(4))
def test_rounded_interval_contains_exact_value(seed):
    rng = np.random.default_rng(seed)
    T = 60
    p = rng.random(T)
    y = (rng.random(T) < p).astype(np.int32)
    exact = distance_to_calibration(p, y, exact=True).value
    for G in (5, 20, 100):
        d = distance_to_calibration(p, y, n_bins=G)
        # the triangle inequality widens by delta <= T/(2G); 1e-9 absorbs float sums
        assert d.lower - 1e-9 <= exact <= d.upper + 1e-9
        assert d.lower >= distance_to_calibration(np.round(p * G) / G, y).lower - T / (2 * G) - 1e-9
        wit = d.witness
        np.testing.assert_allclose(d.upper, np.sum(wit.weight * np.abs(p[wit.index] - wit.q)), rtol=1e-12)
        assert ece(wit.q, y[wit.index], sample_weight=wit.weight) < 1e-6  # the witness is calibrated


def test_rounding_on_grid_data_changes_nothing():
    p = np.array([0.2, 0.2, 0.9, 0.4, 0.6])
    y = np.array([0, 1, 1, 0, 1])
    a, b = distance_to_calibration(p, y), distance_to_calibration(p, y, n_bins=10)
    assert b.exact and a.value == pytest.approx(b.value)


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_dps_equal_point_by_point_loops(seed):
    """The exact, staircase and layered DPs (a diagonal, a block of atoms, a block of layers per
    NumPy step; tabulated group costs) return the loops' values and paths bit for bit, for any
    step size and with or without the table (ties go to the same candidate)."""
    from reference import distance_dp

    rng = np.random.default_rng(seed)
    T = int(rng.integers(20, 90))
    p = rng.integers(0, 8, T) / 7 if seed % 2 else np.round(rng.random(T), 2)
    y = (rng.random(T) < p).astype(int)
    w = rng.integers(1, 3, T).astype(float)
    one = distance_module._Side(p[y == 1], w[y == 1])
    zero = distance_module._Side(p[y == 0], w[y == 0])
    c, a = np.arange(5.0)[:, None], p[None, :5]
    np.testing.assert_array_equal(one.P(c, a), distance_dp.side_cost(one, c, a))

    def same(a, b):
        assert a[0] == b[0]
        np.testing.assert_array_equal(a[1], b[1])

    want = distance_dp.exact_path(one, zero)
    for block, table in ((distance_module._EXACT_BLOCK, distance_module._TABLE), (97, distance_module._TABLE), (1, 0)):
        same(distance_module._exact_path(one, zero, block=block, table=table), want)
    for span in (3, 512):
        want = distance_dp.staircase_path(one, zero, span)
        for block in (distance_module._BLOCK, 5, 1):
            same(distance_module._staircase_path(one, zero, span, block=block), want)
    guide = want[1]
    want = distance_dp.layered_path(one, zero, guide)
    for block in (distance_module._BLOCK, 200, 1):
        same(distance_module._layered_path(one, zero, guide, block=block), want)


def test_lower_distance_settings_are_validated():
    p, y = np.array([0.2, 0.7, 0.9]), np.array([0, 1, 1])
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_iter"):
            lower_distance_to_calibration(p, y, max_iter=bad)  # max_iter=0 used to raise AttributeError
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="rtol"):
            lower_distance_to_calibration(p, y, rtol=bad)
    assert lower_distance_to_calibration(p, y, max_iter=np.int64(5)) >= 0


def test_grid_counts_of_mixed_dtypes_and_traced_bad_counts():
    """Integer counts with fractional (weighted) ones take the float dtype, also under strict
    promotion; traced counts with ones > counts or inf fail in the graph."""
    from jcalib.metrics import atoms_from_counts, ece_from_counts

    c, o = np.array([3, 2, 1, 4, 5]), np.array([0.0, 1.0, 0.0, 2.0, 4.5])
    _, _, w = atoms_from_counts(c, o, 4)
    np.testing.assert_allclose(np.asarray(w), [0.0, 1.0, 0.0, 2.0, 4.5, 3.0, 1.0, 1.0, 2.0, 0.5])
    f = jax.jit(lambda c, o: ece_from_counts(c, o, 4))
    assert np.isfinite(float(f(c, o)))
    for bad in (np.array([0.0, 1.0, 0.0, 2.0, np.inf]), np.array([0.0, 3.0, 0.0, 2.0, 4.0])):
        with pytest.raises(Exception, match="ones"):
            f(c, bad).block_until_ready()

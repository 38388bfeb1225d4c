"""Tests for weighted multi-class calibration errors (Gopalan et al. 2024, §2, Definitions 2.2–2.6,
6.5, 7.7, Lemma 2.7, Corollary 6.6)."""

import subprocess
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.weighted import (
    full_smooth_dense,
    lipschitz_lp_dense,
    low_degree_bruteforce,
    projected_smooth_two_classes,
    sigmoid_grid_two_classes,
    subset_smooth_bruteforce,
    weighted_ce_loop,
)

from jcalib.metrics import (
    MultinomialKernel,
    PartitionSearch,
    SigmoidSearch,
    binned_ece,
    classwise_ece,
    confidence_ece,
    projected_smooth_calibration_error,
    subset_smooth_calibration_error,
    kernel_audit,
    top_label_ece,
)
from jcalib.metrics.decision import decision_calibration_error
from jcalib.metrics.weighted import (
    _sigmoid_search,
    full_smooth_calibration_error,
    lipschitz_correlation,
    low_degree_calibration_error,
    max_classwise_calibration_error,
    sigmoid_calibration_error,
    two_action_decision_calibration_error,
    weighted_calibration_error,
)

K0 = jax.random.key(0)


def _data(seed, n, k, eps=0.0, conc=1.0):
    """v ~ Dirichlet; labels from (1−ε)v + ε e_argmax(v) (ε = 0: perfectly calibrated)."""
    rng = np.random.default_rng(seed)
    v = rng.dirichlet(np.full(k, conc), size=n)
    q = (1 - eps) * v + eps * np.eye(k)[np.argmax(v, 1)]
    y = np.minimum((rng.random((n, 1)) > np.cumsum(q, 1)).sum(1), k - 1)
    return v, y


# ---------------------------------------------------------------------------------------------
# Generic finite families (Definition 2.2)


def test_generic_matches_loop_reference(x64):
    rng = np.random.default_rng(0)
    v, y = _data(0, 30, 3, eps=0.3)
    W = rng.uniform(-1, 1, size=(5, 30, 3))
    sw = rng.uniform(0.1, 2, size=30)
    for weights in (W, W[2]):
        for sample_weight in (None, sw):
            got = float(weighted_calibration_error(v, y, weights, sample_weight=sample_weight))
            assert got == pytest.approx(weighted_ce_loop(v, y, weights, sample_weight), rel=1e-12)
    res = weighted_calibration_error(v, y, W, return_witness=True)
    idx, sign = res.witness
    assert float(res.value) == pytest.approx(weighted_ce_loop(v, y, W[int(idx)]), rel=1e-12)
    assert float(jnp.sum(res.per_class)) == pytest.approx(float(res.value), rel=1e-12)
    assert float(sign) in (-1.0, 1.0)


def test_kernel_witness_is_an_accepted_weight_function():
    """A callable family: the audit's witness has correlation audit.value (Algorithm 2)."""
    v, y = _data(1, 200, 4, eps=0.4)
    audit = kernel_audit(v, y, MultinomialKernel(2))
    got = float(weighted_calibration_error(v, y, audit.witness))
    assert got == pytest.approx(float(audit.value), rel=1e-4)  # float32 Gram products


# ---------------------------------------------------------------------------------------------
# Class-wise, confidence, top-label (§2): one binning, used consistently


def _binned_family_witness(v, y, key_fn, n_bins):
    """The optimal member of a binned family: sign of the residual in each cell, placed on the
    coordinate the family scores (the best φ for a weighted-calibration sup,
    Gopalan et al. 2024, §2)."""
    n, k = v.shape
    cells, coord = key_fn(v)
    z = np.eye(k)[y] - v
    res = z[np.arange(n), coord]
    W = np.zeros((n, k))
    for c in np.unique(cells, axis=0):
        sel = np.all(cells == c, axis=1)
        W[np.where(sel)[0], coord[sel]] = np.sign(res[sel].sum())
    return W


def _uniform_bin(p, n_bins):
    return np.minimum(np.floor(p * n_bins), n_bins - 1).astype(int)


def test_confidence_and_top_label_families_equal_the_ece_module(x64):
    v, y = _data(2, 400, 4, eps=0.3)
    nb = 10
    top, conf = np.argmax(v, 1), np.max(v, 1)
    w_conf = _binned_family_witness(v, y, lambda v: (_uniform_bin(conf, nb)[:, None], top), nb)
    w_tl = _binned_family_witness(v, y, lambda v: (np.stack([_uniform_bin(conf, nb), top], 1), top), nb)
    assert float(weighted_calibration_error(v, y, w_conf)) == pytest.approx(float(confidence_ece(v, y, n_bins=nb)), rel=1e-10)
    assert float(weighted_calibration_error(v, y, w_tl)) == pytest.approx(float(top_label_ece(v, y, n_bins=nb)), rel=1e-10)


def test_classwise_family_is_max_of_per_class_eces(x64):
    v, y = _data(3, 500, 5, eps=0.4)
    res = max_classwise_calibration_error(v, y, n_bins=10, return_witness=True)
    per = np.array([float(binned_ece(v[:, ell], (y == ell).astype(int), n_bins=10)) for ell in range(5)])
    np.testing.assert_allclose(np.asarray(res.per_class), per, rtol=1e-12)
    # classwise_ece (Kull et al.) is the mean of the same per-class terms
    assert float(classwise_ece(v, y, n_bins=10)) == pytest.approx(per.mean(), rel=1e-12)
    assert float(res.value) == pytest.approx(per.max()) and int(res.witness) == int(per.argmax())
    # the family member φ(v_ℓ)e_ℓ with φ = bin sign realises the value
    ell = int(per.argmax())
    w = _binned_family_witness(v, y, lambda v: (_uniform_bin(v[:, ell], 10)[:, None], np.full(len(v), ell)), 10)
    assert float(weighted_calibration_error(v, y, w)) == pytest.approx(per.max(), rel=1e-10)


# ---------------------------------------------------------------------------------------------
# Two-action decision calibration (Definition 2.3)


def test_two_action_decision_matches_definition_2_3(x64):
    v, y = _data(4, 300, 4, eps=0.5)
    key = jax.random.key(3)
    res = two_action_decision_calibration_error(v, y, key=key, search=PartitionSearch(n_steps=60, n_restarts=4))
    same = decision_calibration_error(v, y, n_actions=2, key=key, search=PartitionSearch(n_steps=60, n_restarts=4))
    assert float(res.value) == float(same.value)
    # Def. 2.3 evaluated directly at the half-space a = w1 − w2, b = 0 (normalised means)
    a = np.asarray(res.witness[0] - res.witness[1])
    z = np.eye(4)[y] - v
    above = (v @ a > 0)[:, None]
    direct = np.linalg.norm((z * above).mean(0)) + np.linalg.norm((z * ~above).mean(0))
    assert float(res.value) == pytest.approx(direct, rel=1e-9)


# ---------------------------------------------------------------------------------------------
# Smooth families: the exact one-dimensional LP, subsets, projections, full smooth


def test_lipschitz_lp_matches_dense_reference():
    rng = np.random.default_rng(5)
    t = np.round(rng.random(25), 1)  # ties on purpose
    r = rng.normal(size=25) / 25
    for lip in (1.0, 2.0, 0.3):
        val, u, phi = lipschitz_correlation(t, r, lip)
        assert val == pytest.approx(lipschitz_lp_dense(t, r, lip), abs=1e-9)
        assert np.all(np.abs(phi) <= 1 + 1e-9) and np.all(np.abs(np.diff(phi)) <= lip * np.diff(u) + 1e-9)
        assert float(np.interp(t, u, phi) @ r) == pytest.approx(val, abs=1e-9)


def test_subset_smooth_matches_bruteforce():
    v, y = _data(6, 30, 4, eps=0.5)
    for m in (1, 2, 4):
        got = float(subset_smooth_calibration_error(v, y, m))
        assert got == pytest.approx(subset_smooth_bruteforce(v, y, m), abs=1e-6)  # float32 inputs
    res = subset_smooth_calibration_error(v, y, 2, return_witness=True)
    mask, u, phi = res.witness
    assert 1 <= mask.sum() <= 2 and float(jnp.sum(res.per_class)) == pytest.approx(float(res.value), abs=1e-6)
    # a candidate list gives a lower bound
    assert float(subset_smooth_calibration_error(v, y, subsets=[0, 1])) <= float(res.value) + 1e-9


def test_subset_smooth_agrees_with_the_host_lp():
    """smCE_T via the binary smooth calibration error (DP in JAX) equals the HiGHS LP on
    t = ⟨1_T, v⟩, r = ⟨1_T, y − v⟩/n (two independent exact solvers), with sample weights."""
    v, y = _data(7, 300, 4, eps=0.5)
    sw = np.random.default_rng(7).uniform(0.5, 2, 300)
    T = np.array([True, True, False, False])
    got = float(subset_smooth_calibration_error(v, y, subsets=T[None], sample_weight=sw))
    z = np.eye(4)[y] - v
    lp = lipschitz_correlation(v[:, T].sum(1), sw * z[:, T].sum(1) / sw.sum())[0]
    assert got == pytest.approx(lp, abs=1e-5)  # float32 DP


def test_projected_smooth_exact_for_two_classes():
    v, y = _data(8, 25, 2, eps=0.6)
    for m in (1.0, 2.0):
        got = float(projected_smooth_calibration_error(v, y, m))
        assert got == pytest.approx(projected_smooth_two_classes(v, y, m), abs=1e-6) if m >= 2 else got <= projected_smooth_two_classes(v, y, m) + 1e-9


def test_full_smooth_matches_dense_reference():
    v, y = _data(9, 20, 3, eps=0.5)
    assert float(full_smooth_calibration_error(v, y)) == pytest.approx(full_smooth_dense(v, y), abs=1e-6)


@pytest.mark.parametrize("seed,k,eps", [(10, 3, 0.5), (11, 4, 0.3), (12, 3, 0.0)])
def test_lemma_2_7_chain(seed, k, eps):
    """ssCE_m ≤ psCE_m ≤ fsCE (Lemma 2.7), on examples where all three are computable; the
    projected value is a lower bound, so ssCE ≤ it holds by construction and fsCE ≥ it is the
    non-trivial check; psCE_m grows with m."""
    v, y = _data(seed, 40, k, eps=eps)
    fs = float(full_smooth_calibration_error(v, y))
    prev = 0.0
    for m in range(1, k + 1):
        ss = float(subset_smooth_calibration_error(v, y, m))
        ps = float(projected_smooth_calibration_error(v, y, m))
        assert ss <= ps + 1e-7 and ps <= fs + 1e-7, (m, ss, ps, fs)
        assert ps >= prev - 1e-7
        prev = ps


# ---------------------------------------------------------------------------------------------
# Sigmoid (Definition 7.7) and low-degree (Definition 6.5) families


def test_sigmoid_matches_grid_for_two_classes_and_is_bounded():
    v, y = _data(13, 60, 2, eps=0.5)
    L = 3.0
    got = float(sigmoid_calibration_error(v, y, L, key=K0))
    grid = sigmoid_grid_two_classes(v, y, L, n_grid=401)
    # the search and the grid are both lower bounds of the same sup; 2e-3 covers the grid's step
    assert got == pytest.approx(grid, abs=2e-3)
    # Σ_L is L-Lipschitz in ℓ1 (Lemma 8.2's argument): CE_Σ ≤ L · fsCE
    assert got <= L * float(full_smooth_calibration_error(v, y)) + 1e-6
    res = sigmoid_calibration_error(v, y, L, key=K0, return_witness=True)
    a, b = res.witness
    assert np.all(np.abs(np.asarray(a)) <= 1)
    z = np.eye(2)[y] - v
    direct = np.mean(z * np.tanh(L * v @ np.asarray(a).T + np.asarray(b)[None]), 0)
    np.testing.assert_allclose(np.asarray(res.per_class), direct, atol=1e-5)


def test_low_degree_exact_and_kernel_bound(x64):
    v, y = _data(14, 50, 3, eps=0.4)
    for d in (0, 1, 2, 3):
        exact = float(low_degree_calibration_error(v, y, d, tile=4))
        assert exact == pytest.approx(low_degree_bruteforce(v, y, d), rel=1e-10)
        # P(d,1) ⊆ B_Γ(1) (Corollary 6.6): the kernel value is an upper bound, and it is
        # s·value of Algorithm 2
        upper = float(low_degree_calibration_error(v, y, d, method="kernel"))
        assert exact <= upper + 1e-12
        audit = kernel_audit(v, y, MultinomialKernel(d))
        assert upper == pytest.approx(float(audit.value) * np.sqrt(d + 1), rel=1e-9)
    res = low_degree_calibration_error(v, y, 2, return_witness=True)
    mono, sign = res.witness
    vext = np.hstack([v, np.ones((50, 1))])
    z = np.eye(3)[y] - v
    per = [float(sign[ell]) * np.mean(z[:, ell] * np.prod(vext[:, np.asarray(mono[ell])], 1)) for ell in range(3)]
    np.testing.assert_allclose(per, np.asarray(res.per_class), rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# Conformance and input checks


def test_conformance_jit_vmap_no_retrace():
    rng = np.random.default_rng(15)
    P = jnp.asarray(np.stack([rng.dirichlet(np.ones(3), 40) for _ in range(3)]), jnp.float32)
    Y = jnp.asarray(rng.integers(0, 3, (3, 40)))

    @jax.jit
    @chex.assert_max_traces(n=1)
    def many(p, y):
        return (
            low_degree_calibration_error(p, y, 2),
            subset_smooth_calibration_error(p, y, 2),
            max_classwise_calibration_error(p, y, n_bins=5),
            weighted_calibration_error(p, y, lambda q: jnp.tanh(3 * q - 1)),
        )

    out = jax.vmap(many)(P, Y)
    for i in range(3):
        np.testing.assert_allclose(float(out[0][i]), float(low_degree_calibration_error(P[i], Y[i], 2)), rtol=1e-5)
        np.testing.assert_allclose(float(out[1][i]), float(subset_smooth_calibration_error(P[i], Y[i], 2)), rtol=1e-5)
        np.testing.assert_allclose(float(out[2][i]), float(max_classwise_calibration_error(P[i], Y[i], n_bins=5)), rtol=1e-5)
    many(P[0], Y[0])  # same shapes: no retrace
    # sigmoid search: vmap over the slope L (a hyperparameter) on one compiled search
    v, y = P[0], Y[0]
    z = jax.nn.one_hot(y, 3, dtype=v.dtype) - v
    w = jnp.full((40,), 1 / 40, v.dtype)
    vals = jax.vmap(lambda L: _sigmoid_search(K0, v, z, w, L, SigmoidSearch(4, 20))[0])(
        jnp.array([1.0, 2.0, 4.0])
    )
    chex.assert_shape(vals, (3,))
    assert bool(jnp.all(jnp.isfinite(vals)))


def test_bad_input_raises():
    v = np.array([[0.5, 0.5], [0.2, 0.8]])
    y = np.array([0, 1])
    with pytest.raises(ValueError, match="NaN"):
        subset_smooth_calibration_error(np.array([[np.nan, 1.0], [0.5, 0.5]]), y)
    with pytest.raises(ValueError, match="sum to 1"):
        projected_smooth_calibration_error(np.array([[0.5, 0.6], [0.5, 0.5]]), y)
    with pytest.raises(ValueError, match="lie in"):
        low_degree_calibration_error(v, np.array([0, 5]))
    with pytest.raises(ValueError, match="mismatched"):
        sigmoid_calibration_error(v, np.array([0, 1, 1]), key=K0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        weighted_calibration_error(v, y, np.full((2, 2), 2.0))
    with pytest.raises(ValueError, match="shape"):
        weighted_calibration_error(v, y, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="directions"):
        projected_smooth_calibration_error(v, y, directions=np.array([[2.0, 0.0]]))
    with pytest.raises(ValueError, match="max_sq_norm = "):
        projected_smooth_calibration_error(v, y, max_sq_norm=1, directions=np.array([[1.0, 1.0]]))
    with pytest.raises(ValueError, match="max_sq_norm"):
        projected_smooth_calibration_error(v, y, max_sq_norm=0.5)
    with pytest.raises(ValueError, match="max_subset_size"):
        subset_smooth_calibration_error(v, y, max_subset_size=0)
    with pytest.raises(ValueError, match="max_subsets"):
        subset_smooth_calibration_error(np.full((2, 20), 0.05), y, max_subsets=100)
    with pytest.raises(ValueError, match="max_points"):
        full_smooth_calibration_error(np.random.default_rng(0).dirichlet(np.ones(2), 30), np.zeros(30, int), max_points=10)
    with pytest.raises(ValueError, match="degree"):
        low_degree_calibration_error(v, y, -1)
    with pytest.raises(ValueError, match="method"):
        low_degree_calibration_error(v, y, 2, method="fast")
    with pytest.raises(ValueError, match="L must"):
        sigmoid_calibration_error(v, y, L=0.5, key=K0)
    for key in (None, 0):
        with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
            sigmoid_calibration_error(v, y, key=key)
        with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
            two_action_decision_calibration_error(v, y, key=key)
    with pytest.raises(TypeError, match="SigmoidSearch"):
        sigmoid_calibration_error(v, y, key=K0, search=PartitionSearch())
    with pytest.raises(ValueError, match="learning_rate"):
        SigmoidSearch(learning_rate=0.0)
    with pytest.raises(ValueError, match="outside jit"):
        jax.jit(lambda p: projected_smooth_calibration_error(p, y))(jnp.asarray(v))


def test_unrolled_sigmoid_search_equals_the_rolled_one():
    v, y = _data(17, 80, 3, eps=0.3)
    rolled = sigmoid_calibration_error(v, y, 4.0, key=K0, search=SigmoidSearch(4, 50, unroll=1), return_witness=True)
    got = sigmoid_calibration_error(v, y, 4.0, key=K0, search=SigmoidSearch(4, 50, unroll=4), return_witness=True)  # 4 ∤ 50
    # float32 Adam: the unrolled copies of a step fuse differently (an ulp per step)
    np.testing.assert_allclose(float(got.value), float(rolled.value), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got.witness[0]), np.asarray(rolled.witness[0]), atol=1e-4)
    # the two-action decision error forwards unroll to the partition search
    two = two_action_decision_calibration_error(v, y, key=K0, search=PartitionSearch(n_steps=10, n_restarts=2, unroll=4))
    one = two_action_decision_calibration_error(v, y, key=K0, search=PartitionSearch(n_steps=10, n_restarts=2, unroll=1))
    np.testing.assert_allclose(float(two.value), float(one.value), rtol=1e-4)  # as above
    z = jax.nn.one_hot(jnp.asarray(y), 3, dtype=jnp.float32) - jnp.asarray(v, jnp.float32)
    w = jnp.full((80,), 1 / 80, jnp.float32)
    chex.clear_trace_counter()
    search = jax.jit(chex.assert_max_traces(
        lambda L: _sigmoid_search(K0, jnp.asarray(v, jnp.float32), z, w, L, SigmoidSearch(2, 10, unroll=4))[0], n=1))
    for L in (1.0, 2.0, 3.0):  # new slopes, the same unroll: one trace
        search(jnp.asarray(L))
    for bad in (0, False, 2.0):
        with pytest.raises(ValueError, match="unroll"):
            SigmoidSearch(unroll=bad)


def test_importing_jcalib_leaves_scipy_optimize_to_the_lps():
    """SciPy's optimize (0.2-0.3 s of an import) is imported by the exact smooth-calibration LPs
    when they first run, not by ``import jcalib``."""
    code = "import sys, jcalib; print('scipy.optimize' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

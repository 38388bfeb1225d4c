"""The payoffs of Marx et al. (2024): consistency E_{y~p} π(x, p, y) = 0 by quadrature on random p,
the bounds B, Eq. 19's linearisation against a literal reference, direct sums (Prop. 4.4), the
recipe, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.payoffs import binary_payoff, freudenthal_dense, pc_cdf, quantile_payoff_eq19

from jcalib.distributions import PiecewiseConstant, uniform_edges
from jcalib.payoffs import (
    BinaryCalibration,
    DecisionCalibration,
    DirectSum,
    DistributionCalibration,
    ExpertContext,
    ExpertRegret,
    MomentCalibration,
    MomentGridCalibration,
    QuantileCalibration,
    Recipe,
    SwapRegret,
    expect_under_bins,
    experiment_payoff,
    freudenthal,
    linearised_quantile,
)

EDGES = uniform_edges(12)


def random_pc(key, edges=EDGES, sharp=2.0):
    return PiecewiseConstant.from_logits(sharp * jax.random.normal(key, (len(edges) - 1,)), edges)


def utility(y, x):
    # three actions: a newsvendor-like piecewise-linear utility and a quadratic one
    return jnp.stack([y, 0.5 - jnp.abs(y - 0.5), 1 - (y - 0.3) ** 2])


INTERVAL_PAYOFFS = [
    QuantileCalibration(19),
    MomentCalibration((1, 2)),
    DecisionCalibration(utility, 3, 1.0),
    SwapRegret(utility, 3, 1.0),
    DirectSum((QuantileCalibration(9), MomentCalibration((1, 2)))),
    DistributionCalibration((0.0, 0.25, 0.5, 1.0), 4),
]


@pytest.mark.parametrize("payoff", INTERVAL_PAYOFFS, ids=lambda p: type(p).__name__)
def test_consistency_on_random_forecasts(x64, payoff):
    for s in range(5):
        p = random_pc(jax.random.key(s))
        mean = expect_under_bins(payoff, None, p, p.probs, EDGES)
        # 1e-10: per-bin Gauss–Legendre is exact for these payoffs (polynomial of degree <= 2
        # in y between breakpoints that are edges or quantiles handled in closed form)
        np.testing.assert_allclose(np.asarray(mean), 0, atol=1e-10)


def test_consistency_by_brute_quadrature(x64):
    # independent of expect_uniform: a 200,000-point midpoint rule over y ~ p
    p = random_pc(jax.random.key(7))
    y = (np.arange(200_000) + 0.5) / 200_000
    dens = np.asarray(p.probs)[np.minimum((y * 12).astype(int), 11)] * 12
    for payoff in (QuantileCalibration(19), MomentCalibration((1, 2))):
        vals = np.asarray(jax.vmap(lambda yy: payoff(None, p, yy))(jnp.asarray(y)))
        mean = (vals * dens[:, None]).mean(0)
        # 1e-4: midpoint rule on step functions of y, error O(jumps/n)
        np.testing.assert_allclose(mean, 0, atol=1e-4)


def test_regret_is_semi_consistent(x64):
    payoff = ExpertRegret(("crps", "mse"))
    assert payoff.semi.all()
    for s in range(5):
        p, e = random_pc(jax.random.key(s)), random_pc(jax.random.key(100 + s))
        mean = expect_under_bins(payoff, ExpertContext(e), p, p.probs, EDGES)
        assert np.all(np.asarray(mean) <= 1e-12)
        # and the expert in the context is what is compared against: against itself, 0
        same = expect_under_bins(payoff, p, p, p.probs, EDGES)
        np.testing.assert_allclose(np.asarray(same), 0, atol=1e-12)


def test_binary_consistency_and_parity(x64):
    pi = BinaryCalibration(7)
    for p in np.linspace(0, 1, 23):
        np.testing.assert_allclose(np.asarray(pi.expect(None, p, p)), 0, atol=1e-15)
        for y in (0, 1):
            got = pi(None, jnp.asarray(p), jnp.asarray(y, jnp.int32))
            np.testing.assert_allclose(np.asarray(got), binary_payoff(p, y, 7), atol=1e-14)
    hard = BinaryCalibration(7, hard=True)
    assert float(jnp.sum(hard.weights(jnp.asarray(0.33)))) == 1.0


def _sup_norm2(payoff, forecasts, ys, x=None):
    norms = jax.jit(jax.vmap(lambda p, y: jnp.sum(payoff(x, p, y) ** 2), in_axes=(None, 0)))
    return max(float(jnp.max(norms(p, ys))) for p in forecasts)


def test_bounds_hold_and_are_tight(x64):
    ys = jnp.linspace(0, 1, 41)
    sharp = [PiecewiseConstant(jnp.eye(12)[k], EDGES) for k in (0, 11)]
    forecasts = [random_pc(jax.random.key(s), sharp=6.0) for s in range(6)] + sharp
    q = QuantileCalibration(19)
    s = _sup_norm2(q, forecasts, ys)
    assert s <= q.bound() + 1e-12 and s >= 0.9 * q.bound()
    m = MomentCalibration((1, 2))
    s = _sup_norm2(m, forecasts, ys)
    assert s <= m.bound() + 1e-12 and s >= 0.8 * m.bound()  # B = 2 needs a point mass at an end
    r = ExpertRegret(("crps", "mse"))
    ctx = ExpertContext(sharp[0])
    assert _sup_norm2(r, forecasts, ys, ctx) <= r.bound()
    b = BinaryCalibration(5)
    assert _sup_norm2(b, list(jnp.linspace(0, 1, 51)), jnp.array([0, 1], jnp.int32)) <= b.bound()
    g = MomentGridCalibration(4)
    assert _sup_norm2(g, list(jax.random.uniform(jax.random.key(3), (20, 2))), ys) <= g.bound()


def test_eq19_linearisation_matches_literal_reference():
    alphas = np.linspace(0.01, 0.99, 99)
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = np.sort(rng.uniform(0, 1, 2))
        if rng.random() < 0.3:
            b = a  # continuous at y
        got = np.asarray(linearised_quantile(jnp.asarray(a), jnp.asarray(b), jnp.asarray(alphas)))
        np.testing.assert_allclose(got, quantile_payoff_eq19(a, b, alphas), atol=1e-6)


def test_quantile_payoff_matches_reference_cdf(x64):
    p = random_pc(jax.random.key(1))
    q = QuantileCalibration(9)
    for y in np.linspace(0, 1, 17):
        u = pc_cdf(np.asarray(p.probs), EDGES, y)
        want = (u <= np.arange(1, 10) / 10) - np.arange(1, 10) / 10
        np.testing.assert_allclose(np.asarray(q(None, p, jnp.asarray(y))), want, atol=1e-12)


def test_direct_sum_normalises_blocks():
    q, m = QuantileCalibration(9), MomentCalibration((1, 2))
    s = DirectSum((q, m))
    assert s.dim == q.dim + m.dim and s.bound() == 2.0
    p = random_pc(jax.random.key(0))
    y = jnp.asarray(0.4)
    v = s(None, p, y)
    np.testing.assert_allclose(np.asarray(v[:9]), np.asarray(q(None, p, y)) / np.sqrt(q.bound()), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(v[9:]), np.asarray(m(None, p, y)) / np.sqrt(m.bound()), rtol=1e-6)
    raw = DirectSum((q, m), normalise=False)
    assert raw.bound() == pytest.approx(q.bound() + m.bound())
    e = experiment_payoff()
    assert e.dim == 99 + 2 + 2 and e.bound() == 3.0
    assert e.semi.sum() == 2


def test_recipe_is_the_moment_payoff(x64):
    p = random_pc(jax.random.key(2))
    rec = Recipe(
        lambda x, p: jnp.ones(1), lambda y: jnp.stack([y, y * y]), lambda p: jnp.stack([p.mean(), p.moment(2)]),
        n_context=1, n_witness=2, bound_value=2.0,
    )
    mom = MomentCalibration((1, 2))
    for y in (0.0, 0.3, 1.0):
        np.testing.assert_allclose(np.asarray(rec(None, p, jnp.asarray(y))), np.asarray(mom(None, p, jnp.asarray(y))))
    np.testing.assert_allclose(np.asarray(expect_under_bins(rec, None, p, p.probs, EDGES)), 0, atol=1e-12)


def test_binary_decision_payoffs_are_consistent(x64):
    u = lambda y, x: jnp.stack([y, 1 - y, 0.5 + 0 * y])  # noqa: E731
    for p in (0.1, 0.5, 0.8):
        d = DecisionCalibration(u, 3)
        e = p * d(None, jnp.asarray(p), jnp.asarray(1.0)) + (1 - p) * d(None, jnp.asarray(p), jnp.asarray(0.0))
        np.testing.assert_allclose(np.asarray(e), 0, atol=1e-12)


def test_freudenthal_matches_reference(x64):
    for f in jax.random.uniform(jax.random.key(0), (30, 2)).tolist() + [[0, 0], [1, 1], [1, 0], [0.5, 1]]:
        idx, w = freudenthal(jnp.asarray(f), 5)
        dense = np.zeros(36)
        np.add.at(dense, np.asarray(idx), np.asarray(w))
        np.testing.assert_allclose(dense, freudenthal_dense(f, 5), atol=1e-12)
        V = np.stack(np.meshgrid(np.arange(6) / 5, np.arange(6) / 5, indexing="ij"), -1).reshape(-1, 2)
        np.testing.assert_allclose(dense @ V, f, atol=1e-12)  # barycentric: reproduces f


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="n_levels"):
        QuantileCalibration(0)
    with pytest.raises(ValueError, match="lo < hi"):
        MomentCalibration((1,), 1.0, 0.0)
    with pytest.raises(ValueError, match="losses"):
        ExpertRegret(("log",))
    with pytest.raises(ValueError, match="blocks"):
        DirectSum(())
    with pytest.raises(ValueError, match="sum to 1"):
        PiecewiseConstant(jnp.full(12, 0.1), EDGES)
    with pytest.raises(ValueError, match="NaN"):
        PiecewiseConstant(jnp.full(12, jnp.nan), EDGES)


def test_distribution_calibration_weights_and_cost(x64):
    from jcalib.payoffs.interval import _compositions

    d = DistributionCalibration((0.0, 0.25, 0.5, 1.0), 4)
    assert d.n_vertices == 15 and d.dim == 30  # C(4 + 2, 2) pmfs on 3 cells, 2 CDF points each
    V = _compositions(4, 3) / 4
    for s in range(5):
        p = random_pc(jax.random.key(s))
        idx, lam = d.weights(p)
        assert np.all(np.asarray(lam) >= -1e-12) and float(lam.sum()) == pytest.approx(1.0)
        # barycentric: the vertices' cumulative masses average to p's
        np.testing.assert_allclose(np.asarray(lam) @ V[np.asarray(idx)], np.asarray(p.cdf(jnp.array([0.25, 0.5]))), atol=1e-12)
        assert float(jnp.sum(d(None, p, jnp.asarray(0.3)) ** 2)) <= d.bound()
    with pytest.raises(ValueError, match="exponential"):
        DistributionCalibration(tuple(np.linspace(0, 1, 12)), 20)


# ------------------------------------------------ closed-form expectations (ORCA's nature family)
from jcalib.payoffs.base import AbstractExpectations, DefaultExpectations  # noqa: E402

CLOSED_FORM_BLOCKS = [QuantileCalibration(19), ExpertRegret(("crps", "mse")), MomentCalibration((1, 2, 3)),
                      experiment_payoff(19)]


def _quadrature(payoff, x, p, lo, hi):
    """The generic Gauss–Legendre expectation (3 nodes per interval), bypassing the closed forms."""
    if isinstance(payoff, DirectSum):
        return jnp.concatenate([_quadrature(b, x, p, lo, hi) * s for b, s in zip(payoff.blocks, payoff.scales())], -1)
    if isinstance(payoff, QuantileCalibration):
        # its former closed form: P(F(y) <= α) = clip((Q(α) - lo)/(hi - lo), 0, 1), one quantile per level
        alpha = payoff.levels(lo.dtype)
        q = jax.vmap(p.quantile)(alpha)
        return jnp.clip((q[None, :] - lo[:, None]) / (hi - lo)[:, None], 0, 1) - alpha[None, :]
    return AbstractExpectations.expect_uniform(payoff, x, p, lo, hi)


@pytest.mark.parametrize("payoff", CLOSED_FORM_BLOCKS, ids=lambda p: type(p).__name__)
def test_closed_forms_equal_the_quadrature_on_the_bins(x64, payoff):
    # on the forecast's own bins every block is a polynomial of degree <= 3 in y inside a bin (the
    # quantile block a step handled through Q), so 3-node Gauss–Legendre is exact: the closed forms
    # must agree to float64 round-off
    e = np.asarray(EDGES)
    lo, hi = jnp.asarray(e[:-1]), jnp.asarray(e[1:])
    for s in range(4):
        p, ex = random_pc(jax.random.key(s)), random_pc(jax.random.key(100 + s))
        x = ExpertContext(ex)
        want = np.asarray(_quadrature(payoff, x, p, lo, hi))
        np.testing.assert_allclose(np.asarray(payoff.expect_bins(x, p, EDGES)), want, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.asarray(payoff.expect_uniform(x, p, lo, hi)), want, rtol=1e-12, atol=1e-13)
        c = jax.random.normal(jax.random.key(200 + s), (payoff.dim,), jnp.float64)
        np.testing.assert_allclose(np.asarray(payoff.expect_bins_along(x, p, EDGES, c)), want @ np.asarray(c),
                                   rtol=1e-12, atol=1e-13)


def test_expect_bins_along_has_the_gradient_of_the_dense_form(x64):
    # the O(n + m) quantile projection against expect_bins(...) @ c, values and Jacobians in the logits
    pay = experiment_payoff(99)
    edges = uniform_edges(50)
    for s in range(3):
        x = ExpertContext(random_pc(jax.random.key(10 + s), edges))
        c = jax.random.normal(jax.random.key(20 + s), (pay.dim,), jnp.float64)
        th = 2.0 * jax.random.normal(jax.random.key(s), (50,), jnp.float64)
        fast = lambda t: pay.expect_bins_along(x, PiecewiseConstant.from_logits(t, edges), edges, c)  # noqa: E731
        dense = lambda t: pay.expect_bins(x, PiecewiseConstant.from_logits(t, edges), edges) @ c  # noqa: E731
        np.testing.assert_allclose(np.asarray(fast(th)), np.asarray(dense(th)), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(jax.jacobian(fast)(th)), np.asarray(jax.jacobian(dense)(th)),
                                   rtol=1e-10, atol=1e-12)


def test_expect_bins_along_float32_is_as_accurate_as_the_dense_form():
    # compensated prefix sums: the O(n + m) form loses no more to round-off than the dense one
    edges = uniform_edges(50)
    pay = QuantileCalibration(99)
    rng = np.random.default_rng(0)
    alpha = np.arange(1, 100) / 100
    err_fast, err_dense = [], []
    for _ in range(50):
        th = rng.normal(size=50) * rng.uniform(0.1, 4)
        c = rng.normal(size=99)
        c /= np.linalg.norm(c)
        p = np.exp(th - th.max())
        p /= p.sum()
        C = np.r_[0, np.cumsum(p)][:-1]
        exact = np.clip((alpha[None, :] - C[:, None]) / p[:, None], 0, 1) @ c - c @ alpha
        d = PiecewiseConstant.from_logits(jnp.asarray(th, jnp.float32), edges)
        c32 = jnp.asarray(c, jnp.float32)
        err_fast.append(np.abs(np.asarray(pay.expect_bins_along(None, d, edges, c32)) - exact).max())
        err_dense.append(np.abs(np.asarray(pay.expect_bins(None, d, edges) @ c32) - exact).max())
    # 2x: the two float32 computations round differently; without compensation the fast form was
    # about 5x worse than the dense one (median error over these draws)
    assert np.median(err_fast) <= 2 * np.median(err_dense)


def test_compensated_prefix_sums_of_stacked_rows_are_each_row_s():
    """The quantile payoff sums its two series in one pass over a stacked array: each row's
    ``hi + lo`` is that row's own pass bit for bit, and the exact prefix sum to float32's 2 ulps."""
    import math

    from jcalib.payoffs.interval import _prefix_sums

    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(size=(2, 99)) * rng.uniform(0.1, 100, size=(2, 1)), jnp.float32)
    hi, lo = _prefix_sums(x)
    for r in range(2):
        one = _prefix_sums(x[r])
        np.testing.assert_array_equal(np.asarray(hi[r]), np.asarray(one[0]))
        np.testing.assert_array_equal(np.asarray(lo[r]), np.asarray(one[1]))
        exact = [math.fsum(np.asarray(x[r], np.float64)[:i]) for i in range(100)]
        got = np.asarray(hi[r], np.float64) + np.asarray(lo[r], np.float64)
        # compensated: within 2 float32 ulps of the largest sum (uncompensated sums drift by many)
        np.testing.assert_allclose(got, exact, rtol=0, atol=2 * np.spacing(np.float32(np.abs(exact).max())))


def test_expert_regret_closed_form_on_any_interval(x64):
    from reference.bin_expectations import expected_crps_np

    p, ex = random_pc(jax.random.key(0)), random_pc(jax.random.key(1))
    pay = ExpertRegret(("crps", "mse"))
    rng = np.random.default_rng(0)
    lo = rng.uniform(0, 0.8, 5)
    hi = lo + rng.uniform(0.01, 0.4, 5)  # intervals straddling several edges
    got = np.asarray(pay.expect_uniform(ExpertContext(ex), p, jnp.asarray(lo), jnp.asarray(hi)))
    crps = expected_crps_np(np.asarray(p.probs), EDGES, lo, hi, n=801) - expected_crps_np(
        np.asarray(ex.probs), EDGES, lo, hi, n=801)
    mid, w = (lo + hi) / 2, hi - lo
    mse = (float(p.mean()) - mid) ** 2 - (float(ex.mean()) - mid) ** 2  # the w²/12 terms cancel
    # 1e-6: midpoint rule over y of a trapezoid rule over z in the reference
    np.testing.assert_allclose(got[:, 0], crps, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], mse, rtol=1e-12, atol=1e-14)
    assert np.all(w > 0)


def test_jumps_are_declared_by_the_payoff(x64):
    p = random_pc(jax.random.key(3))
    q = QuantileCalibration(9)
    np.testing.assert_allclose(np.asarray(q.jumps(None, p)), np.asarray(p.quantile(q.levels(jnp.float64))))
    assert MomentCalibration().jumps(None, p).shape == (0,)
    assert ExpertRegret().jumps(ExpertContext(p), p).shape == (0,)
    s = DirectSum((MomentCalibration(), q, QuantileCalibration(4)))
    assert s.jumps(None, p).shape == (13,)
    dc = DistributionCalibration((0.0, 0.25, 0.5, 1.0), 4)
    np.testing.assert_allclose(np.asarray(dc.jumps(None, p)), [0.25, 0.5])


@pytest.mark.parametrize("n_cells, n_ticks", [(2, 1), (2, 7), (3, 4), (4, 5), (5, 3), (6, 2)])
def test_distribution_calibration_ranks_match_brute_force(n_cells, n_ticks):
    """The combinatorial rank of every grid vertex is its index in the lexicographic list."""
    from jcalib.payoffs.interval import _compositions, _rank_compositions

    comps = _compositions(n_ticks, n_cells)
    ranks = _rank_compositions(jnp.asarray(comps, jnp.int32), n_ticks)
    np.testing.assert_array_equal(np.asarray(ranks), np.arange(len(comps)))


def test_distribution_calibration_ten_cells_ten_ticks_in_small_memory():
    """M = N = 10 (831,402 coordinates): the dense (N+1)^(M-1) lookup table it replaced asked
    for 17.6 GiB and overflowed its int32 flat index; the compiled payoff needs a few MB."""
    edges = tuple(np.linspace(0.0, 1.0, 11))
    d = DistributionCalibration(edges, 10)
    assert d.dim == 9 * 92378
    p = random_pc(jax.random.key(3), edges=np.asarray(edges))
    y = jnp.asarray(0.42, p.dtype)
    compiled = jax.jit(lambda p, y: d(None, p, y)).lower(p, y).compile()
    mem = compiled.memory_analysis()
    assert mem.temp_size_in_bytes + mem.output_size_in_bytes < 64 * 2**20, mem
    v = compiled(p, y)
    assert v.shape == (d.dim,) and bool(jnp.all(jnp.isfinite(v)))
    idx, lam = d.weights(p)
    assert int(idx.min()) >= 0 and int(idx.max()) < d.n_vertices
    # barycentric: the vertices (looked up by rank in the brute-force list) average to p's
    # cumulative masses; float32 weights and CDF values, hence the tolerance
    from jcalib.payoffs.interval import _compositions

    V = _compositions(10, 10) / 10
    F = np.asarray(p.cdf(jnp.asarray(edges[1:-1], p.dtype)))
    np.testing.assert_allclose(np.asarray(lam) @ V[np.asarray(idx)], F, atol=1e-5)
    assert float(jnp.sum(v**2)) <= d.bound() * (1 + 1e-6)  # float32 rounding of a sum of 9 squares


@pytest.mark.parametrize("payoff", ["decision", "swap"])
def test_decision_payoffs_compile_once_across_eager_calls(payoff):
    """Eager calls with new forecasts, contexts and outcomes reuse one compiled expectation (the
    quadrature's integrand, a closure over the context, used to be a new static argument each
    call and compiled again every time)."""
    from conformance import count_compilations

    from jcalib.payoffs import SwapRegret

    cls = DecisionCalibration if payoff == "decision" else SwapRegret
    d = cls(utility, 3, 1.0)
    d(None, random_pc(jax.random.key(0)), jnp.asarray(0.3))  # warm-up compile
    d(None, 0.3, 1)
    with count_compilations() as c:
        for s in range(1, 4):
            d(None, random_pc(jax.random.key(s)), jnp.asarray(0.1 * s))
            d(None, 0.1 * s, s % 2)
    assert c.n == 0, f"{c.n} compilations"


def test_incomplete_payoff_cannot_be_instantiated():
    from jcalib.payoffs import AbstractPayoff

    class NoBound(AbstractPayoff):
        @property
        def dim(self):
            return 1

        def __call__(self, x, p, y):
            return jnp.zeros(1)

    with pytest.raises(TypeError, match="abstract.*bound"):
        NoBound()

    class Complete(NoBound):
        def bound(self):
            return 1.0

    assert Complete().bound() == 1.0


# ------------------------------------------------ ORCA's once-per-round calls: many outcomes, spikes

ALONG_PAYOFFS = [
    QuantileCalibration(19),
    MomentCalibration((1, 2)),
    ExpertRegret(("crps", "mse")),
    experiment_payoff(19),
    DefaultExpectations(DecisionCalibration(utility, 3, 1.0)),  # the default (vmap) path
]


@pytest.mark.parametrize("payoff", ALONG_PAYOFFS, ids=lambda p: type(p).__name__)
def test_along_at_is_the_projected_payoff_at_each_outcome(x64, payoff):
    # closed forms (O(n + m + M)) against <c, π(x, p, y)> evaluated outcome by outcome, including
    # outcomes on every edge, at the ends and next to the quantiles where the quantile block jumps
    from jcalib.payoffs.base import AbstractExpectations

    e = np.asarray(EDGES)
    for s in range(3):
        p, ex = random_pc(jax.random.key(s)), random_pc(jax.random.key(50 + s))
        x = ExpertContext(ex)
        c = jax.random.normal(jax.random.key(100 + s), (payoff.dim,), jnp.float64)
        q = np.asarray(p.quantile(jnp.linspace(0.05, 0.95, 19)))
        ys = jnp.asarray(np.r_[e, q - 1e-6, q + 1e-6, np.random.default_rng(s).uniform(0, 1, 30)])
        want = np.asarray(jax.vmap(lambda y: payoff(x, p, y) @ c)(ys))
        np.testing.assert_allclose(np.asarray(payoff.along_at(x, p, c, ys)), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(AbstractExpectations.along_at(payoff, x, p, c, ys)), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("payoff", ALONG_PAYOFFS[:4], ids=lambda p: type(p).__name__)
def test_spike_values_closed_forms_are_the_mixtures_values(x64, payoff):
    # [g, j, k] against expect_bins_along of the mixture (1-γ)p + γδ_j built explicitly (the default
    # path), and the whole experiment payoff against the brute-force reference (integration over y)
    from reference.orca import component_values

    from jcalib.payoffs.base import AbstractExpectations

    gammas = (0.5, 0.99, 1.0)
    for s in range(3):
        p, ex = random_pc(jax.random.key(s), sharp=3.0), random_pc(jax.random.key(50 + s))
        x = ExpertContext(ex)
        c = jax.random.normal(jax.random.key(100 + s), (payoff.dim,), jnp.float64)
        got = np.asarray(payoff.spike_values(x, p, EDGES, c, gammas))
        want = np.asarray(AbstractExpectations.spike_values(payoff, x, p, EDGES, c, gammas))
        assert got.shape == (3, 12, 12)
        # the quantile block's compensated prefix sums meet the levels in another order: 1e-11
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)
    if isinstance(payoff, DirectSum):
        mix = 0.5 * np.asarray(p.probs) + 0.5 * np.eye(12)[3]
        ref = component_values(mix, np.asarray(ex.probs), EDGES, np.asarray(c), 19, n_y=2000)
        # 2e-3: the reference averages a step function of y over 2000 points per bin
        np.testing.assert_allclose(got[0, 3], ref, atol=2e-3)


def test_along_at_and_spike_values_jit_vmap_without_retracing():
    import chex

    pay = experiment_payoff(19)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(theta, ex, c, ys):
        p = PiecewiseConstant.from_logits(theta, EDGES)
        x = ExpertContext(PiecewiseConstant(ex, EDGES))
        return jnp.max(pay.along_at(x, p, c, ys)) + jnp.max(pay.spike_values(x, p, EDGES, c, (0.5, 0.9)))

    rng = np.random.default_rng(0)
    for _ in range(3):
        th = jnp.asarray(rng.normal(size=(4, 12)), jnp.float32)
        ex = jax.nn.softmax(jnp.asarray(rng.normal(size=(4, 12)), jnp.float32))
        c = jnp.asarray(rng.normal(size=(4, pay.dim)), jnp.float32)
        ys = jnp.asarray(rng.uniform(size=(4, 25)), jnp.float32)
        out = jax.vmap(f)(th, ex, c, ys)
        np.testing.assert_allclose(np.asarray(out), [float(f(th[b], ex[b], c[b], ys[b])) for b in range(4)], rtol=1e-5)


def test_expect_under_bins_needs_masses_summing_to_one_plain_and_under_jit():
    from jcalib.payoffs import QuantileCalibration, expect_under_bins
    from jcalib.distributions import PiecewiseConstant

    edges = (0.0, 0.5, 1.0)
    p = PiecewiseConstant(jnp.array([0.5, 0.5]), edges)
    ok = expect_under_bins(QuantileCalibration(3), None, p, jnp.array([0.3, 0.7]), edges)
    assert np.all(np.isfinite(ok))
    with pytest.raises(ValueError, match="q_probs must sum to 1"):
        expect_under_bins(QuantileCalibration(3), None, p, jnp.array([0.3, 0.8]), edges)
    f = jax.jit(lambda q: expect_under_bins(QuantileCalibration(3), None, p, q, edges))
    with pytest.raises(Exception, match="q_probs must sum to 1"):
        f(jnp.array([0.3, 0.8])).block_until_ready()


def test_tent_weights_of_a_batch_broadcast_the_grid():
    from jcalib.payoffs import tent_weights

    w = tent_weights(jnp.array([[0.3], [0.5]]), 4)  # rank 2 under rank promotion 'raise'
    assert w.shape == (2, 1, 5)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-6)  # float32 round-off

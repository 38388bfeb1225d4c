"""ORCA (Marx et al. 2024, Algorithm 2): its objective against a brute-force NumPy reference,
non-zero gradients where point-mass natures give none, what the certificates certify, QCE on i.i.d.
data falling toward the calibrated floor, conformance, bad input."""

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from conformance import check_forecaster
from reference.orca import component_values as ref_component_values

import jcalib
from jcalib.core import optimise
from jcalib.distributions import PiecewiseConstant, uniform_edges
from jcalib.forecasters import ORCA
from jcalib.natures import IIDInterval, OverconfidentGaussian
from jcalib.payoffs import ExpertContext, QuantileCalibration, experiment_payoff

E10 = uniform_edges(10)


def small(**kw):
    kw = {"payoff": experiment_payoff(9), "edges": E10, "n_steps": 60, **kw}
    return ORCA(**kw)


def qce_sum(probs, y, edges, n_levels):
    u = np.asarray(jax.vmap(lambda p, yy: PiecewiseConstant(p, edges).cdf(yy))(probs, y))
    lv = np.arange(1, n_levels + 1) / (n_levels + 1)
    return float(np.sum((np.mean(u[:, None] <= lv, 0) - lv) ** 2))


def test_objective_matches_brute_force_reference(x64):
    f = small()
    rng = np.random.default_rng(0)
    theta = jnp.asarray(rng.normal(size=10))
    expert = PiecewiseConstant.from_logits(jnp.asarray(rng.normal(size=10)), E10)
    c = jnp.asarray(rng.normal(size=f.payoff.dim))
    got = np.asarray(f.component_values(theta, c, ExpertContext(expert)))
    want = ref_component_values(np.asarray(f.distribution(theta).probs), np.asarray(expert.probs), E10, np.asarray(c), 9)
    # 2e-3: the reference integrates step functions with a 400-point midpoint rule per bin
    np.testing.assert_allclose(got, want, atol=2e-3 * np.abs(want).max())


def test_gradients_are_non_zero_where_point_masses_give_none(x64):
    f = ORCA(payoff=QuantileCalibration(9), edges=E10, n_steps=1)
    theta = jnp.asarray(np.random.default_rng(1).normal(size=10))
    c = jnp.asarray(np.random.default_rng(2).normal(size=9))
    g = jax.grad(lambda t: f.objective(t, c, None))(theta)
    assert float(jnp.linalg.norm(g)) > 1e-3
    exact = eqx.tree_at(lambda m: m.temperature, f, 0.0)
    assert float(jnp.linalg.norm(jax.grad(lambda t: exact.objective(t, c, None))(theta))) > 1e-3
    # the trap of Marx, Kuleshov, Ermon et al.: with point-mass natures (y at bin midpoints) the quantile block is
    # piecewise constant in θ, and so is every component's value: zero gradient
    mids = jnp.asarray((np.asarray(E10[:-1]) + np.asarray(E10[1:])) / 2)

    def point_mass_objective(t):
        p = f.distribution(t)
        return jnp.max(jax.vmap(lambda y: jnp.dot(c, f.payoff(None, p, y)))(mids))

    assert float(jnp.linalg.norm(jax.grad(point_mass_objective)(theta))) == 0.0


def test_certificates(x64):
    f = small(n_steps=80)
    nat = OverconfidentGaussian(edges=E10)
    T = 60
    traj = jcalib.core.play(f, nat, T, key=jax.random.key(0), record=jcalib.recorders.History(carry=True))
    cert = traj.certificate
    # replay the state to get c_{t-1} and the realised inner products
    def step(state, inp):
        x, fc_value, y, theta = inp
        c = jcalib.payoffs.direction(f.payoff, state.mean())
        pi = f.payoff(x, fc_value, y)
        v = f.component_values(theta, c, x)
        new = state._replace(total=state.total + pi, count=state.count + 1)
        return new, (jnp.dot(c, pi), jnp.max(v))

    _, (realised, vmax) = jax.lax.scan(step, f.init(jax.random.key(0)), (traj.x, traj.forecast, traj.y, traj.carry.theta))
    realised, vmax = np.asarray(realised), np.asarray(vmax)
    np.testing.assert_allclose(np.asarray(cert.value), vmax, rtol=1e-9, atol=1e-12)  # ℓ_t as published
    # the pointwise certificate bounds the realised inner product (up to the payoff's variation
    # between neighbouring check points: 1e-3 of ||c||-scale values here)
    assert np.all(realised <= np.asarray(cert.pointwise) + 1e-3)
    ok = np.asarray(cert.pointwise) <= 0
    assert np.all(realised[ok] <= 1e-3)
    print(f"\nORCA certificates, T={T}: median ℓ_t = {np.median(vmax):.4f}, "
          f"fraction ℓ_t <= 0: {np.mean(vmax <= 0):.2f}, fraction pointwise <= 0: {np.mean(ok):.2f}")


def test_l_nonpositive_certifies_the_nature_family(x64):
    # ℓ_t <= 0 means every mixture of the uniform-on-bin components — e.g. the i.i.d. truth —
    # has E<c, π> <= 0: check it against the truth's own expectation each round
    nat = IIDInterval.skewed(10)
    f = ORCA(payoff=QuantileCalibration(9), edges=E10, n_steps=100)
    traj = jcalib.core.play(f, nat, 40, key=jax.random.key(1), record=jcalib.recorders.History(carry=True))
    truth = np.asarray(nat.probs)

    def step(state, inp):
        p, y, theta = inp
        c = jcalib.payoffs.direction(f.payoff, state.mean())
        v = f.component_values(theta, c, None)
        pi = f.payoff(None, p, y)
        return state._replace(total=state.total + pi, count=state.count + 1), v

    _, vs = jax.lax.scan(step, f.init(jax.random.key(0)), (traj.forecast, traj.y, traj.carry.theta))
    assert np.all(np.asarray(vs) @ truth <= np.asarray(traj.certificate.value) + 1e-12)


def test_qce_falls_toward_the_calibrated_floor():
    # i.i.d. outcomes from a fixed density; QCE in sum form over 9 levels: a calibrated i.i.d.
    # forecaster has E[T·QCE] = Σ α(1-α) = 1.65. Measured T·QCE at T = 300: see the print.
    f = ORCA(payoff=QuantileCalibration(9), edges=E10, n_steps=100)
    T = 300
    traj = jcalib.core.play(f, IIDInterval.skewed(10), T, key=jax.random.key(0))
    tq = [T_ * qce_sum(traj.forecast.probs[:T_], traj.y[:T_], E10, 9) for T_ in (50, 300)]
    floor = float(np.sum(np.arange(1, 10) / 10 * (1 - np.arange(1, 10) / 10)))
    uniform = T * qce_sum(jnp.full((T, 10), 0.1), traj.y, E10, 9)
    print(f"\nT·QCE at T = 50, 300: {tq}; calibrated floor {floor:.2f}; uniform forecast {uniform:.2f}")
    assert tq[-1] <= 3 * floor  # near the floor (a calibrated forecaster's expected value)
    assert tq[-1] < uniform / 5


@pytest.mark.slow
def test_qce_falls_toward_the_floor_50_bins():
    # the test at full size; measured T·QCE at T = 1000: 0.4 (the floor, a calibrated
    # i.i.d. forecaster's expectation, is 16.665; Blackwell's T·‖π̄‖² ≤ B = 32.8). Before the spiked
    # starts and the one-sided logit range it drifted to T·QCE = 130 (0.13) by T = 1000.
    E = uniform_edges(50)
    f = ORCA(payoff=QuantileCalibration(99), edges=E)
    T = 1000
    traj = jcalib.core.play(f, IIDInterval.skewed(50), T, key=jax.random.key(0))
    tq = [t * qce_sum(traj.forecast.probs[:t], traj.y[:t], E, 99) for t in (300, T)]
    print(f"\n50 bins, 99 levels, 400 steps: T·QCE at T = 300, {T}: {tq} (floor 16.665)")
    assert max(tq) <= 16.665


def _trap_direction():
    # c_α = -1 for α ≤ 0.6 and +0.5 above: Σ c_α α < 0 < Σ_{α > s} c_α for s > 0.6, so every bin
    # that lies above all quantiles of levels > 0.6 has v_k = -Σ c_α α > 0 whatever p is there
    lv = np.arange(1, 100) / 100
    return jnp.asarray(np.where(lv <= 0.6, -1.0, 0.5))


def test_spiked_starts_escape_the_flat_violators(x64):
    # the trap: violating bins above all quantiles have constant values, zero gradient, and Adam
    # from the uniform start stalls with them positive. Only moving ≥ 63% of the mass into the
    # top bin fixes it (the violators need Σ_{α>F} c_α ≤ Σ c_α α, i.e. F ≤ 0.37 below it): the 0.99-spike on the top bin does, and Adam takes it to the logit range's limit (the minimax value is ≈ 0).
    E = uniform_edges(50)
    c = _trap_direction()
    stuck, free = (ORCA(payoff=QuantileCalibration(99), edges=E, spike_weights=w, satisfice=False, n_steps=300)
                   for w in ((), (0.5, 0.9, 0.99)))
    theta0 = jnp.zeros(50)

    def solve(f):
        start = f.best_start(theta0, c, None) if f.spike_weights else theta0
        res = optimise(lambda t: f.objective(t, c, None), start, optax.adam(f.learning_rate), f.n_steps, project=f.project)
        return float(jnp.max(f.component_values(res.params, c, None)))

    v_stuck, v_free = solve(stuck), solve(free)
    print(f"\nexact inner max: uniform start {v_stuck:.3f}, best spiked start {v_free:.4f} (scale Σ|c| = {float(jnp.sum(jnp.abs(c))):.0f})")
    assert v_stuck > 1.0  # stalls: the violators' value is -Σ c_α α = 2.75
    # the value is 0 only at a point mass on the top bin; the logit range R = 10 leaves it 49e^-10
    # of the mass outside, worth v ≈ 0.084 (measured: 0.0841), about 1e-3 of Σ|c|
    assert v_free <= 0.1


def test_logit_range_allows_sharp_forecasts():
    f = ORCA(payoff=QuantileCalibration(9), edges=E10, logit_range=10.0)
    p = f.distribution(f.project(jnp.asarray([50.0] + [0.0] * 9))).probs
    # R = 10: the top bin keeps 1/(1 + 9 e^-10) of the mass, every other bin e^-10 of it
    np.testing.assert_allclose(float(p[0]), 1 / (1 + 9 * np.exp(-10)), rtol=1e-6)  # float32 softmax
    assert float(jnp.min(p)) > 0


def test_satisficing_orca_plays_the_expert_while_it_passes(x64):
    # with start='expert' and π̄ = 0 (round 1) or whenever the expert's own ℓ ≤ 0, the objective
    # max(ℓ, 0) is flat at the start: ORCA announces the expert (up to the logit range's floor)
    f = small(start="expert", n_steps=50)
    nat = OverconfidentGaussian(edges=E10)
    x = nat.context(nat.init(jax.random.key(3)), jax.random.key(4))
    fc = f.predict(f.init(jax.random.key(0)), x, jax.random.key(1))
    want = f.distribution(f.project(jnp.log(x.expert.probs))).probs
    np.testing.assert_allclose(np.asarray(fc.public.probs), np.asarray(want), rtol=1e-12)  # float64: Adam never moved θ
    assert float(jnp.max(jnp.abs(want - x.expert.probs))) < 2e-4  # bins raised to the floor e^-R × the top bin's mass, renormalised


@pytest.mark.slow
def test_recalibrating_an_overconfident_expert():
    E = uniform_edges(50)
    nat = OverconfidentGaussian()
    f = ORCA()
    T = 400
    traj = jcalib.core.play(f, nat, T, key=jax.random.key(0))
    q_orca = qce_sum(traj.forecast.probs, traj.y, E, 99)
    q_expert = qce_sum(traj.x.expert.probs, traj.y, E, 99)
    print(f"\nQCE expert {q_expert:.4f} -> ORCA {q_orca:.4f}")
    assert q_orca < q_expert / 2


@pytest.mark.slow
def test_excess_crps_over_the_expert_shrinks_like_one_over_sqrt_t():
    # Theorem 4.3 through the regret block (Prop. 4.4): the CRPS excess over the expert is a
    # coordinate of π̄, so it is at most sqrt(B_R)·‖π̄_T‖ ≤ sqrt(B_R·B/T); measured √T·excess:
    # 0.49 at T = 250, 0.48 at T = 1000 (0.44 at T = 4000 in a longer run)
    from jcalib.scoring import crps

    f = ORCA(start="expert")
    T = 1000
    traj = jcalib.core.play(f, OverconfidentGaussian(), T, key=jax.random.key(0))
    gap = np.asarray(jax.vmap(crps)(traj.forecast, traj.y) - jax.vmap(crps)(traj.x.expert, traj.y))
    b_reg = f.payoff.blocks[1].bound()
    scaled = {t: np.sqrt(t) * gap[:t].mean() for t in (250, T)}
    print(f"\n√T · (CRPS ORCA − CRPS expert): {scaled}; Theorem 4.3 allows √(B_R·B) = {np.sqrt(b_reg * f.payoff.bound()):.2f}")
    assert all(v <= np.sqrt(b_reg * f.payoff.bound()) for v in scaled.values())
    assert scaled[T] <= 1.1 * scaled[250]  # a 1/√T rate (a slower one would grow here)


def test_gaussian_mixture_family():
    f = ORCA(payoff=QuantileCalibration(9), edges=E10, n_steps=5, family="gaussian_mixture", n_components=3)
    theta = f.init_theta()
    c = jnp.asarray(np.random.default_rng(3).normal(size=9), theta.dtype)
    assert float(jnp.linalg.norm(jax.grad(lambda t: f.objective(t, c, None))(theta))) > 0
    p = f.distribution(theta)
    np.testing.assert_allclose(float(p.probs.sum()), 1, rtol=1e-5)


@pytest.mark.slow
def test_gaussian_mixture_family_predicts():
    f = ORCA(payoff=QuantileCalibration(9), edges=E10, n_steps=5, family="gaussian_mixture", n_components=3)
    c = jnp.asarray(np.random.default_rng(3).normal(size=9), f.init_theta().dtype)
    state = f.init(jax.random.key(0))._replace(total=c, count=jnp.ones((), jnp.int32))
    fc = eqx.filter_jit(f.predict)(state, None, jax.random.key(0))
    np.testing.assert_allclose(float(fc.value.probs.sum()), 1, rtol=1e-5)


def test_conformance(x64):
    # in float64: Adam's iterates amplify the ulp-level differences between the batched and the
    # unbatched programs (float32: ~3e-6 relative after a few rounds, over conformance's 1e-6)
    E5 = uniform_edges(5)
    pair = tuple(ORCA(payoff=experiment_payoff(3), edges=E5, n_steps=3, learning_rate=lr) for lr in (0.05, 0.02))
    check_forecaster(pair, OverconfidentGaussian(edges=E5), space="interval")


def test_bad_input():
    f = ORCA(payoff=QuantileCalibration(9), edges=E10, n_steps=2)
    state = f.init(jax.random.key(0))
    fc = f.predict(state, None, jax.random.key(0))
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(Exception, match="outside"):
            jax.block_until_ready(jax.jit(f.update)(state, None, fc, jnp.asarray(bad)))
    with pytest.raises(ValueError, match="family"):
        ORCA(family="other")
    with pytest.raises(ValueError, match="start"):
        ORCA(start="other")
    with pytest.raises(ValueError, match="edges"):
        ORCA(edges=(0.0, 0.5, 0.5, 1.0))
    with pytest.raises(ValueError, match="learning_rate"):
        ORCA(learning_rate=-1.0)
    with pytest.raises(ValueError, match="logit_range"):
        ORCA(logit_range=0.0)
    for bad in ((0.0,), (1.5,), [0.5], ("a",)):
        with pytest.raises(ValueError, match="spike_weights"):
            ORCA(spike_weights=bad)
    with pytest.raises(ValueError, match="scalar"):
        f.update(state, None, fc, jnp.zeros(2))


def test_payoff_range_must_match_the_edges():
    wide = tuple(float(v) for v in np.linspace(0.0, 10.0, 11))
    # the default payoff's blocks are built for [0, 1]: on [0, 10] its ||pi||^2 reaches 2236 > B = 3
    with pytest.raises(ValueError, match=r"ExpertRegret is built for outcomes in \[0.0, 1.0\].*lo=0.0, hi=10.0"):
        ORCA(edges=wide)
    with pytest.raises(ValueError, match="MomentCalibration"):
        ORCA(payoff=jcalib.payoffs.MomentCalibration((1, 2), 0.0, 2.0), edges=E10)
    f = ORCA(payoff=experiment_payoff(9, 0.0, 10.0), edges=wide, n_steps=2)
    assert f.payoff.bound() == 3.0


def test_regret_payoff_without_an_expert_is_refused_at_trace_time():
    # IIDInterval has no context: the default payoff's regret block has no expert to compare with
    f = ORCA(edges=E10, n_steps=2)
    with pytest.raises(ValueError, match="ExpertRegret.*without the regret block"):
        jcalib.core.play(f, IIDInterval.skewed(10), 3, key=jax.random.key(0))
    f.check_context(PiecewiseConstant.from_logits(jnp.zeros(10), E10))  # an expert passes


def test_per_cell_recalibration_runs_one_orca_per_cell():
    from jcalib.forecasters import Partitioned
    from jcalib.forecasters.orca import ExpertMeanCells

    inner = ORCA(payoff=experiment_payoff(3), edges=uniform_edges(5), n_steps=3)
    f = Partitioned(inner, 3, ExpertMeanCells(3))
    nat = OverconfidentGaussian(edges=uniform_edges(5))
    fs = f.init(jax.random.key(0))
    ns = nat.init(jax.random.key(1))
    x = nat.context(ns, jax.random.key(2))
    cell = int(ExpertMeanCells(3)(x))

    @eqx.filter_jit
    def round_(fs, x):
        return f.update(fs, x, f.predict(fs, x, jax.random.key(3)), jnp.asarray(0.5))

    fs2 = round_(fs, x)
    counts = np.asarray(fs2.cells.count)
    assert counts[cell] == 1 and counts.sum() == 1  # only the active cell's instance moved


class _RampAndStep(jcalib.payoffs.AbstractExpectations):
    """A user's payoff that jumps in y: (y - E_p y, 1{y <= t} - F_p(t)) with t off the check grid.

    Along c = (1, 1) its supremum over y is at y = t (the ramp's largest value left of the step),
    which no grid point reaches; declaring the jump lets the pointwise certificate see it."""

    t: float = 0.537
    declare: bool = eqx.field(static=True, default=True)

    @property
    def dim(self):
        return 2

    def __call__(self, x, p, y):
        y = jnp.asarray(y)
        t = jnp.asarray(self.t, y.dtype)
        return jnp.stack([y - p.mean().astype(y.dtype), (y <= t).astype(y.dtype) - p.cdf(t).astype(y.dtype)])

    def bound(self):
        return 2.0

    def expect_uniform(self, x, p, lo, hi):
        t = jnp.asarray(self.t, lo.dtype)
        step = jnp.clip((t - lo) / (hi - lo), 0, 1) - p.cdf(t).astype(lo.dtype)
        return jnp.stack([(lo + hi) / 2 - p.mean().astype(lo.dtype), step], axis=-1)

    def jumps(self, x, p):
        if self.declare:
            return jnp.asarray([self.t], p.dtype)
        return super().jumps(x, p)


def test_a_users_jumping_payoff_gets_an_exact_pointwise_certificate(x64):
    state_for = lambda f: f.init(jax.random.key(0))._replace(total=jnp.ones(2), count=jnp.ones((), jnp.int32))  # noqa: E731
    out = {}
    for declare in (True, False):
        f = ORCA(payoff=_RampAndStep(declare=declare), edges=E10, n_steps=5, spike_weights=())
        fc = f.predict(state_for(f), None, jax.random.key(1))
        p = fc.value
        exact = 0.537 + 1.0 - float(p.mean()) - float(p.cdf(0.537))  # sup over y, attained at y = t
        out[declare] = float(fc.certificate.pointwise), exact
    got, exact = out[True]
    # 1e-4 * range: the check points sit eps = 1e-4 to either side of a jump; the ramp has slope 1
    assert exact - 1.1e-4 <= got <= exact + 1e-12
    # undeclared, the grid (spacing 0.0125) misses the supremum by t - 0.525 = 0.012
    got_blind, exact_blind = out[False]
    assert exact_blind - got_blind > 0.01


def test_best_start_is_the_argmin_over_the_spiked_mixtures(x64):
    # brute force: the inner max of θ itself and of every mixture (1-γ)p + γδ_j (explicit
    # PiecewiseConstant), clipped at 0 (satisfice); the start returned is that candidate's projection
    f = ORCA(edges=E10, payoff=experiment_payoff(19), spike_weights=(0.5, 0.9))
    rng = np.random.default_rng(0)
    chosen = []
    for s in range(4):
        theta = f.project(jnp.asarray(rng.normal(size=10) * 2))
        x = PiecewiseConstant.from_logits(jnp.asarray(rng.normal(size=10)), E10)
        c = jnp.asarray(rng.normal(size=f.payoff.dim))
        p = np.asarray(f.distribution(theta).probs)
        vals = [float(jnp.max(f.component_values(theta, c, x)))]
        for g in f.spike_weights:
            for j in range(10):
                mix = PiecewiseConstant(jnp.asarray((1 - g) * p + g * np.eye(10)[j]), E10)
                vals.append(float(jnp.max(f.payoff.expect_bins_along(x, mix, E10, c))))
        best = int(np.argmin(np.maximum(vals, 0)))
        chosen.append(best)
        np.testing.assert_allclose(np.asarray(f.best_start(theta, c, x)), np.asarray(f.spikes(theta)[best]), rtol=1e-12)
    assert any(b > 0 for b in chosen)  # a spike, not only the start itself, was chosen


def test_unrolled_inner_loop_plays_the_same_rounds():
    """``unroll`` compiles the Adam loop with that many steps per iteration: the same steps, so
    the same forecasts and certificates round after round (the warm start included); a new
    learning rate with the same ``unroll`` is the same program."""
    nature = IIDInterval.skewed(10)
    kw = dict(payoff=QuantileCalibration(9), edges=E10, n_steps=5, spike_weights=(0.9,))

    def run(f, key):
        traj = jcalib.core.play(f, nature, 2, key=key)
        return traj.forecast.probs, traj.certificate

    chex.clear_trace_counter()
    traced = eqx.filter_jit(chex.assert_max_traces(run, n=2))  # one trace per value of unroll
    lr = jnp.asarray(0.05)  # an array: a traced field (a Python float would be static under filter_jit)
    rolled = traced(ORCA(unroll=1, learning_rate=lr, **kw), jax.random.key(0))
    unrolled = traced(ORCA(unroll=np.int64(2), learning_rate=lr, **kw), jax.random.key(0))  # 2 does not divide 5
    for a, b in zip(jax.tree.leaves(unrolled), jax.tree.leaves(rolled)):
        # the unrolled copies of a step fuse differently: an ulp (measured 6e-8 on a bin mass
        # after 6 rounds of 40 steps), far below the rounds' own chaotic drift
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    traced(ORCA(unroll=2, learning_rate=jnp.asarray(0.02), **kw), jax.random.key(1))  # no new trace
    assert ORCA(unroll=np.int64(4)).unroll == 4 and ORCA().unroll is None
    for bad in (0, -3, True, 2.0, "4"):
        with pytest.raises(ValueError, match="unroll"):
            ORCA(unroll=bad)


class _MeanOnly(jcalib.payoffs.AbstractPayoff):
    """A user's payoff written as a definition only (value, dim, bound): mean calibration."""

    @property
    def dim(self):
        return 1

    def __call__(self, x, p, y):
        y = jnp.asarray(y)
        return jnp.stack([p.mean().astype(y.dtype) - y])

    def bound(self):
        return 1.0


def test_a_payoff_with_only_its_definition_runs_with_orca(x64):
    # ORCA reaches the payoff through DefaultExpectations (quadrature, vmap over outcomes); on a
    # payoff linear in y the 3-node quadrature is exact, so the component values are E_p y - mid_k
    f = ORCA(payoff=_MeanOnly(), edges=E10, n_steps=10, spike_weights=(0.5,))
    assert isinstance(f.expectations, jcalib.payoffs.DefaultExpectations)
    theta = jnp.asarray(np.random.default_rng(0).normal(size=10))
    p = f.distribution(theta)
    mids = (np.asarray(E10[:-1]) + np.asarray(E10[1:])) / 2
    np.testing.assert_allclose(np.asarray(f.component_values(theta, jnp.ones(1), None)), float(p.mean()) - mids, atol=1e-12)
    traj = jcalib.core.play(f, IIDInterval.skewed(10), 20, key=jax.random.key(0))
    assert traj.certificate.value.shape == (20,) and np.all(np.isfinite(np.asarray(traj.certificate.pointwise)))

"""Algorithm 1 of Marx et al. (2024): Theorem 4.3 (T ||π̄_T||² <= B for every T) with exact oracles
against adaptive and oblivious outcomes, Prop. 4.4 per block, Prop. 4.1 with the certificates,
parity with a NumPy loop, exact running sums, conformance, and Theorem 5.2 for per-cell
recalibration."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import check_forecaster
from reference.blackwell import kakade_foster_run

import jcalib
from jcalib.forecasters import BlackwellForecaster, Partitioned, UniformCells
from jcalib.natures import Bernoulli, Contrarian, DistortedModel, HalfSpaceAdversary
from jcalib.payoffs import (
    BinaryCalibration,
    ConformalOracle,
    DirectSum,
    KakadeFoster,
    MomentOracle,
    SmoothConformalOracle,
)

Q_GRID = jnp.linspace(0.0, 1.0, 9)  # Q_t(a_i) of the conformal tests (uniform outcomes)


def payoff_path(f, traj, x=None):
    """‖Σ_{s<=t} π_s‖² / t for every t (= t ‖π̄_t‖²), recomputed from the history."""
    pis = jax.vmap(lambda fc, y: f.payoff(x, fc, y))(traj.public if traj.public is not None else traj.forecast, traj.y)
    sums = jnp.cumsum(pis.astype(jnp.float64), axis=0)
    t = jnp.arange(1, pis.shape[0] + 1, dtype=jnp.float64)
    return np.asarray(jnp.sum(sums**2, axis=1) / t), np.asarray(sums)


def run(f, nature, T, seed=0):
    return jcalib.core.play(f, nature, T, key=jax.random.key(seed), record=jcalib.recorders.History(mixtures=True))


THEOREM_CASES = {
    "kf-adversary": (KakadeFoster(10), lambda p: HalfSpaceAdversary(p, binary=True)),
    "kf-contrarian": (KakadeFoster(10), lambda p: Contrarian()),
    "kf-bernoulli": (KakadeFoster(10), lambda p: Bernoulli(0.3)),
    "kf-real-adversary": (KakadeFoster(16), lambda p: HalfSpaceAdversary(p, n_grid=33)),
    "moment-adversary": (MomentOracle(5), lambda p: HalfSpaceAdversary(p, n_grid=41)),
    "smooth-conformal-adversary": (
        SmoothConformalOracle(0.3, 8),
        lambda p: HalfSpaceAdversary(p, n_grid=41, context_value=Q_GRID),
    ),
}


@pytest.mark.parametrize("case", list(THEOREM_CASES))
def test_theorem_4_3(x64, case):
    oracle, nature = THEOREM_CASES[case]
    f = BlackwellForecaster.from_oracle(oracle)
    nat = nature(f.payoff)
    x = Q_GRID if "conformal" in case else None
    T = 10_000
    traj = run(f, nat, T)
    path, _ = payoff_path(f, traj, x)
    B = f.payoff.bound()
    # Theorem 4.3 at every T <= 10^4; 1e-9: float64 rounding of the sums
    assert np.all(path <= B + 1e-9), (path.max(), B)
    assert np.all(np.asarray(traj.certificate) <= 1e-9)
    print(f"\n{case}: max_T T||pibar_T||^2 = {path.max():.4f} (B = {B}), final {path[-1]:.4f}")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["kf-adversary", "moment-adversary"])
def test_theorem_4_3_long(x64, case):
    oracle, nature = THEOREM_CASES[case]
    f = BlackwellForecaster.from_oracle(oracle)
    traj = run(f, nature(f.payoff), 100_000)
    path, _ = payoff_path(f, traj)
    assert np.all(path <= f.payoff.bound() + 1e-9)
    print(f"\n{case} T=1e5: max T||pibar||^2 = {path.max():.4f} (B = {f.payoff.bound()})")


def test_proposition_4_1_with_certificates(x64):
    # with an ε-oracle the certificates enter: T||π̄_T||² <= B + 2 Σ_t (t-1)/t ... in sum form,
    # ||S_T||² <= T B + 2 Σ_t <S_{t-1}, π_t> and <S_{t-1}, π_t> <= (t-1) cert_t.
    oracle = ConformalOracle(0.3, 8)
    f = BlackwellForecaster.from_oracle(oracle)
    T = 1500
    traj = run(f, HalfSpaceAdversary(f.payoff, n_grid=41, context_value=Q_GRID), T)
    path, sums = payoff_path(f, traj, Q_GRID)
    t = np.arange(1, T + 1)
    cert = np.asarray(traj.certificate)
    slack = 2 * np.cumsum((t - 1) * np.maximum(cert, 0)) / t
    assert np.all(path <= f.payoff.bound() + slack + 1e-9)
    # an ε-oracle (⟨π̄, π⟩ <= ε‖π̄‖ every round) keeps ‖S_T‖ <= εT + √(BT) by induction
    # (‖S_t‖² <= (‖S_{t-1}‖ + ε)² + B), so ‖π̄_T‖ <= ε + √(B/T) with the measured ε
    norms = np.sqrt(np.sum(sums[:-1] ** 2, axis=1)) / t[:-1]
    eps = np.max(np.where(norms > 0, cert[1:] / np.maximum(norms, 1e-300), 0.0))
    assert np.sqrt(path[-1] / T) <= eps + np.sqrt(f.payoff.bound() / T) + 1e-9


def test_conformal_ball_is_not_one_over_m():
    # Marx, Kuleshov, Ermon et al. says the corrected oracle certifies ⟨π̄, π⟩ <= ε‖π̄‖ for any ε > 1/M. An adversarial
    # path (seed 0 above) reaches π̄ = (-a, -a, -a, b, ..., b) with only a negative-to-positive
    # bracket: there the LP optimum itself is 0.148‖π̄‖ > ‖π̄‖/8, and the oracle attains it
    from scipy.optimize import linprog

    pibar = np.array([-0.0727] * 3 + [0.0312] * 6)
    beta, A = 0.3, 9
    rows = [[pibar[a] * ((r <= a) - beta) for a in range(A)] + [-1.0] for r in range(A + 1)]
    lp = linprog(c=[0.0] * A + [1.0], A_ub=rows, b_ub=[0.0] * (A + 1), A_eq=[[1.0] * A + [0.0]], b_eq=[1.0],
                 bounds=[(0, None)] * A + [(None, None)])
    assert lp.fun / np.linalg.norm(pibar) > 1 / 8 + 0.02
    from jcalib.payoffs.oracles import conformal_certificate

    q = ConformalOracle(0.3, 8).mixed_strategy(jnp.asarray(pibar))
    # the oracle attains the LP value here (1e-3 relative: mirror-prox's fixed step count)
    assert float(conformal_certificate(jnp.asarray(pibar), q, 0.3)) == pytest.approx(lp.fun, rel=1e-3)


def test_proposition_4_4_per_block(x64):
    blocks = (BinaryCalibration(3), BinaryCalibration(6))
    payoff = DirectSum(blocks)
    f = BlackwellForecaster(payoff, KakadeFoster(6, sum_payoff=payoff))
    T = 5000
    traj = run(f, HalfSpaceAdversary(payoff, binary=True), T)
    _, sums = payoff_path(f, traj)
    t = np.arange(1, T + 1)
    for sl, b, scale in zip(payoff.slices(), blocks, payoff.scales()):
        raw = sums[:, sl] / scale  # the block in its own units
        assert np.all(np.sum(raw**2, 1) / t <= len(blocks) * b.bound() + 1e-9)


def test_parity_with_numpy_loop(x64):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    f = BlackwellForecaster.from_oracle(KakadeFoster(7))
    traj = jcalib.core.play(f, jcalib.natures.Replay(jnp.asarray(y, jnp.int32)), 300, key=jax.random.key(0))
    forecasts, certs, means = kakade_foster_run(y, 7)
    np.testing.assert_allclose(np.asarray(traj.forecast), forecasts, atol=1e-12)
    np.testing.assert_allclose(np.asarray(traj.certificate), certs, atol=1e-12)


def test_running_sum_is_exact(x64):
    # the state keeps Σπ and an int count: the mean after T rounds equals the float64 sum / T
    f = BlackwellForecaster.from_oracle(KakadeFoster(7))
    state = f.init(jax.random.key(0))
    y = jnp.asarray(np.random.default_rng(1).integers(0, 2, 2000), jnp.int32)

    def step(s, yt):
        fc = f.predict(s, None, jax.random.key(0))
        return f.update(s, None, fc, yt), f.payoff(None, fc.public, yt)

    final, pis = jax.lax.scan(step, state, y)
    assert int(final.count) == 2000
    np.testing.assert_allclose(np.asarray(final.mean()), np.asarray(pis).sum(0) / 2000, rtol=1e-13)


def test_conformance_binary():
    # the randomised oracle: a published Mixture (the deterministic path is in the tests above)
    f = BlackwellForecaster.from_oracle(KakadeFoster(8, quasi=True))
    check_forecaster((f, f), Contrarian(), space="binary")


def test_conformance_interval():
    pair = tuple(BlackwellForecaster.from_oracle(SmoothConformalOracle(b, 8)) for b in (0.3, 0.4))
    check_forecaster(pair, HalfSpaceAdversary(pair[0].payoff, n_grid=21, context_value=Q_GRID), space="interval")


def test_theorem_5_2_per_cell_recalibration(x64):
    # App. D: one Algorithm-1 instance per cell of the expert's forecast. Calibration holds in
    # every cell (Theorem 4.3 per cell) and the Brier regret against the expert is at most
    # 2Bε + C/√T; the constants below are measured, not taken from the proof (Marx, Kuleshov, Ermon et al.).
    n_cells, m, T = 8, 16, 20_000
    inner = BlackwellForecaster.from_oracle(KakadeFoster(m))
    f = Partitioned(inner, n_cells, UniformCells(n_cells))
    nat = DistortedModel(slope=2.5, shift=0.5)
    traj = jcalib.core.play(f, nat, T, key=jax.random.key(3))
    q, p, y = (np.asarray(a, np.float64) for a in (traj.x, traj.forecast, traj.y))
    cells = np.minimum((q * n_cells).astype(int), n_cells - 1)
    worst_cal = 0.0
    for c in range(n_cells):
        sel = cells == c
        if sel.sum() == 0:
            continue
        pis = np.maximum(0, 1 - np.abs(m * p[sel, None] - np.arange(m + 1))) * (p[sel] - y[sel])[:, None]
        cal = np.sum(pis.sum(0) ** 2) / sel.sum()
        assert cal <= inner.payoff.bound() + 1e-9  # Theorem 4.3 inside the cell
        worst_cal = max(worst_cal, np.sqrt(cal / sel.sum()))
    regret = (np.mean((p - y) ** 2) - np.mean((q - y) ** 2))
    eps, B = 1 / n_cells, 1.0
    C = max(0.0, regret - 2 * B * eps) * np.sqrt(T)
    print(f"\nTheorem 5.2: Brier regret/T = {regret:.5f} (<= 2Bε = {2 * B * eps:.3f}), C = {C:.3f}; "
          f"worst per-cell ||pibar|| = {worst_cal:.5f}")
    assert regret <= 2 * B * eps + 1.0 / np.sqrt(T)
    assert regret < 0  # recalibrating an overconfident, biased model improves its Brier score

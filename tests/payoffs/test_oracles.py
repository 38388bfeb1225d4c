"""App. C oracles: certificates checked by brute force over y, the corrected adaptive-conformal
rule against scipy's LP (and the paper's rule failing on its counter-example), parity with NumPy."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.payoffs import (
    conformal_certificate,
    conformal_lp,
    conformal_rule,
    freudenthal_dense,
    moment_certificate_brute,
    tent_root,
)

from jcalib.core import Mixture
from jcalib.payoffs import (
    BinaryCalibration,
    ConformalOracle,
    DirectSum,
    KakadeFoster,
    MomentOracle,
    QuantileStepOracle,
    SmoothConformalOracle,
    game_value_mirror_prox,
)
from jcalib.payoffs import tent_root as jtent_root

KEY = jax.random.key(0)


@eqx.filter_jit
def call(oracle, c, x=None):
    """One compiled program per oracle configuration (the loops below call it many times)."""
    return oracle(c, x, KEY)


@eqx.filter_jit
def inner(payoff, c, x, public, ys):
    """<c, π(x, public, y)> for every y of ys."""
    return jax.vmap(lambda y: jnp.dot(c, payoff(x, public, y)))(ys)
COUNTER = np.array([-1.0, -0.5, -0.2, 0.3, 0.7, 1.0])



def test_paper_rule_fails_on_counter_example(x64):
    c, beta = jnp.asarray(COUNTER), 0.3
    paper = call(ConformalOracle(jnp.asarray(beta), 5, rule="paper"), c)
    lp_value, _ = conformal_lp(COUNTER, beta)
    assert float(paper.certificate) == pytest.approx(0.12, abs=1e-12)
    assert lp_value == pytest.approx(0.06, abs=1e-9) and lp_value > 0
    fixed = call(ConformalOracle(jnp.asarray(beta), 5), c)
    # the corrected rule reaches the LP optimum (to the mirror-prox tolerance) and the ε-ball
    assert float(fixed.certificate) <= lp_value + 1e-3
    assert float(fixed.certificate) <= np.linalg.norm(COUNTER) / 5


@pytest.mark.parametrize("M", [3, 6, 12])
def test_corrected_rule_against_lp(x64, M):
    rng = np.random.default_rng(M)
    worst = 0.0
    for trial in range(45):
        c = rng.normal(size=M + 1)
        if trial % 3 == 0:
            c = np.sort(c)  # the single-crossing case where only the LP helps
        beta = float(rng.uniform(0.05, 0.95))
        fc = call(ConformalOracle(jnp.asarray(beta), M), jnp.asarray(c))  # traced beta: one compile
        q = np.asarray(fc.public.probs)
        cert = float(fc.certificate)
        np.testing.assert_allclose(cert, conformal_certificate(c, q, beta), atol=1e-10)
        lp_value, _ = conformal_lp(c, beta)
        worst = max(worst, cert / np.linalg.norm(c) * M)
        ref = conformal_rule(c)
        if ref is not None:  # cases 1-4: exact half-space forecasts
            np.testing.assert_allclose(q, ref, atol=1e-12)
            assert cert <= 1e-12
        else:  # case 5: the LP's value, to mirror-prox's tolerance (2e-3 max|A| after 500 steps)
            assert lp_value > 0
            assert cert <= lp_value + 2e-3 * np.abs(c).max()
    assert worst < 1.0  # <c, π> <= ε ||c|| with ε = 1/M: Lemma C.1's ball, measured


def test_paper_rule_parity(x64):
    rng = np.random.default_rng(0)
    for _ in range(30):
        c = rng.normal(size=7)
        q = np.asarray(call(ConformalOracle(0.4, 6, rule="paper"), jnp.asarray(c)).public.probs)
        np.testing.assert_allclose(q, conformal_rule(c, "paper"), atol=1e-12)


def test_mirror_prox_solves_small_games(x64):
    rng = np.random.default_rng(1)
    for _ in range(10):
        c = rng.normal(size=6)
        from reference.payoffs import conformal_matrix

        A = conformal_matrix(c, 0.3)
        q = np.asarray(game_value_mirror_prox(jnp.asarray(A), 2000))
        lp_value, _ = conformal_lp(c, 0.3)
        # mirror-prox's duality gap: <= max|A| log(r n) / n_steps (Nemirovski 2004, entropic set-up)
        assert np.max(A @ q) <= lp_value + np.abs(A).max() * np.log(A.size) / 2000


def test_tent_root_parity_and_kakade_foster_certificates(x64):
    rng = np.random.default_rng(2)
    ys = jnp.linspace(0, 1, 101)
    for _ in range(40):
        c = rng.normal(size=9)
        f, _, _ = jtent_root(jnp.asarray(c))
        assert float(f) == pytest.approx(tent_root(c), abs=1e-12)
        for quasi in (False, True):
            o = KakadeFoster(8, quasi=quasi)
            fc = call(o, jnp.asarray(c))
            vals = np.asarray(inner(o.payoff, jnp.asarray(c), None, fc.public, ys)).tolist()
            assert float(fc.certificate) == pytest.approx(max(vals), abs=1e-12)
            bound = 0.0 if not quasi else np.linalg.norm(c) / 8
            assert max(vals) <= bound + 1e-12


def test_kakade_foster_on_a_direct_sum(x64):
    payoff = DirectSum((BinaryCalibration(3), BinaryCalibration(6)))
    o = KakadeFoster(6, sum_payoff=payoff)
    rng = np.random.default_rng(3)
    for _ in range(30):
        c = jnp.asarray(rng.normal(size=payoff.dim))
        fc = call(o, c)
        vals = np.asarray(inner(payoff, c, None, fc.value, jnp.array([0.0, 1.0]))).tolist()
        assert max(vals) <= 1e-12 and float(fc.certificate) == pytest.approx(max(vals), abs=1e-12)


def test_smooth_conformal_certificate_is_zero(x64):
    rng = np.random.default_rng(4)
    x = jnp.linspace(-2, 2, 9)  # Q_t at the 9 levels
    o = SmoothConformalOracle(0.2, 8)
    for _ in range(30):
        c = jnp.asarray(rng.normal(size=9))
        fc = call(o, c, x)
        vals = np.asarray(inner(o.payoff, c, x, fc.value, jnp.linspace(-3, 3, 121))).tolist()
        assert max(vals) <= 1e-12 and float(fc.certificate) >= max(vals) - 1e-12


@pytest.mark.parametrize("quasi", [False, True])
def test_moment_oracle_by_brute_force(x64, quasi):
    m = 5
    o = MomentOracle(m, quasi=quasi)
    rng = np.random.default_rng(5)
    ys = jnp.linspace(0, 1, 401)
    for trial in range(25):
        c = rng.normal(size=2 * (m + 1) ** 2)
        if trial % 5 == 0:
            c = np.abs(c) * (1 if trial % 2 else -1)  # boundary fixed points (edges and corners)
        fc = call(o, jnp.asarray(c))
        vals = np.asarray(inner(o.payoff, jnp.asarray(c), None, fc.public, ys))
        assert float(fc.certificate) >= vals.max() - 1e-9  # the certificate is an exact max
        if quasi:
            cc = c.reshape(-1, 2)
            assert vals.max() <= np.sqrt(2) * np.linalg.norm(cc, axis=1).max() / m + 1e-9
        else:
            assert vals.max() <= 1e-9
            ref = moment_certificate_brute(c, np.asarray(fc.value), lambda f: freudenthal_dense(f, m))
            assert ref <= 1e-9


def test_quantile_step_oracle_by_brute_force(x64):
    o = QuantileStepOracle(9, 0.0, 1.0)
    rng = np.random.default_rng(6)
    inner_ys = jnp.linspace(1e-6, 1, 500)  # outcomes in (y_min, y_max]
    ys = jnp.concatenate([jnp.zeros(1), inner_ys])  # and y = y_min itself
    for _ in range(30):
        c = jnp.asarray(rng.normal(size=9))
        fc = call(o, c)
        assert np.asarray(inner(o.payoff, c, None, fc.value, inner_ys)).max() <= 1e-12
        vals = np.asarray(inner(o.payoff, c, None, fc.value, ys))
        assert float(fc.certificate) == pytest.approx(vals.max(), abs=1e-12)


def test_quantile_step_certificate_at_lower_end(x64):
    # every indicator is 1 at y = y_min: the payoff there is sum_a c_a (1 - a), which the
    # certificate must cover even where it is positive (it used to report only y > y_min)
    o = QuantileStepOracle(4, 2.0, 5.0)
    c = jnp.asarray([0.9, -0.2, 0.3, -0.1])
    fc = call(o, c)
    at_min = float(jnp.dot(c, o.payoff(None, fc.value, jnp.asarray(2.0))))
    a = np.arange(1, 5) / 5
    assert at_min == pytest.approx(float(np.dot(np.asarray(c), 1 - a)), abs=1e-12)
    assert at_min > 0
    assert float(fc.certificate) == pytest.approx(at_min, abs=1e-12)


def test_conformal_mixture_is_published():
    fc = ConformalOracle(0.3, 5)(jnp.asarray(COUNTER, jnp.float32), None, KEY)
    assert isinstance(fc.public, Mixture)
    np.testing.assert_allclose(float(jnp.sum(fc.public.probs)), 1.0, rtol=1e-6)
    assert bool(jnp.any(fc.public.support == fc.value))


def test_oracle_bad_settings():
    with pytest.raises(ValueError, match="rule"):
        ConformalOracle(0.3, 5, rule="other")
    with pytest.raises(ValueError, match="beta"):
        ConformalOracle(1.5, 5).payoff
    with pytest.raises(ValueError, match="n_ticks"):
        MomentOracle(0)
    with pytest.raises(ValueError, match="quasi"):
        KakadeFoster(4, quasi=True, sum_payoff=BinaryCalibration(4))


def test_incomplete_oracle_cannot_be_instantiated():
    from jcalib.payoffs import AbstractOracle, BinaryCalibration

    class NoCall(AbstractOracle):
        @property
        def payoff(self):
            return BinaryCalibration(4)

    with pytest.raises(TypeError, match="abstract.*__call__"):
        NoCall()

    class NoPayoff(AbstractOracle):
        def __call__(self, c, x, key):
            return None

    with pytest.raises(TypeError, match="abstract.*payoff"):
        NoPayoff()


def test_quantile_step_and_conformal_settings_are_checked():
    for bad, match in (({"n_levels": 0}, "n_levels"), ({"n_levels": 2.5}, "n_levels"), ({"y_min": float("nan")}, "y_min"),
                       ({"y_min": [0.0, 0.1]}, "y_min"), ({"y_min": 2.0}, "y_min < y_max")):
        with pytest.raises(ValueError, match=match):
            QuantileStepOracle(**{"n_levels": 4, **bad})
    assert QuantileStepOracle(np.int64(4)).n_levels == 4
    for cls in (ConformalOracle, SmoothConformalOracle):
        for beta in (float("nan"), -0.1, 1.0):
            with pytest.raises(ValueError, match="beta"):
                cls(beta, 5)
    with pytest.raises(ValueError, match="lp_steps"):
        ConformalOracle(0.3, 5, lp_steps=0)


def test_the_public_kernels_check_their_inputs():
    from jcalib import payoffs

    with pytest.raises(ValueError, match="c must hold one value per grid point, at least two"):
        payoffs.tent_root(jnp.array([0.5]))
    with pytest.raises(ValueError, match="c contains NaN"):
        payoffs.tent_root(jnp.array([0.5, np.nan]))
    with pytest.raises(Exception, match="c must be finite"):
        jax.jit(payoffs.tent_root)(jnp.array([0.5, np.nan]))
    c, q = jnp.array([0.1, -0.2, 0.3]), jnp.array([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match=r"beta must be finite \(no NaN\) in \(0, 1\)"):
        payoffs.conformal_certificate(c, q, 1.5)
    with pytest.raises(ValueError, match="q must lie in"):
        payoffs.conformal_certificate(c, jnp.array([0.2, 0.3, 1.5]), 0.5)
    with pytest.raises(ValueError, match="q must sum to 1"):
        payoffs.conformal_certificate(c, jnp.array([0.2, 0.3, 0.6]), 0.5)
    with pytest.raises(ValueError, match="mismatched lengths: q"):
        payoffs.conformal_certificate(c, q[:2], 0.5)
    with pytest.raises(ValueError, match="n_steps must be"):
        payoffs.game_value_mirror_prox(jnp.eye(2), 0)
    with pytest.raises(ValueError, match="A contains NaN"):
        payoffs.game_value_mirror_prox(jnp.full((2, 2), np.nan), 3)
    with pytest.raises(ValueError, match=r"forecast must lie in \[0, 1\]"):
        payoffs.freudenthal(jnp.array([0.5, 1.5]), 4)
    with pytest.raises(ValueError, match=r"forecast must be a point .* shape \(2,\)"):
        payoffs.freudenthal(jnp.array([0.5, 0.5, 0.5]), 4)
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, 1\]"):
        payoffs.linearised_quantile(jnp.array([0.2]), jnp.array([0.4]), 1.5)
    with pytest.raises(ValueError, match="mean must have the payoff's dimension"):
        payoffs.direction(payoffs.BinaryCalibration(4), jnp.zeros(3))
    with pytest.raises(ValueError, match="payoff must be an AbstractPayoff"):
        payoffs.direction("x", jnp.zeros(3))
    with pytest.raises(ValueError, match=r"forecasts must lie in \[0, 1\]"):
        payoffs.tent_weights(jnp.array([0.2, 1.5]), 4)


def test_sizes_and_settings_of_payoffs_and_oracles():
    from jcalib import payoffs

    assert payoffs.BinaryCalibration(np.int64(4)).n_bins == 4 and type(payoffs.BinaryCalibration(np.int64(4)).n_bins) is int
    for make, match in ((lambda: payoffs.BinaryCalibration(10**12), "n_bins=1000000000000 exceeds"),
                        (lambda: payoffs.SwapRegret(lambda y, x: x, 10**12), "n_actions=1000000000000 is too large"),
                        (lambda: payoffs.MomentOracle(10**12), "n_ticks=1000000000000 exceeds"),
                        (lambda: payoffs.quantile_levels(10**12), "n=1000000000000 exceeds"),
                        (lambda: payoffs.DecisionCalibration("a", 3), "utility must be callable"),
                        (lambda: payoffs.DecisionCalibration(lambda y, x: x, 3, utility_range=float("nan")), "utility_range must be finite"),
                        (lambda: payoffs.MomentCalibration(hi=float("inf")), "hi must be finite"),
                        (lambda: payoffs.DistributionCalibration("x", 3), "cell_edges must be a sequence of real numbers"),
                        (lambda: payoffs.QuantileStepOracle(3, y_max=True), "y_max must be a real scalar")):
        with pytest.raises(ValueError, match=match):
            make()
    assert payoffs.MomentCalibration(lo=np.float32(0.0), hi=np.float64(2.0)).hi == 2.0

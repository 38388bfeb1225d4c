"""Interval natures: conformance, the i.i.d. stream's distribution, the adversary's argmax, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import check_nature

import jcalib
from jcalib.distributions import uniform_edges
from jcalib.forecasters import BlackwellForecaster
from jcalib.natures import HalfSpaceAdversary, IIDInterval, OverconfidentGaussian
from jcalib.payoffs import KakadeFoster

E10 = uniform_edges(10)


def kf():
    # a cheap forecaster of real outcomes in [0, 1] (mean calibration); ORCA's own conformance
    # runs in tests/forecasters/test_orca.py
    return BlackwellForecaster.from_oracle(KakadeFoster(8))


def test_conformance_iid():
    a = IIDInterval.skewed(10)
    b = IIDInterval(jnp.asarray(np.full(10, 0.1), jnp.result_type(float)), E10)
    check_nature((a, b), kf(), space="interval")


def test_conformance_overconfident():
    pair = (OverconfidentGaussian(edges=E10), OverconfidentGaussian(overconfidence=0.6, edges=E10))
    check_nature(pair, kf(), space="interval")


def test_conformance_adversary():
    # against a randomised forecaster: the adversary reads the published Mixture
    f = BlackwellForecaster.from_oracle(KakadeFoster(8, quasi=True))
    check_nature((HalfSpaceAdversary(f.payoff, n_grid=11),) * 2, f, space="interval")


def test_iid_draws_follow_the_density():
    nat = IIDInterval.skewed(10)
    traj = jcalib.core.play(kf(), nat, 4000, key=jax.random.key(0))
    counts = np.bincount(np.minimum((np.asarray(traj.y) * 10).astype(int), 9), minlength=10) / 4000
    # 4 standard errors of a frequency from 4000 draws
    assert np.all(np.abs(counts - np.asarray(nat.probs)) <= 4 * np.sqrt(0.25 / 4000))


def test_adversary_maximises_the_inner_product():
    f = BlackwellForecaster.from_oracle(KakadeFoster(8))
    adv = HalfSpaceAdversary(f.payoff, n_grid=11)
    state = adv.init(jax.random.key(0))._replace(total=jnp.linspace(-1, 1, 9), count=jnp.ones((), jnp.int32))
    p = jnp.asarray(0.4)
    y = adv.outcome(state, None, p, jax.random.key(1))
    vals = [float(jnp.dot(jnp.linspace(-1, 1, 9), f.payoff(None, p, yy))) for yy in adv.grid()]
    assert float(jnp.dot(jnp.linspace(-1, 1, 9), f.payoff(None, p, y))) == pytest.approx(max(vals))


def test_bad_input():
    with pytest.raises(ValueError, match="sum to 1"):
        IIDInterval(jnp.full(10, 0.2), E10)
    with pytest.raises(ValueError, match="NaN"):
        IIDInterval(jnp.full(10, jnp.nan), E10)
    with pytest.raises(ValueError, match="non-negative"):
        IIDInterval(jnp.asarray([1.5, -0.5] + [0.0] * 8), E10)
    with pytest.raises(ValueError, match="edges"):
        IIDInterval(jnp.full(3, 1 / 3), (0.0, 0.5, 0.5, 1.0))  # an empty (zero-width) bin
    with pytest.raises(ValueError, match="shape"):
        IIDInterval(jnp.full(4, 0.25), E10)
    with pytest.raises(ValueError, match="overconfidence"):
        OverconfidentGaussian(overconfidence=0.0)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"phi": 1.7}, r"phi must be finite \(no NaN\) in \(-1, 1\)"),  # sqrt(1 - phi^2) gave NaN streams
        ({"phi": float("nan")}, "phi must be finite"),
        ({"scale": "a"}, "scale must be a real scalar"),
        ({"spread": [0.1, 0.2]}, "spread must be a real scalar"),
        ({"overconfidence": 0.0}, r"overconfidence must be finite \(no NaN\) in"),
    ],
)
def test_overconfident_gaussian_hyperparameters(kw, match):
    with pytest.raises(ValueError, match=match):
        OverconfidentGaussian(**kw)


def test_half_space_adversary_checks_its_settings():
    from jcalib.natures import HalfSpaceAdversary
    from jcalib.payoffs import BinaryCalibration

    with pytest.raises(ValueError, match="n_grid=1000000000000 is too large"):
        HalfSpaceAdversary(BinaryCalibration(4), n_grid=10**12)
    for kw, match in (({"lo": float("nan")}, "lo must be finite"), ({"hi": "a"}, "hi must be a real scalar"),
                      ({"lo": 1.0, "hi": 0.0}, "need lo < hi")):
        with pytest.raises(ValueError, match=match):
            HalfSpaceAdversary(BinaryCalibration(4), **kw)
    assert HalfSpaceAdversary(BinaryCalibration(4), n_grid=np.int64(5), hi=np.float32(2.0)).hi == 2.0

"""Oblivious natures: outcomes follow the stated laws, settings are validated, Replay replays."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.forecasters import Constant
from jcalib.natures import Bernoulli, Drifting, Markov, Periodic, RegimeSwitch, Replay

KEY = jax.random.key(0)


def outcomes(natures, T, n_seeds):
    """(N, n_seeds, T) int outcomes of natures of one class against a constant forecaster, in
    one ``sweep`` (one compilation)."""
    y = jcalib.core.sweep(Constant(0.5), natures, T, key=KEY, n_seeds=n_seeds).y
    assert y.dtype == jnp.int32
    y = np.asarray(y)
    assert set(np.unique(y).tolist()) <= {0, 1}
    return y


def within(freq, p, n, sds=5):
    """|freq - p| within ``sds`` binomial standard deviations (plus a 1/n floor for p in {0,1})."""
    return abs(freq - p) <= sds * np.sqrt(p * (1 - p) / n) + 1 / n


@pytest.mark.parametrize(
    "make",
    [
        lambda: Bernoulli(1.2),
        lambda: Bernoulli(-0.1),
        lambda: Bernoulli(np.nan),
        lambda: Bernoulli((0.2, 0.3)),
        lambda: Drifting(0.1, 1.1, 10.0),
        lambda: Drifting(0.1, 0.9, 0.0),
        lambda: Periodic(0.5, 0.6, 10.0),
        lambda: Periodic(0.5, 0.1, -1.0),
        lambda: Markov(0.1, 2.0),
        lambda: RegimeSwitch((0.1, 1.3), 0.1),
        lambda: RegimeSwitch((), 0.1),
        lambda: RegimeSwitch(((0.1, 0.2),), 0.1),
        lambda: RegimeSwitch((0.1, 0.2), 1.5),
        lambda: Replay([0, 1, 2]),
        lambda: Replay([0.0, np.nan]),
        lambda: Replay([[0, 1], [1, 0]]),
        lambda: Replay([]),
        lambda: Replay(["a", "b"]),
    ],
)
def test_bad_settings_raise(make):
    with pytest.raises(ValueError):
        make()


def test_bernoulli_rate():
    ps = [0.0, 0.3, 1.0]
    for p, y in zip(ps, outcomes([Bernoulli(p) for p in ps], 200, 32)):
        assert within(y.mean(), p, y.size)


def test_drifting_rate_formula_and_draws():
    n = Drifting(0.1, 0.9, 100.0)
    t = jnp.array([0, 50, 100, 250], jnp.int32)
    np.testing.assert_allclose(np.asarray(jax.vmap(n.rate)(t)), [0.1, 0.5, 0.9, 0.9], rtol=1e-6)
    (y,) = outcomes([n], 200, 64)
    first = float(jnp.mean(jax.vmap(n.rate)(jnp.arange(10, dtype=jnp.int32))))
    assert within(y[:, :10].mean(), first, y[:, :10].size)
    assert within(y[:, 100:].mean(), 0.9, y[:, 100:].size)


def test_periodic_rate_formula_and_draws():
    n = Periodic(0.5, 0.4, 40.0)
    t = jnp.array([0, 10, 20, 30], jnp.int32)
    np.testing.assert_allclose(np.asarray(jax.vmap(n.rate)(t)), [0.5, 0.9, 0.5, 0.1], atol=1e-6)
    (y,) = outcomes([n], 160, 64)
    peaks, troughs = y[:, 10::40], y[:, 30::40]  # t = 10, 50, 90, 130 and t = 30, 70, ...
    assert within(peaks.mean(), 0.9, peaks.size) and within(troughs.mean(), 0.1, troughs.size)


def test_markov_chains():
    p01, p10 = 0.1, 0.3
    y, frozen, flip = outcomes([Markov(p01, p10), Markov(0.0, 0.0), Markov(1.0, 1.0)], 400, 32)
    prev, nxt = y[:, :-1].ravel(), y[:, 1:].ravel()
    assert within(np.mean(nxt[prev == 0]), p01, np.sum(prev == 0))
    assert within(1 - np.mean(nxt[prev == 1]), p10, np.sum(prev == 1))
    # started stationary: P(y = 1) = p01 / (p01 + p10) at every round, the first included
    assert within(y[:, 0].mean(), 0.25, 32, sds=6)
    assert np.all(frozen.std(axis=1) == 0)  # frozen at its start
    assert np.all(np.abs(np.diff(flip, axis=1)) == 1)  # alternates


def test_regime_switch_two_regimes():
    never, always, sometimes = outcomes([RegimeSwitch((0.0, 1.0), p) for p in (0.0, 1.0, 0.1)], 400, 16)
    # no switching, rates 0 and 1: each run is constant, and both regimes occur
    assert np.all(never.std(axis=1) == 0)
    assert 0 < never[:, 0].mean() < 1
    assert np.all(np.abs(np.diff(always, axis=1)) == 1)  # always switching: alternates
    switches = sometimes[:, 1:] != sometimes[:, :-1]
    assert within(switches.mean(), 0.1, switches.size)


def test_regime_switch_three_regimes_and_one():
    (y,) = outcomes([RegimeSwitch((0.0, 1.0, 0.0), 1.0)], 300, 8)
    # always switching to an *other* regime: never regime 1 twice in a row, and it is visited
    # about 1/2 of the time (from 0 or 2 the jump goes to 1 with probability 1/2)
    assert not np.any((y[:, 1:] == 1) & (y[:, :-1] == 1))
    assert within(y.mean(), 1 / 3, y.size, sds=8)  # stationary law (1/3 each); rounds correlate
    (y,) = outcomes([RegimeSwitch((0.7,), 0.5)], 100, 16)  # a single regime is Bernoulli
    assert within(y.mean(), 0.7, y.size)


def test_replay_replays_and_wraps():
    seq = np.array([1, 0, 0, 1, 1], np.int64)
    r = Replay(seq)
    assert r.y.dtype == jnp.int32
    traj = jcalib.core.play(Constant(0.5), r, 12, key=KEY)
    np.testing.assert_array_equal(np.asarray(traj.y), np.resize(seq, 12))
    assert Replay([True, False]).y.tolist() == [1, 0]
    assert Replay(np.array([1.0, 0.0])).y.tolist() == [1, 0]


def test_periodic_keeps_its_phase_at_large_t():
    """The residue t mod period is carried exactly: at t = 10^7 the float32 run's rate equals
    the float64 formula (computing 2πt/period from a float32 t was off by 5e-3 here)."""
    from jcalib.natures.oblivious import PeriodicState

    nat = Periodic(0.5, 0.4, 7.0)
    t = 10_000_000
    r = jnp.float32(np.fmod(t, 7.0))
    want = 0.5 + 0.4 * np.sin(2 * np.pi * np.fmod(t, 7.0) / 7.0)
    np.testing.assert_allclose(float(nat.rate_at(r)), want, atol=1e-6)
    # the incremental residue: advancing a state 10^5 rounds by update() stays exact for an
    # integer period
    def step(s, _):
        return nat.update(s, None, None, None, None), None

    s, _ = jax.lax.scan(step, PeriodicState(jnp.int32(t - 100_000), jnp.float32(np.fmod(t - 100_000, 7.0))), None, length=100_000)
    assert int(s.t) == t and float(s.r) == float(np.fmod(t, 7.0))


def test_replay_with_contexts_and_real_outcomes():
    y = np.array([0.5, -1.0, 2.0])
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    traj = jcalib.core.play(jcalib.forecasters.Constant(0.5), Replay(y, x, outcomes="real"), 4, key=jax.random.key(0))
    np.testing.assert_allclose(traj.y, [0.5, -1.0, 2.0, 0.5])
    np.testing.assert_allclose(traj.x, x[[0, 1, 2, 0]])
    assert jnp.issubdtype(traj.y.dtype, jnp.floating)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Replay([0, 1, 1], np.ones(2)), "leading axis"),
        (lambda: Replay([0, 1], np.array([0.1, np.nan])), "NaN"),
        (lambda: Replay([0.5, np.inf], outcomes="real"), "NaN"),
        (lambda: Replay([0, 1], outcomes="counts"), "outcomes"),
        (lambda: Replay([0.5, 1.0]), "0 or 1"),
    ],
)
def test_replay_bad_input_raises(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Drifting(horizon=[100.0, 200.0]), "horizon must be a real scalar"),  # changed the output shape
        (lambda: Drifting(start="0.2"), "start must be a real scalar"),
        (lambda: Periodic(amplitude=float("nan")), "amplitude must be finite"),
        (lambda: Bernoulli(prob=jnp.array([0.2, 0.4])), "prob must be a scalar"),
        (lambda: Markov(p01=1.5), r"p01 must be finite \(no NaN\) in \[0, 1\]"),
    ],
)
def test_hyperparameters_are_checked(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_stacked_hyperparameters_still_sweep():
    # concrete checks only: a sweep's stacked (traced) hyperparameters pass
    traj = jcalib.core.sweep(Constant(0.5), [Drifting(horizon=10.0), Drifting(horizon=20.0)], 5, key=jax.random.key(0), n_seeds=1)
    assert traj.y.shape[:2] == (2, 1)


def test_replay_refuses_non_real_or_non_finite_contexts():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import pytest

    from jcalib.natures import Replay

    with pytest.raises(ValueError, match="x must have a real floating dtype"):
        Replay(jnp.array([0, 1]), np.array([0.5 + 1j, 0.2]))
    with pytest.raises(Exception, match="x contains NaN or infinite values"):
        jax.jit(lambda x: Replay(jnp.array([0, 1]), x).x)(jnp.array([0.5, -jnp.inf]))
    with pytest.raises(Exception, match="y contains NaN or infinite values"):
        jax.jit(lambda y: Replay(y, outcomes="real").y)(jnp.array([0.5, jnp.inf]))
    assert Replay(jnp.array([0, 1]), jnp.array([1, 2])).x.dtype == jnp.int32  # integer contexts keep their dtype
    assert Replay(jnp.array([0, 1]), [0.2, 0.7]).x.shape == (2,)  # a list of numbers is one context per round

"""Online multicalibration (Algorithm 1 with the groups × bins payoff): the guarantee
T‖π̄_T‖² <= B at every T against an adaptive adversary whose groups overlap, the rate of
‖π̄_T‖ in T (a log–log slope, theory -1/2), each group's error bound, the oracle's certificate,
conformance, and the settings' checks."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import check_forecaster

import jcalib
from jcalib.core import AbstractNature
from jcalib.forecasters import OnlineMulticalibration
from jcalib.payoffs import MulticalibrationOracle, MulticalibrationPayoff

G = 5  # groups: everyone, even rounds, every third round, weeks of 7 on/off, t mod 5 in {0, 1}


def memberships(t):
    t = jnp.asarray(t, jnp.int32)
    return jnp.stack([
        jnp.ones_like(t, bool), t % 2 == 0, t % 3 == 0, (t // 7) % 2 == 0, t % 5 < 2,
    ], -1).astype(jnp.result_type(float))


class _Clock(NamedTuple):
    t: jax.Array


class OverlappingAdversary(AbstractNature):
    """Adaptive: sees the forecast and answers against it, with a threshold that depends on
    the round's groups (so no single group is easy), contexts from overlapping groups."""

    outcome_space = "binary"

    def init(self, key):
        return _Clock(jnp.zeros((), jnp.int32))

    def context(self, state, key):
        return memberships(state.t)

    def outcome(self, state, x, public, key):
        threshold = 0.5 + 0.3 * (x[1] - x[2]) - 0.2 * x[3]
        return (jnp.asarray(public) < threshold.astype(jnp.asarray(public).dtype)).astype(jnp.int32)

    def update(self, state, x, forecast, y, key):
        return _Clock(state.t + 1)


def _path(f, T):
    traj = jcalib.core.play(f, OverlappingAdversary(), T, key=jax.random.key(0))
    pis = jax.vmap(f.payoff)(traj.x, traj.forecast, traj.y).astype(jnp.float64)
    sums = np.cumsum(np.asarray(pis), axis=0)
    t = np.arange(1, T + 1)
    return traj, sums, t


def test_guarantee_every_round_and_rate(x64):
    f = OnlineMulticalibration(n_groups=G, n_bins=10, max_overlap=G)
    T = 8000
    traj, sums, t = _path(f, T)
    assert float(jnp.max(traj.certificate)) <= 1e-12  # Eq. (4) holds exactly every round
    sq = np.sum(sums**2, axis=1)  # = T^2 ||pi_bar_T||^2
    B = f.payoff.bound()
    assert np.all(sq / t <= B * (1 + 1e-9))  # Theorem 4.3: T ||pi_bar_T||^2 <= B, every T
    # each group's tent-binned error over all T rounds: <= sqrt((m+1) k / T)
    per_group = np.abs(sums.reshape(T, G, 11)).sum(axis=2) / t[:, None]
    assert np.all(per_group[99:] <= np.sqrt(11 * B / t[99:, None]) + 1e-12)
    # rate: log ||pi_bar_T|| against log T over T = 250 .. 8000 (theory: slope <= -1/2)
    Ts = np.unique(np.geomspace(250, T, 12).astype(int))
    norms = np.sqrt(sq[Ts - 1]) / Ts
    slope = np.polyfit(np.log(Ts), np.log(norms), 1)[0]
    assert slope <= -0.45, f"measured exponent {slope:.3f}, theory -1/2"


def test_groups_get_calibrated_where_the_average_is_not():
    """Replay of a sequence whose group 2 has frequency 0.9 and the rest 0.2: after a burn-in
    the forecasts on group-2 rounds approach 0.9 and on the others 0.2."""
    n = 3000
    t = jnp.arange(n)
    x = memberships(t)
    truth = jnp.where(x[:, 2] > 0, 0.9, 0.2)
    y = (jax.random.uniform(jax.random.key(1), (n,)) < truth).astype(jnp.int32)
    f = OnlineMulticalibration(n_groups=G, n_bins=10)
    traj = jcalib.core.play(f, jcalib.natures.Replay(y, x), n, key=jax.random.key(0))
    late = slice(1500, None)
    in2 = np.asarray(x[late, 2]) > 0
    fc = np.asarray(traj.forecast[late])
    assert abs(fc[in2].mean() - 0.9) < 0.05 and abs(fc[~in2].mean() - 0.2) < 0.05


def test_oracle_certificate_is_nonpositive_for_random_directions():
    oracle = MulticalibrationOracle(3, 8)
    keys = jax.random.split(jax.random.key(0), 200)

    def one(k):
        kc, kx = jax.random.split(k)
        c = jax.random.normal(kc, (oracle.payoff.dim,))
        x = jax.random.uniform(kx, (3,))
        fc = oracle(c, x, k)
        vals = jnp.stack([jnp.dot(c, oracle.payoff(x, fc.public, y)) for y in (0.0, 0.5, 1.0)])
        return fc.certificate, jnp.max(vals)

    cert, brute = jax.vmap(one)(keys)
    assert float(jnp.max(cert)) <= 1e-6 and float(jnp.max(brute)) <= 1e-6
    np.testing.assert_allclose(np.asarray(cert), np.asarray(brute), atol=1e-6)


def test_payoff_is_consistent():
    pi = MulticalibrationPayoff(2, 4)
    x = jnp.array([1.0, 0.5])
    p = jnp.asarray(0.37)
    expected = p * pi(x, p, 1.0) + (1 - p) * pi(x, p, 0.0)
    np.testing.assert_allclose(np.asarray(expected), 0.0, atol=1e-7)
    assert pi.dim == 10 and pi.bound() == 2.0


def test_conformance():
    check_forecaster((OnlineMulticalibration(G, 10), OnlineMulticalibration(G, 10)), OverlappingAdversary())


def test_checks():
    with pytest.raises(ValueError, match="n_groups"):
        OnlineMulticalibration(0)
    with pytest.raises(ValueError, match="n_bins"):
        OnlineMulticalibration(2, n_bins=0)
    f = OnlineMulticalibration(2, 4)
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        f.predict(f.init(jax.random.key(0)), jnp.ones(3), jax.random.key(0))

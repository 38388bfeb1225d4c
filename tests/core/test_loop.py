"""The compiled chunk of ``play``/``sweep`` (``jcalib.core.loop``): its in-graph input checks are
deferred (flags returned and raised on the host), so the program has no host callback and JAX's
persistent compilation cache can keep it; a failed check still raises."""

import equinox as eqx
import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.core import loop
from jcalib.distributions import uniform_edges
from jcalib.forecasters import ORCA, AlmostOneStepAhead
from jcalib.natures import Bernoulli, Contrarian, IIDInterval, Markov, Switch
from jcalib.payoffs import QuantileCalibration
from jcalib.recorders import History

MEMBERS = (Bernoulli(0.3), Markov(0.1, 0.2), Contrarian())


def _chunk_jaxpr(forecaster, nature, T=8):
    keys = jax.random.key(0)
    layout = (None, None, None)
    carry = loop._placeholder(eqx.filter_eval_shape(loop._init_all, forecaster, nature, History(), keys, layout))
    one = jnp.ones((), jnp.int32)
    jaxpr, _, _ = eqx.filter_make_jaxpr(loop._chunk_body)(forecaster, nature, History(), keys, carry, one > 0,
                                                          0 * one, T * one, T, layout)
    return jaxpr


def _primitives(jaxpr) -> set:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            names |= _primitives(sub)
    return names


@pytest.mark.parametrize("players", [
    (AlmostOneStepAhead(n_bins=8), Switch(MEMBERS, jnp.int32(1))),
    (ORCA(payoff=QuantileCalibration(4), edges=uniform_edges(5), n_steps=2), IIDInterval.skewed(5)),
], ids=["AOSA-Switch", "ORCA-interval"])
def test_chunk_has_no_host_callback(players):
    """Switch's index check (at init) and the players' value checks (every round: forecasts,
    distributions, ORCA's outcome) are staged as flags, not as eqx.error_if callbacks: a program
    with a callback is never written to the persistent cache."""
    jaxpr = _chunk_jaxpr(*players)
    assert not {p for p in _primitives(jaxpr.jaxpr) if "callback" in p}, _primitives(jaxpr.jaxpr)


def test_a_failed_check_in_the_chunk_still_raises():
    """An index out of range reaches the chunk (past the constructor's check) and raises there,
    eagerly and under the caller's jit."""
    bad = eqx.tree_at(lambda s: s.index, Switch(MEMBERS, 0), jnp.int32(len(MEMBERS)))
    f = AlmostOneStepAhead(n_bins=8)
    with pytest.raises(eqx.EquinoxRuntimeError, match="out of range"):
        jcalib.core.play(f, bad, 10, key=jax.random.key(0))
    with pytest.raises(Exception, match="out of range"):
        jax.block_until_ready(jax.jit(lambda s: jcalib.core.play(f, s, 10, key=jax.random.key(0)).y)(bad))
    good = jcalib.core.play(f, Switch(MEMBERS, 1), 10, key=jax.random.key(0))
    np.testing.assert_array_equal(good.y, jcalib.core.play(f, MEMBERS[1], 10, key=jax.random.key(0)).y)


def test_the_chunk_is_written_to_the_persistent_cache(tmp_path):
    """With the cache on, a sweep's chunk program is written (it was not while it carried host
    callbacks)."""
    import os
    import subprocess
    import sys

    code = ("import jax, jcalib\n"
            "from jcalib._cache import enable_compilation_cache\n"
            "enable_compilation_cache(notice=False)\n"
            "jcalib.core.sweep(jcalib.forecasters.AlmostOneStepAhead(n_bins=5), "
            "jcalib.natures.Switch.all_of([jcalib.natures.Bernoulli(0.3), jcalib.natures.Contrarian()]), 20, "
            "key=jax.random.key(0), n_seeds=2, progress=False)\n")
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(tmp_path), "JCALIB_COMPILATION_CACHE": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    assert any(p.name.startswith("jit__chunk_body") for p in tmp_path.iterdir())


def test_first_chunk_placeholder_compiles_nothing():
    """The carry a first chunk ignores is NumPy zeros (no program per shape and dtype on a first
    call), except key arrays, which NumPy cannot hold."""
    like = {"x": jax.ShapeDtypeStruct((3, 2), jnp.float32), "n": jax.ShapeDtypeStruct((), jnp.int32),
            "k": jax.ShapeDtypeStruct((2,), jax.random.key(0).dtype)}
    got = loop._placeholder(like)
    assert isinstance(got["x"], np.ndarray) and got["x"].dtype == np.float32 and not got["x"].any()
    assert isinstance(got["n"], np.ndarray) and got["n"].shape == ()
    assert jax.dtypes.issubdtype(got["k"].dtype, jax.dtypes.prng_key) and got["k"].shape == (2,)


def test_a_rerun_of_the_same_players_traces_no_init(monkeypatch):
    """The first chunk's placeholder comes from the init's shapes, traced once per signature (as
    the chunk is): another run with other arrays of the same shapes traces the players' init
    no more (the demo runs each forecaster against every nature and horizon)."""
    calls = []
    init = loop._init
    monkeypatch.setattr(loop, "_init", lambda *a, **k: calls.append(1) or init(*a, **k))
    monkeypatch.setattr(loop, "_INIT_SHAPES", {})  # nothing of these players kept from an earlier test
    f = AlmostOneStepAhead(n_bins=7)
    first = jcalib.core.play(f, Bernoulli(0.3), 40, key=jax.random.key(0), progress=False)
    traced = len(calls)
    assert traced > 0
    again = jcalib.core.play(f, Bernoulli(0.6), 40, key=jax.random.key(1), progress=False)
    assert len(calls) == traced
    assert not np.array_equal(first.y, again.y)


def test_a_chunk_traces_its_round_and_its_init_once(monkeypatch):
    """The round's and the init's output shapes (for the history buffer and the ``lax.cond``)
    come from the one trace whose operations the chunk replays: tracing a chunk runs the
    players' Python once per round function, not twice (a third of a sweep's tracing)."""
    rounds, inits = [], []
    one_round, init = loop._one_round, loop._init
    monkeypatch.setattr(loop, "_one_round", lambda *a: rounds.append(1) or one_round(*a))
    monkeypatch.setattr(loop, "_init", lambda *a: inits.append(1) or init(*a))
    _chunk_jaxpr(AlmostOneStepAhead(n_bins=8), Switch(MEMBERS, jnp.int32(1)))
    assert len(rounds) == 1
    assert len(inits) == 2  # the placeholder's shapes (outside the chunk), then the chunk's init


_FINALISE_TRACES = []


class _Scaled(jcalib.recorders.AbstractRecorder):
    """The forecasts times ``scale`` (an array leaf of the recorder); its traces are counted."""

    scale: jax.Array

    def init(self):
        return ()

    def step(self, state, rnd):
        return state, rnd.forecast.value

    def finalise(self, state, outs):
        _FINALISE_TRACES.append(1)
        return outs * self.scale


def test_a_rerun_traces_the_recorders_finalise_once():
    """``finalise`` is traced once per recorder configuration and shapes, not at every call (it
    was about a fifth of a warm ``play``); the recorder's arrays are arguments of the replay,
    not constants of the first trace, and the result is a host array."""
    _FINALISE_TRACES.clear()
    f = AlmostOneStepAhead(n_bins=7)
    runs = [jcalib.core.play(f, Bernoulli(0.3), 40, key=jax.random.key(0), record=_Scaled(jnp.float32(s)),
                             progress=False) for s in (2.0, 3.0)]
    assert len(_FINALISE_TRACES) == 1
    assert all(isinstance(r, np.ndarray) for r in runs)
    plain = jcalib.core.play(f, Bernoulli(0.3), 40, key=jax.random.key(0), progress=False).forecast
    np.testing.assert_array_equal(runs[0], 2 * plain)  # float32 products, rounded alike
    np.testing.assert_array_equal(runs[1], np.float32(3) * plain)

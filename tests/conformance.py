"""The conformance checks every forecaster and nature must pass, per outcome space.

Importable from any test file (``tests/`` is on ``sys.path``): each new forecaster or nature
gets one parametrised test that calls :func:`check_forecaster` or :func:`check_nature`.

What is checked, for a pair of modules of one class (differing in array-valued settings where
the class has any, so a sweep really vmaps over hyperparameters; a class whose settings are all
static, such as a grid size, gets an identical pair that differs only in the key):

- one compiled ``sweep`` over the pair and 3 seeds agrees with ``play`` of one member;
- ``play`` under ``jax.jit`` traces once for new keys **and** once for new hyperparameter
  values of the same class (no retrace across the pair);
- outcomes and forecasts have the contract's types for the outcome space;
- one round's states keep their pytree structure and dtypes, under both x64 settings;
- a ``Forecast``'s public part is the value itself (deterministic) or a ``Mixture`` whose
  support contains the value and whose weights sum to one.
"""

from __future__ import annotations

import contextlib

import chex
import jax
import jax.numpy as jnp
import numpy as np

import jcalib
from jcalib.core import Forecast, Mixture

T = 16
KEY = jax.random.key(42)
SPACES = ("binary", "interval")


class _Count:
    n = 0


@contextlib.contextmanager
def count_compilations():
    """Count XLA backend compilations inside the block (``with count_compilations() as c:
    ...; c.n``): a jitted function called with new values of a traced argument compiles 0
    programs, one with the value baked in as a static argument compiles one per value."""
    count = _Count()

    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            count.n += 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield count
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


def structure_and_dtypes(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, [(jnp.shape(x), jnp.result_type(x)) for x in leaves]


def _assert_same(a, b):
    """Integers and booleans bit for bit; floats to 1e-6 relative (batched and unbatched
    programs fuse float arithmetic differently, which moves results by an ulp)."""
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        u, v = np.asarray(u), np.asarray(v)
        if np.issubdtype(u.dtype, np.floating):
            np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(u, v)


def _check_outcomes(y, space):
    y = np.asarray(y)
    if space == "binary":
        assert y.dtype == np.int32
        assert set(np.unique(y).tolist()) <= {0, 1}
    else:
        assert np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y))


def _check_values(values, space):
    if space == "binary":
        v = np.asarray(values)
        assert v.dtype == jnp.result_type(float) and v.shape[-1] == T
        assert np.all((v >= 0) & (v <= 1))
    else:
        for leaf in jax.tree_util.tree_leaves(values):
            assert np.all(np.isfinite(np.asarray(leaf)))


def _play_pair(f_pair, n_pair, sweep_forecasters: bool, space: str):
    seeds = jax.random.split(KEY, 3)
    if sweep_forecasters:
        traj = jcalib.core.sweep(list(f_pair), n_pair[0], T, key=KEY, n_seeds=3, threads=1)  # one program: rounding may depend on the batch size
        assert traj.y.shape[:4] == (2, 1, 3, T)
        swept = jax.tree_util.tree_map(lambda a: a[1, 0, 2], traj)
        members = [(f, n_pair[0]) for f in f_pair]
    else:
        traj = jcalib.core.sweep(f_pair[0], list(n_pair), T, key=KEY, n_seeds=3, threads=1)
        assert traj.y.shape[:3] == (2, 3, T)
        swept = jax.tree_util.tree_map(lambda a: a[1, 2], traj)
        members = [(f_pair[0], n) for n in n_pair]

    # jit around play: one trace for every key and for both members (new hyperparameter values
    # are arrays, not constants). The counter is keyed by the function's code: reset it.
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(f, n, k):
        return jcalib.core.play(f, n, T, key=k)

    a = run(*members[0], seeds[1])
    single = run(*members[1], seeds[2])
    _assert_same(single, swept)
    _check_outcomes(traj.y, space)
    _check_values(single.forecast, space)
    assert structure_and_dtypes(a) == structure_and_dtypes(single)
    return single


def one_round(f, n, key):
    kf, kn, kx, kp, ky, ku = jax.random.split(key, 6)
    fs, ns = f.init(kf), n.init(kn)
    x = n.context(ns, kx)
    fc = f.predict(fs, x, kp)
    y = n.outcome(ns, x, fc.public, ky)
    info = f.info(fs, x, fc, y)
    return fs, ns, fc, y, info, f.update(fs, x, fc, y), n.update(ns, x, fc, y, ku)


def _check_forecast(fc, space):
    assert isinstance(fc, Forecast)
    if isinstance(fc.public, Mixture):
        np.testing.assert_allclose(float(jnp.sum(fc.public.probs)), 1.0, rtol=1e-6)
        assert np.all(np.asarray(fc.public.probs) >= 0)
        if space == "binary":
            assert bool(jnp.any(fc.public.support == fc.value))
    elif space == "binary":
        assert float(fc.public) == float(fc.value)
    if space == "binary":
        assert jnp.result_type(fc.value) == jnp.result_type(float) and jnp.shape(fc.value) == ()


def check_forecaster(f_pair, nature, space: str = "binary"):
    """Conformance of a forecaster class (``f_pair``: two instances of it) against ``nature``."""
    assert space in SPACES
    assert type(f_pair[0]) is type(f_pair[1])
    _play_pair(f_pair, (nature, nature), True, space)
    for use_x64 in (False, True):
        with jax.enable_x64(use_x64):
            f = f_pair[0]
            fs, _, fc, y, info, fs1, _ = jax.jit(lambda k: one_round(f, nature, k))(KEY)
            assert structure_and_dtypes(fs1) == structure_and_dtypes(fs)
            _check_forecast(fc, space)
            _check_outcomes(y, space)


def check_nature(n_pair, forecaster, space: str = "binary", *, other_forecaster=None):
    """Conformance of a nature class (``n_pair``: two instances of it) against ``forecaster``
    (and ``other_forecaster``, e.g. a randomised one publishing a ``Mixture``)."""
    assert space in SPACES
    assert type(n_pair[0]) is type(n_pair[1])
    _play_pair((forecaster, forecaster), n_pair, False, space)
    for use_x64 in (False, True):
        with jax.enable_x64(use_x64):
            for f in (forecaster,) + ((other_forecaster,) if other_forecaster is not None else ()):
                _, ns, _, y, _, _, ns1 = jax.jit(lambda k: one_round(f, n_pair[0], k))(KEY)
                assert structure_and_dtypes(ns1) == structure_and_dtypes(ns)
                _check_outcomes(y, space)
                assert jnp.shape(y) == ()

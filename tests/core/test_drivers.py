"""Drivers: play is one scan, chunking and summaries lose nothing, sweep batches and shards
without changing a number."""

import os
import subprocess
import sys
import textwrap
from typing import NamedTuple

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.core import AbstractForecaster, AbstractNature, Forecast, summary_from_trajectory


class _S(NamedTuple):
    n: jax.Array
    ones: jax.Array


class GridFrequency(AbstractForecaster):
    """Running frequency rounded to the grid; its certificate is the unrounded frequency's grid
    neighbour above, so summaries have something to record."""

    prior: float = 0.5
    n_bins: int = eqx.field(static=True, default=10)

    def init(self, key):
        return _S(jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def predict(self, state, x, key):
        v = (state.ones.astype(jnp.result_type(float)) + self.prior) / (state.n.astype(jnp.result_type(float)) + 1.0)
        v = jnp.floor(v * self.n_bins) / self.n_bins
        return Forecast(v, v)

    def update(self, state, x, forecast, y):
        return _S(state.n + 1, state.ones + y)

    def info(self, state, x, forecast, y):
        return jnp.minimum(forecast.value + 1.0 / self.n_bins, 1.0)


class Coin(AbstractNature):
    p: float = 0.3

    def init(self, key):
        return jnp.zeros((), jnp.int32)

    def outcome(self, state, x, public, key):
        return jax.random.bernoulli(key, self.p).astype(jnp.int32)


KEY = jax.random.key(0)


def test_play_shapes_and_dtypes():
    traj = jcalib.play(GridFrequency(), Coin(), 64, KEY)
    assert traj.forecast.shape == (64,) and traj.y.shape == (64,)
    assert traj.y.dtype == jnp.int32
    assert traj.x is None
    assert traj.info.shape == (64,)


def test_chunked_play_equals_one_scan():
    full = jcalib.play(GridFrequency(), Coin(), 50, KEY)
    chunked = jcalib.play(GridFrequency(), Coin(), 50, KEY, chunk=7, progress=False)
    chex.assert_trees_all_equal(full, chunked)


def test_summary_matches_full_history():
    full = jcalib.play(GridFrequency(), Coin(0.6), 80, KEY)
    summ = jcalib.play(GridFrequency(), Coin(0.6), 80, KEY, record="summary", chunk=16, progress=False)
    ref = summary_from_trajectory(full, 10)
    chex.assert_trees_all_equal(summ, ref)
    np.testing.assert_array_equal(summ.counts, np.bincount(np.round(np.asarray(full.forecast) * 10).astype(int), minlength=11))
    assert int(summ.T) == 80 and int(summ.off_grid) == 0
    # info_l1 is Σ|p_t − p̃_t| = T/m here, the certificate sits one grid step above
    np.testing.assert_allclose(summ.info_l1, np.sum(np.abs(np.asarray(full.forecast) - np.asarray(full.info))), rtol=1e-6)


def test_forecast_grid():
    assert jcalib.core.forecast_grid(GridFrequency(n_bins=7)) == 7
    assert jcalib.core.forecast_grid(_NoBins()) is None
    assert jcalib.core.forecast_grid(jcalib.forecasters.GuptaRamdas(n_bins=5)) == 10


def test_summary_needs_a_grid():
    with pytest.raises(ValueError, match="grid"):
        jcalib.play(_NoBins(), Coin(), 10, KEY, record="summary")


class _NoBins(AbstractForecaster):
    def init(self, key):
        return jnp.zeros(())

    def predict(self, state, x, key):
        return Forecast(jnp.asarray(0.5), jnp.asarray(0.5))

    def update(self, state, x, forecast, y):
        return state


def test_sweep_axes_and_seed_equals_play():
    natures = [Coin(0.1), Coin(0.5), Coin(0.9)]
    out = jcalib.sweep(GridFrequency(), natures, 40, KEY, n_seeds=4)
    assert out.forecast.shape == (3, 4, 40)
    seed_keys = jax.random.split(KEY, 4)
    single = jcalib.play(GridFrequency(), Coin(0.5), 40, seed_keys[2])
    picked = jax.tree_util.tree_map(lambda a: a[1, 2], out)
    np.testing.assert_array_equal(picked.y, single.y)
    # batched and unbatched programs fuse float arithmetic differently: 1-ulp differences
    chex.assert_trees_all_close(picked, single, rtol=1e-6)


def test_sweep_over_hyperparameters():
    out = jcalib.sweep([GridFrequency(0.1), GridFrequency(0.9)], Coin(0.5), 30, KEY, n_seeds=2, record="summary")
    assert out.counts.shape == (2, 1, 2, 11)
    ref = jcalib.play(GridFrequency(0.9), Coin(0.5), 30, jax.random.split(KEY, 2)[1], record="summary")
    chex.assert_trees_all_equal(jax.tree_util.tree_map(lambda a: a[1, 0, 1], out), ref)


def test_play_does_not_retrace():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(key):
        return jcalib.play(GridFrequency(), Coin(), 20, key).forecast

    run(jax.random.key(1))
    run(jax.random.key(2))


def test_checkpoint_resume(tmp_path):
    path = tmp_path / "ck.npz"
    ref = jcalib.play(GridFrequency(), Coin(), 60, KEY, record="summary", chunk=20, progress=False)
    # a run interrupted after its first chunk resumes from the saved carry
    jcalib.play(GridFrequency(), Coin(), 20, KEY, record="summary", chunk=20, checkpoint=path, progress=False)
    resumed = jcalib.play(GridFrequency(), Coin(), 60, KEY, record="summary", chunk=20, checkpoint=path, progress=False)
    chex.assert_trees_all_equal(resumed, ref)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: jcalib.play(GridFrequency(), Coin(), 0, KEY), "T must be a positive integer"),
        (lambda: jcalib.play(GridFrequency(), Coin(), 5, KEY, record="everything"), "record"),
        (lambda: jcalib.play(Coin(), GridFrequency(), 5, KEY), "AbstractForecaster"),
        (lambda: jcalib.sweep(GridFrequency(), [], 5, KEY), "must not be empty"),
        (lambda: jcalib.sweep(GridFrequency(), [Coin(), _OtherNature()], 5, KEY), "one class"),
        (lambda: jcalib.sweep([GridFrequency(n_bins=5), GridFrequency(n_bins=6)], Coin(), 5, KEY), "static"),
        (lambda: jcalib.sweep(GridFrequency(), Coin(), 5, KEY, n_seeds=0), "n_seeds"),
    ],
)
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


class _OtherNature(Coin):
    pass


_DEVICE_SCRIPT = textwrap.dedent(
    """
    import sys
    import jax, numpy as np
    sys.path.insert(0, {tests!r})
    import jcalib
    from importlib import util
    spec = util.spec_from_file_location("drv", {here!r})
    mod = util.module_from_spec(spec); spec.loader.exec_module(mod)
    natures = [mod.Coin(0.1), mod.Coin(0.5), mod.Coin(0.9)]
    key = jax.random.key(0)
    full = jcalib.sweep(mod.GridFrequency(), natures, 30, key, n_seeds=3)
    summ = jcalib.sweep(mod.GridFrequency(), natures, 30, key, n_seeds=3, record="summary", chunk=11, progress=False)
    np.savez(sys.argv[1], n=len(jax.devices()), f=np.asarray(full.forecast), y=np.asarray(full.y), c=np.asarray(summ.counts))
    """
)


def _run_with_devices(n, out):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    env["JAX_PLATFORMS"] = "cpu"
    script = _DEVICE_SCRIPT.format(tests=os.path.dirname(os.path.dirname(__file__)), here=__file__)
    subprocess.run([sys.executable, "-c", script, str(out)], check=True, env=env, timeout=300)
    return np.load(out)


def test_sweep_results_do_not_depend_on_device_count(tmp_path):
    one = _run_with_devices(1, tmp_path / "one.npz")
    four = _run_with_devices(4, tmp_path / "four.npz")
    assert int(one["n"]) == 1 and int(four["n"]) == 4
    for k in ("f", "y", "c"):
        np.testing.assert_array_equal(one[k], four[k])


def test_gupta_ramdas_summary_is_on_its_value_grid():
    f = jcalib.forecasters.GuptaRamdas(n_bins=12)
    full = jcalib.play(f, Coin(0.4), 300, KEY)
    summ = jcalib.play(f, Coin(0.4), 300, KEY, record="summary")
    assert int(summ.off_grid) == 0
    chex.assert_trees_all_equal(summ, summary_from_trajectory(full, 24))

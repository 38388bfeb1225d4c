"""Drivers: play is one scan, chunking and recorders lose nothing, sweep batches and shards
without changing a number, hyperparameters do not recompile (checkpoints: test_checkpoint.py)."""

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
from jcalib.core import AbstractForecaster, AbstractNature, Forecast, Mixture
from jcalib.recorders import History
from jcalib.recorders import GridCounts, summary_from_trajectory


class _S(NamedTuple):
    n: jax.Array
    ones: jax.Array


class GridFrequency(AbstractForecaster):
    """Running frequency rounded to the grid; its info is the grid neighbour above, so summaries
    have something to record; its certificate is the round count, fixed before the outcome."""

    prior: float = 0.5
    n_bins: int = eqx.field(static=True, default=10)

    @property
    def value_grid(self):
        return self.n_bins

    def init(self, key):
        return _S(jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def predict(self, state, x, key):
        fdt = jnp.result_type(float)
        v = (state.ones.astype(fdt) + self.prior) / (state.n.astype(fdt) + 1.0)
        v = jnp.floor(v * self.n_bins) / self.n_bins
        return Forecast(v, v, certificate=state.n)

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


def test_play_shapes_dtypes_and_certificate():
    traj = jcalib.core.play(GridFrequency(), Coin(), 64, key=KEY)
    assert traj.forecast.shape == (64,) and traj.y.shape == (64,)
    assert traj.y.dtype == jnp.int32
    assert traj.x is None and traj.public is None
    assert traj.info.shape == (64,)
    # the certificate is the one computed in predict, before the outcome (here: t)
    np.testing.assert_array_equal(traj.certificate, np.arange(64))


def test_chunked_play_equals_one_scan():
    full = jcalib.core.play(GridFrequency(), Coin(), 50, key=KEY)
    chunked = jcalib.core.play(GridFrequency(), Coin(), 50, key=KEY, chunk=7, progress=False)
    chex.assert_trees_all_equal(full, chunked)


@pytest.mark.parametrize("chunk", [1, 37, 100, 128, 1000])
def test_numbers_do_not_depend_on_chunk_across_blocks(chunk):
    """Random bits come in blocks of 128 rounds aligned to absolute round indices: any chunking
    (chunks that start inside a block, span several blocks, or exceed T) gives the same run.
    Foster draws its forecast (stream kp), Markov its outcome (ky), RegimeSwitch its update (ku)."""
    from jcalib.core.keys import BLOCK

    assert BLOCK == 128
    T, F, N = 300, jcalib.forecasters, jcalib.natures
    for f, n in [(F.FosterRandomized(n_bins=6), N.Markov(0.2, 0.3)), (F.RunningFrequency(), N.RegimeSwitch((0.1, 0.9), 0.05))]:
        ref = jcalib.core.play(f, n, T, key=KEY)
        got = jcalib.core.play(f, n, T, key=KEY, chunk=chunk, progress=False)
        chex.assert_trees_all_equal(got, ref)


class _KeyInState(AbstractForecaster):
    """Carries its own PRNG key in its state (the first chunk's placeholder carry holds a key)."""

    def init(self, key):
        return key

    def predict(self, state, x, key):
        v = jax.random.uniform(state, ())
        return Forecast(v, v)

    def update(self, state, x, forecast, y):
        return jax.random.split(state)[0]


def test_state_holding_a_key_runs_in_chunks():
    ref = jcalib.core.play(_KeyInState(), Coin(), 40, key=KEY)
    chex.assert_trees_all_equal(jcalib.core.play(_KeyInState(), Coin(), 40, key=KEY, chunk=9, progress=False), ref)
    assert len(np.unique(np.asarray(ref.forecast))) == 40


def test_one_compiled_chunk_for_every_horizon():
    """T enters only as the number of chunk calls: with a fixed chunk, new horizons (longer,
    shorter, not multiples of the chunk) compile nothing."""
    f, n = jcalib.forecasters.AlmostOneStepAhead(n_bins=10), jcalib.natures.Bernoulli(0.3)
    first = jcalib.core.play(f, n, 300, key=KEY, record="summary", chunk=256, progress=False)
    jcalib.core.sweep(f, n, 300, key=KEY, n_seeds=3, record="summary", chunk=256, progress=False)  # a new batch shape compiles
    with _CompileCounter() as c:
        runs = {T: jcalib.core.play(f, n, T, key=KEY, record="summary", chunk=256, progress=False) for T in (100, 700, 1000)}
        again = jcalib.core.sweep(f, n, 513, key=KEY, n_seeds=3, record="summary", chunk=256, progress=False)
    assert c.n == 0, f"{c.n} compilations"
    assert int(first.T) == 300 and {T: int(r.T) for T, r in runs.items()} == {100: 100, 700: 700, 1000: 1000}
    assert again.counts.shape == (1, 3, 11) and int(again.T.sum()) == 3 * 513
    # a run is a prefix of a longer run with the same key
    chex.assert_trees_all_equal(jcalib.core.play(f, n, 1000, key=KEY, chunk=256, progress=False).y[:700],
                                jcalib.core.play(f, n, 700, key=KEY, chunk=256, progress=False).y)


def test_round_keys_read_their_bits_once_and_hash_the_rest():
    """Round keys (ROUND_KEY_IMPL): a draw of <= 64 bits is the key's own words; split,
    fold_in and larger draws are threefry's; Bernoulli frequencies match p."""
    from jcalib.core.keys import ROUND_KEY_IMPL, block_keys

    keys = block_keys(jax.random.key(3), 5)
    assert keys.shape == (128,) and jax.random.key_impl(keys) == ROUND_KEY_IMPL
    words = np.asarray(jax.random.key_data(keys))
    bits = np.asarray(jax.vmap(lambda k: jax.random.bits(k, (), jnp.uint32))(keys))
    np.testing.assert_array_equal(bits, words[:, 0])
    # the blocks are threefry output under fold_in(stream, b): distinct across blocks and streams
    other = np.asarray(jax.random.key_data(block_keys(jax.random.key(3), 6)))
    assert len(np.unique(np.concatenate([words, other]), axis=0)) == 256
    k = keys[0]
    a, b = jax.random.split(k)
    assert not np.array_equal(jax.random.key_data(a), jax.random.key_data(b))
    u = jax.random.uniform(k, (1000,))  # larger draws are hashed, not the key's words
    assert 0.4 < float(u.mean()) < 0.6 and float(u.min()) >= 0.0 and float(u.max()) < 1.0
    many = jnp.concatenate([block_keys(jax.random.key(1), b) for b in range(40)])  # 5120 keys
    freq = float(jnp.mean(jax.vmap(lambda kk: jax.random.bernoulli(kk, 0.3))(many)))
    assert abs(freq - 0.3) < 0.02  # 3 sd of a 5120-draw frequency is 0.019


def test_summary_matches_full_history():
    full = jcalib.core.play(GridFrequency(), Coin(0.6), 80, key=KEY)
    summ = jcalib.core.play(GridFrequency(), Coin(0.6), 80, key=KEY, record="summary", chunk=16, progress=False)
    ref = summary_from_trajectory(full, 10)
    chex.assert_trees_all_equal(summ, ref)
    np.testing.assert_array_equal(summ.counts, np.bincount(np.round(np.asarray(full.forecast) * 10).astype(int), minlength=11))
    assert int(summ.T) == 80 and int(summ.off_grid) == 0
    # the info sits one grid step above (except at 1): integer steps, divided once
    steps = np.round(np.abs(np.asarray(full.forecast) - np.asarray(full.info)) * 10).astype(int).sum()
    assert int(summ.info_steps) == steps


def test_info_l1_is_exact_at_large_T():
    """Σ|p − p̃| is counted in integer grid steps: exact at T = 10^6 in float32 (summing 1/m
    in float32 drifted by 0.5% at this T)."""
    f = jcalib.forecasters.AlmostOneStepAhead(n_bins=1000)
    T = 1_000_000
    s = jcalib.core.play(f, jcalib.natures.Bernoulli(0.3), T, key=KEY, record="summary", chunk=250_000, progress=False)
    assert s.info_steps.dtype == jnp.int32
    # AOSA's |p − p̃| is one grid step when y = 1 (tie "low") and 0 otherwise
    assert int(s.info_steps) == int(s.ones.sum())
    np.testing.assert_allclose(float(s.info_l1), int(s.ones.sum()) / 1000, rtol=1e-7)


def test_record_tuple_dict_and_mixtures():
    f = jcalib.forecasters.FosterRandomized(n_bins=5)
    out = jcalib.core.play(f, Coin(), 30, key=KEY, record={"h": History(mixtures=True), "s": "summary"})
    assert out["h"].public.support.shape == (30, 2) and out["h"].public.probs.shape == (30, 2)
    np.testing.assert_allclose(np.asarray(out["h"].public.probs).sum(-1), 1.0, rtol=1e-6)
    chex.assert_trees_all_equal(out["s"], summary_from_trajectory(out["h"], 5))
    both = jcalib.core.play(f, Coin(), 30, key=KEY, record=("full", GridCounts(5)))
    chex.assert_trees_all_equal(both[1], out["s"])


def test_grid_summary_refuses_real_outcomes():
    y = np.linspace(0.1, 0.9, 10)
    with pytest.raises(ValueError, match="binary"):
        jcalib.core.play(GridFrequency(), jcalib.natures.Replay(y, outcomes="real"), 10, key=KEY, record="summary")


def test_forecast_grid():
    assert jcalib.recorders.forecast_grid(GridFrequency(n_bins=7)) == 7
    assert jcalib.recorders.forecast_grid(_NoBins()) is None
    assert isinstance(AbstractForecaster.value_grid, property) and _NoBins().value_grid is None  # the declared default
    assert jcalib.recorders.forecast_grid(jcalib.forecasters.GuptaRamdas(n_bins=5)) == 10


def test_summary_needs_a_grid():
    with pytest.raises(ValueError, match="grid"):
        jcalib.core.play(_NoBins(), Coin(), 10, key=KEY, record="summary")


class _NoBins(AbstractForecaster):
    def init(self, key):
        return jnp.zeros(())

    def predict(self, state, x, key):
        return Forecast(jnp.asarray(0.5), jnp.asarray(0.5))

    def update(self, state, x, forecast, y):
        return state


def test_sweep_axes_and_seed_equals_play():
    natures = [Coin(0.1), Coin(0.5), Coin(0.9)]
    out = jcalib.core.sweep(GridFrequency(), natures, 40, key=KEY, n_seeds=4)
    assert out.forecast.shape == (3, 4, 40)
    seed_keys = jax.random.split(KEY, 4)
    single = jcalib.core.play(GridFrequency(), Coin(0.5), 40, key=seed_keys[2])
    picked = jax.tree_util.tree_map(lambda a: a[1, 2], out)
    np.testing.assert_array_equal(picked.y, single.y)
    # batched and unbatched programs fuse float arithmetic differently: 1-ulp differences
    chex.assert_trees_all_close(picked, single, rtol=1e-6)


def test_sweep_over_hyperparameters():
    out = jcalib.core.sweep([GridFrequency(0.1), GridFrequency(0.9)], Coin(0.5), 30, key=KEY, n_seeds=2, record="summary")
    assert out.counts.shape == (2, 1, 2, 11)
    ref = jcalib.core.play(GridFrequency(0.9), Coin(0.5), 30, key=jax.random.split(KEY, 2)[1], record="summary")
    chex.assert_trees_all_equal(jax.tree_util.tree_map(lambda a: a[1, 0, 1], out), ref)


@pytest.mark.parametrize("record", ["full", "summary"])
def test_threads_split_the_seeds_without_changing_a_number(record):
    """Shares of 3 (5 seeds padded to 6) over two threads, forecasters and natures axes included."""
    fs, ns = [GridFrequency(0.1), GridFrequency(0.9)], [Coin(0.2), Coin(0.7)]
    one = jcalib.core.sweep(fs, ns, 50, key=KEY, n_seeds=5, record=record, threads=1)
    two = jcalib.core.sweep(fs, ns, 50, key=KEY, n_seeds=5, record=record, threads=2)
    chex.assert_trees_all_equal(one, two)
    assert jax.tree_util.tree_leaves(two)[0].shape[:3] == (2, 2, 5)


def test_threads_checked():
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        jcalib.core.sweep(GridFrequency(), Coin(0.5), 5, key=KEY, threads=0)
    with pytest.raises(ValueError, match="cannot be combined with checkpoint"):
        jcalib.core.sweep(GridFrequency(), Coin(0.5), 5, key=KEY, n_seeds=2, threads=2, checkpoint="unused")


def test_play_does_not_retrace_for_keys():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(key):
        return jcalib.core.play(GridFrequency(), Coin(), 20, key=key).forecast

    run(jax.random.key(1))
    run(jax.random.key(2))


class _CompileCounter:
    """Counts XLA backend compilations while active (JAX's monitoring events)."""

    EVENT = "/jax/core/compile/backend_compile_duration"

    def __enter__(self):
        self.n = 0
        self._cb = lambda event, duration, **kw: setattr(self, "n", self.n + (event == self.EVENT))
        jax.monitoring.register_event_duration_secs_listener(self._cb)
        return self

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._cb)


@pytest.mark.parametrize("record", ["full", "summary"])
def test_play_compiles_once_across_float_hyperparameters(record):
    """New values of float hyperparameters (Bernoulli's p, Constant's p, a bandwidth) reuse
    the compiled program: they are traced arrays, not constants."""
    F = jcalib.forecasters
    cases = [
        (lambda v: F.AlmostOneStepAhead(n_bins=10), lambda v: jcalib.natures.Bernoulli(v)),
        (lambda v: F.Constant(v), lambda v: jcalib.natures.Bernoulli(0.5)),
        (lambda v: F.DefensiveForecaster(n_grid=10, bandwidth=v), lambda v: jcalib.natures.Periodic(0.5, 0.2, 10 * v)),
    ]
    for make_f, make_n in cases:
        jcalib.core.play(make_f(0.1), make_n(0.1), 25, key=KEY, record=record, n_bins=10)  # warm-up compile
        with _CompileCounter() as c:
            for v in (0.2, 0.3, 0.45):
                jcalib.core.play(make_f(v), make_n(v), 25, key=KEY, record=record, n_bins=10)
        assert c.n == 0, f"{type(make_f(0.2)).__name__}: {c.n} recompilations"


def test_sweep_shares_unbatched_data_across_seeds():
    """A Replay of length T inside a sweep over seeds is stored once per nature, not once per
    seed: the compiled program's memory does not grow with the number of seeds."""
    from jcalib.core import batching, loop

    T = 20_000
    y = np.random.default_rng(0).integers(0, 2, T)
    f = jcalib.forecasters.AlmostOneStepAhead(n_bins=10)
    sizes = {}
    for S in (1, 32):
        nb, _ = batching.stack_modules([jcalib.natures.Replay(y)] * 2, "natures")
        keys = jax.random.split(KEY, S)
        rec, fm, layout = GridCounts(10), batching.as_traced_module(f), (None, 2, S)
        carry = loop._placeholder(eqx.filter_eval_shape(loop._init_all, fm, nb, rec, keys, layout))
        n = jnp.int32(T)
        compiled = loop._chunk_all.lower(fm, nb, rec, keys, carry, n > 0, 0 * n, n, T, layout).compile()
        mem = compiled.compiled.memory_analysis()  # equinox wraps jax's Compiled
        sizes[S] = mem.temp_size_in_bytes + mem.argument_size_in_bytes + mem.output_size_in_bytes
    # a per-seed copy would add 31 x 2 x T x 4 bytes = 5 MB; allow 0.5 MB for per-seed state
    assert sizes[32] - sizes[1] < 500_000, sizes


def test_contexts_through_play_and_sweep():
    N = jcalib.natures
    f = jcalib.forecasters.Partitioned(jcalib.forecasters.RunningFrequency(), 2, jcalib.forecasters.UniformCells(2))
    traj = jcalib.core.play(f, N.TwoLevelModel(), 400, key=KEY)
    assert set(np.unique(np.asarray(traj.x)).tolist()) == {np.float32(0.2), np.float32(0.8)}
    out = jcalib.core.sweep(f, [N.TwoLevelModel(), N.TwoLevelModel(0.1, 0.9)], 400, key=KEY, n_seeds=3)
    assert out.x.shape == (2, 3, 400)
    np.testing.assert_array_equal(out.x[0, 0], jcalib.core.play(f, N.TwoLevelModel(), 400, key=jax.random.split(KEY, 3)[0]).x)
    # replayed contexts are any pytree with a leading round axis
    x = {"q": np.linspace(0, 1, 5), "feat": np.arange(10.0).reshape(5, 2)}
    traj = jcalib.core.play(jcalib.forecasters.Constant(0.5), N.Replay([0, 1, 0, 1, 1], x), 5, key=KEY)
    np.testing.assert_allclose(traj.x["feat"], x["feat"])


def test_mixture_over_pytrees():
    support = {"p": jnp.array([0.2, 0.6]), "v": jnp.array([[1.0, 0.0], [0.0, 1.0]])}
    mix = Mixture(support, jnp.array([0.25, 0.75]))
    mean = mix.mean()
    np.testing.assert_allclose(mean["p"], 0.5)
    np.testing.assert_allclose(mean["v"], [0.25, 0.75])
    point = jcalib.core.as_mixture({"p": jnp.float32(0.3)})
    assert point.support["p"].shape == (1,) and float(point.probs[0]) == 1.0
    draws = jax.vmap(lambda k: mix.sample(key=k)["p"])(jax.random.split(KEY, 4000))
    assert abs(float(jnp.mean(draws == 0.6)) - 0.75) < 0.03  # 3 sd of a 4000-draw frequency


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: jcalib.core.play(GridFrequency(), Coin(), 0, key=KEY), "T must be a positive integer"),
        (lambda: jcalib.core.play(GridFrequency(), Coin(), 5, key=KEY, record="everything"), "record"),
        (lambda: jcalib.core.play(GridFrequency(), Coin(), 5, key=KEY, record=3), "record"),
        (lambda: jcalib.core.play(Coin(), GridFrequency(), 5, key=KEY), "AbstractForecaster"),
        (lambda: jcalib.core.sweep(GridFrequency(), [], 5, key=KEY), "must not be empty"),
        (lambda: jcalib.core.sweep(GridFrequency(), [Coin(), _OtherNature()], 5, key=KEY), "one class"),
        (lambda: jcalib.core.sweep([GridFrequency(n_bins=5), GridFrequency(n_bins=6)], Coin(), 5, key=KEY), "static"),
        (lambda: jcalib.core.sweep(GridFrequency(), Coin(), 5, key=KEY, n_seeds=0), "n_seeds"),
        (lambda: jcalib.core.sweep(GridFrequency(), [jcalib.natures.Replay([0, 1]), jcalib.natures.Replay([0, 1, 1])], 5, key=KEY), "equal shapes"),
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
    full = jcalib.core.sweep(mod.GridFrequency(), natures, 30, key=key, n_seeds=3)
    summ = jcalib.core.sweep(mod.GridFrequency(), natures, 30, key=key, n_seeds=3, record="summary", chunk=11, progress=False)
    # 300 rounds in chunks of 100: chunks that start inside a 128-round block of random bits
    long = jcalib.core.sweep(jcalib.forecasters.FosterRandomized(n_bins=5), natures, 300, key=key, n_seeds=5, chunk=100, progress=False)
    np.savez(sys.argv[1], n=len(jax.devices()), f=np.asarray(full.forecast), y=np.asarray(full.y), c=np.asarray(summ.counts),
             lf=np.asarray(long.forecast), ly=np.asarray(long.y))
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
    for k in ("f", "y", "c", "lf", "ly"):
        np.testing.assert_array_equal(one[k], four[k])


def test_gupta_ramdas_summary_is_on_its_value_grid():
    f = jcalib.forecasters.GuptaRamdas(n_bins=12)
    full = jcalib.core.play(f, Coin(0.4), 300, key=KEY)
    summ = jcalib.core.play(f, Coin(0.4), 300, key=KEY, record="summary")
    assert int(summ.off_grid) == 0
    chex.assert_trees_all_equal(summ, summary_from_trajectory(full, 24))


def test_compiler_options_reach_the_compiler_and_keep_exact_results():
    """``compiler_options`` compile the chunk as another program (one per set of options, cached)
    with XLA's options: an unknown option is refused by XLA, and an unoptimised program gives a
    grid forecaster's counts exactly."""
    from jcalib.core import loop

    f = jcalib.forecasters.AlmostOneStepAhead(n_bins=6)
    natures = [jcalib.natures.Bernoulli(0.3), jcalib.natures.Bernoulli(0.7)]
    fast = {"xla_backend_optimization_level": 0}
    want = jcalib.core.sweep(f, natures, 300, key=KEY, n_seeds=4, record="summary", progress=False)
    got = jcalib.core.sweep(f, natures, 300, key=KEY, n_seeds=4, record="summary", progress=False, compiler_options=fast)
    chex.assert_trees_all_equal(got, want)
    one = loop._chunk_with(loop.check_compiler_options(fast))
    assert one is loop._chunk_with((("xla_backend_optimization_level", 0),)) and one is not loop._chunk_all
    traj = jcalib.core.play(f, natures[0], 40, key=KEY, progress=False, compiler_options=fast)
    chex.assert_trees_all_equal(traj, jcalib.core.play(f, natures[0], 40, key=KEY, progress=False))
    with pytest.raises(Exception, match="xla_no_such_option"):
        jcalib.core.sweep(f, natures, 30, key=KEY, record="summary", progress=False, compiler_options={"xla_no_such_option": 1})
    with pytest.raises(ValueError, match="compiler_options"):
        jcalib.core.sweep(f, natures, 30, key=KEY, record="summary", progress=False, compiler_options=["opt"])


class CarryingFrequency(GridFrequency):
    """GridFrequency that hands its next count to update through Forecast.carry (ORCA's channel)."""

    def predict(self, state, x, key):
        fc = super().predict(state, x, key)
        return fc._replace(carry=state.n + 1)

    def update(self, state, x, forecast, y):
        return _S(forecast.carry, state.ones + y)


def test_carry_reaches_update_and_is_recorded_only_when_asked():
    f, T = CarryingFrequency(), 40
    plain = jcalib.core.play(f, Coin(), T, key=KEY)
    assert plain.carry is None  # History() drops the carry
    kept = jcalib.core.play(f, Coin(), T, key=KEY, record=History(carry=True))
    np.testing.assert_array_equal(np.asarray(kept.carry), np.arange(1, T + 1))
    # update used the carried count: the same run as the forecaster that counts by itself
    ref = jcalib.core.play(GridFrequency(), Coin(), T, key=KEY)
    np.testing.assert_array_equal(np.asarray(plain.forecast), np.asarray(ref.forecast))
    np.testing.assert_array_equal(np.asarray(kept.certificate), np.arange(T))
    swept = jcalib.core.sweep(f, Coin(), T, key=KEY, n_seeds=3, record=History(carry=True))
    assert swept.carry.shape == swept.certificate.shape and swept.carry.shape[-2:] == (3, T)


def test_play_refuses_pairs_that_cannot_play_together():
    from jcalib.forecasters import AlmostOneStepAhead, ApproachabilityRecalibrator, ORCA
    from jcalib.natures import Bernoulli, DistortedModel, IIDInterval

    # a binary forecaster given real-valued outcomes used to run
    with pytest.raises(ValueError, match="forecasts binary outcomes but IIDInterval produces real"):
        jcalib.core.play(AlmostOneStepAhead(10), IIDInterval.skewed(10), 5, key=jax.random.key(0))
    with pytest.raises(ValueError, match="forecasts real outcomes but Bernoulli produces binary"):
        jcalib.core.sweep(ORCA(), [Bernoulli(0.2), Bernoulli(0.4)], 5, key=jax.random.key(0))
    # a recalibrator against a nature with no context failed deep inside the trace
    with pytest.raises(ValueError, match="Bernoulli has no context"):
        jcalib.core.play(ApproachabilityRecalibrator(10, 0.1), Bernoulli(0.3), 5, key=jax.random.key(0))
    assert jcalib.core.play(ApproachabilityRecalibrator(10, 0.1), DistortedModel(), 5, key=jax.random.key(0)).y.shape == (5,)


def test_sizes_are_bounded_before_anything_is_allocated():
    from jcalib.forecasters import AlmostOneStepAhead
    from jcalib.natures import Bernoulli

    f, n, k = AlmostOneStepAhead(4), Bernoulli(0.3), jax.random.key(0)
    with pytest.raises(ValueError, match=r"T=1000000000000 exceeds 2\*\*31 - 128.*int32"):
        jcalib.core.play(f, n, 10**12, key=k, record="summary")
    with pytest.raises(ValueError, match="chunk=1000000000000 exceeds"):
        jcalib.core.play(f, n, 8, key=k, chunk=10**12)
    with pytest.raises(ValueError, match="n_seeds=1000000000000 exceeds"):
        jcalib.core.sweep(f, n, 8, key=k, n_seeds=10**12)
    with pytest.raises(ValueError, match="n_bins must be a positive integer"):
        jcalib.core.play(f, n, 8, key=k, n_bins=0)  # checked even where record="full" ignores it
    with pytest.raises(ValueError, match="threads=1000000000000 exceeds"):
        jcalib.core.sweep(f, n, 8, key=k, threads=10**12)
    with pytest.raises(ValueError, match="natures must be an AbstractNature"):
        jcalib.core.sweep(f, 3, 8, key=k)
    # NumPy integers are integers
    assert jcalib.core.play(f, n, np.int64(8), key=k, chunk=np.int32(4)).y.shape == (8,)


def test_a_history_larger_than_the_host_is_refused(monkeypatch):
    from jcalib.core import loop
    from jcalib.forecasters import AlmostOneStepAhead
    from jcalib.natures import Bernoulli

    monkeypatch.setattr(loop, "_host_memory", lambda: 1000)  # bytes
    with pytest.raises(ValueError, match="history of 300 rounds would need .* record a summary"):
        jcalib.core.play(AlmostOneStepAhead(4), Bernoulli(0.3), 300, key=jax.random.key(0))


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_keys_of_other_implementations_run(impl):
    from jcalib.forecasters import AlmostOneStepAhead
    from jcalib.natures import Bernoulli

    key = jax.random.key(0, impl=impl)
    a = jcalib.core.play(AlmostOneStepAhead(4), Bernoulli(0.3), 200, key=key)
    b = jcalib.core.sweep(AlmostOneStepAhead(4), Bernoulli(0.3), 200, key=key, n_seeds=2, threads=1)
    assert a.y.shape == (200,) and b.y.shape == (1, 2, 200)
    assert 0 < a.y.mean() < 1


def test_mixture_checks_its_weights_and_support():
    mix = Mixture(jnp.array([0.2, 0.8]), jnp.array([0.25, 0.75]))
    assert float(mix.mean()) == pytest.approx(0.65)
    for probs, match in (([1.5, -0.5], "non-negative"), ([0.5, 0.6], "sum to 1"), ([np.nan, 1.0], "NaN"),
                         ([[0.5, 0.5]], "1-D")):
        with pytest.raises(ValueError, match=match):
            Mixture(jnp.array([0.2, 0.8]), jnp.array(probs)).mean()
    with pytest.raises(ValueError, match="support must have a leading axis"):
        Mixture(jnp.array([0.2, 0.8, 0.5]), jnp.array([0.5, 0.5])).mean()
    with pytest.raises(ValueError, match="support contains NaN"):
        Mixture(jnp.array([0.2, np.nan]), jnp.array([0.5, 0.5])).sample(key=jax.random.key(0))
    with pytest.raises(Exception, match="probs must be finite, non-negative and sum to 1"):
        jax.jit(lambda p: Mixture(jnp.array([0.2, 0.8]), p).mean())(jnp.array([1.5, -0.5]))
    with pytest.raises(ValueError, match="public contains NaN"):
        jcalib.core.as_mixture(jnp.array([0.2, np.nan]))
    with pytest.raises(ValueError, match="public must be a numeric array"):
        jcalib.core.as_mixture(np.array(["a"]))


def test_play_and_sweep_declare_their_settings():
    """The drivers state their inputs once (jcalib._validation.declare): horizon, key, sizes,
    and modules whose outcome spaces agree."""
    from jcalib._validation import declared

    assert {"forecaster", "nature", "T", "chunk", "n_bins", "key"} <= set(declared(jcalib.core.play))
    assert {"forecaster", "natures", "T", "n_seeds", "threads"} <= set(declared(jcalib.core.sweep))
    with pytest.raises(ValueError, match="natures must not be empty"):
        jcalib.core.sweep(jcalib.forecasters.Constant(0.5), [], 10, key=jax.random.key(0))

"""Where the time of an AOSA sweep goes: ablation variants timed in one run.

B = 1024 sequences, T = 10^4 rounds of Almost-One-Step-Ahead (m = 100) against Bernoulli(0.3),
``record="summary"``. Each variant removes one cost and the difference is that cost's share:

- no RNG: every sequence replays its own pre-drawn outcomes (B stacked ``Replay`` natures, so
  the batch is really batched: a single shared Replay against a deterministic forecaster would
  not depend on the seed, and XLA would compute one sequence);
- no recorder: a recorder that only sums the outcomes (it keeps the loop alive);
- no bisection: AOSA with the search replaced by a constant-time index;
- the random numbers alone: per-round ``fold_in`` + ``bernoulli`` against block ``bits``.

    python benchmarks/profile_aosa.py [--B 1024] [--T 10000] [--trace]
    python benchmarks/profile_aosa.py --approachability [--T 2000] [--trace]

``--approachability`` profiles the recalibrator of Okoroafor et al. (2024) instead (m = 22, the
replayed ``DistortedModel(slope=2)`` stream of ``benchmarks/approachability_throughput.py``): the
full round against a recorder that only sums y and against the recalibrator with its oracle
replaced by the nearest grid point (the difference is the oracle's share), timed in turns; then
XLA's thread-splitting of loop fusions (a scan over B-wide elementwise chains of increasing
length: XLA's CPU cost model splits a fusion over 2 threads once flops > bytes and flops + 10
bytes >= 2e5, and on a loaded machine a split fusion waits for the second thread).

``--trace`` also records one sweep with the JAX profiler and prints the operations of the
compiled program by total time (``jax.profiler.ProfileData`` reads the trace; no TensorBoard
needed): per-round fusions run once per round, so their time per call is their cost per
round of all B sequences.

Times are medians of 3 after a warm-up call; µs/step is the wall time of one round of all B
sequences.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from _timing import profile_ops, timed  # benchmarks/ is on sys.path when a script here runs

import jcalib
from jcalib.core import Forecast
from jcalib.recorders import AbstractRecorder
from jcalib._grid import grid_points
from jcalib.forecasters.aosa import AlmostOneStepAhead


class SumOfOutcomes(AbstractRecorder):
    """Keeps only Σ y (so the rounds are not dead code)."""

    def init(self):
        return jnp.zeros((), jnp.int32)

    def step(self, s, rnd):
        return s + jnp.asarray(rnd.y, jnp.int32), None


class NoSearch(AlmostOneStepAhead):
    """AOSA's update with the bisection replaced by a constant-time index."""

    def predict(self, state, x, key):
        i = jnp.clip(state.beta[0], 0, self.n_bins - 1)
        v = grid_points(self.n_bins)[i]
        return Forecast(v, v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, default=1024)
    ap.add_argument("--T", type=int, default=10_000)
    ap.add_argument("--trace", action="store_true", help="per-operation times from the JAX profiler")
    ap.add_argument("--approachability", action="store_true",
                    help="profile the recalibrator of Okoroafor et al. (2024) instead")
    args = ap.parse_args(argv)
    B, T = args.B, args.T
    if args.approachability:
        return approachability(B, T, args.trace)
    m = jcalib.forecasters.aosa_bins(T)
    key = jax.random.key(0)
    ys = np.random.default_rng(1).integers(0, 2, (B, T)).astype(np.int32)
    replays = [jcalib.natures.Replay(r) for r in ys]
    bern = jcalib.natures.Bernoulli(0.3)
    aosa, nosearch = AlmostOneStepAhead(n_bins=m), NoSearch(n_bins=m)
    variants = [
        ("AOSA, Bernoulli, summary", aosa, bern, "summary"),
        ("AOSA, replayed outcomes (no RNG), summary", aosa, replays, "summary"),
        ("AOSA, Bernoulli, no recorder", aosa, bern, SumOfOutcomes()),
        ("AOSA, replayed outcomes, no recorder", aosa, replays, SumOfOutcomes()),
        ("AOSA without bisection, replayed, no recorder", nosearch, replays, SumOfOutcomes()),
    ]
    print(f"B = {B}, T = {T}, m = {m}; {jax.device_count()} x {jax.devices()[0].platform}, jax {jax.__version__}")
    print(f"{'variant':48s} {'rounds/s':>10s} {'us/step':>8s}")
    for name, f, n, rec in variants:
        seeds = 1 if isinstance(n, list) else B

        def run():
            jax.block_until_ready(jcalib.core.sweep(f, n, T, key=key, n_seeds=seeds, record=rec, progress=False))

        t = timed(run)[1]
        print(f"{name:48s} {B * T / t:10.3e} {t * 1e6 / T:8.1f}")

    seed_keys = jax.random.split(key, B)

    @jax.jit
    def per_round_draws(ks):
        def body(c, t):
            kk = jax.vmap(lambda k: jax.random.fold_in(k, t))(ks)
            y = jax.vmap(lambda k: jax.random.bernoulli(k, 0.3))(kk)
            return c + y.astype(jnp.int32), None

        return jax.lax.scan(body, jnp.zeros(B, jnp.int32), jnp.arange(T))[0]

    @jax.jit
    def block_bits(k):
        K = 100

        def body(c, b):
            bits = jax.random.bits(jax.random.fold_in(k, b), (K, B))
            return c + (bits < jnp.uint32(int(0.3 * 2**32))).astype(jnp.int32).sum(0), None

        return jax.lax.scan(body, jnp.zeros(B, jnp.int32), jnp.arange(T // K))[0]

    t = timed(lambda: jax.block_until_ready(per_round_draws(seed_keys)))[1]
    print(f"{'RNG alone: fold_in + bernoulli per element-round':48s} {B * T / t:10.3e} {t * 1e6 / T:8.1f}")
    t = timed(lambda: jax.block_until_ready(block_bits(key)))[1]
    print(f"{'RNG alone: bits of shape (100, B) per fold_in':48s} {B * T / t:10.3e} {t * 1e6 / T:8.1f}")
    if args.trace:
        trace(aosa, bern, B, T, key)


def trace(f, nature, B, T, key, top=25):
    """Per-operation wall times of one sweep, from the JAX profiler's trace of the XLA thunks."""

    def run():
        jax.block_until_ready(jcalib.core.sweep(f, nature, T, key=key, n_seeds=B, record="summary", progress=False))

    profile_ops(run, f"one sweep (B = {B}, T = {T})", top)


def approachability(B, T, with_trace):
    """Ablations of the recalibrator sweep of Okoroafor et al. (2024), timed in turns, and XLA's
    fusion splitting."""
    from approachability_throughput import model_stream

    from jcalib.forecasters import approachability as ap

    class NearestPoint(ap.ApproachabilityRecalibrator):
        """The recalibrator with its oracle replaced by the grid point nearest q (mixing 1/2)."""

        def choose(self, state, q):
            m = self.n_bins
            i = jnp.clip(jnp.round(q * m), 0, m - 1).astype(jnp.int32)
            return i, jnp.asarray(0.5, state.lam.dtype) + 0 * state.lam

    f = ap.ApproachabilityRecalibrator.for_horizon(10_000)
    kw = dict(n_bins=f.n_bins, step_size=f.step_size, Lambda=f.Lambda, eps=f.eps)
    q, y = model_stream(T, np.random.default_rng(0))
    replay = jcalib.natures.Replay(y, x=q)
    key = jax.random.key(0)
    variants = {
        "recalibrator, summary": (f, "summary"),
        "recalibrator, sum of y only": (f, SumOfOutcomes()),
        "nearest point (no oracle), summary": (NearestPoint(**kw), "summary"),
    }

    def runner(fc, rec):
        return lambda: jax.block_until_ready(jcalib.core.sweep(fc, replay, T, key=key, n_seeds=B, record=rec, progress=False))

    runs = {k: runner(*v) for k, v in variants.items()}
    for r in runs.values():
        r()
    times = {k: [] for k in runs}
    for _ in range(5):
        for k, r in runs.items():
            t0 = time.perf_counter()
            r()
            times[k].append(time.perf_counter() - t0)
    print(f"B = {B}, T = {T}, m = {f.n_bins}; {jax.device_count()} x {jax.devices()[0].platform}, jax {jax.__version__}")
    print(f"{'variant':40s} {'rounds/s':>10s} {'us/step':>8s}")
    for k, v in times.items():
        t = statistics.median(v)
        print(f"{k:40s} {B * T / t:10.3e} {t * 1e6 / T:8.1f}")

    print("\nXLA loop fusions over B elements: elementwise ops per element -> us per step (median of 5)")
    x0, y0 = jnp.linspace(0.0, 1.0, B), jnp.linspace(1.0, 0.0, B)
    for n_ops in (20, 40, 60, 80):

        def step(c, _, n_ops=n_ops):
            x, z = c
            for _ in range(n_ops // 4):
                x = x * 1.0001 + z * 0.5 - 0.25
                z = jnp.where(x > z, z * 0.999, x)
            return (x, z), None

        fn = jax.jit(lambda x, z, step=step: jax.lax.scan(step, (x, z), None, length=2000)[0])
        split = "outer_dimension_partitions" in fn.lower(x0, y0).compile().as_text()
        t = timed(lambda fn=fn: jax.block_until_ready(fn(x0, y0)), repeats=5)[1]
        print(f"{n_ops:4d} ops {t / 2000 * 1e6:8.2f}  {'split over threads' if split else 'one thread'}")
    if with_trace:
        trace(f, replay, B, T, key)
    print(f"load average: {os.getloadavg()[0]:.1f} (1 min)")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

"""ORCA throughput (paper 002, Algorithm 2): rounds per second with 400 Adam steps per round.

ORCA as set up in the paper's experiments (50 bins, the experiment payoff: quantile + CRPS/MSE
regret + moments) recalibrating an overconfident Gaussian expert. Measured in this one run:

- ``jcalib.play`` / ``jcalib.sweep`` for B = 1 and B = 64 vmapped streams (one compiled scan);
- the baseline: the same rounds written as a per-round Python loop calling a jitted round
  (``jax.jit`` of predict + outcome + update), one stream at a time.

Rounds/s = B·T / wall time, median of repeats after a warm-up call (compile time separately).
It also reports the time of the paper's own workload — 1000 rounds × 400 steps × 8 runs (6 hours
on an M2 laptop CPU, with an LP solver per step) — extrapolated from the B = 8 sweep's rate, or
measured in full with ``--paper``.

    python benchmarks/orca_throughput.py            # T = 40 rounds, B in {1, 8, 64}
    python benchmarks/orca_throughput.py --quick    # fewer rounds and repeats
    python benchmarks/orca_throughput.py --paper    # also run 8 streams × 1000 rounds in full
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax

import jcalib
from jcalib.forecasters import ORCA
from jcalib.natures import OverconfidentGaussian


def timed(fn, repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(0))
    first = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(r + 1))
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def python_loop(f, nat, T, key):
    """One stream, one jitted round per Python iteration."""

    @jax.jit
    def round_(fs, ns, key):
        kx, kp, ky, ku = jax.random.split(key, 4)
        x = nat.context(ns, kx)
        fc = f.predict(fs, x, kp)
        y = nat.outcome(ns, x, fc.public, ky)
        return f.update(fs, x, fc, y), nat.update(ns, x, fc, y, ku), y

    def run(seed):
        k = jax.random.fold_in(key, seed)
        fs, ns = f.init(k), nat.init(k)
        ys = []
        for t in range(T):
            fs, ns, y = round_(fs, ns, jax.random.fold_in(k, t))
            ys.append(y)
        return ys[-1]

    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="T = 10 rounds, 1 repeat")
    ap.add_argument("--rounds", type=int, default=40, help="rounds per stream (default 40)")
    ap.add_argument("--steps", type=int, default=400, help="Adam steps per round (default 400, the paper's)")
    ap.add_argument("--paper", action="store_true", help="run the paper's 8 × 1000 rounds in full")
    args = ap.parse_args(argv)
    T = 10 if args.quick else args.rounds
    repeats = 1 if args.quick else 3
    f = ORCA(n_steps=args.steps)
    nat = OverconfidentGaussian()
    key = jax.random.key(0)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({platform.processor() or platform.machine()}), "
          f"ORCA: 50 bins, experiment payoff (d = {f.payoff.dim}), {args.steps} Adam steps per round, T = {T}")
    rows = []
    c, w = timed(python_loop(f, nat, T, key), repeats)
    base = T / w
    rows.append(("per-round Python loop of a jitted round", 1, c, w, base))
    for B in (1, 8, 64):
        if B == 1:
            fn = lambda s: jcalib.play(f, nat, T, jax.random.fold_in(key, s)).y  # noqa: E731
        else:
            fn = lambda s, B=B: jcalib.sweep(f, nat, T, jax.random.fold_in(key, s), n_seeds=B).y  # noqa: E731
        c, w = timed(fn, repeats)
        rows.append((f"jcalib.{'play' if B == 1 else 'sweep'} (one scan, vmapped)", B, c, w, B * T / w))
    print(f"\n{'implementation':45s} {'B':>4s} {'compile+1st (s)':>16s} {'wall (s)':>9s} {'rounds/s':>9s} {'× loop':>7s}")
    for name, B, c, w, r in rows:
        print(f"{name:45s} {B:4d} {c:16.2f} {w:9.2f} {r:9.2f} {r / base:7.2f}")
    rate8 = rows[2][4]
    est = 8 * 1000 / rate8
    print(f"\npaper's workload (8 runs × 1000 rounds × {args.steps} steps; 6 h in the paper): "
          f"{est:.0f} s = {est / 60:.1f} min extrapolated from the B = 8 rate")
    if args.paper:
        t0 = time.perf_counter()
        jax.block_until_ready(jcalib.sweep(f, nat, 1000, key, n_seeds=8).y)
        print(f"measured in full (compile included): {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

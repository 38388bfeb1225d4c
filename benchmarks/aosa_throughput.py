"""Almost-One-Step-Ahead throughput: ``jcalib.sweep`` against the baselines a researcher would
otherwise write, all measured in this one run.

Rounds per second = B·T / wall time (median of repeats after a warm-up call). Baselines:
(a) AOSA in NumPy, vectorised over the batch (the fair baseline); (b) the per-round Python
loop over one sequence at a time (timed on a few sequences: its cost is per round).
Nature: Bernoulli(0.3) outcomes drawn each round in every implementation.

    python benchmarks/aosa_throughput.py            # B in {1, 64, 1024, 16384}, T = 10^4
    python benchmarks/aosa_throughput.py --quick    # smaller, for a smoke run
"""

from __future__ import annotations

import argparse
import math
import platform
import resource
import statistics
import time

import jax
import numpy as np

import jcalib


def aosa_numpy(B: int, T: int, m: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """AOSA (paper 000, Algorithm 1) vectorised over B sequences; returns the final forecasts.

    State: β_i = m·α(p_i) per sequence and grid point, exact integers as in jcalib.
    """
    beta = np.zeros((B, m + 1), np.int64)
    rows = np.arange(B)
    steps = max(1, math.ceil(math.log2(m)))
    p_t = np.zeros(B)
    for _ in range(T):
        lo = np.zeros(B, np.int64)
        hi = np.full(B, m, np.int64)
        for _ in range(steps):  # binary search for α(p_lo) ≤ 0 ≤ α(p_hi)
            mid = (lo + hi) // 2
            neg = beta[rows, mid] <= 0
            active = hi - lo > 1
            lo = np.where(active & neg, mid, lo)
            hi = np.where(active & ~neg, mid, hi)
        p_t = lo / m
        y = (rng.random(B) < p).astype(np.int64)
        look = np.where(y == 1, hi, lo)  # look-ahead forecast: the pair's point nearest y
        beta[rows, look] += look - m * y
    return p_t


def aosa_python(T: int, m: int, p: float, rng) -> float:
    """The per-round Python loop over one sequence."""
    beta = [0] * (m + 1)
    pt = 0.0
    for _ in range(T):
        lo, hi = 0, m
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if beta[mid] <= 0:
                lo = mid
            else:
                hi = mid
        pt = lo / m
        y = 1 if rng.random() < p else 0
        look = hi if y == 1 else lo
        beta[look] += look - m * y
    return pt


def timed(fn, repeats):
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, nargs="+", default=[1, 64, 1024, 16384])
    ap.add_argument("--T", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="B in {1, 64, 1024}, T = 2000, 3 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.B, args.T, args.repeats = [1, 64, 1024], 2000, 3
    T = args.T
    m = jcalib.forecasters.aosa_bins(T)
    f = jcalib.forecasters.AlmostOneStepAhead(n_bins=m)
    nature = jcalib.natures.Bernoulli(0.3)
    print(f"AOSA throughput, T = {T}, m = {m}; {platform.processor() or platform.machine()}, "
          f"{jax.device_count()} x {jax.devices()[0].platform}, jax {jax.__version__}")
    header = f"{'B':>7} {'jcalib rounds/s':>16} {'compile s':>10} {'numpy rounds/s':>15} {'python rounds/s':>16} {'x numpy':>8} {'x python':>9} {'peak RSS MiB':>13}"
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    py_seqs = 2
    _, py_time = timed(lambda: [aosa_python(T, m, 0.3, rng) for _ in range(py_seqs)], 1)
    py_rate = py_seqs * T / py_time
    for B in args.B:
        key = jax.random.key(B)

        def run_jax():
            s = jcalib.sweep(f, nature, T, key, n_seeds=B, record="summary", progress=False)
            jax.block_until_ready(s)

        first, t_jax = timed(run_jax, args.repeats)
        np_repeats = max(1, min(args.repeats, 3 if B >= 4096 else args.repeats))
        _, t_np = timed(lambda: aosa_numpy(B, T, m, 0.3, rng), np_repeats)
        r_jax, r_np = B * T / t_jax, B * T / t_np
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{B:>7} {r_jax:>16.3e} {first - t_jax:>10.2f} {r_np:>15.3e} {py_rate:>16.3e} {r_jax / r_np:>8.1f} {r_jax / py_rate:>9.1f} {rss:>13.0f}")
    print("compile s = first call minus the median of the later calls; python rounds/s is measured on "
          f"{py_seqs} sequences (its cost is per round, independent of B); peak RSS is the process maximum so far.")


if __name__ == "__main__":
    main()

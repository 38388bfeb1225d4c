"""Almost-One-Step-Ahead throughput: ``jcalib.core.sweep`` against the baselines a researcher would
otherwise write, all measured in this one run.

Rounds per second = B·T / wall time (median of repeats after a warm-up call; the
implementations take turns within each repeat); the compile time (first call minus the median)
is reported separately. Baselines, each on the same B sequences:

- ``numba``: the per-sequence loop compiled with numba (``pip install jcalib[bench]``), a
  xorshift64 RNG per sequence, ``prange`` over sequences on ``--threads`` threads (the
  compiled loop a researcher would write; skipped with a note when numba is missing);
- ``numpy``: AOSA vectorised over the batch in NumPy (the fair interpreted baseline);
- ``python``: the per-round Python loop over one sequence (timed on 2 sequences; its cost is
  per round, independent of B).

Nature: Bernoulli(0.3) outcomes drawn each round in every implementation; ``record="summary"``.
``--devices D`` exposes the CPU's cores as D JAX devices (set before JAX starts), so ``sweep``
shards the batch over them: one while loop per core, no per-operation thread hand-offs.

    python benchmarks/aosa_throughput.py                 # B in {1, 64, 1024, 16384}, T = 10^4
    python benchmarks/aosa_throughput.py --B 1024 --devices 2
    python benchmarks/aosa_throughput.py --quick         # smaller, for a smoke run
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import statistics
import sys
import time

import numpy as np
from _timing import timed  # benchmarks/ is on sys.path when a script here runs


def aosa_numpy(B: int, T: int, m: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """AOSA (Arunachaleswaran et al. 2024, Algorithm 1) vectorised over B sequences; returns the
    final forecasts.

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


def make_numba():
    """The compiled per-sequence loop (xorshift64 outcomes), or None without numba."""
    try:
        import numba
    except ImportError:
        return None, None

    @numba.njit(parallel=True, cache=False)
    def aosa_numba(B, T, m, p, seed):
        thr = np.uint64(min(p, 1.0 - 2.0**-53) * 2.0**64)
        ones = np.zeros(B, np.int64)
        for b in numba.prange(B):
            beta = np.zeros(m + 1, np.int64)
            s = np.uint64(0x9E3779B97F4A7C15) * np.uint64(seed * B + b + 1)
            n1 = 0
            for _ in range(T):
                lo, hi = 0, m
                while hi - lo > 1:
                    mid = (lo + hi) >> 1
                    if beta[mid] <= 0:
                        lo = mid
                    else:
                        hi = mid
                s ^= s << np.uint64(13)
                s ^= s >> np.uint64(7)
                s ^= s << np.uint64(17)
                y = 1 if s < thr else 0
                j = lo + y
                beta[j] += j - m * y
                n1 += y
            ones[b] = n1
        return ones

    return aosa_numba, numba


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, nargs="+", default=[1, 64, 1024, 16384])
    ap.add_argument("--T", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="numba threads (default 2)")
    ap.add_argument("--devices", type=int, default=1, help="JAX CPU devices to shard the batch over (default 1)")
    ap.add_argument("--no-numpy", action="store_true", help="skip the NumPy and Python baselines")
    ap.add_argument("--quick", action="store_true", help="B in {1, 64, 1024}, T = 2000, 3 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.B, args.T, args.repeats = [1, 64, 1024], 2000, 3
    if args.devices > 1:  # must precede JAX's start
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={args.devices}"
    import jax

    import jcalib

    T = args.T
    m = jcalib.forecasters.aosa_bins(T)
    f = jcalib.forecasters.AlmostOneStepAhead(n_bins=m)
    nature = jcalib.natures.Bernoulli(0.3)
    aosa_numba, numba = make_numba()
    if numba is not None:
        numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    print(f"AOSA throughput, T = {T}, m = {m}; {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{jax.device_count()} x {jax.devices()[0].platform}, jax {jax.__version__}, "
          f"numba {numba.__version__ + f' ({numba.get_num_threads()} threads)' if numba else 'not installed'}")
    header = (f"{'B':>7} {'jcalib r/s':>11} {'compile s':>10} {'numba r/s':>11} {'numpy r/s':>11} {'python r/s':>11} "
              f"{'x numba':>8} {'x numpy':>8} {'x python':>9} {'RSS MiB':>8}")
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    py_rate = float("nan")
    if not args.no_numpy:
        py_seqs = 2
        _, py_time = timed(lambda: [aosa_python(T, m, 0.3, rng) for _ in range(py_seqs)], 1)
        py_rate = py_seqs * T / py_time
    for B in args.B:
        key = jax.random.key(B)

        def run_jax():
            s = jcalib.core.sweep(f, nature, T, key=key, n_seeds=B, record="summary", progress=False)
            jax.block_until_ready(s)

        # warm-up (the compile) first, then the implementations take turns in every repeat, so
        # that a burst of load on a shared machine hits all of them alike
        t0 = time.perf_counter()
        run_jax()
        first = time.perf_counter() - t0
        impls = {"jax": run_jax}
        if aosa_numba is not None:
            aosa_numba(2, 10, m, 0.3, 0)  # compile
            impls["numba"] = lambda: aosa_numba(B, T, m, 0.3, 1)
        if not args.no_numpy:
            impls["numpy"] = lambda: aosa_numpy(B, T, m, 0.3, rng)
        times = {k: [] for k in impls}
        for r in range(args.repeats):
            for k, fn in impls.items():
                if k == "numpy" and B >= 4096 and r >= 2:
                    continue  # the slow baseline: 2 repeats suffice
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
        t_jax = statistics.median(times["jax"])
        r_jax = B * T / t_jax
        r_nb = B * T / statistics.median(times["numba"]) if "numba" in times else float("nan")
        r_np = B * T / statistics.median(times["numpy"]) if "numpy" in times else float("nan")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{B:>7} {r_jax:>11.3e} {first - t_jax:>10.2f} {r_nb:>11.3e} {r_np:>11.3e} {py_rate:>11.3e} "
              f"{r_jax / r_nb:>8.2f} {r_jax / r_np:>8.1f} {r_jax / py_rate:>9.1f} {rss:>8.0f}", flush=True)
    print("r/s = rounds per second (B·T / median wall time); compile s = first call minus the median; "
          "python r/s is measured on 2 sequences; RSS is the process maximum so far.")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} (1 min)")
    return 0


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    sys.exit(main())

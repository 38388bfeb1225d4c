"""Resampling throughput of jcalib.stats against the Python loops a researcher would write.

(a) Bootstrap of smooth ECE: ``jcalib.stats.bootstrap(smooth_ece, ...)`` (each resample is a
    multinomial count vector over the rows, and smooth ECE is evaluated from the counts on grids
    laid out once) against a Python loop calling ``relplot.smECE`` on the same resamples (the
    rows repeated by jcalib's own count vectors, re-drawn from the same keys), so both compute
    the same numbers; the looped ones are compared. Two data sets of n rows, p ~ U(0, 1):
    miscalibrated, y ~ Bernoulli(p^1.3), and calibrated, y ~ Bernoulli(p) (smooth ECE below
    0.01: the bandwidth search reaches relplot's finer grids).
(b) Consistency resampling of the binned ECE (15 bins): ``jcalib.stats.consistency_test``
    (each bin's number of ones drawn from its exact Poisson-binomial distribution, computed once)
    against a NumPy loop that draws every outcome from its forecast, as Bröcker and Smith
    describe, and ``np.bincount``s the bins: the same null distribution, not the same draws.
    jcalib's time includes computing the distributions.
(c) Percentile against BCa: ``bootstrap(smooth_ece, ..., method="bca")`` and the percentile
    interval on the same data, warm, in the same process (n = 2·10^4 and 1000 resamples by
    default: ``--interval-n``, ``--interval-resamples``).

Each loop is timed over a stated number of iterations (``--loop-iters``; a full 10^4-call
relplot loop at n = 10^5 takes minutes) and compared per resample; JAX compile time is
reported separately (first call minus a warm call). Rows alternate jcalib and baseline in one
process so both see the same machine load; the 1-minute load average is printed with every
row — the machine is shared, so ratios are what count.

``--first-call``: the first and second (warm) call of ``bootstrap(smooth_ece, ...)`` (percentile
and BCa, n = 2·10^4, 1000 resamples; ``--n``, ``--resamples``, ``--methods``, ``--data
calibrated`` for y ~ Bernoulli(p)) each in a fresh process, with the number of XLA compilations
and their seconds (``jax.monitoring``); with ``--old DIR`` the same in processes that import
jcalib from ``DIR`` (an older checkout), alternating old and new.

Usage:
    python benchmarks/stats_bootstrap.py            # n = 10^5, 10^4 resamples
    python benchmarks/stats_bootstrap.py --quick    # n = 10^4, 500 resamples, < 1 min
    python benchmarks/stats_bootstrap.py --first-call --old /tmp/old --repeats 2
    python benchmarks/stats_bootstrap.py --first-call --old /tmp/old --data calibrated --methods percentile --resamples 256
    JAX_PLATFORMS=cuda python benchmarks/stats_bootstrap.py   # jcalib on a GPU (the default is the CPU)
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jcalib.metrics import binned_ece, smooth_ece  # noqa: E402
from jcalib.stats import bootstrap, consistency_test  # noqa: E402


def load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def _wall(fn):
    t0 = time.perf_counter()
    out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - t0, out


def bench_smooth_ece(p, y, B, loop_iters, label):
    import relplot

    from jcalib.metrics.smooth import smooth_ece_count_tables
    from jcalib.stats._multinomial import counts_by_position, multinomial_draws, poisson_table
    from jcalib.stats.resampling import _resample_keys

    key = jax.random.key(0)
    pj, yj = jnp.asarray(p), jnp.asarray(y)
    t = smooth_ece_count_tables(pj, pj - yj.astype(pj.dtype), jnp.ones_like(pj))
    first, _ = _wall(lambda: bootstrap(smooth_ece, pj, yj, key=key, n_resamples=B).resamples)
    warm, res = _wall(lambda: bootstrap(smooth_ece, pj, yj, key=key, n_resamples=B).resamples)
    # the same resamples: jcalib's count vectors (rows in sorted order of the forecasts)
    table = poisson_table(len(p))
    keys = _resample_keys(jax.random.split(key)[0], jnp.uint32(0), loop_iters)
    occupied = t.occupied.reshape(t.coef.shape[:2])

    @jax.jit
    def draw(keys):  # count vectors by row (in sorted order of the forecasts)
        draws = multinomial_draws(keys, table, occupied, t.coef)
        return counts_by_position(keys, draws, table, occupied, t.place)[:, t.place]

    counts = np.asarray(draw(keys))
    order = np.asarray(jnp.argsort(pj))
    ps, ys = p[order], y[order]
    t0 = time.perf_counter()
    ref = [relplot.smECE(np.repeat(ps, m), np.repeat(ys, m)) for m in counts]
    loop = (time.perf_counter() - t0) / loop_iters
    err = float(np.max(np.abs(np.asarray(res[:loop_iters], dtype=float) - np.array(ref))))
    return dict(name=f"bootstrap smooth ECE vs relplot.smECE loop, {label}", jcalib_per=warm / B,
                compile=first - warm, loop_per=loop, loop_iters=loop_iters, max_abs_diff=err)


def bench_intervals(n, B, repeats=3):
    """Warm seconds of the percentile and the BCa interval of smooth ECE, alternating, same data."""
    rng = np.random.default_rng(1)
    p = jnp.asarray(rng.random(n).astype(np.float32))
    rows = []
    for label, y in (("miscalibrated", rng.random(n) < np.asarray(p) ** 1.3), ("calibrated", rng.random(n) < np.asarray(p))):
        y = jnp.asarray(y.astype(np.int32))
        times = {"percentile": [], "bca": []}
        first = {}
        for r in range(repeats + 1):
            for method in ("percentile", "bca"):
                sec, _ = _wall(lambda: bootstrap(smooth_ece, p, y, key=jax.random.key(r), n_resamples=B, method=method).low)
                (times[method].append(sec) if r else first.__setitem__(method, sec))
        pct, bca = np.median(times["percentile"]), np.median(times["bca"])
        rows.append(f"percentile vs BCa, smooth ECE, n = {n}, {B} resamples, {label}: percentile {pct:.3f} s, "
                    f"BCa {bca:.3f} s (ratio {bca / pct:.2f}; first calls {first['percentile']:.1f} and "
                    f"{first['bca']:.1f} s), load {load()}")
    return rows


_FIRST_CALL = r"""
import collections, os, sys, time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax, numpy as np
n_compiles, seconds = collections.Counter(), collections.Counter()
def listen(event, duration, **_):
    n_compiles[event] += 1; seconds[event] += duration
jax.monitoring.register_event_duration_secs_listener(listen)
from jcalib.metrics import smooth_ece
from jcalib.stats import bootstrap
n, B, method, calibrated = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "calibrated"
rng = np.random.default_rng(0)
p = rng.random(n).astype(np.float32); y = (rng.random(n) < (p if calibrated else p**1.3)).astype(np.int32)
def call(seed):
    t = time.perf_counter()
    jax.block_until_ready(bootstrap(smooth_ece, p, y, key=jax.random.key(seed), n_resamples=B, method=method))
    return time.perf_counter() - t
first = call(0)
c = "/jax/core/compile/backend_compile_duration"
compiles, compile_s = n_compiles[c], seconds[c]
second = call(1)
print(f"{first:.2f} {second:.3f} {compiles} {compile_s:.2f} {n_compiles[c] - compiles}")
"""


def first_calls(old, repeats, n=20_000, B=1000, data="miscalibrated", methods=("percentile", "bca")):
    import subprocess
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    versions = [("new", here)] + ([("old", old)] if old else [])
    for r in range(repeats):
        for method in methods:
            for label, root in (versions if r % 2 == 0 else versions[::-1]):
                # no persistent cache (this process's, handed down through the environment), and
                # the working directory the version's own root: `python -c` imports from there first
                env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_PERSISTENT_CACHE")
                       and k != "JAX_COMPILATION_CACHE_DIR"}
                env.update(PYTHONPATH=root, JCALIB_COMPILATION_CACHE="0")
                start_load = load()
                out = subprocess.run([sys.executable, "-c", _FIRST_CALL, str(n), str(B), method, data], env=env,
                                     cwd=root, capture_output=True, text=True, check=True).stdout.split()
                first, second, compiles, compile_s, again = out
                print(f"{label:3s} {method:10s} {data}, n = {n}, {B} resamples: first call {first} s ({compiles} XLA "
                      f"compilations, {compile_s} s), second call {second} s ({again} compilations), "
                      f"load {start_load} -> {load()}", flush=True)


def bench_consistency(p, y, B, loop_iters, n_bins=15):
    key = jax.random.key(1)
    pj, yj = jnp.asarray(p), jnp.asarray(y)
    run = lambda: consistency_test(binned_ece, pj, yj, key=key, n_resamples=B).p_value
    first, _ = _wall(run)
    warm, _ = _wall(run)
    rng = np.random.default_rng(0)
    idx = np.clip(np.floor(p * n_bins).astype(int), 0, n_bins - 1)
    t0 = time.perf_counter()
    for _ in range(loop_iters):
        ys = rng.random(p.size) < p
        bias = np.bincount(idx, p - ys, n_bins)
        np.sum(np.abs(bias)) / p.size
    loop = (time.perf_counter() - t0) / loop_iters
    return dict(name="consistency resampling, binned ECE vs NumPy loop", jcalib_per=warm / B, compile=first - warm,
                loop_per=loop, loop_iters=loop_iters)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="n = 10^4, 500 resamples")
    ap.add_argument("--n", type=int, default=None, help="rows (default 10^5; 10^4 with --quick)")
    ap.add_argument("--resamples", type=int, default=None, help="jcalib resamples (default 10^4; 500 with --quick)")
    ap.add_argument("--loop-iters", type=int, default=None, help="iterations of each Python loop (default 20 / 1000)")
    ap.add_argument("--interval-n", type=int, default=20_000, help="rows of the percentile/BCa comparison")
    ap.add_argument("--interval-resamples", type=int, default=1000, help="resamples of the percentile/BCa comparison")
    ap.add_argument("--first-call", action="store_true", help="first calls in fresh processes only")
    ap.add_argument("--old", default=None, help="with --first-call: a directory to import an older jcalib from")
    ap.add_argument("--repeats", type=int, default=1, help="with --first-call: rounds of fresh processes")
    ap.add_argument("--data", choices=("miscalibrated", "calibrated"), default="miscalibrated",
                    help="with --first-call: y ~ Bernoulli(p^1.3) or y ~ Bernoulli(p) (the finer grids)")
    ap.add_argument("--methods", default="percentile,bca", help="with --first-call: comma-separated intervals")
    args = ap.parse_args(argv)
    if args.first_call:
        first_calls(args.old, args.repeats, n=args.n or 20_000, B=args.resamples or 1000, data=args.data,
                    methods=tuple(args.methods.split(",")))
        return
    n = args.n or (10_000 if args.quick else 100_000)
    B = args.resamples or (500 if args.quick else 10_000)
    rng = np.random.default_rng(0)
    p = rng.random(n).astype(np.float32)
    u = rng.random(n)
    print(f"n = {n}, resamples = {B}, devices = {jax.devices()}")
    iters = args.loop_iters or (10 if args.quick else 20)
    rows = [
        bench_smooth_ece(p, (u < p**1.3).astype(np.int32), B, iters, "miscalibrated (y ~ Bernoulli(p^1.3))"),
        bench_smooth_ece(p, (u < p).astype(np.int32), B, iters, "calibrated (y ~ Bernoulli(p))"),
        bench_consistency(p, (u < p**1.3).astype(np.int32), B, args.loop_iters or (200 if args.quick else 1000)),
    ]
    for r in rows:
        extra = f", max |jcalib - relplot| on the looped resamples = {r['max_abs_diff']:.2e}" if "max_abs_diff" in r else ""
        print(
            f"{r['name']}: jcalib {1e3 * r['jcalib_per']:.3f} ms/resample (compile {r['compile']:.1f} s), "
            f"loop {1e3 * r['loop_per']:.3f} ms/resample over {r['loop_iters']} iterations, "
            f"ratio {r['loop_per'] / r['jcalib_per']:.1f}x, load {load()}{extra}"
        )
    for row in bench_intervals(args.interval_n, args.interval_resamples):
        print(row)


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

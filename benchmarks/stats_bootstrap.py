"""Resampling throughput of jcalib.stats against the Python loops a researcher would write.

(a) Bootstrap of smooth ECE: ``jcalib.stats.bootstrap(smooth_ece, ...)`` (one compiled call;
    each resample is a multinomial count vector over the rows, and smooth ECE is evaluated from
    the counts on grids laid out once) against a Python loop calling ``relplot.smECE`` on the
    same resamples (the rows repeated by jcalib's own count vectors, re-drawn from the same
    keys), so both compute the same numbers; the looped ones are compared.
(b) Consistency resampling of the binned ECE (15 bins): ``jcalib.stats.consistency_test``
    (each bin's number of ones drawn from its exact Poisson-binomial distribution, computed once)
    against a NumPy loop that draws every outcome from its forecast, as Bröcker and Smith
    describe, and ``np.bincount``s the bins: the same null distribution, not the same draws.
    jcalib's time includes computing the distributions.

Each loop is timed over a stated number of iterations (``--loop-iters``; a full 10^4-call
relplot loop at n = 10^5 takes minutes) and compared per resample; JAX compile time is
reported separately (first call minus a warm call). Rows alternate jcalib and baseline in one
process so both see the same machine load; the 1-minute load average is printed with every
row — the machine is shared, so ratios are what count.

Usage:
    python benchmarks/stats_bootstrap.py            # n = 10^5, 10^4 resamples
    python benchmarks/stats_bootstrap.py --quick    # n = 10^4, 500 resamples, < 1 min
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


def bench_smooth_ece(p, y, B, loop_iters):
    import relplot

    from jcalib.metrics.smooth import smooth_ece_count_tables
    from jcalib.stats._multinomial import counts_by_position, multinomial_draws, poisson_table

    key = jax.random.key(0)
    pj, yj = jnp.asarray(p), jnp.asarray(y)
    t = smooth_ece_count_tables(pj, pj - yj.astype(pj.dtype), jnp.ones_like(pj))
    first, _ = _wall(lambda: bootstrap(smooth_ece, pj, yj, key=key, n_resamples=B).resamples)
    warm, res = _wall(lambda: bootstrap(smooth_ece, pj, yj, key=key, n_resamples=B).resamples)
    # the same resamples: jcalib's count vectors (rows in sorted order of the forecasts)
    table = poisson_table(len(p))
    keys = jax.random.split(key, B)[:loop_iters]
    occupied = t.occupied.reshape(t.coef[0].shape[:2])

    @jax.jit
    def draw(keys):  # count vectors by row (in sorted order of the forecasts)
        draws = multinomial_draws(keys, table, occupied, t.coef[0])
        return counts_by_position(keys, draws, table, occupied, t.place)[:, t.place]

    counts = np.asarray(draw(keys))
    order = np.asarray(jnp.argsort(pj))
    ps, ys = p[order], y[order]
    t0 = time.perf_counter()
    ref = [relplot.smECE(np.repeat(ps, m), np.repeat(ys, m)) for m in counts]
    loop = (time.perf_counter() - t0) / loop_iters
    err = float(np.max(np.abs(np.asarray(res[:loop_iters], dtype=float) - np.array(ref))))
    return dict(name="bootstrap smooth ECE vs relplot.smECE loop", jcalib_per=warm / B, compile=first - warm,
                loop_per=loop, loop_iters=loop_iters, max_abs_diff=err)


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
    args = ap.parse_args(argv)
    n = args.n or (10_000 if args.quick else 100_000)
    B = args.resamples or (500 if args.quick else 10_000)
    rng = np.random.default_rng(0)
    p = rng.random(n).astype(np.float32)
    y = (rng.random(n) < p**1.3).astype(np.int32)
    print(f"n = {n}, resamples = {B}, devices = {jax.devices()}")
    rows = [
        bench_smooth_ece(p, y, B, args.loop_iters or (10 if args.quick else 20)),
        bench_consistency(p, y, B, args.loop_iters or (200 if args.quick else 1000)),
    ]
    for r in rows:
        extra = f", max |jcalib - relplot| on the looped resamples = {r['max_abs_diff']:.2e}" if "max_abs_diff" in r else ""
        print(
            f"{r['name']}: jcalib {1e3 * r['jcalib_per']:.3f} ms/resample (compile {r['compile']:.1f} s), "
            f"loop {1e3 * r['loop_per']:.3f} ms/resample over {r['loop_iters']} iterations, "
            f"ratio {r['loop_per'] / r['jcalib_per']:.1f}x, load {load()}{extra}"
        )


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

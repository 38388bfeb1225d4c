"""CORP score decomposition with bootstrap intervals against a loop over model-diagnostics.

``jcalib.stats.score_decomposition(p, y, key=..., n_resamples=B)`` (one compiled call: the
forecasts are sorted once and cut into segments that lie in one PAV block of every resample, and
the segments into units of at most 8 rows; each resample's count vector is drawn as Poisson
counts topped up to n draws, gathered into unit sums, and its PAV refit runs over the units as
pooling rounds on the blocks' sums, ``--chunk`` resamples at a time) against the loop a researcher would
write: draw row indices with NumPy, call ``model_diagnostics.scoring.decompose`` on the
resampled rows (scikit-learn's isotonic regression inside), B times. Both compute the Brier
decomposition of B resamples of n rows; the loop is timed over ``--loop-iters`` resamples and
compared per resample. JAX compile time is reported separately (first call minus a warm call).
``--turns`` turns alternate jcalib and the loop in one process, each with the 1-minute load
average, and the ratio of the medians is reported, so both see the same machine load — the
machine is shared, so ratios are what count.

Usage:
    python benchmarks/corp.py             # n = 10^5, 1000 resamples
    python benchmarks/corp.py --quick     # n = 10^4, 200 resamples
    JAX_PLATFORMS=cuda python benchmarks/corp.py   # jcalib on a GPU (the default is the CPU)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import timed  # noqa: E402

from jcalib.stats import score_decomposition  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--loop-iters", type=int, default=20)
    ap.add_argument("--turns", type=int, default=3, help="alternations of jcalib and the loop (medians)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.n, args.resamples, args.loop_iters = 10_000, 200, 20
    from model_diagnostics.scoring import SquaredError, decompose

    rng = np.random.default_rng(0)
    n, B = args.n, args.resamples
    p = rng.uniform(size=n).astype(np.float32)
    y = (rng.uniform(size=n) < p**1.3).astype(np.float32)
    print(f"device: {jax.devices()[0].device_kind}; n = {n}, B = {B}, chunk = {args.chunk}")

    def ours():
        d = score_decomposition(p, y, key=jax.random.key(1), n_resamples=B, chunk=args.chunk)
        jax.block_until_ready(d.resamples)
        return d

    def loop():
        p64, y64 = p.astype(np.float64), y.astype(np.float64)
        out = []
        for _ in range(args.loop_iters):
            idx = rng.integers(0, n, n)
            r = decompose(y64[idx], p64[idx], scoring_function=SquaredError()).row(0, named=True)
            out.append((r["score"], r["miscalibration"], r["discrimination"], r["uncertainty"]))
        return np.array(out)

    first, warm = timed(ours, repeats=1)
    print(f"jcalib compile {first - warm:.1f} s")
    # turns: jcalib (B resamples) then the loop (--loop-iters resamples), each turn in the same
    # stretch of machine load; the ratio of the medians per resample is the figure to quote
    mine, theirs = [], []
    for turn in range(args.turns):
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        d = ours()
        mine.append((time.perf_counter() - t0) / B)
        t0 = time.perf_counter()
        ref = loop()
        theirs.append((time.perf_counter() - t0) / args.loop_iters)
        print(f"turn {turn + 1}: jcalib {mine[-1] * 1e3:.2f} ms per resample, model-diagnostics loop "
              f"{theirs[-1] * 1e3:.1f} ms per resample, ratio {theirs[-1] / mine[-1]:.1f}x [load {load:.1f}]")
    per_ours, per_loop = float(np.median(mine)), float(np.median(theirs))
    print(f"jcalib: {per_ours * B:.2f} s for {B} resamples ({per_ours * 1e3:.2f} ms each; median of {args.turns})")
    print(f"model-diagnostics loop: {per_loop * 1e3:.1f} ms per resample ({args.loop_iters} timed a turn; "
          f"{per_loop * B:.1f} s for {B})")
    print(f"ratio (loop / jcalib, per resample, medians): {per_loop / per_ours:.1f}x")
    # the two resampling distributions agree (different draws): their means and spreads
    ours_res = np.asarray(d.resamples, np.float64)
    print("MCB resamples: jcalib mean %.5f sd %.5f; loop mean %.5f sd %.5f" % (
        ours_res[:, 1].mean(), ours_res[:, 1].std(), ref[:, 1].mean(), ref[:, 1].std()))


if __name__ == "__main__":
    main()

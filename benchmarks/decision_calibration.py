"""Cost of the decision-calibration partition search and of one recalibration stage.

For every N ∈ {10⁴, 5·10⁴}, C ∈ {10, 100, 1000}, K ∈ {2, 5} and R ∈ {1, 16} restarts:

* ``step_ms``: wall time of one Adam step of the witness search (``partition_search``,
  all R restarts together): the median over repeats of a compiled call running ``--steps``
  steps, divided by ``--steps``; measured after a warm-up call, each repeat running the call
  back to back for at least 0.5 s.
* ``compile_s``: ahead-of-time compile time of that call (``jit(...).lower(...).compile()``),
  measured separately.
* ``mem_MB``: XLA's memory analysis of the compiled search (arguments + outputs + temporaries):
  the peak working set of the program, independent of what else the process holds.
* ``ns/(NCKR)``: step time per unit of N·C·K·R; constant if the cost is linear in N·C·K·R.
* for R = 16: ``x_one`` = step time of 16 vmapped restarts ÷ step time of one restart (16 would
  mean no gain from batching), and ``loop_x`` = a plain Python loop over the 16 restarts
  calling the same compiled one-restart search ÷ the vmapped call.
* ``stage_ms``: one recalibration stage (search with ``--stage-steps`` steps, least-squares
  adjustment, simplex projection), and ``stage_300_s``: its cost extrapolated to the default
  300 search steps (measured overhead + 300 × step time).

Finally the step-time ratios when N grows ×5 or K grows ×2.5 (linear cost: the same ratios),
and, for each R, the log-log slope of step time on N·C·K over the configurations with
N·C·K ≥ 10⁷. The arithmetic is linear in N·C·K·R; the time need not be: with K·R small the
products (N × C) · (C × K·R) are bound by reading the (N, C) predictions, so time grows with
N·C but less than linearly in K and R (which is what makes vmapped restarts cheap).
CPU only here; the script runs as is on an accelerator.

Usage::

    python benchmarks/decision_calibration.py            # full table (a few minutes on 2 cores)
    python benchmarks/decision_calibration.py --quick    # small sizes only
"""

from __future__ import annotations

import argparse
import itertools
import math
import resource
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jcalib.metrics import PartitionSearch
from jcalib.metrics.decision import partition_search
from jcalib.recalibration.decision import _stage


def _data(n, c, seed=0):
    k1, k2 = jax.random.split(jax.random.key(seed))
    z = 2.0 * jax.random.normal(k1, (n, c))
    labels = jax.random.categorical(k2, z)
    probs = jax.nn.softmax(1.5 * z, axis=1)  # over-confident, so the search has work to do
    onehot = jax.nn.one_hot(labels, c, dtype=probs.dtype)
    weights = jnp.full((n,), 1.0 / n, probs.dtype)
    return probs, onehot, weights


def _timed(fn, repeats, min_time=0.5):
    """Median seconds per call of ``fn`` after a warm-up; each timed repeat runs enough calls
    back to back (dispatch is asynchronous) to last at least ``min_time``."""
    t = time.perf_counter()
    jax.block_until_ready(fn())  # warm-up
    calls = max(1, math.ceil(min_time / max(time.perf_counter() - t, 1e-6)))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready([fn() for _ in range(calls)])
        times.append((time.perf_counter() - t) / calls)
    return statistics.median(times)


def _compile(fun, *args, **static):
    t = time.perf_counter()
    compiled = jax.jit(fun, static_argnames=tuple(static)).lower(*args, **static).compile()
    seconds = time.perf_counter() - t
    mem = compiled.memory_analysis()
    size = None
    if mem is not None:
        size = (mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes) / 2**20
    return compiled, seconds, size


def _search(key, probs, residual, weights, *, n_actions, n_restarts, n_steps):
    return partition_search(probs, residual, weights, key=key, n_actions=n_actions,
                            search=PartitionSearch(n_restarts=n_restarts, n_steps=n_steps))


def _one_stage(key, probs, onehot, weights, *, n_actions, n_restarts, n_steps):
    # DecisionCalibration's default stage: soft cells, squared objective, ridge 1e-6, projection
    search = PartitionSearch(n_restarts=n_restarts, n_steps=n_steps, objective="squared")
    return _stage(key, probs, onehot, weights, search, jnp.asarray(1e-6, probs.dtype), None,
                  n_actions=n_actions, hard=False, project=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 10⁴, C ≤ 100 only")
    ap.add_argument("--steps", type=int, default=5, help="search steps per timed call")
    ap.add_argument("--stage-steps", type=int, default=10, help="search steps in the timed stage")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)

    sizes_n = [10_000] if args.quick else [10_000, 50_000]
    sizes_c = [10, 100] if args.quick else [10, 100, 1000]
    print(f"backend: {jax.default_backend()}, devices: {jax.devices()}, dtype: {jnp.result_type(float)}")
    header = ("N", "C", "K", "R", "step_ms", "ns/(NCKR)", "compile_s", "mem_MB", "x_one", "loop_x",
              "stage_ms", "stage_300_s")
    print(" ".join(f"{h:>11}" for h in header), flush=True)
    rows = []
    key = jax.random.key(1)
    for n, c in itertools.product(sizes_n, sizes_c):
        probs, onehot, weights = _data(n, c)
        residual = onehot - probs
        for k in (2, 5):
            one_step = None
            for r in (1, 16):
                static = dict(n_actions=k, n_restarts=r, n_steps=args.steps)
                search, compile_s, mem = _compile(_search, key, probs, residual, weights, **static)
                step = _timed(lambda: search(key, probs, residual, weights), args.repeats) / args.steps
                x_one = loop_x = float("nan")
                if r == 1:
                    one_step, one_search = step, search
                else:
                    x_one = step / one_step
                    keys = jax.random.split(key, r)

                    def loop():
                        return [one_search(kk, probs, residual, weights) for kk in keys]

                    loop_x = _timed(loop, max(1, args.repeats - 1)) / (step * args.steps)
                stage_static = dict(n_actions=k, n_restarts=r, n_steps=args.stage_steps)
                stage, _, _ = _compile(_one_stage, key, probs, onehot, weights, **stage_static)
                stage_s = _timed(lambda: stage(key, probs, onehot, weights), args.repeats)
                overhead = max(0.0, stage_s - args.stage_steps * step)
                row = dict(N=n, C=c, K=k, R=r, step_ms=1e3 * step, unit=1e9 * step / (n * c * k * r),
                           compile_s=compile_s, mem=mem, x_one=x_one, loop_x=loop_x, stage_ms=1e3 * stage_s,
                           stage300=overhead + 300 * step)
                rows.append(row)
                print(f"{n:>11} {c:>11} {k:>11} {r:>11} {row['step_ms']:11.2f} {row['unit']:11.3f} "
                      f"{compile_s:11.2f} {mem if mem is not None else float('nan'):11.1f} {x_one:11.2f} "
                      f"{loop_x:11.2f} {row['stage_ms']:11.1f} {row['stage300']:11.2f}", flush=True)
    # Linearity: per-step time ratios when one factor grows, other settings fixed (ideal: the
    # factor itself), and the log-log slope over the large configurations, where the matmuls
    # dominate (small ones are bound by memory traffic and per-op overhead, not by N·C·K).
    by = {(row["N"], row["C"], row["K"], row["R"]): row["step_ms"] for row in rows}
    for c in sizes_c:
        for r in (1, 16):
            parts = []
            if len(sizes_n) > 1:
                parts.append("N×5: " + ", ".join(f"{by[(sizes_n[1], c, k, r)] / by[(sizes_n[0], c, k, r)]:.1f}"
                                                  for k in (2, 5)))
            parts.append("K 2→5 (×2.5): " + ", ".join(f"{by[(n, c, 5, r)] / by[(n, c, 2, r)]:.1f}" for n in sizes_n))
            print(f"C = {c:4d}, R = {r:2d}: step-time ratio " + "; ".join(parts))
    for r in (1, 16):
        big = [row for row in rows if row["R"] == r and row["N"] * row["C"] * row["K"] >= 1e7]
        if len(big) >= 3:
            x = np.log([row["N"] * row["C"] * row["K"] for row in big])
            y = np.log([row["step_ms"] for row in big])
            print(f"R = {r:2d}: log-log slope of step time on N·C·K = {np.polyfit(x, y, 1)[0]:.2f} over the "
                  f"{len(big)} configurations with N·C·K ≥ 10^7 (1 = linear)")
    ratios = [row["x_one"] for row in rows if row["R"] == 16]
    print(f"16 vmapped restarts cost {min(ratios):.1f}–{max(ratios):.1f}× one restart "
          f"(median {statistics.median(ratios):.1f}×); a Python loop over restarts costs "
          f"{statistics.median([row['loop_x'] for row in rows if row['R'] == 16]):.1f}× the vmapped call (median)")
    print(f"peak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

"""Kernel audit (Gopalan et al. 2024, Algorithm 2): time and peak memory of jcalib's tiled JAX
audit against a direct NumPy implementation that materialises the n×n Gram matrix.

Grid: n ∈ {10^3, 10^4, 10^5}, k ∈ {10, 100, 1000}, d ∈ {2, 4, 8} (``--quick``: n ≤ 10^4,
k ≤ 100, d ∈ {2, 8}). Every measurement runs in its own child process, pinned to ``--cores``
CPUs (default 2; ``os.sched_setaffinity``; XLA and OpenBLAS then use those cores), so its
peak resident memory is its own: the child reports ``resource.getrusage(RUSAGE_SELF).ru_maxrss``
after the run (that includes the Python + JAX runtime and the input arrays; an "idle" child that
only imports JAX and builds the inputs is measured for reference). Times: JAX compile time
separately (AOT ``lower().compile()``), then the median of ``--repeats`` runs (a single run
when one run takes longer than 10 s). The NumPy baseline (float32, same formulas, full Gram)
runs only for n ≤ ``--numpy-max-n`` (default 10^4: a 10^5×10^5 float32 Gram is 40 GB). Configs
whose estimated time exceeds ``--budget-s`` are listed as skipped, not run (``--budget-s 0``
runs everything).

Usage:
    python benchmarks/kernel_audit.py            # full grid: about 27 min on 2 cores, of which
                                                 # 21 min for the three n=1e5, k=1000 configs
    python benchmarks/kernel_audit.py --quick    # small grid, about a minute and a half
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path("results/kernel_audit")


def _pin(cores: int):
    avail = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, set(avail[:cores]))


def _data(n, k, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    v = rng.standard_gamma(1.0, size=(n, k), dtype=np.float32)
    v /= v.sum(1, keepdims=True)
    y = rng.integers(0, k, n).astype(np.int32)
    return v, y


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
        if times[-1] > 10.0:
            break
    return float(sorted(times)[len(times) // 2]), len(times), out


def child(kind, n, k, d, tile, repeats):
    """Run one measurement in this (fresh) process and print one JSON line."""
    import numpy as np

    v, y = _data(n, k)
    if kind == "idle-numpy":
        print(json.dumps({"rss_mb": _rss_mb()}))
        return
    if kind == "idle-jax":
        import jax
        import jax.numpy as jnp

        jax.block_until_ready(jnp.asarray(v) + 0.0)  # initialise the backend
        print(json.dumps({"rss_mb": _rss_mb()}))
        return
    if kind == "numpy":
        onehot = np.zeros((n, k), np.float32)
        onehot[np.arange(n), y] = 1.0

        def run():
            z = onehot - v
            g = v @ v.T  # n×n, materialised
            K = np.ones_like(g)
            for _ in range(d):
                K = 1.0 + g * K
            lam = np.sqrt(np.maximum(np.sum(z * (K @ z), axis=0), 0.0))
            return float(lam.sum() / (n * np.sqrt(d + 1)))

        run_s, reps, value = _timed(run, repeats)
        print(json.dumps({"run_s": run_s, "repeats": reps, "value": value, "rss_mb": _rss_mb()}))
        return
    import jax
    import jax.numpy as jnp

    from jcalib.metrics import MultinomialKernel
    from jcalib.metrics.kernel import kernel_audit_jit as _kernel_audit_jit

    ker = MultinomialKernel(d)
    vj, yj = jnp.asarray(v), jnp.asarray(y)
    t = time.perf_counter()
    compiled = _kernel_audit_jit.lower(vj, yj, kernel=ker, s=float(np.sqrt(d + 1)), tile=tile).compile()
    compile_s = time.perf_counter() - t

    def run():
        out = compiled(vj, yj)
        return float(jax.block_until_ready(out.value))

    run_s, reps, value = _timed(run, repeats)
    print(json.dumps({"compile_s": compile_s, "run_s": run_s, "repeats": reps, "value": value, "rss_mb": _rss_mb()}))


def _spawn(args, kind, n, k, d):
    cmd = [
        sys.executable, __file__, "--child", kind, str(n), str(k), str(d),
        "--tile", str(args.tile), "--repeats", str(args.repeats), "--cores", str(args.cores),
    ]
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
               OPENBLAS_NUM_THREADS=str(args.cores), OMP_NUM_THREADS=str(args.cores),
               MKL_NUM_THREADS=str(args.cores))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small grid (n <= 1e4, k <= 100, d in {2, 8})")
    p.add_argument("--ns", type=int, nargs="+", help="override the n grid")
    p.add_argument("--ks", type=int, nargs="+", help="override the k grid")
    p.add_argument("--ds", type=int, nargs="+", help="override the degree grid")
    p.add_argument("--tile", type=int, default=512, help="rows per Gram block (default 512)")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats after compilation (median)")
    p.add_argument("--cores", type=int, default=2, help="CPUs each child is pinned to (default 2)")
    p.add_argument("--numpy-max-n", type=int, default=10_000, help="largest n for the full-Gram NumPy baseline")
    p.add_argument("--budget-s", type=float, default=300.0,
                   help="skip configs estimated to take longer than this (0: run everything)")
    p.add_argument("--memory-limit-gib", type=float, default=4.0, help="limit checked for n=1e5, k=100")
    p.add_argument("--child", nargs=4, metavar=("KIND", "N", "K", "D"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    _pin(args.cores)
    if args.child:
        kind, n, k, d = args.child[0], *map(int, args.child[1:])
        child(kind, n, k, d, args.tile, args.repeats)
        return

    ns = args.ns or ([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000])
    ks = args.ks or ([10, 100] if args.quick else [10, 100, 1000])
    ds = args.ds or ([2, 8] if args.quick else [2, 4, 8])
    RESULTS.mkdir(parents=True, exist_ok=True)
    idle = {kind: _spawn(args, f"idle-{kind}", 1000, 10, 2).get("rss_mb", 0.0) for kind in ("jax", "numpy")}
    print(f"# kernel audit benchmark, {args.cores} pinned cores, tile={args.tile}; peak RSS of idle children "
          f"(imports, backend, n=1e3 data): JAX {idle['jax']:.0f} MB, NumPy {idle['numpy']:.0f} MB")
    print("# speedup = NumPy run / JAX run; mem ratio = NumPy / JAX peak RSS above the idle child")
    header = (f"{'n':>7} {'k':>5} {'d':>2} | {'jax compile s':>13} {'jax run s':>10} {'jax RSS MB':>10} | "
              f"{'numpy run s':>11} {'numpy RSS MB':>12} | {'speedup':>7} {'mem ratio':>9} {'|Δvalue|/value':>14}")
    print(header)
    print("-" * len(header))
    rows, rate = [], None  # rate: measured flop/s of the JAX audit, for the time estimates
    for n in ns:
        for k in ks:
            for d in ds:
                flops = 4.0 * n * n * k + 2.0 * n * n * d
                est = flops / rate if rate else 0.0
                row = {"n": n, "k": k, "d": d}
                if args.budget_s and est > args.budget_s:
                    row["skipped"] = f"estimated {est:.0f} s > budget {args.budget_s:.0f} s"
                    rows.append(row)
                    print(f"{n:>7} {k:>5} {d:>2} | skipped: {row['skipped']} (raise --budget-s)")
                    continue
                jx = _spawn(args, "jax", n, k, d)
                row["jax"] = jx
                if "run_s" in jx:
                    rate = flops / jx["run_s"] if rate is None else max(rate, flops / jx["run_s"])
                if n <= args.numpy_max_n:
                    row["numpy"] = _spawn(args, "numpy", n, k, d)
                rows.append(row)
                npy = row.get("numpy", {})
                if "error" in jx:
                    print(f"{n:>7} {k:>5} {d:>2} | jax failed: {jx['error']}")
                    continue
                speed = f"{npy['run_s'] / jx['run_s']:>7.2f}" if "run_s" in npy else f"{'—':>7}"
                mem = (f"{(npy['rss_mb'] - idle['numpy']) / max(jx['rss_mb'] - idle['jax'], 1.0):>9.2f}"
                       if "rss_mb" in npy else f"{'—':>9}")
                dv = f"{abs(npy['value'] - jx['value']) / abs(npy['value']):>14.1e}" if "value" in npy else f"{'—':>14}"
                np_run = f"{npy['run_s']:>11.3f}" if "run_s" in npy else f"{'—' if not npy else 'failed':>11}"
                np_rss = f"{npy['rss_mb']:>12.0f}" if "rss_mb" in npy else f"{'—':>12}"
                print(f"{n:>7} {k:>5} {d:>2} | {jx['compile_s']:>13.2f} {jx['run_s']:>10.3f} {jx['rss_mb']:>10.0f} | "
                      f"{np_run} {np_rss} | {speed} {mem} {dv}")
    limit = [r for r in rows if r["n"] == 100_000 and r["k"] == 100 and "jax" in r and "rss_mb" in r["jax"]]
    for r in limit:
        ok = r["jax"]["rss_mb"] <= args.memory_limit_gib * 1024
        print(f"# n=1e5, k=100, d={r['d']}: peak RSS {r['jax']['rss_mb']:.0f} MB "
              f"{'<=' if ok else '>'} {args.memory_limit_gib:g} GiB on {args.cores} cores, run {r['jax']['run_s']:.1f} s")
    custom = args.ns or args.ks or args.ds
    out = RESULTS / ("custom.json" if custom else "quick.json" if args.quick else "full.json")
    out.write_text(json.dumps({"cores": args.cores, "tile": args.tile, "idle": idle, "rows": rows}, indent=1))
    print(f"# wrote {out}")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

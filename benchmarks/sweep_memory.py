"""Peak memory of a sweep over replayed sequences × seeds: shared data vs a copy per batch element.

``jcalib.core.sweep`` vmaps over natures and seeds with nested vmaps, so a ``Replay`` of length T is
stored once per nature, not once per (nature, seed). The baseline measured in the same run is
what a flat batch that copies every array leaf into each element costs: the same sweep with the
replays repeated per seed (N·S natures, one seed each), which holds N·S copies of the sequence
— the layout of jcalib's sweep before Core v2.

Each configuration runs in a fresh child process and reports its peak resident set size.

    python benchmarks/sweep_memory.py [--T 1000000] [--natures 4] [--seeds 64]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import jax, numpy as np
import jcalib
T, N, S, mode = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(0)
ys = [rng.integers(0, 2, T).astype(np.int32) for _ in range(N)]
f = jcalib.forecasters.AlmostOneStepAhead.for_horizon(T)
key = jax.random.key(0)
t0 = time.perf_counter()
if mode == "shared":
    out = jcalib.core.sweep(f, [jcalib.natures.Replay(y) for y in ys], T, key=key, n_seeds=S, record="summary")
else:  # a copy of every sequence per (nature, seed), as a flat batch stores it
    out = jcalib.core.sweep(f, [jcalib.natures.Replay(y) for y in ys for _ in range(S)], T, key=key, n_seeds=1, record="summary")
jax.block_until_ready(out)
print(json.dumps({"mode": mode, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "seconds": time.perf_counter() - t0}))
"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--T", type=int, default=1_000_000)
    p.add_argument("--natures", type=int, default=4)
    p.add_argument("--seeds", type=int, default=64)
    args = p.parse_args(argv)
    rows = []
    for mode in ("copied", "shared"):
        res = subprocess.run([sys.executable, "-c", CHILD, str(args.T), str(args.natures), str(args.seeds), mode],
                             check=True, capture_output=True, text=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    data_mb = args.T * args.natures * 4 / 2**20
    print(f"T = {args.T}, {args.natures} replayed natures x {args.seeds} seeds (sequence data {data_mb:.0f} MB once)")
    print("| layout | peak RSS (MB) | wall (s) |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['peak_rss_mb']:.0f} | {r['seconds']:.1f} |")
    print(f"ratio copied / shared peak RSS: {rows[0]['peak_rss_mb'] / rows[1]['peak_rss_mb']:.1f}x")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

"""ORCA throughput (Marx et al. 2024, Algorithm 2): rounds per second with 400 Adam steps per
round.

ORCA as set up in the paper's experiments (50 bins, the experiment payoff: quantile + CRPS/MSE
regret + moments) recalibrating an overconfident Gaussian expert. Measured in this one run:

- ``jcalib.core.play`` for one stream and ``jcalib.core.sweep`` for B = 8 and B = 64 vmapped streams
  (with its default ``threads``: on a CPU the seeds split over the cores, the same program on
  each share), and B = 64 again with ``threads=1`` (one program for all 64);
- the per-round Python loop a researcher would write: a jitted round (predict + outcome +
  update) called once per round, one stream at a time;
- with ``--baseline-path DIR``: the same measurements of another checkout of jcalib (e.g.
  commit 8c59c64: ``git archive 8c59c64 | tar -x -C /tmp/orca_old``), each side in its own
  process with its checkout first on ``PYTHONPATH``, the two taking turns ``--turns`` times, so
  that the load of a shared machine hits both alike; the table gives the medians over turns
  and the ratio new/old per row.

Rounds/s = B·T / wall time, median of repeats after a warm-up call (compile time separately).
It also reports the time of the paper's own workload — 1000 rounds × 400 steps × 8 runs (6 hours
on an M2 laptop CPU, with an LP solver per step) — extrapolated from the B = 8 sweep's rate, or
measured in full with ``--paper``.

    python benchmarks/orca_throughput.py                       # T = 40 rounds, B in {1, 8, 64}
    python benchmarks/orca_throughput.py --quick               # fewer rounds and repeats
    python benchmarks/orca_throughput.py --baseline-path /tmp/orca_old --rounds 10 --turns 3
    python benchmarks/orca_throughput.py --paper               # also run 8 streams × 1000 rounds
    python benchmarks/orca_throughput.py --batches 1 8 64 512 4096 --cpu-batches 1 64 --check-cpu
                                                               # scaling over B on the default device (a GPU),
                                                               # the host CPU in a second process, and the
                                                               # GPU's numbers against the CPU's

``--batches`` measures ``play`` (one stream) and ``sweep`` at each B on JAX's default device and
prints the per-stream throughput against ``play``; ``--cpu-batches`` measures the same on this
machine's CPU in a process with ``JAX_PLATFORMS=cpu`` (its ``sweep`` splits the seeds over the
cores), so that a GPU is compared with the host it sits in, in the same run; ``--check-cpu``
plays the same 64 streams on both and prints the largest difference of the forecasts and
certificates (float32 on each; a GPU's products and reductions round in another order).
``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROWS = (("loop", 1), ("play", 1), ("sweep", 8), ("sweep", 64), ("one", 64))
NAMES = {
    "loop": "per-round Python loop of a jitted round",
    "play": "jcalib.core.play (one scan)",
    "sweep": "jcalib.core.sweep (vmapped, default threads)",
    "one": "jcalib.core.sweep, threads=1 (one program)",
}


def timed(fn, repeats):
    import jax

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
    import jax

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


def setup(steps: int):
    """The jcalib on ``sys.path`` (imported here, after a worker's ``PYTHONPATH`` is set), the
    paper's ORCA with ``steps`` Adam steps per round, and the nature it recalibrates."""
    import jcalib
    from jcalib.forecasters import ORCA
    from jcalib.natures import OverconfidentGaussian

    return jcalib, ORCA(n_steps=steps), OverconfidentGaussian()


def measure(T: int, steps: int, repeats: int, rows=ROWS) -> dict:
    """Every row of ``rows`` (default :data:`ROWS`) for the jcalib on ``sys.path``:
    ``{row: (compile + 1st s, wall s, rounds/s)}``."""
    import jax

    jcalib, f, nat = setup(steps)
    key = jax.random.key(0)
    out = {}
    threads = "threads" in inspect.signature(jcalib.core.sweep).parameters  # older commits: one program always
    for kind, B in rows:
        if kind == "one" and not threads:
            continue
        if kind == "loop":
            fn = python_loop(f, nat, T, key)
        elif kind == "play":
            fn = lambda s: jcalib.core.play(f, nat, T, key=jax.random.fold_in(key, s)).y  # noqa: E731
        else:
            kw = {"threads": 1} if kind == "one" else {}
            fn = lambda s, B=B, kw=kw: jcalib.core.sweep(f, nat, T, key=jax.random.fold_in(key, s), n_seeds=B, **kw).y  # noqa: E731
        c, w = timed(fn, repeats)
        out[f"{kind}:{B}"] = (c, w, B * T / w)
        print(f"  {kind} B = {B}: compile + 1st {c:.1f} s, {B * T / w:.1f} rounds/s", file=sys.stderr, flush=True)
    out["jcalib"] = os.path.dirname(jcalib.__file__)
    out["device"] = f"{jax.devices()[0].platform}: {jax.devices()[0].device_kind}"
    return out


FORECAST_STREAMS = 64


def forecasts(T: int, steps: int, B: int = FORECAST_STREAMS) -> dict:
    """The forecasts' bin masses and the certificates of a B-stream sweep, as NumPy arrays."""
    import jax
    import numpy as np

    jcalib, f, nat = setup(steps)
    traj = jcalib.core.sweep(f, nat, T, key=jax.random.key(0), n_seeds=B, threads=1)
    leaves = {"forecast": traj.forecast, "certificate": traj.certificate}
    return {k: [np.asarray(x, np.float64) for x in jax.tree_util.tree_leaves(v)] for k, v in leaves.items()}


def cpu_worker(T: int, steps: int, repeats: int, batches, check: bool) -> dict:
    """:func:`measure` of ``play`` and ``sweep`` at ``batches`` in a process on the CPU (``JAX_PLATFORMS=cpu``);
    with ``check``, also the forecasts of :func:`forecasts`, saved to a temporary file."""
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".npz")
    os.close(fd)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--rounds", str(T), "--steps", str(steps),
           "--repeats", str(repeats), "--batches", *map(str, batches)] + (["--dump", path] if check else [])
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"the CPU worker failed:\n{res.stderr[-3000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["dump"] = path if check else None
    return out


def scaling_rows(batches) -> tuple:
    return (("play", 1),) + tuple(("sweep", int(B)) for B in batches)


def print_scaling(label: str, r: dict, batches) -> None:
    """The table of one device: rounds/s at each B and the per-stream ratio to ``play``."""
    play = r["play:1"][2]
    print(f"\n{label} ({r['device']})")
    print(f"{'implementation':24s} {'B':>5s} {'compile+1st (s)':>16s} {'wall (s)':>9s} {'rounds/s':>10s} "
          f"{'÷ B':>11s} {'× play':>7s} {'÷ B × play':>18s}")
    for kind, B in scaling_rows(batches):
        c, w, rate = r[f"{kind}:{B}"]
        print(f"{kind:24s} {B:5d} {c:16.2f} {w:9.3f} {rate:10.1f} {rate / B:11.2f} {rate / play:7.1f} "
              f"{rate / B / play:18.3f}")


def scaling(args, T: int, repeats: int) -> None:
    """``--batches``: the default device's scaling over B, with the CPU's in the same run."""
    import jax
    import numpy as np

    results = {"T": T, "steps": args.steps, "load_before": os.getloadavg()[0]}
    r = measure(T, args.steps, repeats, scaling_rows(args.batches))
    results["default"] = r
    print_scaling(f"default device, load {os.getloadavg()[0]:.1f}", r, args.batches)
    if args.cpu_batches:
        c = cpu_worker(T, args.steps, repeats, args.cpu_batches, args.check_cpu)
        results["cpu"] = c
        print_scaling(f"CPU of the same machine ({os.cpu_count()} cores, JAX_PLATFORMS=cpu), "
                      f"load {os.getloadavg()[0]:.1f}", c, args.cpu_batches)
        both = sorted(set(int(b) for b in args.batches) & set(int(b) for b in args.cpu_batches))
        if both:
            print("\ndefault device over the CPU, same B: "
                  + ", ".join(f"B = {B}: {r[f'sweep:{B}'][2] / c[f'sweep:{B}'][2]:.2f}×" for B in both)
                  + f"; play: {r['play:1'][2] / c['play:1'][2]:.2f}×")
        if c["dump"]:
            mine = forecasts(T, args.steps)
            with np.load(c["dump"]) as z:
                theirs = {k: [z[f"{k}{i}"] for i in range(len(v))] for k, v in mine.items()}
            os.remove(c["dump"])
            # ORCA's rounds are chaotic in the rounding (a different maximiser, a different spiked
            # start): one program of 64 streams and two of 32 on the same CPU differ by 0.026 in a
            # bin mass after the first round of Adam and by O(1) after a few; so the first rounds
            # and the means over streams and rounds are what compare two devices
            def round_max(a, b):  # leaves have axes (natures, seeds, rounds, ...)
                d = np.abs(a - b)
                return d.max(axis=tuple(i for i in range(d.ndim) if i != 2))

            per_round = {k: np.max([round_max(a, b) for a, b in zip(mine[k], theirs[k])], axis=0) for k in mine}
            means = [(float(a.mean()), float(b.mean())) for a, b in zip(mine["certificate"], theirs["certificate"])]
            results["max_abs_diff_vs_cpu_per_round"] = {k: v.tolist() for k, v in per_round.items()}
            results["certificate_means"] = {"default": [m[0] for m in means], "cpu": [m[1] for m in means]}
            print(f"{FORECAST_STREAMS} streams × {T} rounds, {jax.devices()[0].platform} against the CPU, largest |difference| "
                  "in rounds 1, 2, 3 and the last: "
                  + "; ".join(f"{k} " + ", ".join(f"{v[i]:.1e}" for i in (0, 1, 2, -1)) for k, v in per_round.items()))
            print("certificate (value, pointwise, loss_start) averaged over streams and rounds: "
                  + ", ".join(f"{a:.4f} against {b:.4f}" for a, b in means))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


def worker(path: str | None, T: int, steps: int, repeats: int) -> dict:
    """:func:`measure` in a fresh process with ``path`` (a jcalib checkout) first on ``PYTHONPATH``."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (path or here, os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--rounds", str(T), "--steps", str(steps),
           "--repeats", str(repeats)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="T = 10 rounds, 1 repeat")
    ap.add_argument("--rounds", type=int, default=40, help="rounds per stream (default 40)")
    ap.add_argument("--steps", type=int, default=400, help="Adam steps per round (default 400, the paper's)")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls after the warm-up (default 3)")
    ap.add_argument("--baseline-path", default=None,
                    help="a checkout of another jcalib commit, measured in its own processes in turns")
    ap.add_argument("--turns", type=int, default=3, help="old/new process pairs with --baseline-path (default 3)")
    ap.add_argument("--paper", action="store_true", help="run the paper's 8 × 1000 rounds in full")
    ap.add_argument("--batches", type=int, nargs="+", default=None,
                    help="scaling mode: play and sweep at these B on the default device (e.g. a GPU)")
    ap.add_argument("--cpu-batches", type=int, nargs="+", default=None,
                    help="with --batches: the same on this machine's CPU, in a second process")
    ap.add_argument("--check-cpu", action="store_true",
                    help="with --cpu-batches: compare 64 streams' forecasts and certificates with the CPU's")
    ap.add_argument("--json", default=None, help="with --batches: write the figures to this file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dump", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    T = 10 if args.quick else args.rounds
    repeats = 1 if args.quick else args.repeats
    if args.worker:
        rows = ROWS if args.batches is None else scaling_rows(args.batches)
        out = measure(T, args.steps, repeats, rows)
        if args.dump:
            import numpy as np

            np.savez(args.dump, **{f"{k}{i}": a for k, v in forecasts(T, args.steps).items() for i, a in enumerate(v)})
        print(json.dumps(out))
        return
    import jax

    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({platform.processor() or platform.machine()}), "
          f"ORCA: 50 bins, experiment payoff (d = 103), {args.steps} Adam steps per round, T = {T}; "
          f"load {os.getloadavg()[0]:.1f} (1 min); matmul precision {jax.config.jax_default_matmul_precision or 'default'}")
    if args.batches:
        scaling(args, T, repeats)
        return
    sides = {"new": None} if args.baseline_path is None else {"old": args.baseline_path, "new": None}
    runs = {side: [] for side in sides}
    for turn in range(args.turns if args.baseline_path else 1):
        for side, path in sides.items():  # old first, then new, in every turn
            r = worker(path, T, args.steps, repeats)
            runs[side].append(r)
            print(f"turn {turn + 1} {side} ({r['jcalib']}): "
                  + ", ".join(f"{k} {v[2]:.2f}" for k, v in r.items() if isinstance(v, list)) + f" rounds/s; load {os.getloadavg()[0]:.1f}",
                  flush=True)
    med = {side: {k: [statistics.median(r[k][i] for r in rs) for i in range(3)] for k, v in rs[0].items() if isinstance(v, list)}
           for side, rs in runs.items()}
    new = med["new"]
    base = new["loop:1"][2]
    head = f"\n{'implementation':40s} {'B':>4s} {'compile+1st (s)':>16s} {'wall (s)':>9s} {'rounds/s':>9s} {'× loop':>7s}"
    print(head + (f" {'old rounds/s':>13s} {'new/old':>8s}" if "old" in med else ""))
    for kind, B in ROWS:
        if f"{kind}:{B}" not in new:
            continue
        c, w, r = new[f"{kind}:{B}"]
        line = f"{NAMES[kind]:40s} {B:4d} {c:16.2f} {w:9.2f} {r:9.2f} {r / base:7.2f}"
        if "old" in med and f"{kind}:{B}" in med["old"]:
            ro = med["old"][f"{kind}:{B}"][2]
            line += f" {ro:13.2f} {r / ro:8.2f}"
        print(line)
    vm = new["sweep:64"][2] / new["play:1"][2]
    print(f"\nvmapping: per-stream throughput at B = 64 is {vm:.2f}× that of play on one stream")
    if "one:64" in new:
        print(f"  of which one program (threads=1): {new['one:64'][2] / new['play:1'][2]:.2f}×, "
              f"and the seeds split over the cores: {new['sweep:64'][2] / new['one:64'][2]:.2f}× more")
    rate8 = new["sweep:8"][2]
    est = 8 * 1000 / rate8
    print(f"paper's workload (8 runs × 1000 rounds × {args.steps} steps; 6 h in the paper): "
          f"{est:.0f} s = {est / 60:.1f} min extrapolated from the B = 8 rate; load {os.getloadavg()[0]:.1f} (1 min)")
    if args.paper:
        jcalib, f, nat = setup(args.steps)
        t0 = time.perf_counter()
        jax.block_until_ready(jcalib.core.sweep(f, nat, 1000,
                                           key=jax.random.key(0), n_seeds=8).y)
        print(f"measured in full (compile included): {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

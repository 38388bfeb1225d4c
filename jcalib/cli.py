"""Command line: ``jcalib demo`` (what ``make demo`` runs).

The demo runs paper 000's distance study (:mod:`jcalib.studies`): Almost-One-Step-Ahead and
every baseline against every nature, for many seeds and several horizons T, with the ECE and
the distance to calibration of each run, and writes a tidy table, figures and a short summary
to ``results/demo/``. ``experiments/aosa_distance_bound.py`` runs the same study at full size.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import numpy as np

from . import forecasters as F
from . import natures as N
from . import plots
from .core import sweep
from .studies import default_forecasters, distance_study, write_report

__all__ = ["main"]


_RELIABILITY_FORECASTERS = ("AOSA", "Foster", "Running frequency")


def _reliability_natures(T):
    return [("Markov", N.Markov(0.05, 0.1)), ("Max calibration error", N.MaxCalibrationError(n_bins=F.aosa_bins(T)))]


def _reliability_runs(T, key):
    """AOSA, Foster and the running frequency against the Markov chain and the max-error
    adversary: ``{forecaster: (forecasts, outcomes)}``, arrays of shape (2, T)."""
    natures = N.Switch.all_of([n for _, n in _reliability_natures(T)])
    runs = {}
    for fname in _RELIABILITY_FORECASTERS:
        f = default_forecasters(T)[fname]
        # both natures in one compiled sweep (a Switch gives every member the same keys, so each
        # trajectory is the one a sweep against that nature alone plays)
        traj = sweep(f, natures, T, key, n_seeds=1, progress=False)
        runs[fname] = (np.asarray(traj.forecast).reshape(2, T), np.asarray(traj.y).reshape(2, T))
    return runs


def _reliability_plot(out_dir, T, runs):
    """The reliability diagrams of :func:`_reliability_runs`' runs, one panel per nature."""
    import matplotlib

    if not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for fname, (p, y) in runs.items():
        for i, ax in enumerate(axes):
            plots.reliability_diagram(p[i], y[i], n_bins=10, ax=ax, label=fname)
    for ax, (nname, _) in zip(axes, _reliability_natures(T)):
        ax.set_title(f"{nname}, T = {T}", fontsize="small")
    return plots.save(axes[0], os.path.join(out_dir, "reliability.png"))


def _reliability(out_dir, T, key):
    """AOSA and the running frequency against the contrarian and a Markov chain."""
    return _reliability_plot(out_dir, T, _reliability_runs(T, key))


def _demo(args) -> int:
    t0 = time.perf_counter()
    key = jax.random.key(args.seed)
    T_rel = max(args.T)
    # the reliability sweeps compile and run beside the study; only their figure waits for it
    with ThreadPoolExecutor(max_workers=1) as side:
        rel = side.submit(_reliability_runs, T_rel, key)
        rows = distance_study(args.T, args.seeds, key, distance_seeds=args.distance_seeds, progress=not args.no_progress)
        runs = rel.result()
    paths = write_report(rows, args.out, title="jcalib demo: online calibration, paper 000")
    paths["reliability"] = _reliability_plot(args.out, T_rel, runs)
    print(Path(paths["summary"]).read_text())
    print(f"Wrote {len(rows)} rows in {time.perf_counter() - t0:.0f} s:")
    for k, v in paths.items():
        print(f"  {k:12s} {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jcalib", description="jcalib command line")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="AOSA and every baseline against every nature (paper 000's guarantee, measured)",
                       description="Play Almost-One-Step-Ahead and every baseline against every nature for many seeds "
                                   "and horizons; write a tidy table, figures and a summary.")
    d.add_argument("--T", type=int, nargs="+", default=[100, 1000, 10000], help="horizons (default: 100 1000 10000)")
    d.add_argument("--seeds", type=int, default=64, help="seeds per (forecaster, nature) (default: 64)")
    d.add_argument("--distance-seeds", type=int, default=2,
                   help="certify the distance to calibration for the first this-many seeds of each "
                        "(forecaster, nature, T) (default: 2; ECE and AOSA's certificate cover every seed)")
    d.add_argument("--seed", type=int, default=0, help="master PRNG seed")
    d.add_argument("--out", default=os.path.join("results", "demo"), help="output folder (default: results/demo)")
    d.add_argument("--no-progress", action="store_true", help="hide progress bars")
    d.set_defaults(func=_demo)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

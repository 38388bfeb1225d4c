"""Multicalibration audit over G groups at n samples: jcalib against the peers, in one process.

The groups are the intersections of three attributes with 10 values each, as MCGrad builds its
segments: every value of each attribute (30), every pair of values of each pair of attributes
(300) and the first G − 330 triples — overlapping, each sample in at most 7 groups. Timed on the
same data and the same groups (the median of ``--repeats`` calls after one warm-up call):

- jcalib ``multicalibration_error`` (binned, 10 bins) and ``mcgrad_multicalibration_error``,
  groups as :class:`~jcalib.metrics.SparseGroups` (each sample's group ids) and, with
  ``--dense``, as the boolean matrix ``(n, G)``;
- the ``multicalibration`` package's audit (``HJZ.utils.calculate_average_labels`` and
  ``calculate_calibration_errors``: each group and bin's mean label and mean forecast), groups
  as index arrays;
- mcgrad's multicalibration error: ``_ecce_per_segment`` and ``_ecce_standard_deviation_per_segment``
  over the segment masks in chunks of 50, the computation of
  ``mcgrad.metrics.MulticalibrationError.segments_ecce_sigma`` (given its masks, as its class
  holds them; the segment search is not timed).

Values are checked against each other (the worst group's ECCE-sigma to 1e-4 relative, float32).
The 1-minute load average is printed with the timings: on a shared machine the ratios, measured
in one run, are what carries over.

Usage:
    python benchmarks/multicalibration.py                     # n = 10^6, G = 1000
    python benchmarks/multicalibration.py --n 100000 --dense  # smaller, with the dense path
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from _timing import timed  # noqa: E402

# this file is called multicalibration.py: keep its folder off the path, so that
# ``import multicalibration`` finds the package
sys.path[:] = [q for q in sys.path if Path(q or ".").resolve() != _HERE]


def groups_of(attrs: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """Boolean masks of the attribute-value groups (singles, pairs, then triples), ``n_groups`` of them."""
    masks = []
    for depth in (1, 2, 3):
        for cols in itertools.combinations(range(attrs.shape[1]), depth):
            for vals in itertools.product(range(10), repeat=depth):
                masks.append(np.all(attrs[:, cols] == np.array(vals), axis=1))
                if len(masks) == n_groups:
                    return masks
    return masks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense", action="store_true", help="also time the dense (n, G) boolean path")
    args = ap.parse_args()

    import jax
    import jax.numpy as jnp

    from jcalib.metrics import SparseGroups, mcgrad_multicalibration_error, multicalibration_error

    n, G = args.n, args.groups
    rng = np.random.default_rng(0)
    attrs = rng.integers(0, 10, size=(n, 3))
    p = rng.uniform(0.01, 0.99, n).astype(np.float32)
    y = (rng.uniform(size=n) < np.clip(p + 0.05 * (attrs[:, 0] == 3), 0, 1)).astype(np.int32)
    masks = groups_of(attrs, G)
    dense = np.stack(masks, 1)  # (n, G) bool
    sparse = SparseGroups.from_dense(dense)
    print(f"n = {n}, G = {G}, groups per sample: max {sparse.ids.shape[1]}, mean {dense.sum(1).mean():.2f}; "
          f"jax {jax.__version__} on {jax.devices()[0].platform}")

    res = {}

    def run(name, fn):
        first, med = timed(fn, args.repeats)
        res[name] = med
        print(f"{name:55s} first {first:8.3f} s  median {med:8.3f} s   load(1 min) {os.getloadavg()[0]:.1f}", flush=True)

    out = {}
    run("jcalib multicalibration_error (SparseGroups)",
        lambda: out.__setitem__("bin", jax.block_until_ready(multicalibration_error(p, y, sparse, n_bins=10))))
    run("jcalib mcgrad_multicalibration_error (SparseGroups)",
        lambda: out.__setitem__("mce", jax.block_until_ready(mcgrad_multicalibration_error(p, y, sparse))))
    if args.dense:
        gd = jnp.asarray(dense)
        run("jcalib multicalibration_error (dense bool)",
            lambda: jax.block_until_ready(multicalibration_error(p, y, gd, n_bins=10)))
        run("jcalib mcgrad_multicalibration_error (dense bool)",
            lambda: jax.block_until_ready(mcgrad_multicalibration_error(p, y, gd)))

    from multicalibration.HJZ.utils import calculate_average_labels, calculate_calibration_errors, discretize_values

    subgroups = [np.flatnonzero(m) for m in masks]

    def package_audit():
        bins = discretize_values(p[:, None], 10)
        avg, _ = calculate_average_labels(y[:, None].astype(np.float64), bins, subgroups, 10)
        out["pkg"] = calculate_calibration_errors(avg, p[:, None], bins, subgroups)

    run("multicalibration package (HJZ audit)", package_audit)

    from mcgrad.metrics import _ecce_per_segment, _ecce_standard_deviation_per_segment

    order = np.argsort(p, kind="stable")
    ps, ys = p[order], y[order].astype(np.float32)
    seg = dense[order].T.copy()  # (G, n) masks in forecast order, as MulticalibrationError holds them

    def mcgrad_mce():
        sig = []
        for c in range(0, G, 50):
            e = _ecce_per_segment(ys, ps, None, seg[c:c + 50], np.float32)
            s = _ecce_standard_deviation_per_segment(ps, ys, None, seg[c:c + 50], np.float32)
            sig.append(e / s)
        out["mcgrad"] = np.concatenate(sig)

    run("mcgrad segments_ecce_sigma (chunks of 50)", mcgrad_mce)

    ours, theirs = float(out["mce"].worst), float(out["mcgrad"].max())
    print(f"worst ECCE-sigma: jcalib {ours:.6f}, mcgrad {theirs:.6f} (rel. diff {abs(ours - theirs) / theirs:.1e})")
    errs = np.abs(out["pkg"][:, :, 0, 0])  # (bins, groups): |mean forecast - mean label| per cell
    print(f"largest cell bias: package {errs.max():.6f}")
    base_bin = res["jcalib multicalibration_error (SparseGroups)"]
    base_mce = res["jcalib mcgrad_multicalibration_error (SparseGroups)"]
    print(f"ratio multicalibration package / jcalib binned audit: {res['multicalibration package (HJZ audit)'] / base_bin:.1f}x")
    print(f"ratio mcgrad MCE / jcalib MCE: {res['mcgrad segments_ecce_sigma (chunks of 50)'] / base_mce:.1f}x")


if __name__ == "__main__":
    main()

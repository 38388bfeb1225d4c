"""Is my model miscalibrated? Tests, intervals and diagrams for a real classifier.

A Gaussian naive Bayes classifier (over-confident by construction: it multiplies evidence as
if features were independent) on scikit-learn's breast cancer data (569 tumours, shipped
with scikit-learn, no download), split into training, calibration and test thirds; and the
same classifier temperature-scaled on the calibration third. On the test third:

(a) calibration tests with p-values (Spiegelhalter, KS, Kuiper, SKCE, consistency resampling
    of the binned and smooth ECE) for both forecasters;
(b) bootstrap intervals (percentile and BCa) of the smooth ECE, binned ECE and Brier score;
(c) a paired bootstrap interval for the difference uncalibrated − temperature-scaled;
(d) reliability diagrams: binned with Wilson intervals, smooth with a bootstrap band;
(e) the multi-class case on digits (1797 images, shipped with scikit-learn): top-label and
    class-wise panels of a naive Bayes classifier.

Writes results/calibration_inference/results.json and PNG figures.

Usage:
    python experiments/calibration_inference.py                  # about 10 min on 2 loaded cores
    python experiments/calibration_inference.py --quick          # 200 resamples, about 5 min
    python experiments/calibration_inference.py --img-dir docs/tutorials/img   # also refresh the docs figures
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jcalib import plots  # noqa: E402
from jcalib.metrics import binned_ece, brier, smooth_ece  # noqa: E402
from jcalib.recalibration import TemperatureScaling  # noqa: E402
from jcalib.stats import (  # noqa: E402
    bootstrap,
    consistency_test,
    ks_test,
    kuiper_test,
    paired_bootstrap,
    skce_test,
    spiegelhalter_test,
)

OUT = Path("results/calibration_inference")


def _split(n, seed):
    perm = np.random.default_rng(seed).permutation(n)
    a, b = n // 3, 2 * n // 3
    return perm[:a], perm[a:b], perm[b:]


def forecasters(seed: int = 0):
    """Held-out forecasts of P(malignant) by naive Bayes, raw and temperature-scaled."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.naive_bayes import GaussianNB

    X, y = load_breast_cancer(return_X_y=True)
    y = 1 - y  # 1 = malignant
    tr, cal, te = _split(len(y), seed)
    nb = GaussianNB().fit(X[tr], y[tr])
    clip = lambda P: np.clip(P, 1e-6, 1 - 1e-6) / np.clip(P, 1e-6, 1 - 1e-6).sum(axis=1, keepdims=True)
    P_cal, P_te = clip(nb.predict_proba(X[cal])), clip(nb.predict_proba(X[te]))
    ts = TemperatureScaling().fit(P_cal, y[cal])
    P_ts = np.asarray(ts(P_te), dtype=float)
    return {"naive Bayes": P_te[:, 1], "temperature-scaled": P_ts[:, 1]}, y[te].astype(np.int32), float(ts.temperature)


def run_tests(fc, y, key, B):
    rows = {}
    for name, p in fc.items():
        k1, k2, k3, key = jax.random.split(key, 4)
        rows[name] = {
            "Spiegelhalter": float(spiegelhalter_test(p, y).p_value),
            "KS": float(ks_test(p, y).p_value),
            "Kuiper": float(kuiper_test(p, y).p_value),
            "SKCE (unbiased, asymptotic)": float(skce_test(p, y, key=k1, n_resamples=B).p_value),
            "consistency: binned ECE": float(consistency_test(binned_ece, p, y, key=k2, n_resamples=B).p_value),
            "consistency: smooth ECE": float(consistency_test(smooth_ece, p, y, key=k3, n_resamples=B).p_value),
        }
    return rows


def run_intervals(fc, y, key, B):
    out = {}
    metrics = {"smooth ECE": smooth_ece, "binned ECE (15 bins)": binned_ece, "Brier": brier}
    for name, p in fc.items():
        out[name] = {}
        for mname, m in metrics.items():
            key, k = jax.random.split(key)
            row = {}
            for method in ("percentile", "bca"):
                r = bootstrap(m, p, y, key=k, n_resamples=B, method=method)
                row[method] = [float(r.low), float(r.high)]
            row["estimate"] = float(r.estimate)
            out[name][mname] = row
    a, b = fc["naive Bayes"], fc["temperature-scaled"]
    out["paired difference (naive Bayes - temperature-scaled)"] = {}
    for mname, m in metrics.items():
        key, k = jax.random.split(key)
        r = paired_bootstrap(m, a, b, y, key=k, n_resamples=B)
        out["paired difference (naive Bayes - temperature-scaled)"][mname] = {
            "estimate": float(r.estimate), "percentile": [float(r.low), float(r.high)]}
    return out


def figure_reliability(fc, y, key, B, path):
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, (name, p) in zip(axes, fc.items()):
        key, k = jax.random.split(key)
        plots.reliability_diagram(p, y, n_bins=10, ax=ax, kind="both", key=k, n_resamples=B, label=name)
        ax.set_title(f"{name}: smooth ECE {float(smooth_ece(p, y)):.3f}", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figure_digits(path, seed=0):
    from sklearn.datasets import load_digits
    from sklearn.naive_bayes import GaussianNB

    X, y = load_digits(return_X_y=True)
    tr, _, te = _split(len(y), seed)
    P = GaussianNB().fit(X[tr], y[tr]).predict_proba(X[te])
    P = np.clip(P, 1e-9, 1)
    P = P / P.sum(axis=1, keepdims=True)
    axes = plots.multiclass_reliability_diagram(P, y[te], n_bins=10, classes=[1, 3, 8], interval="wilson")
    fig = axes[0].figure
    fig.suptitle("digits, naive Bayes (test third): top label and three classes", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200 resamples instead of 1000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--img-dir", type=Path, default=None, help="also copy the figures here (e.g. docs/tutorials/img)")
    args = ap.parse_args(argv)
    B = 200 if args.quick else 1000
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    fc, y, temperature = forecasters(args.seed)
    key = jax.random.key(args.seed)
    k1, k2, k3 = jax.random.split(key, 3)
    results = {
        "n_test": int(len(y)),
        "positives": int(y.sum()),
        "temperature": temperature,
        "resamples": B,
        "p_values": run_tests(fc, y, k1, B),
        "intervals_95": run_intervals(fc, y, k2, B),
    }
    figs = {
        "reliability.png": lambda p: figure_reliability(fc, y, k3, min(B, 500), p),
        "digits_panels.png": figure_digits,
    }
    for name, draw in figs.items():
        path = args.out / f"calibration_inference_{name}"
        draw(path)
        if args.img_dir is not None:
            args.img_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, args.img_dir / path.name)
    results["seconds"] = round(time.time() - t0, 1)
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

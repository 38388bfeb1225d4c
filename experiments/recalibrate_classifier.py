"""Recalibrate my classifier: every recalibrator in jcalib on two real, miscalibrated classifiers
(the tutorial docs/tutorials/recalibrate_classifier.md).

Data shipped with scikit-learn (no download):

* ``binary``: breast cancer (569 tumours, 30 features), Gaussian naive Bayes — accurate but
  markedly over-confident;
* ``multiclass``: handwritten digits (1797 images, C = 10), Gaussian naive Bayes on the pixels
  scaled to [0, 1] — over-confident and biased.

Each of ``--splits`` random stratified splits trains the classifier on 40 %, recalibrates on
30 % and tests on 30 %. Every recalibrator with a fixed-shape fit (Platt, beta, isotonic,
histogram binning, temperature, vector, matrix and Dirichlet scaling) is fitted on all splits
at once, one ``jax.vmap`` over the stacked splits per method; decision calibration
(Zhao et al. 2021) is fitted split by split. Held-out metrics: binned ECE (15 uniform bins; the
confidence ECE for digits), SmoothECE (Błasiok–Nakkiran, of the positive-class probability or
of the confidence), Brier score (binary) / L2 error (multi-class), NLL and accuracy; the tables
give mean ± sd over the splits.

Writes ``results/recalibrate_classifier/``: ``runs.csv`` (every split and method),
``summary.csv`` and ``summary.md`` (mean ± sd), and ``recalibrate_classifier.png`` (also to
``--img-dir``, by default docs/tutorials/img/).

Usage::

    python experiments/recalibrate_classifier.py            # 20 splits (a few minutes on 2 cores)
    python experiments/recalibrate_classifier.py --quick    # 3 splits, smoke run
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jcalib.metrics import (
    accuracy,
    binned_ece,
    brier,
    confidence_ece,
    l2_error,
    log_loss,
    nll,
    smooth_ece,
)
from jcalib import recalibration as rc

OUT = Path("results/recalibrate_classifier")
FIGURE = "recalibrate_classifier.png"
METRICS = ("ece", "smooth_ece", "brier", "nll", "accuracy")

# name -> method; each method.fit(probs, labels) has fixed shapes and is vmapped over splits
VMAPPED = {
    "Platt": rc.PlattScaling(),
    "beta (abm)": rc.BetaCalibration(),
    "isotonic": rc.IsotonicCalibration(),
    "histogram (10 uniform)": rc.HistogramBinning(),
    "histogram (10 equal-mass)": rc.HistogramBinning(strategy="quantile"),
    "temperature": rc.TemperatureScaling(),
    "vector": rc.VectorScaling(),
    "matrix": rc.MatrixScaling(),
    "Dirichlet (ODIR)": rc.DirichletCalibration(),
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 splits, fewer decision-calibration stages (smoke run)")
    ap.add_argument("--splits", type=int, default=20, help="random train/recalibration/test splits")
    ap.add_argument("--decision-stages", type=int, default=5, help="stages of decision calibration")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--img-dir", default="docs/tutorials/img", help="also save the figure here ('' to skip)")
    ap.add_argument("--plot-only", action="store_true", help="redraw the figure and table from OUT/summary.csv")
    return ap.parse_args(argv)


def split(setting: str, seed: int):
    """(p_cal, y_cal, p_test, y_test) float32 probabilities of a Gaussian NB for one split."""
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    if setting == "binary":
        x, y = load_breast_cancer(return_X_y=True)
    else:
        x, y = load_digits(return_X_y=True)
        x = x / 16.0
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, train_size=0.4, random_state=seed, stratify=y)
    x_cal, x_te, y_cal, y_te = train_test_split(x_rest, y_rest, train_size=0.5, random_state=seed, stratify=y_rest)
    clf = GaussianNB().fit(x_tr, y_tr)

    def probs(xx):
        p = clf.predict_proba(xx).astype(np.float32)
        return p / p.sum(axis=1, keepdims=True)  # exact row sums in float32

    return probs(x_cal), y_cal.astype(np.int32), probs(x_te), y_te.astype(np.int32)


def evaluate(setting: str, q, y) -> dict:
    q, y = jnp.asarray(q), jnp.asarray(y)
    if setting == "binary":
        s = q[:, 1]
        return {
            "ece": float(binned_ece(s, y, n_bins=15)),
            "smooth_ece": float(smooth_ece(s, y)),
            "brier": float(brier(s, y)),
            "nll": float(log_loss(s, y)),
            "accuracy": float(accuracy(q, y)),
        }
    conf, correct = jnp.max(q, axis=1), (jnp.argmax(q, axis=1) == y).astype(jnp.int32)
    return {
        "ece": float(confidence_ece(q, y, n_bins=15)),
        "smooth_ece": float(smooth_ece(conf, correct)),
        "brier": float(l2_error(q, y)),
        "nll": float(nll(q, y)),
        "accuracy": float(accuracy(q, y)),
    }


def run_setting(setting: str, args, log) -> list[dict]:
    data = [split(setting, seed) for seed in range(args.splits)]
    P_cal, Y_cal, P_te, Y_te = (jnp.asarray(np.stack(z)) for z in zip(*data))
    rows = []

    def record(method, q_all, seconds):
        for s in range(args.splits):
            rows.append({"setting": setting, "method": method, "split": s, "fit_seconds": seconds,
                         **evaluate(setting, q_all[s], Y_te[s])})

    record("uncalibrated", P_te, 0.0)
    for method, recalibrator in VMAPPED.items():
        t0 = time.perf_counter()
        fitted = jax.vmap(recalibrator.fit)(P_cal, Y_cal)  # every split in one call
        q = jax.vmap(lambda f, p: f(p))(fitted, P_te)
        q.block_until_ready()
        record(method, q, time.perf_counter() - t0)
        log(f"{setting}: {method} ({time.perf_counter() - t0:.1f} s for {args.splits} splits)")
    t0 = time.perf_counter()
    q = []
    for s in range(args.splits):  # data-dependent stages: one fit per split
        dc = rc.DecisionCalibration(n_actions=2, n_stages=args.decision_stages)
        q.append(dc.fit(P_cal[s], Y_cal[s], key=jax.random.key(s))(P_te[s]))
    record("decision (Zhao et al. 2021)", jnp.stack(q), time.perf_counter() - t0)
    log(f"{setting}: decision calibration ({time.perf_counter() - t0:.1f} s)")
    return rows


def summarise(rows) -> list[dict]:
    out = []
    keys = list(dict.fromkeys((r["setting"], r["method"]) for r in rows))
    for setting, method in keys:
        rs = [r for r in rows if r["setting"] == setting and r["method"] == method]
        row = {"setting": setting, "method": method, "splits": len(rs)}
        for m in METRICS:
            v = np.array([r[m] for r in rs])
            row[f"{m}_mean"], row[f"{m}_sd"] = float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0
        out.append(row)
    return out


def markdown(summary) -> str:
    lines = []
    for setting in dict.fromkeys(r["setting"] for r in summary):
        brier_name = "Brier" if setting == "binary" else "L2 error"
        lines += [
            f"**{setting}** (mean ± sd over {int(summary[0]['splits'])} splits; lower is better except accuracy)",
            "",
            f"| method | ECE | smooth ECE | {brier_name} | NLL | accuracy |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in (r for r in summary if r["setting"] == setting):
            cells = [f"{r[f'{m}_mean']:.3f} ± {r[f'{m}_sd']:.3f}" for m in METRICS]
            lines.append(f"| {r['method']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def plot(summary, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(dict.fromkeys(r["setting"] for r in summary))
    fig, axes = plt.subplots(len(settings), 2, figsize=(10, 3.2 * len(settings)), squeeze=False)
    for i, setting in enumerate(settings):
        rs = [r for r in summary if r["setting"] == setting]
        names = [r["method"] for r in rs]
        for j, m in enumerate(("ece", "nll")):
            ax = axes[i, j]
            ax.barh(range(len(rs)), [r[f"{m}_mean"] for r in rs], xerr=[r[f"{m}_sd"] for r in rs], color="tab:blue")
            ax.set_yticks(range(len(rs)), names, fontsize=8)
            ax.invert_yaxis()
            ax.set_title(f"{setting}: held-out {'ECE (15 bins)' if m == 'ece' else 'NLL'} (mean ± sd)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    if args.quick:
        args.splits, args.decision_stages = 3, 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.plot_only:
        with open(out / "summary.csv") as fh:
            summary = [{k: (v if k in ("setting", "method") else float(v)) for k, v in r.items()} for r in csv.DictReader(fh)]
    else:
        rows = []
        for setting in ("binary", "multiclass"):
            rows += run_setting(setting, args, print)
        with open(out / "runs.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        summary = summarise(rows)
        with open(out / "summary.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(summary[0]))
            w.writeheader()
            w.writerows(summary)
    (out / "summary.md").write_text(markdown(summary))
    plot(summary, out / FIGURE)
    if args.img_dir:
        plot(summary, Path(args.img_dir) / FIGURE)
    print(markdown(summary))
    return summary


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

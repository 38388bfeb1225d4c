"""Training with a calibration penalty versus post-hoc temperature scaling (jcalib.losses).

An equinox MLP is trained on scikit-learn's digits (shipped with the package, no download) by
full-batch AdamW inside one ``lax.scan`` (``jcalib.core.optimise``), once with cross-entropy
alone and once with cross-entropy + λ · penalty for each penalty of ``jcalib.losses`` at a few
weights λ. All seeds and all weights of one penalty are a single vmapped program. On held-out
data it reports accuracy, NLL, top-label ECE, smooth ECE (of the top-label confidence) and
class-wise ECE, each also after post-hoc temperature scaling fitted on a validation split
(``jcalib.recalibration.TemperatureScaling``, also vmapped over models).

Writes results/train_with_calibration_loss/{runs.csv,summary.csv,summary.md,timing.json} and
the figure calibration_losses_digits.png (ECE against accuracy per method, ±1 sd seed bands).

Usage:
    python experiments/train_with_calibration_loss.py            # full run (< 10 min on 2 CPU cores)
    python experiments/train_with_calibration_loss.py --quick    # seconds: fewer seeds, steps, weights
    python experiments/train_with_calibration_loss.py --img-dir docs/tutorials/img   # refresh the docs figure
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from matplotlib.patches import Ellipse  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

from jcalib import losses  # noqa: E402
from jcalib.core import optimise  # noqa: E402
from jcalib.metrics import accuracy, classwise_ece, nll, smooth_ece, top_label_ece  # noqa: E402
from jcalib.recalibration import TemperatureScaling  # noqa: E402

OUT = Path("results/train_with_calibration_loss")
FIGURE = "calibration_losses_digits.png"
METRICS = ("accuracy", "nll", "top_label_ece", "smooth_ece", "classwise_ece")


# ---------------------------------------------------------------------------------------------
# Data and model


def load_digits_split(seed: int = 0):
    """Standardised digits (1797 × 64, 10 classes) split 60/20/20 into train, validation (for
    temperature scaling) and test, stratified by nothing but a fixed permutation."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(seed).permutation(len(y))
    X, y = X[perm].astype(np.float32), y[perm].astype(np.int32)
    n_tr, n_va = int(0.6 * len(y)), int(0.2 * len(y))
    mu, sd = X[:n_tr].mean(0), X[:n_tr].std(0) + 1.0  # +1: constant pixels stay finite
    X = (X - mu) / sd
    parts = np.split(np.arange(len(y)), [n_tr, n_tr + n_va])
    return [(jnp.asarray(X[i]), jnp.asarray(y[i])) for i in parts]


def penalties(n_classes: int):
    """name -> penalty(logits, labels); each a jcalib.losses function of the training batch."""
    # a fixed family of 32 random two-action losses, L ~ N(0, 1), as in the evaluation of Zhao et
    # al. (2021)
    L = jax.random.normal(jax.random.key(1234), (32, 2, n_classes))
    return {
        "smooth ECE": lambda z, y: losses.confidence_smooth_ece_loss(z, y, from_logits=True),
        "kernel CE (Gopalan et al. 2024)": lambda z, y: losses.kernel_calibration_loss(z, y, squared=False, from_logits=True),
        "MMCE": lambda z, y: losses.mmce_loss(z, y, from_logits=True),
        "decision (Zhao et al. 2021)": lambda z, y: losses.decision_calibration_loss(z, y, L, from_logits=True),
    }


def train_models(key, data, penalty, weights, n_seeds, n_steps, lr, width):
    """Train n_seeds × len(weights) MLPs in one vmapped program; returns the stacked models
    (leading axis: weight-major, then seed) and the loss curves."""
    (Xtr, ytr) = data
    n_in, n_out = Xtr.shape[1], int(ytr.max()) + 1
    keys = jax.random.split(key, n_seeds)
    lams = jnp.repeat(jnp.asarray(weights, jnp.float32), n_seeds)
    keys = jnp.tile(keys, (len(weights),))

    def make(k):
        return eqx.nn.MLP(n_in, n_out, width, depth=2, activation=jax.nn.relu, key=k)

    models = eqx.filter_vmap(make)(keys)
    params, static = eqx.partition(models, eqx.is_array)

    def fit(p0, lam):
        def objective(p):
            logits = jax.vmap(eqx.combine(p, static))(Xtr)
            ce = jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, ytr))
            return ce if penalty is None else ce + lam * penalty(logits, ytr)

        res = optimise(objective, p0, optax.adamw(lr, weight_decay=1e-4), n_steps)
        return res.params, res.losses

    p, curves = jax.jit(jax.vmap(fit))(params, lams)
    return eqx.combine(p, static), curves


def predict(models, X):
    return eqx.filter_vmap(lambda m: jax.nn.softmax(jax.vmap(m)(X), axis=1))(models)


def _evaluate(probs, y):
    conf = jnp.max(probs, axis=1)
    correct = (jnp.argmax(probs, axis=1) == y).astype(jnp.int32)
    return {
        "accuracy": accuracy(probs, y),
        "nll": nll(probs, y),
        "top_label_ece": top_label_ece(probs, y, n_bins=15),
        "smooth_ece": smooth_ece(conf, correct),
        "classwise_ece": classwise_ece(probs, y, n_bins=15),
    }


@jax.jit
def _evaluate_all(pv, yv, pt, yt):
    raw = jax.vmap(lambda p: _evaluate(p, yt))(pt)
    fitted = jax.vmap(lambda p: TemperatureScaling().fit(p, yv))(pv)
    ts = jax.vmap(lambda p: _evaluate(p, yt))(jax.vmap(lambda f, p: f(p))(fitted, pt))
    return raw, ts, fitted.temperature


def evaluate(models, val, test):
    """Held-out metrics of every model, raw and after temperature scaling fitted on ``val``
    (one compiled program for all models)."""
    raw, ts, temps = _evaluate_all(predict(models, val[0]), val[1], predict(models, test[0]), test[1])
    return {k: np.asarray(v) for k, v in raw.items()}, {k: np.asarray(v) for k, v in ts.items()}, np.asarray(temps)


# ---------------------------------------------------------------------------------------------
# Run, summarise, plot


def run(args):
    OUT.mkdir(parents=True, exist_ok=True)
    train, val, test = load_digits_split(args.split_seed)
    n_classes = int(train[1].max()) + 1
    methods = [("cross-entropy", None, (0.0,))] + [(k, f, tuple(args.weights)) for k, f in penalties(n_classes).items()]
    rows, timing = [], {}
    t_all = time.perf_counter()
    for mi, (name, pen, weights) in enumerate(tqdm(methods, desc="methods")):
        t0 = time.perf_counter()
        models, curves = train_models(
            jax.random.key(args.seed), train, pen, weights, args.seeds, args.steps, args.lr, args.width
        )
        jax.block_until_ready(curves)
        raw, ts, temps = evaluate(models, val, test)
        timing[name] = time.perf_counter() - t0
        for b in range(len(weights) * args.seeds):
            lam, seed = weights[b // args.seeds], b % args.seeds
            for post, vals in (("none", raw), ("temperature", ts)):
                rows.append({
                    "method": name, "weight": lam, "seed": seed, "posthoc": post,
                    "temperature": float(temps[b]) if post == "temperature" else 1.0,
                    "final_train_loss": float(curves[b, -1]),
                    **{m: float(vals[m][b]) for m in METRICS},
                })
    timing["total"] = time.perf_counter() - t_all
    with open(OUT / "runs.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    summary = summarise(rows)
    with open(OUT / "summary.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(summary[0]))
        wr.writeheader()
        wr.writerows(summary)
    table = markdown_table(summary, args.seeds)
    (OUT / "summary.md").write_text(table + "\n")
    settings = {k: v for k, v in vars(args).items() if k != "img_dir"}
    (OUT / "timing.json").write_text(json.dumps({"seconds": timing, "settings": settings}, indent=2))
    plot(summary, OUT / FIGURE)
    if args.img_dir:
        Path(args.img_dir).mkdir(parents=True, exist_ok=True)
        shutil.copy(OUT / FIGURE, Path(args.img_dir) / FIGURE)
    print(table)
    print(f"\nwall time: {timing['total']:.1f} s (per method: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in timing.items() if k != "total") + ")")
    return summary, timing


def summarise(rows):
    keys = []
    for r in rows:
        k = (r["method"], r["weight"], r["posthoc"])
        if k not in keys:
            keys.append(k)
    out = []
    for method, weight, post in keys:
        sel = [r for r in rows if (r["method"], r["weight"], r["posthoc"]) == (method, weight, post)]
        row = {"method": method, "weight": weight, "posthoc": post, "n_seeds": len(sel)}
        for m in METRICS + ("temperature",):
            vals = np.array([r[m] for r in sel])
            row[m] = float(vals.mean())
            row[m + "_sd"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
        out.append(row)
    return out


def markdown_table(summary, n_seeds):
    head = ("| method | λ | post-hoc | accuracy | NLL | top-label ECE | smooth ECE | class-wise ECE | T |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in summary:
        cells = [r["method"], "—" if r["weight"] == 0 else f"{r['weight']:g}",
                 "TS" if r["posthoc"] == "temperature" else "—"]
        for m, scale, fmt in (("accuracy", 100, "{:.1f}"), ("nll", 1, "{:.3f}"), ("top_label_ece", 100, "{:.2f}"),
                              ("smooth_ece", 100, "{:.2f}"), ("classwise_ece", 100, "{:.3f}")):
            cells.append((fmt + " ± " + fmt).format(scale * r[m], scale * r[m + "_sd"]))
        cells.append(f"{r['temperature']:.2f}" if r["posthoc"] == "temperature" else "—")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\nMean ± sd over {n_seeds} seeds; accuracy and ECEs in %, NLL in nats; T = fitted temperature.")
    return "\n".join(lines)


def plot(summary, path):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharex=True)
    methods = list(dict.fromkeys(r["method"] for r in summary))
    colours = dict(zip(methods, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, metric, label in ((axes[0], "top_label_ece", "top-label ECE (%)"), (axes[1], "smooth_ece", "smooth ECE (%)")):
        for method in methods:
            for post, marker, ls in (("none", "o", "-"), ("temperature", "s", ":")):
                sel = [r for r in summary if r["method"] == method and r["posthoc"] == post]
                x = np.array([100 * r["accuracy"] for r in sel])
                y = np.array([100 * r[metric] for r in sel])
                for r, xi, yi in zip(sel, x, y):  # ±1 sd seed band of each (method, λ)
                    ax.add_patch(Ellipse((xi, yi), 2 * 100 * r["accuracy_sd"] + 1e-3, 2 * 100 * r[metric + "_sd"] + 1e-3,
                                         color=colours[method], alpha=0.15, lw=0))
                lab = f"{method}" + (" + TS" if post == "temperature" else "")
                ax.plot(x, y, marker=marker, ls=ls, color=colours[method], label=lab, ms=5,
                        mfc="white" if post == "temperature" else colours[method])
                if post == "none" and method != "cross-entropy":
                    for r, xi, yi in zip(sel, x, y):
                        ax.annotate(f"λ={r['weight']:g}", (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("test accuracy (%)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_title("digits, MLP: calibration penalty vs temperature scaling")
    axes[1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 seeds, 1 weight, 40 steps: a smoke run")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per (method, weight) (default 5; quick 2)")
    ap.add_argument("--steps", type=int, default=None, help="full-batch AdamW steps (default 250; quick 40)")
    ap.add_argument("--weights", type=float, nargs="+", default=None, help="penalty weights λ (default 0.5 2 8; quick 2)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--width", type=int, default=128, help="hidden width of the two-hidden-layer MLP")
    ap.add_argument("--seed", type=int, default=0, help="key of the model initialisations")
    ap.add_argument("--split-seed", type=int, default=0, help="permutation of the train/val/test split")
    ap.add_argument("--img-dir", default=None, help="also copy the figure here (docs/tutorials/img)")
    args = ap.parse_args(argv)
    if args.seeds is None:
        args.seeds = 2 if args.quick else 5
    if args.steps is None:
        args.steps = 40 if args.quick else 250
    if args.weights is None:
        args.weights = [2.0] if args.quick else [0.5, 2.0, 8.0]
    return args


def main(argv=None):
    return run(parse_args(argv))


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

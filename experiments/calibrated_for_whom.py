"""Calibrated for whom? A model calibrated on average and not on age × sex groups, found by the
multicalibration audit, fixed offline (HKRR patching) and online (Blackwell multicalibration),
with CORP diagrams and score decompositions before and after, and Venn–Abers intervals (the
tutorial docs/tutorials/calibrated_for_whom.md).

Data shipped with scikit-learn (no download): the diabetes data (442 patients; age, sex, BMI,
blood pressure and six blood serum measurements), the outcome "disease progression after one
year above its median". Groups: everyone, older/younger (age above/below its median), each sex,
and the four age × sex intersections — nine overlapping groups.

The model is a logistic regression on the eight clinical measurements that leaves age and sex
out. Every prediction is out-of-fold (5-fold cross-fitting), and so is every recalibration:
Platt scaling and ``Multicalibration`` are fitted on four folds of the model's out-of-fold
predictions and applied to the fifth. The online forecaster (``OnlineMulticalibration``) sees the
patients once, in a random order, with the nine groups and five model-forecast levels as its
groups, and forecasts each before its outcome.

Writes ``results/calibrated_for_whom/`` (``summary.md``, ``groups.csv``) and two figures to
``--img-dir`` (default docs/tutorials/img/): ``calibrated_for_whom_groups.png`` (each group's
mean bias before and after) and ``calibrated_for_whom_corp.png`` (CORP reliability diagrams of
the older patients before and after).

Usage::

    python experiments/calibrated_for_whom.py     # about a minute on 2 cores
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jcalib
from jcalib.forecasters import OnlineMulticalibration
from jcalib.metrics import binned_ece, multicalibration_audit, multicalibration_error
from jcalib.recalibration import Multicalibration, PlattScaling, VennAbers
from jcalib.stats import score_decomposition

OUT = Path("results/calibrated_for_whom")
NAMES = ["all", "older", "younger", "sex 2", "sex 1", "older, sex 2", "older, sex 1", "younger, sex 2", "younger, sex 1"]
N_BINS = 5  # forecast levels: 442 patients, groups of about 50-220


def load():
    """Features, outcomes and the nine groups (boolean matrix (n, 9))."""
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    X, target = d.data, d.target
    y = (target > np.median(target)).astype(np.int32)
    old = X[:, 0] > np.median(X[:, 0])
    sex = X[:, 1] > 0
    groups = np.stack([np.ones(len(y), bool), old, ~old, sex, ~sex, old & sex, old & ~sex, ~old & sex, ~old & ~sex], 1)
    return X, y, groups


def folds(y, k=5, seed=0):
    from sklearn.model_selection import StratifiedKFold

    return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))


def model_predictions(X, y, splits):
    """Out-of-fold logistic regression without age and sex (columns 2 onwards)."""
    from sklearn.linear_model import LogisticRegression

    q = np.zeros(len(y))
    for tr, te in splits:
        m = LogisticRegression(max_iter=1000).fit(X[tr][:, 2:], y[tr])
        q[te] = m.predict_proba(X[te][:, 2:])[:, 1]
    return q.astype(np.float32)


def cross_fit(method, q, y, groups, splits):
    """Out-of-fold recalibration of the model's out-of-fold forecasts."""
    out = np.zeros_like(q)
    for tr, te in splits:
        if isinstance(method, Multicalibration):
            out[te] = np.asarray(method.fit(q[tr], y[tr], groups=groups[tr])(q[te], groups[te]))
        else:
            two = lambda v: np.stack([1 - v, v], 1)  # noqa: E731 - (n,) -> (n, 2)
            out[te] = np.asarray(method.fit(two(q[tr]), y[tr])(two(q[te])))[:, 1]
    return out


def online(q, y, groups, seed=0):
    """One pass in a random order; the context is the nine groups and five model-forecast levels."""
    order = np.random.default_rng(seed).permutation(len(y))
    levels = np.minimum((q * N_BINS).astype(int), N_BINS - 1)
    ctx = np.concatenate([groups, np.eye(N_BINS, dtype=bool)[levels]], 1).astype(np.float32)
    f = OnlineMulticalibration(n_groups=ctx.shape[1], n_bins=10)
    traj = jcalib.core.play(f, jcalib.natures.Replay(y[order], ctx[order]), len(y), key=jax.random.key(seed))
    out = np.zeros_like(q)
    out[order] = np.asarray(traj.forecast)
    return out


def group_table(forecasts: dict, y, groups):
    rows = []
    for name, p in forecasts.items():
        err = multicalibration_error(p, y, groups, n_bins=N_BINS)
        bias = [float(np.mean(p[g] - y[g])) for g in groups.T]
        rows.append((name, bias, np.asarray(err.per_group), float(err.worst), NAMES[int(err.worst_group)]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--img-dir", default="docs/tutorials/img")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)

    X, y, groups = load()
    splits = folds(y)
    q = model_predictions(X, y, splits)
    forecasts = {
        "model": q,
        "Platt (on average)": cross_fit(PlattScaling(), q, y, groups, splits),
        "Multicalibration (offline)": cross_fit(Multicalibration(alpha=0.03, n_bins=N_BINS, validation_fraction=0.25), q, y, groups, splits),
        "OnlineMulticalibration": online(q, y, groups),
    }
    key = jax.random.key(0)
    lines = ["| forecasts | binned ECE | worst group error | worst group | audit p (α = 0.05) | Brier | MCB | DSC | UNC |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = group_table(forecasts, y, groups)
    for (name, p), row in zip(forecasts.items(), rows):
        audit = multicalibration_audit(p, y, groups, alpha=0.05, key=key, n_bins=N_BINS, n_resamples=500)
        dec = score_decomposition(p, y.astype(np.float32), score="brier")
        lines.append(f"| {name} | {float(binned_ece(p, y, n_bins=N_BINS)):.3f} | {row[3]:.3f} | {row[4]} | "
                     f"{float(audit.p_value):.3f} | {float(dec.score):.4f} | {float(dec.miscalibration):.4f} | "
                     f"{float(dec.discrimination):.4f} | {float(dec.uncertainty):.4f} |")
    lines += ["", "Mean bias (forecast − outcome) per group:", "",
              "| forecasts | " + " | ".join(NAMES) + " |", "|---|" + "---|" * len(NAMES)]
    lines += [f"| {name} | " + " | ".join(f"{b:+.3f}" for b in bias) + " |" for name, bias, *_ in rows]
    lines += ["", "Group sizes: " + ", ".join(f"{n} {int(s)}" for n, s in zip(NAMES, groups.sum(0)))]

    # Venn–Abers on the same model: fitted on four folds, intervals on the fifth
    p0, p1, merged = (np.zeros_like(q) for _ in range(3))
    for tr, te in splits:
        two = lambda v: np.stack([1 - v, v], 1)  # noqa: E731
        fitted = VennAbers().fit(two(q[tr]), y[tr])
        iv = fitted.interval(two(q[te]))
        p0[te], p1[te], merged[te] = np.asarray(iv.p0), np.asarray(iv.p1), np.asarray(iv.probs)[:, 1]
    width = p1 - p0
    lines += ["", "Venn–Abers (inductive, out-of-fold): mean interval width per group, and the merged "
              "probability's mean bias:", "", "| group | width | bias of merged |", "|---|---|---|"]
    lines += [f"| {n} | {width[g].mean():.3f} | {np.mean(merged[g] - y[g]):+.3f} |" for n, g in zip(NAMES, groups.T)]
    text = "\n".join(lines) + "\n"
    (OUT / "summary.md").write_text(text)
    with open(OUT / "groups.csv", "w") as fh:
        fh.write("forecasts,group,size,bias,error\n")
        for name, bias, per, *_ in rows:
            for n, b, e, s in zip(NAMES, bias, per, groups.sum(0)):
                fh.write(f"{name},{n},{int(s)},{b:.6f},{e:.6f}\n")
    print(text)
    figures(forecasts, rows, y, groups, Path(args.img_dir))


def figures(forecasts, rows, y, groups, img_dir: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jcalib.plots import reliability_diagram

    img_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    width = 0.8 / len(rows)
    for i, (name, bias, *_) in enumerate(rows):
        ax.bar(np.arange(len(NAMES)) + (i - (len(rows) - 1) / 2) * width, bias, width, label=name)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(NAMES)), NAMES, rotation=30, ha="right")
    ax.set_ylabel("mean forecast − outcome")
    ax.legend(fontsize=8, ncol=2)
    ax.set_title("Calibrated on average, not for the older patients")
    fig.tight_layout()
    fig.savefig(img_dir / "calibrated_for_whom_groups.png", dpi=120)
    plt.close(fig)

    older = groups[:, 1]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), sharey=True)
    for ax, name in zip(axes, ("model", "Multicalibration (offline)", "OnlineMulticalibration")):
        p = forecasts[name][older]
        reliability_diagram(p, y[older], kind="corp", key=jax.random.key(1), ax=ax, label=name)
        ax.set_title(f"older patients: {name}", fontsize=9)
    fig.tight_layout()
    fig.savefig(img_dir / "calibrated_for_whom_corp.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()

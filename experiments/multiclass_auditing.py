"""Weighted multi-class calibration and kernel auditing (Gopalan, Hu, Rothblum 2024).

Three parts, each writing numbers to results/multiclass_auditing/ and figures (PNG):

(a) The paper's motivating failure (§1, "cat or dog"), synthetic: a predictor that is class-wise,
    confidence and top-label calibrated in the population, yet whose probability for the event
    "label in T = {cat, dog}" is badly calibrated. Class-wise ECE ≈ 0, subset smooth error large;
    kernel post-processing (Lemma 4.2) removes it without raising the squared loss.
(b) A real dataset shipped with scikit-learn (digits, no download): three classifiers, their
    held-out predictions recalibrated by temperature scaling and by kernel post-processing.
(c) Scaling: time and value of the kernel auditor (Algorithm 2, poly(n, k, d)) against the
    explicit monomial-enumeration auditor of GKSZ22 (exact low-degree error, C(k+d, d)
    monomials) as k, n and d grow.

Usage:
    python experiments/multiclass_auditing.py            # full run (< 15 min on 2 CPU cores)
    python experiments/multiclass_auditing.py --quick    # < 1 min
    python experiments/multiclass_auditing.py --img-dir docs/tutorials/img   # also refresh the docs figures
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
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

from jcalib.metrics import (  # noqa: E402
    GaussianKernel,
    MultinomialKernel,
    PartitionSearch,
    accuracy,
    binned_ece,
    classwise_ece,
    confidence_ece,
    kernel_audit,
    l2_error,
    lipschitz_correlation,
    max_classwise_calibration_error,
    projected_smooth_calibration_error,
    low_degree_calibration_error,
    subset_smooth_calibration_error,
    top_label_ece,
    two_action_decision_calibration_error,
)
from jcalib.recalibration import (  # noqa: E402
    KernelCalibration,
    TemperatureScaling,
)

OUT = Path("results/multiclass_auditing")
CLASSES = ("cat", "dog", "car", "truck")


# ---------------------------------------------------------------------------------------------
# (a) class-wise calibrated, subset miscalibrated

# Six equally likely "configurations": which two of the four classes get the high base
# probability 0.375 (the others 0.125). The residual E[y|v] − v in each configuration, in units
# of ε, is chosen so that E[r_ℓ | v_ℓ] = 0 for every class ℓ (class-wise calibration) while
# r_cat + r_dog = +2ε when cat and dog are both high and −2ε when both are low.
_RESIDUAL = {
    (0, 1): (1.0, 1.0, -1.0, -1.0),
    (2, 3): (-1.0, -1.0, 1.0, 1.0),
    (0, 2): (-0.5, 0.5, -0.5, 0.5),
    (0, 3): (-0.5, 0.5, 0.5, -0.5),
    (1, 2): (0.5, -0.5, -0.5, 0.5),
    (1, 3): (0.5, -0.5, 0.5, -0.5),
}


def cat_dog_data(rng, n, eps=0.11, jitter=0.01, high=0.375):
    """Predictions v and labels y with E[y | v] = v + ε r(config) (see _RESIDUAL).

    v = base(config) + u − mean(u), u ~ U(−jitter, jitter)^4 independent of the configuration, so
    v_ℓ reveals only whether ℓ is high and its own noise: E[y_ℓ | v_ℓ] = v_ℓ for every ℓ.
    """
    configs = list(_RESIDUAL)
    c = rng.integers(0, len(configs), n)
    base = np.full((n, 4), 0.5 - high)
    res = np.zeros((n, 4))
    for j, cfg in enumerate(configs):
        base[np.ix_(c == j, cfg)] = high
        res[c == j] = _RESIDUAL[cfg]
    u = rng.uniform(-jitter, jitter, (n, 4))
    v = base + u - u.mean(1, keepdims=True)
    q = v + eps * res
    if q.min() < 0:
        raise ValueError("eps too large for these base probabilities: E[y|v] leaves the simplex")
    return v.astype(np.float32), _draw(rng, q), q


def _draw(rng, q):
    return np.minimum((rng.random((len(q), 1)) > np.cumsum(q, 1)).sum(1), q.shape[1] - 1)


def _metrics(p, y, T_mask, key, quick):
    p = np.asarray(p, np.float32)
    out = {
        "classwise_ece": float(classwise_ece(p, y, n_bins=10)),
        "classwise_family_max": float(max_classwise_calibration_error(p, y, n_bins=10)),
        "confidence_ece": float(confidence_ece(p, y, n_bins=10)),
        "top_label_ece": float(top_label_ece(p, y, n_bins=10)),
        "event_T_binned_ece": float(binned_ece(p[:, T_mask].sum(1), np.isin(y, np.where(T_mask)[0]).astype(int), n_bins=10)),
        "smce_T": float(subset_smooth_calibration_error(p, y, subsets=T_mask[None])),
        "subset_smooth_2": float(subset_smooth_calibration_error(p, y, 2)),
        "kernel_audit_d2": float(kernel_audit(p, y, MultinomialKernel(2)).value),
        "sq_loss": float(l2_error(p, y)),
        "accuracy": float(accuracy(p, y)),
    }
    if p.shape[1] <= 4:
        out["subset_smooth_all"] = float(subset_smooth_calibration_error(p, y))
        if not quick:  # 40 directions × 4 classes of host LPs: about 30 s at n = 5000
            out["projected_smooth_lb"] = float(projected_smooth_calibration_error(p, y))
        out["decision_2action_lb"] = float(
            two_action_decision_calibration_error(
                p, y, key=key, search=PartitionSearch(n_steps=100 if quick else 300, n_restarts=8)).value
        )
    return out


def _beta(args, rng, v, kernel=None):
    """β for post-processing: the given --beta, or with ``--beta auto`` the audit's noise floor
    under calibration — the largest audit value over 5 label sets drawn from v itself (a
    perfectly calibrated predictor with the same predictions). The floor overstates the noise for
    under-confident predictors (their true labels are less random than v says), so it is not
    the default."""
    if args.beta != "auto":
        return float(args.beta)
    v64 = np.asarray(v, np.float64)
    kernel = MultinomialKernel(2) if kernel is None else kernel
    return max(float(kernel_audit(v, _draw(rng, v64), kernel).value) for _ in range(5))


def _event_reliability(ax, p, y, T_mask, label, n_bins=10):
    pt = p[:, T_mask].sum(1)
    yt = np.isin(y, np.where(T_mask)[0]).astype(float)
    edges = np.linspace(0, 1, n_bins + 1)
    idx = np.clip(np.digitize(pt, edges) - 1, 0, n_bins - 1)
    xs, ys = [], []
    for b in range(n_bins):
        sel = idx == b
        if sel.sum() >= 10:
            xs.append(pt[sel].mean())
            ys.append(yt[sel].mean())
    ax.plot(xs, ys, "o-", label=label)


def part_a(args, rng):
    n = 3000 if args.quick else 5000
    v, y, _ = cat_dog_data(rng, n)
    vt, yt, qt = cat_dog_data(rng, n)
    T = np.array([True, True, False, False])
    beta = _beta(args, rng, v)
    floor = max(float(kernel_audit(v, _draw(rng, v.astype(np.float64)), MultinomialKernel(2)).value) for _ in range(5))
    t0 = time.perf_counter()
    cal, hist = KernelCalibration(MultinomialKernel(2), beta=beta, max_steps=300).fit_with_history(
        v, y, chunk=20, progress=not args.quick)
    fit_s = time.perf_counter() - t0
    pt = np.asarray(cal(vt))
    # the same post-processing with a local kernel (not from the paper): Gaussian, σ = 0.1
    gauss = GaussianKernel(0.1)
    beta_g = _beta(args, rng, v, gauss)
    cal_g, hist_g = KernelCalibration(gauss, beta=beta_g, max_steps=300).fit_with_history(
        v, y, chunk=20, progress=False)
    pg = np.asarray(cal_g(vt))
    key = jax.random.key(1)
    # reference: the same predictions with labels drawn from v itself (perfectly calibrated),
    # i.e. the sampling-noise level of every metric at this n
    reference = _metrics(vt, _draw(rng, vt.astype(np.float64)), T, key, args.quick)
    before, after = _metrics(vt, yt, T, key, args.quick), _metrics(pt, yt, T, key, args.quick)
    after_g = _metrics(pg, yt, T, key, args.quick)
    # smCE_T against the true conditional law q (labels replaced by E[y|v]): no label noise.
    # Planted value: v_T ∈ {0.75, 0.5, 0.25} (±jitter) with E[y_T|v] − v_T = ±2ε at the ends,
    # and a 1-Lipschitz φ moves by at most 0.5 between them: (2/6)·2ε·0.25 ≈ 0.018 for ε = 0.11.
    law = {
        name: lipschitz_correlation(p[:, T].sum(1), (qt[:, T].sum(1) - p[:, T].sum(1)) / n)[0]
        for name, p in (("before", vt), ("after", pt), ("after_gaussian", pg))
    }
    res = {
        "n_train": n, "n_test": n, "beta": beta, "audit_noise_floor": floor, "fit_seconds": fit_s,
        "steps": int(len(hist["sq_loss"]) - 1), "converged": bool(hist["converged"]),
        "train_sq_loss": hist["sq_loss"].tolist(), "train_audit": hist["audit_value"].tolist(),
        "test_before": before, "test_after": after, "test_after_gaussian": after_g, "beta_gaussian": beta_g,
        "steps_gaussian": int(len(hist_g["sq_loss"]) - 1),
        "calibrated_reference": reference, "smce_T_true_law": law,
        "train_loss_monotone": bool(np.all(np.diff(hist["sq_loss"]) <= 1e-6)),
    }

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    ax = axes[0]
    for ell, name in enumerate(CLASSES[:2]):
        yy = (yt == ell).astype(float)
        edges = np.linspace(0, 1, 21)
        idx = np.clip(np.digitize(vt[:, ell], edges) - 1, 0, 19)
        xs = [vt[idx == b, ell].mean() for b in range(20) if (idx == b).sum() >= 10]
        ys = [yy[idx == b].mean() for b in range(20) if (idx == b).sum() >= 10]
        ax.plot(xs, ys, "o-", label=f"P({name}) before")
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    ax.set(title="each class alone: calibrated", xlabel="predicted", ylabel="observed", xlim=(0, 1), ylim=(0, 1))
    ax.legend(fontsize=8)
    ax = axes[1]
    _event_reliability(ax, vt, yt, T, "before")
    _event_reliability(ax, pt, yt, T, "after (multinomial, d=2)")
    _event_reliability(ax, pg, yt, T, "after (Gaussian, σ=0.1)")
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    ax.set(title="event 'cat or dog'", xlabel="predicted P(cat)+P(dog)", ylabel="observed", xlim=(0, 1), ylim=(0, 1))
    ax.legend(fontsize=8)
    ax = axes[2]
    steps = np.arange(len(hist["sq_loss"]))
    ax.plot(steps, hist["sq_loss"] - hist["sq_loss"][-1] + 1e-4, label="train sq. loss − final")
    ax.plot(np.arange(len(hist["audit_value"])), hist["audit_value"], label="audit value")
    ax.axhline(beta, color="k", ls=":", lw=1, label="β")
    ax.set(yscale="log", xlabel="post-processing step", title="Lemma 4.2 loop")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return res, {"cat_dog.png": fig}


# ---------------------------------------------------------------------------------------------
# (b) digits


def part_b(args, rng):
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    X, y = load_digits(return_X_y=True)
    Xtr, Xr, ytr, yr = train_test_split(X, y, train_size=0.4, random_state=0, stratify=y)
    Xc, Xt, yc, yt = train_test_split(Xr, yr, train_size=0.5, random_state=0, stratify=yr)
    models = {
        "GaussianNB": GaussianNB(),
        "LogReg(C=5e-4)": LogisticRegression(C=5e-4, max_iter=3000),
        "RandomForest(depth 4)": RandomForestClassifier(n_estimators=50, max_depth=4, random_state=0),
    }
    if args.quick:
        models = {"GaussianNB": models["GaussianNB"]}
    T = np.zeros(10, bool)  # an example event: "the digit is 3, 5 or 8" (similar shapes)
    T[[3, 5, 8]] = True
    res = {"n_train": len(ytr), "n_cal": len(yc), "n_test": len(yt), "event_T": [3, 5, 8], "models": {}}
    key = jax.random.key(2)
    for name, clf in models.items():
        clf.fit(Xtr, ytr)

        def probs(Xs):
            p = clf.predict_proba(Xs).astype(np.float32)
            return p / p.sum(1, keepdims=True)

        pc, pt = probs(Xc), probs(Xt)
        beta = _beta(args, rng, pc)
        kern, kern_hist = KernelCalibration(MultinomialKernel(2), beta=beta, max_steps=300).fit_with_history(
            pc, yc, chunk=20, progress=False)
        temp = TemperatureScaling().fit(pc, yc)
        # Lemma 4.2 post-processes any predictor: run it on top of temperature scaling too
        tc, tt = np.asarray(temp(pc)), np.asarray(temp(pt))
        both, both_hist = KernelCalibration(MultinomialKernel(2), beta=beta, max_steps=300).fit_with_history(
            tc, yc, chunk=20, progress=False)
        res["models"][name] = {
            "raw": _metrics(pt, yt, T, key, args.quick),
            "temperature": _metrics(tt, yt, T, key, args.quick),
            "kernel": _metrics(np.asarray(kern(pt)), yt, T, key, args.quick),
            "temperature+kernel": _metrics(np.asarray(both(tt)), yt, T, key, args.quick),
            "kernel_steps": int(len(kern_hist["sq_loss"]) - 1),
            "temperature+kernel_steps": int(len(both_hist["sq_loss"]) - 1),
            "beta": beta,
        }
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    names = list(res["models"])
    width = 0.2
    for ax, metric, title in zip(
        axes, ("top_label_ece", "subset_smooth_2", "sq_loss"), ("top-label ECE", "2-subset smooth error", "squared loss")
    ):
        for j, method in enumerate(("raw", "temperature", "kernel", "temperature+kernel")):
            vals = [res["models"][m][method][metric] for m in names]
            ax.bar(np.arange(len(names)) + (j - 1.5) * width, vals, width, label=method)
        ax.set_xticks(np.arange(len(names)), [m.split("(")[0] for m in names], fontsize=8)
        ax.set_title(title)
    axes[0].legend(fontsize=8)
    fig.suptitle("digits, held-out test set", fontsize=10)
    fig.tight_layout()
    return res, {"digits.png": fig}


# ---------------------------------------------------------------------------------------------
# (c) scaling: kernel auditor vs monomial enumeration (GKSZ22)


def _sharp_data(rng, n, k, eps):
    v = rng.dirichlet(np.ones(k), size=n)
    q = (1 - eps) * v + eps * np.eye(k)[np.argmax(v, 1)]
    y = np.minimum((rng.random((n, 1)) > np.cumsum(q, 1)).sum(1), k - 1)
    return v.astype(np.float32), y


def _time(fn, repeats=5):
    jax.block_until_ready(fn())  # compile + warm up
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), float(out)


def _one_scaling_point(rng, n, k, d, max_monomials):
    v, y = _sharp_data(rng, n, k, 0.3)
    M = math.comb(k + d, d)
    kt, kval = _time(lambda: kernel_audit(v, y, MultinomialKernel(d)).value)
    row = {"n": n, "k": k, "d": d, "monomials": M, "kernel_s": kt,
           # s·value = CE over B_Γ(1)^k ≥ CE over P(d,1)^k (Corollary 6.6)
           "kernel_bound": kval * math.sqrt(d + 1), "kernel_value": kval}
    if M <= max_monomials:
        et, eval_ = _time(lambda: low_degree_calibration_error(v, y, d, tile=2048))
        row.update(enum_s=et, enum_value=eval_)
    return row


def part_c(args, rng):
    cap = 3e4 if args.quick else 1e6
    rows = []
    n0 = 1000 if args.quick else 2000
    ks_d = (5, 10) if args.quick else (5, 10, 20)
    ds = (1, 2, 3, 4) if args.quick else (1, 2, 3, 4, 6, 8, 10)
    for k in ks_d:
        for d in ds:
            rows.append(dict(_one_scaling_point(rng, n0, k, d, cap), sweep="d"))
    for k in ((5, 10, 20, 50) if args.quick else (5, 10, 20, 50, 100, 200, 500)):
        rows.append(dict(_one_scaling_point(rng, n0, k, 3, cap), sweep="k"))
    for n in ((500, 1000, 2000) if args.quick else (500, 1000, 2000, 4000, 8000, 16000, 32000)):
        rows.append(dict(_one_scaling_point(rng, n, 10, 3, cap), sweep="n"))
    # the found error on calibrated data shrinks like n^{-1/2}; on the planted data it does not
    cal_rows = []
    for n in ((500, 2000) if args.quick else (500, 1000, 2000, 4000, 8000, 16000)):
        vals = {}
        for eps in (0.0, 0.6):
            # mean over 3 data sets, so the fitted slope is not one draw's
            vals[eps] = float(np.mean([kernel_audit(*_sharp_data(rng, n, 10, eps), MultinomialKernel(3)).value for _ in range(3)]))
        cal_rows.append({"n": n, "calibrated": vals[0.0], "planted": vals[0.6]})
    ns = np.array([r["n"] for r in cal_rows])
    slope = float(np.polyfit(np.log(ns), np.log([r["calibrated"] for r in cal_rows]), 1)[0])

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    ax = axes[0]
    for k in ks_d:
        sel = [r for r in rows if r["sweep"] == "d" and r["k"] == k]
        (line,) = ax.plot([r["d"] for r in sel], [r["kernel_s"] for r in sel], "o-", label=f"kernel, k={k}")
        se = [r for r in sel if "enum_s" in r]
        ax.plot([r["d"] for r in se], [r["enum_s"] for r in se], "s--", color=line.get_color(), label=f"monomials, k={k}")
    ax.set(yscale="log", xlabel="degree d", ylabel="seconds", title=f"audit time vs d (n={n0})")
    ax.legend(fontsize=7)
    for ax, sweep, xl in ((axes[1], "k", "classes k"), (axes[2], "n", "samples n")):
        sel = [r for r in rows if r["sweep"] == sweep]
        ax.plot([r[sweep] for r in sel], [r["kernel_s"] for r in sel], "o-", label="kernel (Alg. 2)")
        se = [r for r in sel if "enum_s" in r]
        ax.plot([r[sweep] for r in se], [r["enum_s"] for r in se], "s--", label="monomial enumeration")
        ax.set(xscale="log", yscale="log", xlabel=xl, title=f"audit time vs {sweep} (d=3)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return {"rows": rows, "noise_floor": cal_rows, "calibrated_slope": slope}, {"scaling.png": fig}


# ---------------------------------------------------------------------------------------------


def _table_a(res):
    keys = [k for k in res["test_before"]]
    lines = ["| metric (test set) | calibrated reference | before | after (multinomial d=2) | after (Gaussian σ=0.1) |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {k} | {res['calibrated_reference'][k]:.4f} | {res['test_before'][k]:.4f} | {res['test_after'][k]:.4f} | "
              f"{res['test_after_gaussian'][k]:.4f} |" for k in keys]
    law = res["smce_T_true_law"]
    lines.append(f"| smce_T against E[y given v] | 0 | {law['before']:.4f} | {law['after']:.4f} | {law['after_gaussian']:.4f} |")
    lines.append(f"\nGaussian: β = {res['beta_gaussian']:.4f}, {res['steps_gaussian']} steps.")
    lines.append(f"Audit (d=2) noise floor at this n (max over 5 label draws from v): {res['audit_noise_floor']:.4f}.")
    lines.append(f"Multinomial: β = {res['beta']:.4f}; {res['steps']} post-processing steps (converged: {res['converged']}), train squared loss "
                 f"{res['train_sq_loss'][0]:.4f} → {res['train_sq_loss'][-1]:.4f}, monotone: {res['train_loss_monotone']}")
    return "\n".join(lines)


def _table_b(res):
    lines = ["| model | method | acc | sq. loss | class-wise ECE | top-label ECE | smCE(3,5,8) | ssCE_2 | audit (d=2) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m, r in res["models"].items():
        for method in ("raw", "temperature", "kernel", "temperature+kernel"):
            x = r[method]
            if "kernel" in method:
                method = f"{method} (β={r['beta']:.3f}, {r[method + '_steps']} steps)"
            lines.append(f"| {m} | {method} | {x['accuracy']:.3f} | {x['sq_loss']:.3f} | {x['classwise_ece']:.4f} | "
                         f"{x['top_label_ece']:.4f} | {x['smce_T']:.4f} | {x['subset_smooth_2']:.4f} | {x['kernel_audit_d2']:.4f} |")
    return "\n".join(lines)


def _table_c(res):
    lines = ["| n | audit value, calibrated (y ~ v) | audit value, planted (ε = 0.6) |", "| --- | --- | --- |"]
    lines += [f"| {r['n']} | {r['calibrated']:.4f} | {r['planted']:.4f} |" for r in res["noise_floor"]]
    lines += [f"\nfitted slope of log(calibrated value) on log n: {res['calibrated_slope']:.3f} (Lemma A.4: −0.5)\n"]
    lines += ["| sweep | n | k | d | monomials C(k+d,d) | kernel s | enumeration s | exact P(d,1) CE | kernel bound s·value |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in res["rows"]:
        es = f"{r['enum_s']:.4f}" if "enum_s" in r else "skipped"
        ev = f"{r['enum_value']:.4f}" if "enum_value" in r else "—"
        lines.append(f"| {r['sweep']} | {r['n']} | {r['k']} | {r['d']} | {r['monomials']} | {r['kernel_s']:.4f} | {es} | {ev} | {r['kernel_bound']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, < 1 min")
    p.add_argument("--parts", default="abc", help="which parts to run (subset of 'abc')")
    p.add_argument("--beta", default="0.01",
                   help="post-processing stop threshold β (default 0.01), or 'auto' for the audit's noise floor")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=OUT, help="results directory")
    p.add_argument("--img-dir", type=Path, default=None, help="also copy the figures here (e.g. docs/tutorials/img)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    results, summary = {"quick": args.quick}, []
    t_start = time.perf_counter()
    for part, fn, table in (("a", part_a, _table_a), ("b", part_b, _table_b), ("c", part_c, _table_c)):
        if part not in args.parts:
            continue
        t = time.perf_counter()
        res, figs = fn(args, rng)
        res["seconds"] = time.perf_counter() - t
        results[part] = res
        summary.append(f"## part ({part})  [{res['seconds']:.1f} s]\n\n{table(res)}\n")
        for name, fig in figs.items():
            path = args.out / name
            fig.savefig(path, dpi=90)
            plt.close(fig)
            if args.img_dir is not None:
                args.img_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, args.img_dir / f"multiclass_auditing_{name}")
        print(summary[-1])
    if "c" in results:
        print(f"calibrated data: audit value ~ n^{results['c']['calibrated_slope']:.3f} (theory: n^-0.5)")
    results["total_seconds"] = time.perf_counter() - t_start
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    (args.out / "summary.md").write_text("\n".join(summary))
    print(f"total {results['total_seconds']:.1f} s; wrote {args.out}/results.json, summary.md and figures")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

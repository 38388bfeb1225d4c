"""Okoroafor et al. (2024), online recalibration by approachability: rates, trade-off, baselines,
cost, real data.

Okoroafor et al. (2024) have no experiments of their own; these test their theorems and their
claims over their peers:

(a) calibration (ε, ℓ1, grid buckets, in expectation over the published mixtures) and average
    Brier regret against the model vs T, with fitted log–log slopes beside the theory (−1/3);
(b) the measured trade-off frontier for a sweep of β (ε = T^−β, Λ = T^((3β−1)/2)) against the
    theoretical segment (1/3, 1/3)–(1/4, 1/2) in (calibration exponent, regret exponent);
(c) rounds needed to reach a target regret: the approachability recalibrator vs Kuleshov–Ermon
    (paper L46: "a few hundred samples versus more than ten thousand"), and regret at equal
    calibration vs Lee et al.'s multi-objective MW;
(d) per-round cost vs the grid size m for the three algorithms;
(e) reliability diagrams of a real model (online logistic regression on scikit-learn's digits,
    stream order) and of its recalibration;
(f) an overconfident real model — Gaussian naive Bayes trained online on scikit-learn's digits
    and breast-cancer sets, replayed over many passes — recalibrated online: binned and smooth
    ECE, Brier score and the regret against the model, before and after, with bands over
    shuffles of the stream order (one vmapped ``sweep`` over the shuffles), at growing T.

Every run is a ``jcalib.core.sweep`` over natures × seeds recording the O(m)
:class:`~jcalib.recorders.RecalibrationCounts` summary (part (f) also keeps the forecasts, to
score them with the metrics of ``jcalib.metrics``). Writes
``results/approachability_recalibration.json`` and figures to ``docs/tutorials/img/`` (with
``--quick``: ``results/approachability_recalibration_quick.json`` and ``results/figures/``).

    python experiments/approachability_recalibration.py           # T up to 10^6
    python experiments/approachability_recalibration.py --quick   # T up to 10^4, 2 seeds
    python experiments/approachability_recalibration.py --parts f # (f) alone; the rest from the last run
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import jax
import numpy as np
from tqdm.auto import tqdm

import jcalib
from jcalib.datasets import logistic_stream, naive_bayes_stream
from jcalib.forecasters import ApproachabilityRecalibrator, KuleshovErmon, LeeMultiObjectiveMW
from jcalib.natures import DistortedModel, RecalibrationAdversary, Replay
from jcalib.metrics import binned_ece, brier, smooth_ece
from jcalib.recorders import History, RecalibrationCounts

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "tutorials" / "img"
RESULTS = ROOT / "results"


def grid_of(f) -> int:
    return f.inner.n_bins if hasattr(f, "inner") else f.n_bins


def measure(f, natures, T, seeds, key=0):
    """Mean over seeds of (calibration, regret) per nature, from the O(m) summaries."""
    m = grid_of(f)
    s = jcalib.core.sweep(f, natures, T, key=jax.random.key(key), n_seeds=seeds, record=RecalibrationCounts(m),
                     chunk=min(T, 200_000), progress=False)
    cal = np.asarray(jax.vmap(jax.vmap(lambda z: z.calibration()))(s)).mean(axis=1)
    reg = np.asarray(jax.vmap(jax.vmap(lambda z: z.regret()))(s)).mean(axis=1)
    return cal, reg


def slope(Ts, v):
    v = np.asarray(v, float)
    if np.any(v <= 0):
        return float("nan")
    return float(np.polyfit(np.log(Ts), np.log(v), 1)[0])


def adversaries(m):
    # alpha = 1: hurts calibration only; alpha = 0: hurts regret only
    return [RecalibrationAdversary(m, alpha=1.0), RecalibrationAdversary(m, alpha=0.0)]


def models():
    return [DistortedModel(slope=2.0), DistortedModel(slope=1.0)]  # overconfident; calibrated


def part_ab(Ts, betas, seeds, out):
    rows = {}
    for beta in tqdm(betas, desc="(a, b) beta"):
        cals, regs = [], []
        for T in Ts:
            f = ApproachabilityRecalibrator.for_horizon(T, beta)
            c_adv, r_adv = measure(f, adversaries(f.n_bins), T, seeds)
            if abs(beta - 1 / 3) < 1e-9:
                c_mod, r_mod = measure(f, models(), T, seeds)
            else:
                c_mod, r_mod = np.full(2, np.nan), np.full(2, np.nan)
            cals.append(np.r_[c_adv, c_mod])
            regs.append(np.r_[r_adv, r_mod])
        cals, regs = np.array(cals), np.array(regs)
        rows[f"{beta:.4f}"] = {
            "beta": beta,
            "T": Ts,
            "natures": ["adversary(calibration)", "adversary(regret)", "model slope 2", "calibrated model"],
            "calibration": cals.tolist(),
            "regret": regs.tolist(),
            # worst case over the natures at each T: the quantity the theorems bound
            "cal_slope": slope(Ts, np.nanmax(cals, axis=1)),
            "reg_slope": slope(Ts, np.nanmax(regs, axis=1)),
            "theory": {"cal_slope": -(1 - beta) / 2, "reg_slope": -beta},
        }
    out["ab"] = rows
    return rows


def part_c(Ts, seeds, target, out):
    res = {}
    for name, mk in (
        ("approachability", lambda T: ApproachabilityRecalibrator.for_horizon(T)),
        ("Kuleshov-Ermon", lambda T: KuleshovErmon.for_horizon(T, min(12, max(2, math.ceil(T ** (1 / 3)))), n_squarings=30)),
    ):
        cal, reg = [], []
        for T in tqdm(Ts, desc=f"(c) {name}"):
            f = mk(T)
            c, r = measure(f, adversaries(grid_of(f)), T, seeds, key=1)
            cal.append(float(c.max()))
            reg.append(float(r.max()))
        first = next((T for T, r in zip(Ts, reg) if r <= target), None)
        res[name] = {"T": Ts, "calibration": cal, "regret": reg, "T_to_target": first}
    out["c"] = {"target_regret": target, "runs": res}
    return res


def part_c_equal_calibration(T, seeds, lee_bins, out):
    """At one horizon: ours over beta (from part (b)) vs Lee over m, in the (calibration, regret) plane."""
    ours, betas = [], []
    for row in out["ab"].values():
        k = row["T"].index(T)
        # the worst case over the two adversaries, as for Lee below
        ours.append((float(np.nanmax(row["calibration"][k][:2])), float(np.nanmax(row["regret"][k][:2]))))
        betas.append(row["beta"])
    lee = []
    for m in tqdm(lee_bins, desc="(c) Lee MW"):
        f = LeeMultiObjectiveMW.for_horizon(T, n_bins=m)
        c, r = measure(f, adversaries(m), T, seeds)
        lee.append((float(c.max()), float(r.max())))
    out["c_equal_cal"] = {"T": T, "ours": ours, "betas": betas, "lee": lee, "lee_bins": lee_bins}
    return ours, lee


def part_d(ms, B, T, ke_max, repeats, out):
    nat = DistortedModel(slope=2.0)
    res = {"m": ms, "B": B, "T": T}
    for name, mk, cap in (
        ("approachability", lambda m: ApproachabilityRecalibrator(n_bins=m, step_size=0.05), None),
        ("Lee MW", lambda m: LeeMultiObjectiveMW(n_bins=m, learning_rate=0.05), None),
        ("Kuleshov-Ermon", lambda m: KuleshovErmon.for_horizon(T, m, n_squarings=30), ke_max),
    ):
        per = []
        for m in tqdm(ms, desc=f"(d) {name}"):
            if cap is not None and m > cap:
                per.append(None)
                continue
            f = mk(m)

            def run():
                jax.block_until_ready(jcalib.core.sweep(f, nat, T, key=jax.random.key(0), n_seeds=B, record="summary", n_bins=grid_of(f), progress=False))

            run()
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                run()
                ts.append(time.perf_counter() - t0)
            per.append(statistics.median(ts) / (B * T) * 1e6)  # microseconds per round
        res[name] = per
    out["d"] = res
    return res


def part_e(out, n_passes):
    s = logistic_stream("digits", n_passes=n_passes, key=jax.random.key(0))
    T = len(s.y)
    f = ApproachabilityRecalibrator.for_horizon(T)
    K = 10
    summ = jcalib.core.play(f, Replay(s.y, x=s.q), T, key=jax.random.key(0), record=RecalibrationCounts(f.n_bins, n_model_buckets=K))
    m = f.n_bins
    k = np.minimum(np.arange(m + 1) * K // m, K - 1)  # grid points -> midpoint buckets, in integers
    rc = np.zeros(K)
    ro = np.zeros(K)
    rp = np.zeros(K)
    np.add.at(rc, k, np.asarray(summ.exp_counts))
    np.add.at(ro, k, np.asarray(summ.exp_ones))
    np.add.at(rp, k, np.asarray(summ.exp_counts) * np.arange(m + 1) / m)
    mc, mo, mq = (np.asarray(a, float) for a in (summ.model_counts, summ.model_ones, summ.model_sum_q))
    brier_model = float(np.mean((s.q - s.y) ** 2))
    res = {
        "T": T,
        "m": m,
        "model_cal": float(summ.model_calibration()),
        "recal_cal": float(summ.calibration(n_buckets=K)),
        "recal_cal_grid": float(summ.calibration()),
        # binned ECE with the bucket's mean forecast (not its midpoint): sum_b |ones_b - sum_b p| / T
        "model_ece_mean": float(np.abs(mo - mq).sum() / T),
        "recal_ece_mean": float(np.abs(ro - rp).sum() / T),
        "regret": float(summ.regret()),
        "brier_model": brier_model,
        "brier_recal": brier_model + float(summ.regret()),
        "model": {"count": mc.tolist(), "ones": mo.tolist(), "sum_q": mq.tolist()},
        "recal": {"count": rc.tolist(), "ones": ro.tolist(), "sum_p": rp.tolist()},
    }
    out["e"] = res
    return res


# (f): Gaussian naive Bayes online, the textbook overconfident model. var_smoothing: on digits
# scikit-learn's default (1e-9) lets pixels that have been constant within a class so far decide
# every forecast (accuracy 0.55, a broken model); 1e-2 gives accuracy 0.82. Breast cancer keeps
# the default.
OVERCONFIDENT = {"digits": 1e-2, "breast_cancer": 1e-9}
N_ECE_BINS = 10
N_DIAGRAM_BINS = 20


@jax.jit
def _scores(p, y):
    """Binned ECE (10 equal-width bins), smooth ECE and Brier score of each row of ``(S, n)`` forecasts."""
    return jax.vmap(lambda a, b: jax.numpy.stack([binned_ece(a, b, n_bins=N_ECE_BINS), smooth_ece(a, b), brier(a, b)]))(p, y)


def _binned_summary(p, y, K=N_DIAGRAM_BINS):
    """Per equal-width bin, pooled over shuffles: (count, ones, sum of forecasts), for the diagrams."""
    p, y = np.ravel(p).astype(float), np.ravel(y)
    b = np.minimum((p * K).astype(int), K - 1)
    return {"count": np.bincount(b, minlength=K).tolist(), "ones": np.bincount(b, y, minlength=K).tolist(),
            "sum": np.bincount(b, p, minlength=K).tolist()}


def _murphy(d):
    """Murphy's decomposition Brier ~ REL - RES + UNC of a pooled per-bin summary (binned: within-bin spread ignored)."""
    n, ones, tot = (np.asarray(d[k], float) for k in ("count", "ones", "sum"))
    keep = n > 0
    N, base = n.sum(), ones.sum() / n.sum()
    freq, mean = ones[keep] / n[keep], tot[keep] / n[keep]
    return {"reliability": float(np.sum(n[keep] * (mean - freq) ** 2) / N),
            "resolution": float(np.sum(n[keep] * (freq - base) ** 2) / N), "uncertainty": float(base * (1 - base))}


def _hindsight_binned_brier(q, y, K):
    b = np.minimum((q * K).astype(int), K - 1)
    n = np.bincount(b, minlength=K)
    freq = np.bincount(b, y, minlength=K) / np.maximum(n, 1)
    return float(np.mean((freq[b] - y) ** 2))


def _band(v):
    v = np.asarray(v, float)
    return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if v.size > 1 else 0.0,
            "min": float(v.min()), "max": float(v.max()), "per_shuffle": v.tolist()}


# at the largest T, the recalibrator's two knobs that decide how far calibration is pushed: without
# the follow-the-oracle rule, and with the trade-off at beta = 1/2 (eps = T^-1/2, Lambda = T^1/4)
VARIANTS = {"no follow-the-oracle": {"follow_oracle": False}, "beta = 1/2": {"beta": 0.5}}


def _recalibrate(f, q, y):
    """One vmapped sweep over the stream orders (the nature axis): the realised forecasts and the summaries."""
    T = q.shape[1]
    natures = [Replay(y[k], x=q[k]) for k in range(q.shape[0])]
    r = jcalib.core.sweep(f, natures, T, key=jax.random.key(0), record={"history": History(), "counts": RecalibrationCounts(f.n_bins)},
                     progress=False)
    return np.asarray(r["history"].forecast)[:, 0], jax.tree_util.tree_map(lambda a: a[:, 0], r["counts"])


def _scored(f, q, y):
    """Binned and smooth ECE, Brier score and regret of the recalibrated forecasts, bands over the stream orders."""
    p, counts = _recalibrate(f, q, y)
    recal = np.asarray(_scores(p, y))
    row = {"T": q.shape[1], "m": f.n_bins, "eps": 1 / f.n_bins}
    for j, metric in enumerate(("ece", "smooth_ece", "brier")):
        row[f"recal_{metric}"] = _band(recal[:, j])
    # average Brier regret against the model: in expectation over the published mixtures, and realised
    row["regret"] = _band(jax.vmap(lambda z: z.regret())(counts))
    row["regret_realised"] = _band(jax.vmap(lambda z: z.regret(expected=False))(counts))
    return row, p


def part_f(out, passes, n_shuffles, fractions, streams=OVERCONFIDENT, variants=VARIANTS):
    """Recalibrate an overconfident model's stream, one vmapped sweep over the shuffles per horizon."""
    res = {}
    for name, vs in streams.items():
        orders = [naive_bayes_stream(name, n_passes=passes[name], var_smoothing=vs, key=jax.random.key(k))
                  for k in range(n_shuffles)]
        q, y = np.stack([s.q for s in orders]), np.stack([s.y for s in orders])
        T_full = q.shape[1]
        rows = []
        for frac in fractions:
            T = int(round(T_full * frac))
            f = ApproachabilityRecalibrator.for_horizon(T)
            row, p = _scored(f, q[:, :T], y[:, :T])
            model = np.asarray(_scores(q[:, :T], y[:, :T]))
            for j, metric in enumerate(("ece", "smooth_ece", "brier")):
                row[f"model_{metric}"] = _band(model[:, j])
            row["model_accuracy"] = _band(((q[:, :T] > 0.5) == y[:, :T]).mean(axis=1))
            # what a recalibration map could gain: the Brier score of the model's forecasts replaced,
            # in hindsight, by the frequency of ones among the model's forecasts in each of m
            # equal-width bins (an in-sample optimum over such maps, not an online forecast)
            row["hindsight_binned_brier"] = _band([_hindsight_binned_brier(q[k, :T], y[k, :T], f.n_bins) for k in range(n_shuffles)])
            rows.append(row)
            if T == T_full:
                diagram = {"model": _binned_summary(q, y), "recal": _binned_summary(p, y)}
                # where the calibration gain goes: reliability against resolution, 20 bins, pooled over the orders
                row["murphy"] = {who: _murphy(diagram[who]) for who in ("model", "recal")}
        Ts = [h["T"] for h in rows]
        slopes = {f"{who}_{metric}": slope(Ts, [h[f"{who}_{metric}"]["mean"] for h in rows])
                  for who in ("model", "recal") for metric in ("ece", "smooth_ece")}
        ablation = {label: _scored(ApproachabilityRecalibrator.for_horizon(T_full, **kw), q, y)[0] for label, kw in variants.items()}
        res[name] = {"var_smoothing": vs, "slopes": slopes, "variants": ablation, "passes": passes[name], "rows_per_pass": T_full // passes[name],
                     "shuffles": n_shuffles, "horizons": rows, "diagram": diagram}
    out["f"] = res
    return res


def _summary_diagram(ax, d, label, color):
    """A binned reliability diagram from pooled per-bin sums: each bin's ones and zeros as weighted points at its mean forecast."""
    from jcalib import plots

    n, ones, tot = (np.asarray(d[k], float) for k in ("count", "ones", "sum"))
    keep = n > 0
    mean = tot[keep] / n[keep]
    probs = np.r_[mean, mean]
    labels = np.r_[np.ones(keep.sum(), np.int32), np.zeros(keep.sum(), np.int32)]
    weights = np.r_[ones[keep], n[keep] - ones[keep]]
    return plots.reliability_diagram(probs, labels, n_bins=len(n), ax=ax, label=label, sample_weight=weights, color=color)


def figures(out, suffix=""):
    """Draw the figures of the parts whose results ``out`` holds ((a)–(e) together, (f) alone)."""
    import matplotlib

    matplotlib.use("Agg")
    paths = _figures_abcde(out, suffix) if all(k in out for k in ("ab", "c", "c_equal_cal", "d", "e")) else []
    if "f" in out:
        # the docs show the full run's figure; a --quick run keeps its own under results/
        paths.append(_figure_f(out, IMG if not suffix else RESULTS / "figures", suffix))
    return paths


def _figures_abcde(out, suffix):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jcalib import plots

    # the docs show the full run's figures; a --quick run keeps its own under results/
    img = IMG if not suffix else RESULTS / "figures"
    paths = []
    # (a)
    ab = out["ab"]
    third = ab[f"{1 / 3:.4f}"]
    Ts = np.array(third["T"])
    cal, reg = np.array(third["calibration"]), np.array(third["regret"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for k, name in enumerate(third["natures"]):
        axes[0].loglog(Ts, cal[:, k], "o-", label=name)
        if np.all(reg[:, k] > 0):
            axes[1].loglog(Ts, reg[:, k], "o-", label=name)
    for ax, v in ((axes[0], np.nanmax(cal, 1)), (axes[1], np.nanmax(reg, 1))):
        ax.loglog(Ts, v[0] * (Ts / Ts[0]) ** (-1 / 3), "k--", label="T^-1/3")
        ax.set_xlabel("T")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("(eps, l1)-calibration (expected)")
    axes[1].set_ylabel("average Brier regret (expected, > 0 shown)")
    axes[0].set_title(f"calibration: fitted slope {third['cal_slope']:.3f} (theory -1/3)")
    axes[1].set_title(f"regret: fitted slope {third['reg_slope']:.3f} (theory -1/3)")
    paths.append(Path(plots.save(fig.axes[0], img / f"approachability_rates{suffix}.png")))
    # (b)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot([1 / 3, 1 / 4], [1 / 3, 1 / 2], "k-", label="theory: (1/3,1/3)-(1/4,1/2)")
    for key, row in ab.items():
        b = row["beta"]
        ax.plot(-row["cal_slope"], -row["reg_slope"], "o", label=f"beta={b:.3f} measured")
        ax.plot((1 - b) / 2, b, "x", color="grey")
    ax.set_xlabel("calibration exponent")
    ax.set_ylabel("regret exponent")
    ax.legend(fontsize=7)
    paths.append(Path(plots.save(fig.axes[0], img / f"approachability_tradeoff{suffix}.png")))
    # (c)
    c = out["c"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, run in c["runs"].items():
        axes[0].loglog(run["T"], np.maximum(run["regret"], 1e-5), "o-", label=name)
    axes[0].axhline(c["target_regret"], color="k", ls=":", label="target")
    axes[0].set_xlabel("T")
    axes[0].set_ylabel("worst average regret over natures")
    axes[0].legend(fontsize=7)
    eq = out["c_equal_cal"]
    o, l = np.array(eq["ours"]), np.array(eq["lee"])
    axes[1].plot(o[:, 0], o[:, 1], "o-", label="approachability (beta sweep)")
    axes[1].plot(l[:, 0], l[:, 1], "s-", label="Lee MW (m sweep)")
    axes[1].set_xlabel("calibration")
    axes[1].set_ylabel("regret")
    axes[1].set_title(f"T = {eq['T']}")
    axes[1].legend(fontsize=7)
    paths.append(Path(plots.save(fig.axes[0], img / f"approachability_baselines{suffix}.png")))
    # (d)
    d = out["d"]
    fig, ax = plt.subplots(figsize=(5, 4))
    for name in ("approachability", "Lee MW", "Kuleshov-Ermon"):
        ms = [m for m, v in zip(d["m"], d[name]) if v is not None]
        vs = [v for v in d[name] if v is not None]
        ax.loglog(ms, vs, "o-", label=name)
    ax.set_xlabel("grid size m (cells N for Kuleshov-Ermon)")
    ax.set_ylabel("microseconds per round (batched)")
    ax.legend(fontsize=7)
    paths.append(Path(plots.save(fig.axes[0], img / f"approachability_cost{suffix}.png")))
    # (e)
    e = out["e"]
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot([0, 1], [0, 1], "k:")
    for label, part, key in (("model", e["model"], "sum_q"), ("recalibrated", e["recal"], "sum_p")):
        n = np.array(part["count"])
        ok = n > 0.5
        ax.plot(np.array(part[key])[ok] / n[ok], np.array(part["ones"])[ok] / n[ok], "o-", label=label)
    ax.set_xlabel("mean forecast in bucket")
    ax.set_ylabel("frequency of y = 1")
    ax.set_title(f"digits stream, T = {e['T']}: binned ECE {e['model_ece_mean']:.3f} -> {e['recal_ece_mean']:.3f}", fontsize=9)
    ax.legend(fontsize=8)
    paths.append(Path(plots.save(fig.axes[0], img / f"approachability_reliability{suffix}.png")))
    return paths


def _figure_f(out, img, suffix):
    import matplotlib.pyplot as plt

    from jcalib import plots

    f_runs = out["f"]
    fig, axes = plt.subplots(len(f_runs), 3, figsize=(13, 4.2 * len(f_runs)), squeeze=False)
    for (name, run), row in zip(f_runs.items(), axes):
        full = run["horizons"][-1]
        _summary_diagram(row[0], run["diagram"]["model"], "naive Bayes", "C3")
        row[0].set_title(f"{name}: model, binned ECE {full['model_ece']['mean']:.3f}", fontsize=9)
        _summary_diagram(row[1], run["diagram"]["recal"], "recalibrated", "C0")
        row[1].set_title(f"recalibrated online (m = {full['m']}), binned ECE {full['recal_ece']['mean']:.3f}", fontsize=9)
        Ts = np.array([h["T"] for h in run["horizons"]])
        for who, color in (("model", "C3"), ("recal", "C0")):
            for metric, ls in (("ece", "o-"), ("smooth_ece", "s--")):
                band = [h[f"{who}_{metric}"] for h in run["horizons"]]
                row[2].plot(Ts, [b["mean"] for b in band], ls, color=color, label=f"{who} {metric.replace('_', ' ')}")
                row[2].fill_between(Ts, [b["min"] for b in band], [b["max"] for b in band], color=color, alpha=0.15, lw=0)
        row[2].plot(Ts, Ts ** (-1 / 3), "k:", label="eps = T^-1/3")
        row[2].set_xscale("log")
        row[2].set_yscale("log")
        row[2].set_xticks(Ts, [str(t) for t in Ts], fontsize=7)
        lo = min(h[f"{w}_{k}"]["min"] for h in run["horizons"] for w in ("model", "recal") for k in ("ece", "smooth_ece"))
        hi = max(h[f"{w}_{k}"]["max"] for h in run["horizons"] for w in ("model", "recal") for k in ("ece", "smooth_ece"))
        ticks = [t for t in (0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2) if 0.8 * lo <= t <= 1.2 * hi]
        row[2].set_yticks(ticks, [str(t) for t in ticks], fontsize=7)
        row[2].set_ylim(0.8 * lo, 1.2 * hi)
        row[2].minorticks_off()
        row[2].set_ylabel("ECE")
        row[2].set_xlabel(f"T ({run['passes']} passes of {run['rows_per_pass']} rows at the largest)")
        row[2].set_title(f"mean and range over {run['shuffles']} stream orders", fontsize=9)
        row[2].legend(fontsize=7)
    return Path(plots.save(axes[0, 0], img / f"approachability_overconfident{suffix}.png"))


def summary(out):
    """Print each part's headline numbers (the parts present in ``out``)."""
    for key, row in out.get("ab", {}).items():
        print(f"beta={row['beta']:.3f}: calibration slope {row['cal_slope']:.3f} (theory {row['theory']['cal_slope']:.3f}), "
              f"regret slope {row['reg_slope']:.3f} (theory {row['theory']['reg_slope']:.3f})")
    for name_, run in out.get("c", {"runs": {}})["runs"].items():
        print(f"{name_}: worst regret {np.round(run['regret'], 4).tolist()} at T={run['T']}; "
              f"first T with regret <= {out['c']['target_regret']}: {run['T_to_target']}")
    if "c_equal_cal" in out:
        eq = out["c_equal_cal"]
        print(f"equal calibration at T={eq['T']}: ours (cal, reg) {np.round(eq['ours'], 4).tolist()}; Lee {np.round(eq['lee'], 4).tolist()}")
    if "d" in out:
        print("per-round us:", {k: v for k, v in out["d"].items() if k not in ("B", "T")})
    if "e" in out:
        e = out["e"]
        print(f"digits stream T={e['T']}, m={e['m']}: (eps=1/10, l1)-calibration, midpoints: model {e['model_cal']:.4f}, "
              f"recalibrated {e['recal_cal']:.4f} (its own grid: {e['recal_cal_grid']:.4f}); binned ECE with bucket means: "
              f"model {e['model_ece_mean']:.4f}, recalibrated {e['recal_ece_mean']:.4f}; Brier {e['brier_model']:.4f} -> {e['brier_recal']:.4f}")
    for name_, run in out.get("f", {}).items():
        for h in run["horizons"]:
            print(f"(f) {name_} T={h['T']} m={h['m']}: " + ", ".join(
                f"{k} {h['model_' + k]['mean']:.4f} -> {h['recal_' + k]['mean']:.4f} "
                f"[{h['recal_' + k]['min']:.4f}, {h['recal_' + k]['max']:.4f}]" for k in ("ece", "smooth_ece", "brier"))
                  + f"; regret {h['regret']['mean']:.4f} [{h['regret']['min']:.4f}, {h['regret']['max']:.4f}]"
                  + f"; Brier of m-bin recalibration in hindsight {h['hindsight_binned_brier']['mean']:.4f}")
        mu = run["horizons"][-1]["murphy"]
        print(f"(f) {name_} Murphy decomposition (20 bins), model -> recalibrated: " + ", ".join(
            f"{k} {mu['model'][k]:.4f} -> {mu['recal'][k]:.4f}" for k in ("reliability", "resolution", "uncertainty")))
        print(f"(f) {name_} log-log slopes vs T:", {k: round(v, 3) for k, v in run["slopes"].items()})
        for label, h in run.get("variants", {}).items():
            print(f"(f) {name_} T={h['T']} {label} (m={h['m']}): recalibrated ece {h['recal_ece']['mean']:.4f}, "
                  f"smooth ece {h['recal_smooth_ece']['mean']:.4f}, Brier {h['recal_brier']['mean']:.4f}, regret {h['regret']['mean']:.4f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="T up to 10^4, 2 seeds, fewer betas (a smoke run)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--max-log-T", type=int, default=6, help="largest T = 10^k for (a, b)")
    ap.add_argument("--target-regret", type=float, default=0.05)
    ap.add_argument("--shuffles", type=int, default=None, help="stream orders for (f) (default 8; 2 with --quick)")
    ap.add_argument("--parts", default="abcdef", help="parts to run; the others are read from an earlier run's results")
    args = ap.parse_args(argv)
    t0 = time.time()
    name = "approachability_recalibration" + ("_quick" if args.quick else "")
    saved = RESULTS / f"{name}.json"
    out = json.loads(saved.read_text()) if args.parts != "abcdef" and saved.exists() else {}
    out["quick"] = args.quick
    if args.quick:
        Ts = [10**3, 4 * 10**3]
        betas = [1 / 3, 0.5]
        Tc = [300, 1000, 3000]
        ms, B, Td, ke_max = [8, 64], 32, 500, 8
        eq_T, lee_bins = 4 * 10**3, [16]
        passes = 1
        nb_passes, shuffles, fractions = {"digits": 3, "breast_cancer": 10}, 2, (0.25, 1.0)
    else:
        Ts = [10**k for k in range(3, args.max_log_T + 1)]
        betas = [1 / 3, 0.4, 0.45, 0.5]
        Tc = [100, 300, 1000, 3000, 10**4, 3 * 10**4]
        ms, B, Td, ke_max = [8, 32, 128, 512, 2048], 64, 2000, 32
        eq_T, lee_bins = 10**5, [20, 47, 100]
        passes = 3
        # about 3.5 * 10^4 rounds each: eps = T^-1/3 = 0.03, well under the model's binned ECE
        nb_passes, shuffles, fractions = {"digits": 20, "breast_cancer": 60}, 8, (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
    if "a" in args.parts or "b" in args.parts:
        part_ab(Ts, betas, args.seeds, out)
    if "c" in args.parts:
        part_c(Tc, args.seeds, args.target_regret, out)
        part_c_equal_calibration(eq_T, args.seeds, lee_bins, out)
    if "d" in args.parts:
        part_d(ms, B, Td, ke_max, 3, out)
    if "e" in args.parts:
        part_e(out, passes)
    if "f" in args.parts:
        part_f(out, nb_passes, args.shuffles or shuffles, fractions, variants=VARIANTS if not args.quick else {})
    out[f"wall_s_{args.parts}"] = time.time() - t0
    RESULTS.mkdir(exist_ok=True)
    saved.write_text(json.dumps(out, indent=1))
    paths = figures(out, "_quick" if args.quick else "")
    # summary
    print(f"wall time {time.time() - t0:.0f} s (parts {args.parts})")
    summary(out)
    print("figures:", *[str(p.relative_to(ROOT)) for p in paths])
    return out


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

"""Paper 001 (online recalibration by approachability): rates, trade-off, baselines, cost, real data.

Paper 001 has no experiments of its own; these test its theorems and its claims over its peers:

(a) calibration (ε, ℓ1, grid buckets, in expectation over the published mixtures) and average
    Brier regret against the model vs T, with fitted log–log slopes beside the theory (−1/3);
(b) the measured trade-off frontier for a sweep of β (ε = T^−β, Λ = T^((3β−1)/2)) against the
    theoretical segment (1/3, 1/3)–(1/4, 1/2) in (calibration exponent, regret exponent);
(c) rounds needed to reach a target regret: the approachability recalibrator vs Kuleshov–Ermon
    (paper L46: "a few hundred samples versus more than ten thousand"), and regret at equal
    calibration vs Lee et al.'s multi-objective MW;
(d) per-round cost vs the grid size m for the three algorithms;
(e) reliability diagrams of a real model (online logistic regression on scikit-learn's digits,
    stream order) and of its recalibration.

Every run is a ``jcalib.sweep`` over natures × seeds recording the O(m)
:class:`~jcalib.recorders.RecalibrationCounts` summary (no histories). Writes
``results/approachability_recalibration.json`` and figures to ``docs/tutorials/img/`` (with
``--quick``: ``results/approachability_recalibration_quick.json`` and ``results/figures/``).

    python experiments/approachability_recalibration.py           # T up to 10^6
    python experiments/approachability_recalibration.py --quick   # T up to 10^4, 2 seeds
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
from jcalib.datasets import logistic_stream
from jcalib.forecasters import ApproachabilityRecalibrator, KuleshovErmon, LeeMultiObjectiveMW
from jcalib.natures import DistortedModel, RecalibrationAdversary, Replay
from jcalib.recorders import RecalibrationCounts

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "tutorials" / "img"
RESULTS = ROOT / "results"


def grid_of(f) -> int:
    return f.inner.n_bins if hasattr(f, "inner") else f.n_bins


def measure(f, natures, T, seeds, key=0):
    """Mean over seeds of (calibration, regret) per nature, from the O(m) summaries."""
    m = grid_of(f)
    s = jcalib.sweep(f, natures, T, jax.random.key(key), n_seeds=seeds, record=RecalibrationCounts(m),
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
                jax.block_until_ready(jcalib.sweep(f, nat, T, jax.random.key(0), n_seeds=B, record="summary", grid=grid_of(f), progress=False))

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
    s = logistic_stream("digits", n_passes=n_passes)
    T = len(s.y)
    f = ApproachabilityRecalibrator.for_horizon(T)
    K = 10
    summ = jcalib.play(f, Replay(s.y, x=s.q), T, jax.random.key(0), record=RecalibrationCounts(f.n_bins, n_model_buckets=K))
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


def figures(out, suffix=""):
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="T up to 10^4, 2 seeds, fewer betas (a smoke run)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--max-log-T", type=int, default=6, help="largest T = 10^k for (a, b)")
    ap.add_argument("--target-regret", type=float, default=0.05)
    ap.add_argument("--parts", default="abcde", help="parts to run; the others are read from an earlier run's results")
    args = ap.parse_args(argv)
    t0 = time.time()
    name = "approachability_recalibration" + ("_quick" if args.quick else "")
    saved = RESULTS / f"{name}.json"
    out = json.loads(saved.read_text()) if args.parts != "abcde" and saved.exists() else {}
    out["quick"] = args.quick
    if args.quick:
        Ts = [10**3, 4 * 10**3]
        betas = [1 / 3, 0.5]
        Tc = [300, 1000, 3000]
        ms, B, Td, ke_max = [8, 64], 32, 500, 8
        eq_T, lee_bins = 4 * 10**3, [16]
        passes = 1
    else:
        Ts = [10**k for k in range(3, args.max_log_T + 1)]
        betas = [1 / 3, 0.4, 0.45, 0.5]
        Tc = [100, 300, 1000, 3000, 10**4, 3 * 10**4]
        ms, B, Td, ke_max = [8, 32, 128, 512, 2048], 64, 2000, 32
        eq_T, lee_bins = 10**5, [20, 47, 100]
        passes = 3
    if "a" in args.parts or "b" in args.parts:
        part_ab(Ts, betas, args.seeds, out)
    if "c" in args.parts:
        part_c(Tc, args.seeds, args.target_regret, out)
        part_c_equal_calibration(eq_T, args.seeds, lee_bins, out)
    if "d" in args.parts:
        part_d(ms, B, Td, ke_max, 3, out)
    if "e" in args.parts:
        part_e(out, passes)
    out[f"wall_s_{args.parts}"] = time.time() - t0
    RESULTS.mkdir(exist_ok=True)
    saved.write_text(json.dumps(out, indent=1))
    paths = figures(out, "_quick" if args.quick else "")
    # summary
    print(f"wall time {time.time() - t0:.0f} s (parts {args.parts})")
    for key, row in out["ab"].items():
        print(f"beta={row['beta']:.3f}: calibration slope {row['cal_slope']:.3f} (theory {row['theory']['cal_slope']:.3f}), "
              f"regret slope {row['reg_slope']:.3f} (theory {row['theory']['reg_slope']:.3f})")
    for name_, run in out["c"]["runs"].items():
        print(f"{name_}: worst regret {np.round(run['regret'], 4).tolist()} at T={run['T']}; "
              f"first T with regret <= {out['c']['target_regret']}: {run['T_to_target']}")
    eq = out["c_equal_cal"]
    print(f"equal calibration at T={eq['T']}: ours (cal, reg) {np.round(eq['ours'], 4).tolist()}; Lee {np.round(eq['lee'], 4).tolist()}")
    print("per-round us:", {k: v for k, v in out["d"].items() if k not in ("B", "T")})
    e = out["e"]
    print(f"digits stream T={e['T']}, m={e['m']}: (eps=1/10, l1)-calibration, midpoints: model {e['model_cal']:.4f}, "
          f"recalibrated {e['recal_cal']:.4f} (its own grid: {e['recal_cal_grid']:.4f}); binned ECE with bucket means: "
          f"model {e['model_ece_mean']:.4f}, recalibrated {e['recal_ece_mean']:.4f}; Brier {e['brier_model']:.4f} -> {e['brier_recal']:.4f}")
    print("figures:", *[str(p.relative_to(ROOT)) for p in paths])


if __name__ == "__main__":
    main()

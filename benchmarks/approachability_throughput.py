"""Approachability recalibrator (paper 001) throughput: ``jcalib.sweep`` against a NumPy
implementation vectorised over the batch, and against AOSA's own throughput, in one run.

Rounds per second = B·T / wall time (median of repeats after a warm-up call; compile time is the
first call minus that median). The model stream is recorded once on the host (q_t =
sigmoid(2 logit p*_t), y_t ~ Bernoulli(p*_t), p*_t ~ U[0.05, 0.95]) and replayed
(``Replay(y, x=q)``, shared by the batch) by jcalib and by the NumPy baseline alike, so both
time the recalibrator, not a random-number generator; every run still draws its forecast from
the published mixture each round. AOSA (paper 000) is timed on Bernoulli(0.3) draws, its own
benchmark's nature (on a shared replay a deterministic forecaster's runs do not depend on the
seed, so ``vmap`` computes one run for the whole batch: not a throughput); the randomised
Foster forecaster is timed on the same replayed outcomes as a randomised peer. The recalibrator is also timed against the
live ``DistortedModel`` nature, whose per-round sampling (a uniform, a logit and a sigmoid per
round) then dominates. All jcalib runs record the same O(m) grid summary.

    python benchmarks/approachability_throughput.py            # B = 1024, T = 10^4
    python benchmarks/approachability_throughput.py --quick    # B = 256, T = 2000
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import numpy as np

import jcalib
from jcalib.forecasters import AlmostOneStepAhead, ApproachabilityRecalibrator, FosterRandomized, LeeMultiObjectiveMW


def model_stream(T: int, rng: np.random.Generator):
    """The replayed stream: (q, y) of a DistortedModel(slope=2), recorded on the host."""
    p_star = 0.05 + 0.9 * rng.random(T)
    q = 1 / (1 + np.exp(-2 * (np.log(p_star) - np.log1p(-p_star))))
    return q, (rng.random(T) < p_star).astype(np.int32)


def recalibrator_numpy(B: int, q_seq, y_seq, m: int, eta: float, Lam: float, eps: float, rng: np.random.Generator):
    """Algorithm 1 (Brier, l1, follow-the-oracle) vectorised over B runs of the replayed stream;
    returns the final lambdas."""
    L = 2.0
    grid = np.arange(m + 1) / m
    theta = np.zeros((B, m + 1))
    cal = np.zeros((B, m + 1))
    cal_norm = np.zeros(B)
    lam = np.zeros(B)
    rows = np.arange(B)
    n_iter = max(m - 1, 0).bit_length()
    for t in range(len(q_seq)):
        q = np.full(B, q_seq[t])
        y = np.full(B, float(y_seq[t]))
        s0q, s1q = q**2, (q - 1) ** 2

        def fg(j):
            p, th = grid[j], theta[rows, j]
            return -th * p + lam * (p**2 - s0q) / L, th * (1 - p) + lam * ((p - 1) ** 2 - s1q) / L

        f0, g0 = fg(np.zeros(B, np.int64))
        fm, gm = fg(np.full(B, m, np.int64))
        lo, hi = np.zeros(B, np.int64), np.full(B, m, np.int64)
        hlo, hhi = g0 - f0, gm - fm
        found = np.zeros(B, bool)
        jf = np.zeros(B, np.int64)
        for _ in range(n_iter):
            active = (hi - lo > 1) & ~found
            mid = (lo + hi) // 2
            fmid, gmid = fg(mid)
            hmid = gmid - fmid
            third = active & (fmid <= 0) & (gmid <= 0)
            right = active & ~third & (hmid > 0)
            left = active & ~third & ~(hmid > 0)
            lo, hlo = np.where(right, mid, lo), np.where(right, hmid, hlo)
            hi, hhi = np.where(left, mid, hi), np.where(left, hmid, hhi)
            found |= third
            jf = np.where(third, mid, jf)
        den = hlo - hhi
        w_mix = np.clip(np.where(den > 0, -hhi / np.where(den > 0, den, 1), 1.0), 0, 1)
        third0, thirdm = (f0 <= 0) & (g0 <= 0), (fm <= 0) & (gm <= 0)
        h0, hm = g0 - f0, gm - fm
        ends = third0 | thirdm | (h0 <= 0) | (hm >= 0)
        take0 = third0 | (~thirdm & (h0 <= 0))
        j_end = np.where(take0, 0, m)
        j_pt = np.where(ends, j_end, jf)
        point = ends | found
        i = np.where(point, np.minimum(j_pt, m - 1), lo)
        w = np.where(point, (j_pt <= m - 1).astype(float), w_mix)
        follow = (t > 0) & (cal_norm / max(t, 1) < eps)
        jq = np.clip(np.rint(q * m), 0, m).astype(np.int64)
        i = np.where(follow, np.minimum(jq, m - 1), i)
        w = np.where(follow, (jq <= m - 1).astype(float), w)
        _draw = np.where(rng.random(B) < w, grid[i], grid[i + 1])  # the realised forecast
        idx = np.stack([i, i + 1], 1)
        ww = np.stack([w, 1 - w], 1)
        p = grid[idx]
        u = ww * (y[:, None] - p)
        ureg = ((ww * (p - y[:, None]) ** 2).sum(1) - (q - y) ** 2) / L
        r2 = rows[:, None]
        theta[r2, idx] = np.clip(theta[r2, idx] + eta * u, -1, 1)
        old = cal[r2, idx]
        cal[r2, idx] = old + u
        cal_norm += (np.abs(old + u) - np.abs(old)).sum(1)
        lam = np.clip(lam + eta * ureg, 0, Lam)
    return lam


def timed(fn, repeats):
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, default=1024)
    ap.add_argument("--T", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--numpy-T", type=int, default=None, help="rounds for the NumPy baseline (default T; its cost is per round)")
    ap.add_argument("--quick", action="store_true", help="B = 256, T = 2000, 2 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.B, args.T, args.repeats = 256, 2000, 2
    B, T = args.B, args.T
    f = ApproachabilityRecalibrator.for_horizon(T)
    lee = LeeMultiObjectiveMW.for_horizon(T)
    aosa = AlmostOneStepAhead.for_horizon(T)
    q_seq, y_seq = model_stream(T, np.random.default_rng(0))
    replay = jcalib.natures.Replay(y_seq, x=q_seq)
    model = jcalib.natures.DistortedModel(slope=2.0)
    print(f"Approachability recalibrator throughput, B = {B}, T = {T}, m = {f.n_bins}; "
          f"{platform.processor() or platform.machine()}, {jax.device_count()} x {jax.devices()[0].platform}, jax {jax.__version__}")

    def sweep(fc, nature):
        def run():
            jax.block_until_ready(jcalib.sweep(fc, nature, T, jax.random.key(0), n_seeds=B, record="summary", progress=False))
        return run

    rows = []
    for name, fc, nat in (
        ("approachability", f, replay),
        ("Lee MW", lee, replay),
        ("AOSA, Bernoulli", aosa, jcalib.natures.Bernoulli(0.3)),
        ("Foster (randomised), replay", FosterRandomized.for_horizon(T), jcalib.natures.Replay(y_seq)),
        ("approachability, live", f, model),
    ):
        first, t = timed(sweep(fc, nat), args.repeats)
        rows.append((name, B * T / t, first - t))
    nT = args.numpy_T or T
    rng = np.random.default_rng(0)
    _, t_np = timed(lambda: recalibrator_numpy(B, q_seq[:nT], y_seq[:nT], f.n_bins, float(f.step_size), float(f.Lambda), float(f.eps), rng), 1)
    r_np = B * nT / t_np
    header = f"{'implementation':<30} {'rounds/s':>12} {'compile s':>10}"
    print(header)
    print("-" * len(header))
    for name, r, c in rows:
        print(f"{name:<30} {r:>12.3e} {c:>10.2f}")
    print(f"{'NumPy (vectorised), replay':<30} {r_np:>12.3e} {'-':>10}")
    r_ours, r_aosa, r_foster = rows[0][1], rows[2][1], rows[3][1]
    print(f"approachability / NumPy = {r_ours / r_np:.1f}x (goal >= 10x); "
          f"approachability / AOSA = {r_ours / r_aosa:.2f} (goal >= 0.5, i.e. within 2x); "
          f"approachability / Foster (randomised, same replay) = {r_ours / r_foster:.2f}")


if __name__ == "__main__":
    main()

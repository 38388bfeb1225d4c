"""Approachability recalibrator (Okoroafor et al. 2024) throughput: ``jcalib.core.sweep`` against
the baselines a researcher would otherwise write, measured in one run on the same B runs of the same
stream.

- ``numba``: the per-sequence loop of Algorithm 1 compiled with numba (``pip install
  jcalib[bench]``), ``prange`` over the B runs on ``--threads`` threads (default 2), a xorshift64
  RNG per run for the draw (skipped with a note when numba is missing);
- ``NumPy``: Algorithm 1 vectorised over the batch (the same oracle, follow rule and OGD step).

Before timing, every run checks that the two baselines compute the same algorithm (``--check``
runs only that): on 8 small runs drawing from the same uniforms, the final θ, λ, calibration
sums, summed draws and (forecast, outcome) histograms must agree; and jcalib's pooled
histogram over 128 runs of one stream must match the compiled loop's within sampling noise.

Rounds per second = B·T / wall time, median of repeats after a warm-up call, the
implementations taking turns within each repeat (a burst of load hits all alike); compile time
(first call minus the median; numba: its first call) separately. The model stream is recorded
once on the host (q_t = sigmoid(2 logit p*_t), y_t ~ Bernoulli(p*_t), p*_t ~ U[0.05, 0.95]) and
replayed (``Replay(y, x=q)``, shared by the batch) by every implementation, so all time the
recalibrator, not a random-number generator; every run still draws its forecast from the
published mixture each round. jcalib records its O(m) grid summary (``record="summary"``), and
the numba and NumPy baselines keep the same (forecast, outcome) histogram.

``--peers`` also times, one after another, Lee MW on the replay, AOSA (Arunachaleswaran et al.
2024) on Bernoulli(0.3) draws (on a shared replay a deterministic forecaster's runs do not depend
on the seed, so ``vmap`` computes one run for the whole batch: not a throughput), the randomised
Foster forecaster on the replayed outcomes, and the recalibrator against the live
``DistortedModel`` nature, whose per-round sampling then dominates.

    python benchmarks/approachability_throughput.py            # B = 1024, T = 10^4
    python benchmarks/approachability_throughput.py --quick    # B = 256, T = 2000
    python benchmarks/approachability_throughput.py --check    # only the numba-vs-NumPy check
    python benchmarks/approachability_throughput.py --peers    # also Lee MW, AOSA, Foster, live nature
    python benchmarks/approachability_throughput.py --devices 2  # the batch sharded over 2 CPU devices
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import jax
import numpy as np

from _timing import timed  # benchmarks/ is on sys.path when a script here runs

import jcalib
from jcalib.forecasters import AlmostOneStepAhead, ApproachabilityRecalibrator, FosterRandomized, LeeMultiObjectiveMW


def model_stream(T: int, rng: np.random.Generator):
    """The replayed stream: (q, y) of a DistortedModel(slope=2), recorded on the host."""
    p_star = 0.05 + 0.9 * rng.random(T)
    q = 1 / (1 + np.exp(-2 * (np.log(p_star) - np.log1p(-p_star))))
    return q, (rng.random(T) < p_star).astype(np.int32)


def recalibrator_numpy(B: int, q_seq, y_seq, m: int, eta: float, Lam: float, eps: float, rng: np.random.Generator,
                       uniforms=None):
    """Algorithm 1 (Brier, l1, follow-the-oracle) vectorised over B runs of the replayed stream.

    Returns ``(theta, lam, cal, draws, hist)``: the final normals ``(B, m+1)`` and ``(B,)``, the
    calibration sums ``(B, m+1)``, the sum over rounds of each run's drawn forecast, and the
    histogram of (drawn grid point, outcome) pairs ``(B, 2(m+1))`` — the O(m) summary that
    ``jcalib.core.sweep(..., record="summary")`` keeps (an O(1) update per round). The draw
    is ``p_i`` if ``u < w`` else ``p_{i+1}`` with ``u`` from ``rng``, or from ``uniforms[t, b]``
    when given (``(T, B)``: the deterministic rule of the ``--check`` comparison).
    """
    L = 2.0
    grid = np.arange(m + 1) / m
    theta = np.zeros((B, m + 1))
    cal = np.zeros((B, m + 1))
    cal_norm = np.zeros(B)
    lam = np.zeros(B)
    rows = np.arange(B)
    draws = np.zeros(B)
    hist = np.zeros((B, 2 * (m + 1)), np.int64)
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
        u01 = rng.random(B) if uniforms is None else uniforms[t]
        j_draw = np.where(u01 < w, i, i + 1)  # the realised forecast's grid index
        draws += grid[j_draw]
        hist[rows, 2 * j_draw + y.astype(np.int64)] += 1  # the (forecast, outcome) histogram jcalib records
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
    return theta, lam, cal, draws, hist


def make_numba():
    """The compiled per-sequence loop of the same algorithm, or ``(None, None)`` without numba.

    ``approach_numba(q, y, m, eta, Lam, eps, seed, uniforms)`` plays B = ``len(seeds)`` runs
    (``numba.prange`` over them) of the replayed stream ``(q, y)``: per round the O(log m)
    halfspace oracle with its early stop (a scalar bisection that ends as soon as a probed point
    is in the third quadrant), the follow-the-oracle rule, a draw from the published two-point
    mixture with a per-sequence xorshift64 RNG (or ``uniforms[t, b]`` when ``uniforms`` has T
    rows: the ``--check`` rule), and the O(1) ℓ∞-box OGD step on the two touched coordinates.
    Returns ``(theta, lam, cal, draws, hist)`` like :func:`recalibrator_numpy`.
    """
    try:
        import numba
    except ImportError:
        return None, None

    @numba.njit(parallel=True, cache=False)
    def approach_numba(q_seq, y_seq, m, eta, Lam, eps, B, seed, uniforms):
        T = q_seq.shape[0]
        L = 2.0
        use_u = uniforms.shape[0] == T
        theta_out = np.zeros((B, m + 1))
        cal_out = np.zeros((B, m + 1))
        lam_out = np.zeros(B)
        draws_out = np.zeros(B)
        hist_out = np.zeros((B, 2 * (m + 1)), np.int64)
        for b in numba.prange(B):
            theta = np.zeros(m + 1)
            cal = np.zeros(m + 1)
            cal_norm = 0.0
            lam = 0.0
            draws = 0.0
            hist = np.zeros(2 * (m + 1), np.int64)
            s = np.uint64(0x9E3779B97F4A7C15) * np.uint64(seed * B + b + 1)
            for t in range(T):
                q = q_seq[t]
                y = float(y_seq[t])
                s0q, s1q = q**2, (q - 1) ** 2
                # halfspace oracle: f, g at the ends
                f0 = -theta[0] * 0.0 + lam * (0.0 - s0q) / L
                g0 = theta[0] * 1.0 + lam * (1.0 - s1q) / L
                fm = -theta[m] * 1.0 + lam * (1.0 - s0q) / L
                gm = theta[m] * 0.0 + lam * (0.0 - s1q) / L
                h0, hm = g0 - f0, gm - fm
                third0 = (f0 <= 0) and (g0 <= 0)
                thirdm = (fm <= 0) and (gm <= 0)
                if third0 or thirdm or h0 <= 0 or hm >= 0:
                    if third0 or ((not thirdm) and h0 <= 0):
                        i, w = 0, 1.0
                    else:
                        i, w = m - 1, 0.0
                else:
                    lo, hi, hlo, hhi = 0, m, h0, hm
                    found = False
                    while hi - lo > 1:
                        mid = (lo + hi) >> 1
                        p = mid / m
                        th = theta[mid]
                        fmid = -th * p + lam * (p**2 - s0q) / L
                        gmid = th * (1 - p) + lam * ((p - 1) ** 2 - s1q) / L
                        hmid = gmid - fmid
                        if fmid <= 0 and gmid <= 0:  # early stop: a pure strategy suffices
                            found = True
                            i, w = mid, 1.0
                            break
                        if hmid > 0:
                            lo, hlo = mid, hmid
                        else:
                            hi, hhi = mid, hmid
                    if not found:
                        den = hlo - hhi
                        w = min(max(-hhi / den if den > 0 else 1.0, 0.0), 1.0)
                        i = lo
                # follow-the-oracle
                if t > 0 and cal_norm / t < eps:
                    jq = min(max(np.rint(q * m), 0), m)
                    jq = int(jq)
                    i = min(jq, m - 1)
                    w = 1.0 if jq <= m - 1 else 0.0
                p0, p1 = i / m, (i + 1) / m
                # the realised forecast
                if use_u:
                    u01 = uniforms[t, b]
                else:
                    s ^= s << np.uint64(13)
                    s ^= s >> np.uint64(7)
                    s ^= s << np.uint64(17)
                    u01 = (s >> np.uint64(11)) * 2.0**-53
                jd = i if u01 < w else i + 1
                draws += jd / m
                hist[2 * jd + y_seq[t]] += 1
                # OGD on the mixture's expected payoff; ℓ∞ box: clip the two touched coordinates
                u0, u1 = w * (y - p0), (1 - w) * (y - p1)
                ureg = (w * (p0 - y) ** 2 + (1 - w) * (p1 - y) ** 2 - (q - y) ** 2) / L
                theta[i] = min(max(theta[i] + eta * u0, -1.0), 1.0)
                theta[i + 1] = min(max(theta[i + 1] + eta * u1, -1.0), 1.0)
                o0, o1 = cal[i], cal[i + 1]
                cal[i], cal[i + 1] = o0 + u0, o1 + u1
                cal_norm += (abs(o0 + u0) - abs(o0)) + (abs(o1 + u1) - abs(o1))
                lam = min(max(lam + eta * ureg, 0.0), Lam)
            theta_out[b] = theta
            cal_out[b] = cal
            lam_out[b] = lam
            draws_out[b] = draws
            hist_out[b] = hist
        return theta_out, lam_out, cal_out, draws_out, hist_out

    return approach_numba, numba


def check_numba(approach_numba, B: int = 8, T: int = 2000, seed: int = 7) -> str:
    """Assert that the compiled loop and the NumPy baseline compute the same algorithm.

    Both play B runs of the same replayed stream, drawing their forecasts with the same uniforms
    (``(T, B)``); the final θ, λ, calibration sums, summed draws and histograms must agree. Each run sees
    its own stream here, so the B runs differ (the NumPy baseline shares one stream over its
    batch, so it is called once per run).
    """
    rng = np.random.default_rng(seed)
    f = ApproachabilityRecalibrator.for_horizon(T)
    m, eta, Lam, eps = f.n_bins, float(f.step_size), float(f.Lambda), float(f.eps)
    uni = rng.random((T, B))
    worst = 0.0
    for b in range(B):
        q_seq, y_seq = model_stream(T, rng)
        ref = recalibrator_numpy(1, q_seq, y_seq, m, eta, Lam, eps, rng, uniforms=uni[:, b:b + 1])
        got = approach_numba(q_seq, y_seq, m, eta, Lam, eps, 1, 0, uni[:, b:b + 1].copy())
        for r, g, name in zip(ref, got, ("theta", "lam", "cal", "draws", "hist")):
            # the same operations in the same order in float64: any gap is round-off (1e-9 leaves
            # room for numba's reassociation of the scalar expressions), not a different choice
            np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-9, err_msg=f"numba vs NumPy: {name}, run {b}")
            worst = max(worst, float(np.max(np.abs(np.asarray(g) - np.asarray(r)))))
    # jcalib against the compiled loop: the published mixtures do not depend on the draws (the
    # OGD step uses the mixture's expected payoff), so on one shared stream every run of both
    # draws from the same per-round mixtures; the pooled (forecast, outcome) histograms of nb
    # runs then differ by sampling noise only (sd <= sqrt(2 * count); 6 sd, floored at 10 for
    # jcalib's float32 against float64 on rare near-ties of the oracle)
    q_seq, y_seq = model_stream(T, rng)
    nb = 128  # not a batch size the timed runs use, so their compile time is not hidden by a cache hit
    got = approach_numba(q_seq, y_seq, m, eta, Lam, eps, nb, 3, np.zeros((0, 0)))[4].sum(0).reshape(m + 1, 2)
    summ = jcalib.core.sweep(f, jcalib.natures.Replay(y_seq, x=q_seq), T, key=jax.random.key(3), n_seeds=nb,
                        record="summary", progress=False)
    ref_counts = np.asarray(summ.counts).reshape(-1, m + 1).sum(0)
    ref_ones = np.asarray(summ.ones).reshape(-1, m + 1).sum(0)
    for name, r, g in (("counts", ref_counts, got.sum(1)), ("ones", ref_ones, got[:, 1])):
        tol = np.maximum(6 * np.sqrt(2 * np.maximum(r, 1)), 10)
        bad = np.abs(g - r) > tol
        assert not bad.any(), f"jcalib vs numba: pooled {name} differ beyond sampling noise at bins {np.flatnonzero(bad)}: {r} vs {g}"
    z = float(np.max(np.abs(got.sum(1) - ref_counts) / np.sqrt(2 * np.maximum(ref_counts, 1))))
    return (f"check: numba == NumPy on {B} runs x T = {T} (m = {m}; same uniforms for the draws): "
            f"theta, lambda, calibration sums, summed draws and (forecast, outcome) histograms agree, max abs diff {worst:.1e}; "
            f"jcalib.core.sweep vs numba on {nb} runs of one stream: pooled histograms within sampling noise (max |z| {z:.1f})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, default=1024)
    ap.add_argument("--T", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="numba threads (default 2)")
    ap.add_argument("--numpy-T", type=int, default=None, help="rounds for the NumPy baseline (default T; its cost is per round)")
    ap.add_argument("--peers", action="store_true", help="also time Lee MW, AOSA, Foster and the live nature (one after another)")
    ap.add_argument("--check", action="store_true", help="only the numba-vs-NumPy agreement check, then exit")
    ap.add_argument("--quick", action="store_true", help="B = 256, T = 2000, 2 repeats")
    ap.add_argument("--devices", type=int, default=1, help="JAX CPU devices to shard the batch over (default 1)")
    args = ap.parse_args(argv)
    if args.quick:
        args.B, args.T, args.repeats = 256, 2000, 2
    if args.devices > 1:  # before JAX's backend starts (importing jax does not start it)
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={args.devices}"
    B, T = args.B, args.T
    approach_numba, numba = make_numba()
    if numba is not None:
        numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
        t0 = time.perf_counter()
        approach_numba(np.full(10, 0.5), np.zeros(10, np.int32), 4, 0.1, 1.0, 0.25, 2, 0, np.zeros((0, 0)))
        nb_compile = time.perf_counter() - t0
        print(check_numba(approach_numba), flush=True)
    else:
        print("numba is not installed (pip install jcalib[bench]): the compiled baseline and its check are skipped")
    if args.check:
        return
    f = ApproachabilityRecalibrator.for_horizon(T)
    m, eta, Lam, eps = f.n_bins, float(f.step_size), float(f.Lambda), float(f.eps)
    q_seq, y_seq = model_stream(T, np.random.default_rng(0))
    replay = jcalib.natures.Replay(y_seq, x=q_seq)
    print(f"Approachability recalibrator throughput, B = {B}, T = {T}, m = {m}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{jax.device_count()} x {jax.devices()[0].platform}, jax {jax.__version__}, "
          f"numba {numba.__version__ + f' ({numba.get_num_threads()} threads)' if numba else 'not installed'}")

    def sweep(fc, nature):
        def run():
            jax.block_until_ready(jcalib.core.sweep(fc, nature, T, key=jax.random.key(0), n_seeds=B, record="summary", progress=False))
        return run

    # warm-ups (the compiles) first, then the implementations take turns in every repeat, so that
    # a burst of load on the shared machine hits all of them alike
    run_jax = sweep(f, replay)
    t0 = time.perf_counter()
    run_jax()
    first = time.perf_counter() - t0
    impls = {"jcalib.core.sweep": (run_jax, T)}
    if approach_numba is not None:
        no_u = np.zeros((0, 0))
        impls["numba"] = (lambda: approach_numba(q_seq, y_seq, m, eta, Lam, eps, B, 1, no_u), T)
    nT = args.numpy_T or T
    rng = np.random.default_rng(0)
    impls["NumPy"] = (lambda: recalibrator_numpy(B, q_seq[:nT], y_seq[:nT], m, eta, Lam, eps, rng), nT)
    times = {k: [] for k in impls}
    for _ in range(args.repeats):
        for k, (fn, _) in impls.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    rate = {k: B * impls[k][1] / statistics.median(v) for k, v in times.items()}
    t_jax = statistics.median(times["jcalib.core.sweep"])
    rows = [("jcalib.core.sweep, replay", rate["jcalib.core.sweep"], first - t_jax)]
    if "numba" in rate:
        rows.append(("numba per-sequence loop", rate["numba"], nb_compile))
    rows.append((f"NumPy (vectorised), {nT} rounds", rate["NumPy"], float("nan")))
    if args.peers:
        for name, fc, nat in (
            ("Lee MW, replay", LeeMultiObjectiveMW.for_horizon(T), replay),
            ("AOSA, Bernoulli", AlmostOneStepAhead.for_horizon(T), jcalib.natures.Bernoulli(0.3)),
            ("Foster (randomised), replay", FosterRandomized.for_horizon(T), jcalib.natures.Replay(y_seq)),
            ("approachability, live", f, jcalib.natures.DistortedModel(slope=2.0)),
        ):
            fst, t = timed(sweep(fc, nat), args.repeats)
            rows.append((name, B * T / t, fst - t))
    header = f"{'implementation':<32} {'rounds/s':>12} {'compile s':>10}"
    print(header)
    print("-" * len(header))
    for name, r, c in rows:
        print(f"{name:<32} {r:>12.3e} {c:>10.2f}")
    r_ours = rate["jcalib.core.sweep"]
    nb = f"jcalib / numba = {r_ours / rate['numba']:.2f} (goal >= 0.5); " if "numba" in rate else ""
    print(f"{nb}jcalib / NumPy = {r_ours / rate['NumPy']:.1f}x (goal >= 10x); median of {args.repeats} "
          f"alternating repeats; compile s = first call minus the median (numba: its first call, on a tiny case)")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} (1 min)")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

r"""Command line: ``jcalib demo`` (what ``make demo`` runs).

The demo measures the guarantee of Arunachaleswaran et al. (2024): Almost-One-Step-Ahead and
every baseline (:func:`jcalib.forecasters.binary_suite`) against every nature
(:func:`jcalib.natures.binary_suite`), for many seeds and several horizons $T$, with the ECE
and the certified distance to calibration of each run against Theorem 1's bound
(:func:`jcalib.forecasters.aosa_bound`). It writes ``summary.md`` (the table the AOSA tutorial
shows), three figures and ``distances.json`` (the certified intervals, which a later run on the
same folder reads back) to ``results/demo/``. ``experiments/aosa_distance_bound.py`` runs the
same study at full size, with the distances computed in worker processes and one CSV row per
run; it calls :func:`study` and :func:`report`.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import multiprocessing
import os
import sys
import threading
import time
import types
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import jax
import numpy as np
from jaxtyping import PRNGKeyArray
from tqdm.auto import tqdm

from . import forecasters as F
from . import metrics as M
from . import natures as N
from . import plots
from ._cache import enable_compilation_cache
from ._padded import padded
from ._threefry import fold_in, split_into
from ._validation import (
    check_binary_labels,
    check_binary_probs,
    check_int,
    check_key,
    check_positive_int,
    checked_at_the_boundary,
)
from .core import sweep
from .core.loop import chunk_length
from .recorders import GridCounts, forecast_grid

__all__ = ["Run", "main", "report", "study"]

_DISTANCE_BINS = 1000
"""Continuous forecasts are rounded to this grid for the distance (the interval is widened by
the rounding, so it stays certified)."""

_FAST_COMPILE_MAX_T = 1000
"""Grid forecasters' sweeps up to this horizon compile without LLVM optimisation (see
:func:`_compiler_options`)."""

_LIMITS = {"T": (1, 10**6), "seeds": (1, 4096), "distance-seeds": (0, 4096), "seed": (0, 2**32 - 1)}
"""The range each numeric flag of ``jcalib demo`` accepts (inclusive)."""


@dataclass(frozen=True)
class Run:
    r"""One run of the study: a forecaster against a nature for ``T`` rounds with one seed.

    Attributes:
        forecaster, nature: display names (the keys of the suites).
        seed_index: which of the ``n_seeds`` seeds played it (0-based).
        T: the horizon.
        ece: the ECE of the forecasts, unnormalised (Arunachaleswaran et al. 2024, §2).
        dist_lower, dist_upper: the certified interval of the distance to calibration (NaN for
            the seeds whose distance was not computed).
        certificate: $\sum_t |p_t - \tilde p_t| + \mathrm{ECE}(\tilde p)$, the proof's bound
            on the distance (AOSA's look-ahead forecasts; NaN for the other forecasters).
        bound: Theorem 1's bound $T/m + m + 1$, $m = \lceil\sqrt T\rceil$.
    """

    forecaster: str
    nature: str
    seed_index: int
    T: int
    ece: float
    dist_lower: float
    dist_upper: float
    certificate: float
    bound: float


def _natures(T: int, key) -> dict:
    return N.binary_suite(T, F.AlmostOneStepAhead.for_horizon(T).n_bins, key=key)


def _compiler_options(forecaster, T: int) -> dict:
    """XLA options for one forecaster's sweeps, ``T`` the largest horizon (one program serves
    every horizon): compiling dominates the demo's runs.

    A sweep at T <= 1000 runs for well under 0.1 s but compiles for 1.5-3 s. Grid forecasters
    there compile without LLVM optimisation (``xla_backend_optimization_level=0``): about half
    the compile time, about 3x the (tiny) run time, and the same results (integer counts of
    outcomes that the natures draw the same way). Every other sweep compiles at level 1
    (XLA's default is 2): about 25% less compile time and the same numbers, also for the
    defensive forecaster's float state, where level 0 would change forecasts in the last bits
    (it rounds a multiply and an add separately where the optimiser fuses them).
    """
    if T <= _FAST_COMPILE_MAX_T and forecast_grid(forecaster) is not None:
        return {"xla_backend_optimization_level": 0}
    return {"xla_backend_optimization_level": 1}


def _distance(values, labels, weights, n_bins):
    """The certified interval of the distance to calibration: ``(lower, upper)`` as floats."""
    return _interval(M.distance_to_calibration(values, labels, sample_weight=weights, n_bins=n_bins))


def _interval(d) -> tuple[float, float]:
    return float(d.lower), float(d.upper)


# one compiled program per history shape instead of one per operation of an eager vmap
_ece_of_runs = jax.jit(checked_at_the_boundary(jax.vmap(jax.vmap(M.ece))))


def _batched_ece(forecasts, outcomes):
    """The ECE of each (nature, seed) run of a sweep. Its arrays are checked here, on the host,
    and the compiled program carries no check: an in-graph check is a host callback, and a
    program with one is kept out of the persistent compilation cache (each demo would compile
    it again)."""
    forecasts = check_binary_probs(forecasts, "forecasts")
    outcomes = check_binary_labels(outcomes, "outcomes")
    return _ece_of_runs(forecasts, outcomes)

_PADDED = (F.AlmostOneStepAhead, F.FosterRandomized, F.GuptaRamdas, N.MaxCalibrationError, N.RandomMixture)
"""The classes whose grid :func:`_like` pads to the largest horizon's (``jcalib._padded``)."""


def _like(module, like):
    """``module`` (for one horizon) in the shapes of ``like`` (the same player for the largest
    horizon), so that one compiled program serves both: a grid padded to ``like``'s with its
    size traced, a replayed sequence padded with zeros to ``like``'s length (rounds past the
    horizon never read it). Anything else is returned as it is (a player whose shapes do not
    depend on the horizon, or one this cannot pad: it then compiles its own program)."""
    if like is None or type(module) is not type(like):
        return module
    if isinstance(module, _PADDED) and like.n_bins >= module.n_bins:
        return padded(module, like.n_bins)
    if isinstance(module, N.Replay) and module.x is None and module.y.shape[0] < like.y.shape[0]:
        y = np.asarray(module.y)
        return N.Replay(np.concatenate([y, np.zeros(like.y.shape[0] - y.shape[0], y.dtype)]),
                        outcomes=module.outcomes)
    return module


def _reciprocal_grid(n: int, m, dtype):
    """i * (1/m) for i = 0..n: what ``arange(n + 1) / m`` computes in XLA, which
    multiplies by the reciprocal (:meth:`GridSummary.ece` and
    :func:`~jcalib.metrics.atoms_from_counts` run so), so the numbers are theirs to the bit."""
    one = jax.numpy.asarray(1, dtype) if isinstance(m, jax.Array) else np.dtype(dtype).type(1)
    ramp = jax.numpy.arange(n + 1).astype(dtype) if isinstance(m, jax.Array) else np.arange(n + 1, dtype=dtype)
    return ramp * (one / m.astype(dtype))


@jax.jit
def _grid_metrics(counts, ones, info_counts, info_ones, info_steps, m):
    """:meth:`GridSummary.ece`, the ECE of the look-ahead values and
    :attr:`GridSummary.info_l1` of a padded summary (counts past ``m`` are 0; ``m`` traced):
    one program per padded shape, the same numbers as the summary's methods on the cut counts.
    The certificate's sum is left to the caller: compiled together, XLA would fuse the
    product and the sum (one rounding where the summary's method rounds twice)."""
    fdt = jax.numpy.result_type(float)
    grid = _reciprocal_grid(counts.shape[-1] - 1, jax.numpy.asarray(m), fdt).reshape((1,) * (counts.ndim - 1) + (-1,))

    def ece(c, o):
        return jax.numpy.abs(c.astype(fdt) * grid - o.astype(fdt)).sum(-1)

    return ece(counts, ones), ece(info_counts, info_ones), info_steps.astype(fdt) * (1 / jax.numpy.asarray(m).astype(fdt))


def _atoms(counts, ones, m: int):
    """:func:`jcalib.metrics.atoms_from_counts` on host arrays (NumPy: no small compiled
    programs per grid size; the same numbers) and the distance's grid argument (None: the
    atoms are on the grid already)."""
    fdt = np.dtype(jax.numpy.result_type(float))
    grid = _reciprocal_grid(m, np.asarray(m), fdt)
    labels = np.concatenate([np.ones(m + 1, np.int32), np.zeros(m + 1, np.int32)])
    return np.concatenate([grid, grid]), labels, np.concatenate([ones, counts - ones]), None


def _job(fname, forecaster, natures: dict, T: int, key, n_seeds: int, distance_seeds: int, *,
         chunk: int | None = None, like=None, t_max: int | None = None, keep=()):
    """One forecaster against every nature in one compiled sweep (over a ``Switch`` of them).

    ``like`` (the forecaster of the largest horizon ``t_max``) and ``chunk`` fix the
    program's shapes, so that every horizon's sweep runs the same compiled program (the
    natures come padded alike, see :func:`_like`).

    Returns the runs (distances NaN), for the seeds to certify the arguments of
    :func:`_distance`, and at ``t_max`` the first seed's forecasts and outcomes against the
    natures named in ``keep`` (``{nature: (p, y)}``).
    """
    m = forecast_grid(forecaster)
    t_max = T if t_max is None else t_max
    forecaster = _like(forecaster, like)
    batch = N.Switch.all_of(list(natures.values()))
    kw = dict(key=key, n_seeds=n_seeds, progress=False, chunk=chunk,
              compiler_options=_compiler_options(forecaster, t_max))
    if m is not None:  # a grid forecaster: its GridSummary is all the metrics need (memory O(m))
        # its counts on the padded grid when the forecaster is padded; cut back to the first m + 1
        recorder = GridCounts(m) if like is None or forecast_grid(like) < m else padded(GridCounts(m), forecast_grid(like))
        s = sweep(forecaster, batch, T, record=recorder, **kw)
        e, e_info, l1 = (np.asarray(a) for a in _grid_metrics(s.counts, s.ones, s.info_counts, s.info_ones,
                                                                s.info_steps, np.int32(m)))
        ece = e.astype(float)
        # GridSummary.certificate: sum_t |p_t - p~_t| + ECE(p~), NaN without look-ahead values
        cert = np.where(np.asarray(s.info_counts).sum(-1) > 0, l1 + e_info, np.nan).astype(float)
        cut = lambda a: np.asarray(a)[..., : m + 1]  # noqa: E731
        counts, ones = cut(s.counts), cut(s.ones)
        atoms = lambda ni, si: _atoms(counts[ni, si], ones[ni, si], m)  # noqa: E731

        def first_run(ni):  # seed 0's forecasts and outcomes, as a multiset (the rounds' order is lost)
            grid, o, c = _atoms(counts[ni, 0], ones[ni, 0], m)[0][: m + 1], ones[ni, 0], counts[ni, 0]
            return (np.concatenate([np.repeat(grid, o), np.repeat(grid, c - o)]),
                    np.concatenate([np.ones(o.sum(), np.int32), np.zeros((c - o).sum(), np.int32)]))
    else:
        traj = sweep(forecaster, batch, T, **kw)
        ece = np.asarray(_batched_ece(traj.forecast, traj.y), float)
        cert = np.full(ece.shape, np.nan)
        p, y = np.asarray(traj.forecast), np.asarray(traj.y)
        atoms = lambda ni, si: (p[ni, si], y[ni, si], None, _DISTANCE_BINS)  # noqa: E731
        first_run = lambda ni: (p[ni, 0], y[ni, 0])  # noqa: E731
    # the largest horizon's first seed, for the reliability diagrams
    samples = {nname: first_run(ni) for ni, nname in enumerate(natures) if nname in keep} if T == t_max else {}
    runs, tasks = [], []
    nan = float("nan")
    for ni, nname in enumerate(natures):
        for si in range(n_seeds):
            if si < distance_seeds:
                tasks.append(atoms(ni, si))
            runs.append(Run(fname, nname, si, T, float(ece[ni, si]), nan, nan, float(cert[ni, si]), F.aosa_bound(T)))
    return runs, tasks, samples


def study(
    Ts: Iterable[int],
    n_seeds: int,
    *,
    key: PRNGKeyArray,
    distance_seeds: int = 2,
    forecasters_for: Callable[[int], dict] = F.binary_suite,
    natures_for: Callable[..., dict] = _natures,
    threads: int = 2,
    distance_map: Callable = map,
    progress: bool = False,
) -> list[Run]:
    """Play every forecaster against every nature for every ``T`` and ``n_seeds`` seeds.

    Each (forecaster, T) is one compiled sweep over all natures; ``threads`` of them (default
    2) compile and run at a time, so one's tracing overlaps another's compilation. The
    distance to calibration is certified for the first ``distance_seeds`` seeds of each
    (forecaster, nature, T), by ``distance_map(function, *argument_lists)`` (default the
    built-in ``map``; a process pool's ``map`` runs them in parallel). Job ``i`` plays with a
    key folded from ``key`` and ``i``, and the natures of horizon ``T`` are drawn with one
    folded from ``key`` and ``T``, so ``threads`` and ``distance_map`` change no number.

    Args:
        Ts: the horizons.
        n_seeds: seeds per (forecaster, nature, T).
        key: a JAX PRNG key (keyword-only, required).
        distance_seeds: how many seeds per (forecaster, nature, T) get a certified distance.
        forecasters_for: ``T -> {name: forecaster}`` (default: the forecasters' binary suite).
        natures_for: ``(T, key) -> {name: nature}`` (default: the natures' binary suite on
            AOSA's grid).
        threads: sweeps that compile and run at a time.
        distance_map: a ``map``-like callable for the distance computations.
        progress: show progress bars (sweeps, then distances).

    Returns:
        One :class:`Run` per (forecaster, nature, seed, T), grouped by ``T`` in the order of
        ``Ts``, then by forecaster, nature and seed.
    """
    return _study(Ts, n_seeds, key=key, distance_seeds=distance_seeds, forecasters_for=forecasters_for,
                  natures_for=natures_for, threads=threads, distance_map=distance_map, progress=progress)[0]


def _study(Ts, n_seeds, *, key, distance_seeds, forecasters_for, natures_for, threads, distance_map, progress,
           keep=frozenset(), distance_pool=None, before_distances=None, intervals=None):
    """:func:`study`, and the largest horizon's first seed of each (forecaster, nature) pair in
    ``keep``: its forecasts and outcomes (``{(forecaster, nature): (p, y)}``; a grid
    forecaster's in no particular order, rebuilt from its counts).

    ``distance_pool`` (a ``concurrent.futures`` executor, e.g. of worker processes) replaces
    ``distance_map``: each job's distances are submitted as soon as its sweep is done, so they
    are computed while the next sweeps compile and run, and equal runs (a deterministic
    forecaster against a deterministic nature, whatever the seed) are certified once.
    ``before_distances(runs, samples)`` (optional) is called once the sweeps are done, before
    waiting for the distances (the runs' distances still NaN): work that needs no distance.
    ``intervals`` (an :class:`_Intervals`) supplies the intervals certified by an earlier run
    and keeps this run's."""
    Ts = [check_positive_int(T, "T") for T in Ts]
    n_seeds = check_positive_int(n_seeds, "n_seeds")
    distance_seeds = check_int(distance_seeds, "distance_seeds", minimum=0)
    k_natures, k_play = split_into(check_key(key))
    natures = {T: natures_for(T, fold_in(k_natures, T)) for T in Ts}
    forecasters = {T: forecasters_for(T) for T in Ts}
    # every horizon's sweeps in the shapes of the largest horizon's: one program per forecaster
    t_max = max(Ts)
    chunk = chunk_length(t_max, None)
    like_n, like_f = natures[t_max], forecasters[t_max]
    natures = {T: {k: _like(n, like_n.get(k)) for k, n in natures[T].items()} for T in Ts}
    jobs = [(T, fname, f) for T in Ts for fname, f in forecasters[T].items()]
    # a forecaster's horizons run one after another in one thread: the first compiles the program
    # (or reads it from the persistent cache), the others reuse it
    by_name: dict = {}
    for i, (T, fname, f) in enumerate(jobs):
        by_name.setdefault(fname, []).append(i)

    pending = {}  # job index -> the futures of its distances (with distance_pool)
    submitted: dict = {}  # a task's digest -> its future (or stored interval): equal runs are certified once
    lock = threading.Lock()

    intervals = _Intervals(None) if intervals is None else intervals

    def submit(task):
        key = _digest(task)
        with lock:
            if key not in submitted:  # an interval an earlier run stored is kept as it is
                submitted[key] = intervals.known.get(key) or _submit(distance_pool, task)
            return submitted[key]

    def play_all(idx):
        out = []
        for i in idx:
            out.append(_job(jobs[i][1], jobs[i][2], natures[jobs[i][0]], jobs[i][0], fold_in(k_play, i),
                            n_seeds, distance_seeds, chunk=chunk, like=like_f.get(jobs[i][1]), t_max=t_max,
                            keep={n for f, n in keep if f == jobs[i][1]}))
            if distance_pool is not None:  # the workers start on this job while the next one compiles
                pending[i] = [submit(task) for task in out[-1][1]]
        return out

    results = [None] * len(jobs)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        # continuous forecasters first: their distances (many distinct forecasts) are the longest,
        # and the workers certify them while the grid forecasters' sweeps run
        order = sorted(by_name.values(), key=lambda idx: forecast_grid(jobs[idx[0]][2]) is not None)
        futures = {pool.submit(play_all, idx): idx for idx in order}
        bar = tqdm(total=len(jobs), desc="forecaster x T", disable=not progress, leave=False)
        for fut in as_completed(futures):
            for i, r in zip(futures[fut], fut.result()):
                results[i] = r
            bar.update(len(futures[fut]))
        bar.close()
    runs = [r for job_runs, _, _ in results for r in job_runs]
    samples = {(jobs[i][1], nname): pair for i, (_, _, sample) in enumerate(results) for nname, pair in sample.items()}
    # which run each task certifies: the first distance_seeds seeds of every (job, nature)
    where, args = [], []
    offset = 0
    for job_runs, tasks, _ in results:
        idx = [offset + i for i, r in enumerate(job_runs) if r.seed_index < distance_seeds]
        where += idx
        args += tasks
        offset += len(job_runs)
    if before_distances is not None:
        before_distances(runs, samples)
    keys = [_digest(t) for t in args]
    if distance_pool is not None:
        def result(f, task):
            if isinstance(f, tuple):  # stored by an earlier run
                return f
            try:
                return _distance(*task) if f is None else _interval(f.result())
            except BrokenProcessPool as e:  # a worker died (killed, out of memory): this process computes it
                _warn_broken(e)
                return _distance(*task)

        done = (result(f, t) for i in range(len(jobs)) for f, t in zip(pending[i], results[i][1]))
    else:  # the stored intervals, and distance_map over the others
        new = [t for t, key in zip(args, keys) if key not in intervals.known]
        computed = iter(distance_map(_distance, *zip(*new)) if new else ())
        done = (intervals.known.get(key) or next(computed) for key in keys)
    done = tqdm(done, total=len(args), desc="distance to calibration", disable=not progress, leave=False)
    found = {}
    for k, key, (lo, hi) in zip(where, keys, done):
        runs[k] = dataclasses.replace(runs[k], dist_lower=lo, dist_upper=hi)
        found[key] = (lo, hi)
    intervals.save(found)
    return runs, samples


def _fmt(x: float) -> str:
    """Three significant figures without an exponent (5062, 59.8, 0.413)."""
    if not np.isfinite(x):
        return "—"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x))))) if x else 2
    return f"{x:.{digits}f}"


def _table(runs: list[Run]) -> str:
    """The demo's markdown table: per forecaster, the certified distance (upper end) and the
    ECE at the largest horizon (median / max over natures and seeds), the worst distance
    relative to Theorem 1's bound over every horizon, and the runs whose certified distance
    (its lower end) exceeds the bound."""
    names = list(dict.fromkeys(r.forecaster for r in runs))
    t_max = max(r.T for r in runs)
    t_label = f"10^{round(math.log10(t_max))}" if 10 ** round(math.log10(t_max)) == t_max else str(t_max)
    lines = [f"| forecaster | certified CalDist at T = {t_label}, median / max | ECE at T = {t_label}, median / max "
             "| worst CalDist / bound, all T | runs over the bound |",
             "|---|---|---|---|---|"]
    for n in names:
        mine = [r for r in runs if r.forecaster == n]
        d = np.array([r.dist_upper for r in mine if r.T == t_max and np.isfinite(r.dist_upper)])
        e = np.array([r.ece for r in mine if r.T == t_max])
        certified = [r for r in mine if np.isfinite(r.dist_upper)]
        worst = max((r.dist_upper / r.bound for r in certified), default=float("nan"))
        over = sum(r.dist_lower > r.bound for r in certified)
        dist = f"{_fmt(np.median(d))} / {_fmt(d.max())}" if d.size else "—"
        ece = f"{_fmt(np.median(e))} / {_fmt(e.max())}" if e.size else "—"  # not run at the largest T
        lines.append(f"| {n} | {dist} | {ece} | {_fmt(worst)} | "
                     f"{over} of {len(certified)} |")
    return "\n".join(lines)


def _panels(n: int):
    import matplotlib.pyplot as plt

    cols = 4
    rows = -(-(n + 1) // cols)  # one spare panel for the legend
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.4 * rows + 0.6), sharex=True, sharey=True)
    return fig, axes.ravel()


def _rate_figure(runs: list[Run], metric: str, path: str, *, ylabel: str, caption: str, bound: bool,
                 band_note: str = "") -> str:
    """One panel per forecaster: the median of ``metric`` over natures and seeds against T
    (line), its min..max (band) and, with ``bound``, Theorem 1's bound (dashed)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = list(dict.fromkeys(r.forecaster for r in runs))
    Ts = sorted({r.T for r in runs})
    fig, axes = _panels(len(names))
    curve = (lambda t: np.array([F.aosa_bound(int(round(x))) for x in np.asarray(t, float)])) if bound else None
    for ax, n in zip(axes, names):
        vals = [np.array([getattr(r, metric) for r in runs if r.forecaster == n and r.T == T], float) for T in Ts]
        vals = [v[np.isfinite(v)] for v in vals]
        stat = lambda fn: [fn(v) if v.size else np.nan for v in vals]  # noqa: E731
        plots.rate_plot(Ts, {n: stat(np.median)}, bands={n: (stat(np.min), stat(np.max))}, bound=curve, ax=ax, ylabel="")
        ax.get_legend().remove()
        # decades only: the minor ticks of a dozen shared log axes were most of a figure's time
        # (2.5 s of 3), and on panels this small their grid lines were clutter
        ax.minorticks_off()
        ax.set_title(n, fontsize="small")
        ax.set_xlabel("")
    for ax in axes[len(names):]:
        ax.axis("off")
    handles = [Line2D([], [], color="C0", marker="o", ms=3), Patch(color="C0", alpha=0.15)]
    labels = ["median over natures and seeds", "min..max over natures and seeds" + band_note]
    if bound:
        handles.append(Line2D([], [], color="k", ls="--", lw=1.2))
        labels.append("Theorem 1's bound T/m + m + 1\n(AOSA's guarantee, m = ⌈√T⌉)")
    axes[len(names)].legend(handles, labels, loc="center", fontsize="small", frameon=False)
    fig.supxlabel("T (rounds)", fontsize="small")
    fig.supylabel(ylabel, fontsize="small")
    fig.suptitle(caption, fontsize="small")
    return plots.save(axes[0], path)


def report(runs: list[Run], out_dir: str, *, title: str = "jcalib demo") -> dict:
    """Write ``summary.md`` (the table and what it shows) and the figures ``distance_vs_T.png``
    (when some distance was certified) and ``ece_vs_T.png`` to ``out_dir``; return their paths."""
    return _report(runs, out_dir, title, _ece_figure(runs, out_dir))


def _ece_figure(runs: list[Run], out_dir: str) -> str:
    """``ece_vs_T.png`` (needs no distance)."""
    os.makedirs(out_dir, exist_ok=True)
    n_natures, n_seeds = len({r.nature for r in runs}), 1 + max(r.seed_index for r in runs)
    return _rate_figure(runs, "ece", os.path.join(out_dir, "ece_vs_T.png"), bound=False, ylabel="ECE (unnormalised)",
                        caption=f"ECE against T: {n_natures} natures x {n_seeds} seeds",
                        band_note="\n(a minimum of 0 runs off the log axis)")


def _report(runs: list[Run], out_dir: str, title: str, ece_path: str) -> dict:
    """:func:`report` with the ECE figure already drawn (at ``ece_path``)."""
    os.makedirs(out_dir, exist_ok=True)
    Ts = sorted({r.T for r in runs})
    n_natures, n_seeds = len({r.nature for r in runs}), 1 + max(r.seed_index for r in runs)
    n_certified = 1 + max((r.seed_index for r in runs if np.isfinite(r.dist_upper)), default=-1)
    paths = {}
    if n_certified:  # no distance figure when no distance was certified (--distance-seeds 0)
        paths["distance"] = _rate_figure(
            runs, "dist_upper", os.path.join(out_dir, "distance_vs_T.png"), bound=True,
            ylabel="distance to calibration (certified upper end, unnormalised)",
            caption=f"Distance to calibration against T: {n_natures} natures x the first {n_certified} seeds")
    paths["ece"] = ece_path
    aosa = [r for r in runs if r.forecaster.startswith("AOSA")]  # both tie rules
    lines = [f"# {title}", "",
             f"{len(runs)} runs: {len({r.forecaster for r in runs})} forecasters x {n_natures} natures x "
             f"{n_seeds} seeds x T in {Ts}; the distance to calibration is certified (an interval "
             f"[lower, upper]) for the first {n_certified} seeds of each forecaster x nature x T. "
             "The bound is Theorem 1 of Arunachaleswaran et al. (2024), T/m + m + 1 with m = ⌈√T⌉ "
             "(2√T + 1 when T is a square).",
             "", _table(runs), ""]
    certified = [r for r in aosa if np.isfinite(r.dist_upper)]
    if certified:
        w = max(certified, key=lambda r: r.dist_upper / r.bound)
        held = all(r.dist_upper <= r.bound for r in certified)
        certs = [r.certificate / r.bound for r in aosa if np.isfinite(r.certificate)]
        lines += [f"Worst case for AOSA (either tie rule): {w.forecaster} against {w.nature}, seed {w.seed_index}, "
                  f"T = {w.T}: distance ≤ {w.dist_upper:.2f} against the bound {w.bound:.2f}. The bound "
                  f"{'held in every certified AOSA run' if held else 'was NOT certified in every AOSA run'}.",
                  f"AOSA's own certificate Σ|p−p̃| + ECE(p̃) (the proof's construction) reaches at most "
                  f"{max(certs):.3f} of the bound over all {len(certs)} AOSA runs.", ""]
    lines.append("Figures: " + ", ".join(f"`{os.path.basename(f)}`" for f in paths.values()) + ", `reliability.png`.")
    paths["summary"] = os.path.join(out_dir, "summary.md")
    Path(paths["summary"]).write_text("\n".join(lines) + "\n")
    return paths


_RELIABILITY_FORECASTERS = ("AOSA", "Foster", "Running frequency")


def _reliability_natures(T):
    return {"Markov": N.Markov(0.05, 0.1),
            "Max calibration error": N.MaxCalibrationError(n_bins=F.AlmostOneStepAhead.for_horizon(T).n_bins)}


def _reliability(out_dir, T, key, samples=None) -> str:
    """Reliability diagrams of AOSA, Foster and the running frequency against the Markov chain
    and the calibration-error maximiser: one panel per (nature, forecaster).

    ``samples`` (``{(forecaster, nature): (p, y)}``, the study's first seed at ``T``) supplies
    the runs it has; a missing one is played here with ``key`` (a sweep of its own)."""
    import matplotlib.pyplot as plt

    natures = _reliability_natures(T)
    fig, axes = plt.subplots(len(natures), len(_RELIABILITY_FORECASTERS), figsize=(9, 6.9), sharex=True, sharey=True)
    for j, fname in enumerate(_RELIABILITY_FORECASTERS):
        have = samples or {}
        if all((fname, n) in have for n in natures):
            pairs = [have[fname, n] for n in natures]
        else:
            f = F.binary_suite(T)[fname]
            # both natures in one compiled sweep (a Switch gives every member the same keys)
            traj = sweep(f, N.Switch.all_of(list(natures.values())), T, key=key, progress=False)
            p, y = np.asarray(traj.forecast).reshape(len(natures), T), np.asarray(traj.y).reshape(len(natures), T)
            pairs = list(zip(p, y))
        for i, nname in enumerate(natures):
            ax = axes[i, j]
            plots.reliability_diagram(*pairs[i], n_bins=10, ax=ax, color=f"C{j}")
            ax.set_title(f"{fname} vs {nname}", fontsize="small")
            ax.set(xlabel="", ylabel="")
    fig.supxlabel("forecast", fontsize="small")
    fig.supylabel("observed frequency of 1", fontsize="small")
    fig.suptitle(f"Reliability, T = {T}, one run each: a dot per bin of width 0.1 at its mean forecast (area ∝ its "
                 "share of the rounds),\nits vertical line the 95% Wilson interval (a bin of a few rounds: a dot too "
                 "small to see, a long line);\ngrey bars: how often each bin was forecast; dashed: calibrated",
                 fontsize="small")
    return plots.save(axes[0, 0], os.path.join(out_dir, "reliability.png"))


def _digest(task) -> str:
    """A task of :func:`_distance` as a key: its arrays' dtypes, shapes and bytes (hashed),
    whether it is weighted, and its grid."""
    arrays = [np.ascontiguousarray(a) for a in task[:3] if a is not None]
    h = hashlib.blake2b(digest_size=20)
    for a in arrays:
        h.update(a.dtype.str.encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return f"{h.hexdigest()}-{int(task[2] is None)}-{task[3]}"


def _code_version() -> str:
    """What the certified intervals depend on besides their inputs: the distance's own source
    (:mod:`jcalib.metrics.distance`) and the versions of jcalib and of the libraries that compute
    them (NumPy, SciPy and HiGHS, whose LP gives the lower end)."""
    import importlib.metadata

    from .metrics import distance

    h = hashlib.blake2b(digest_size=16)
    h.update(Path(distance.__file__).read_bytes())
    for name in ("jcalib", "numpy", "scipy", "highspy"):
        try:
            h.update(f"{name}={importlib.metadata.version(name)};".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{name}=?;".encode())
    return h.hexdigest()


class _Intervals:
    """The certified distance intervals of a demo's runs, kept in its output folder
    (``distances.json``) and read back by a later demo writing to the same folder: a run whose
    forecasts and outcomes are those of a stored one (same bytes, see :func:`_digest`) is not
    certified again, as long as the distance's code and libraries are the ones that stored it
    (:func:`_code_version`; any other version starts afresh). With ``path=None`` nothing is kept."""

    def __init__(self, path: str | os.PathLike | None):
        self.path, self.version, self.known = path, _code_version() if path is not None else "", {}
        try:
            stored = json.loads(Path(path).read_text()) if path is not None else {}
        except (OSError, ValueError):  # none yet, or unreadable: start afresh
            stored = {}
        if isinstance(stored, dict) and stored.get("version") == self.version:
            self.known = {k: tuple(v) for k, v in stored.get("intervals", {}).items()}

    def save(self, found: dict) -> None:
        """Write this run's intervals ``found`` (key -> (lower, upper)), those of the runs the
        folder's summary shows, replacing the file at once (an interrupted write leaves the
        previous one)."""
        if self.path is None or not found:
            return
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(f"{self.path}.tmp{os.getpid()}")
        tmp.write_text(json.dumps({"version": self.version, "intervals": found}))
        os.replace(tmp, self.path)


def _submit(pool, task):
    """``_distance(*task)`` submitted to ``pool`` (its result a :class:`CalibrationDistance`);
    None where the pool is broken (the caller computes it then).

    The workers are sent :func:`jcalib.metrics.distance_to_calibration` itself, not a function of
    this module: under ``python -m jcalib.cli`` (what ``make demo`` runs) this module is
    ``__main__``, whose functions a spawned worker cannot import."""
    values, labels, weights, n_bins = task
    try:
        return pool.submit(M.distance_to_calibration, values, labels, sample_weight=weights, n_bins=n_bins)
    except BrokenProcessPool as e:
        _warn_broken(e)
        return None


def _warn_broken(error) -> None:
    """Say that the distance workers failed (the distances still come, slower); Python's warning
    filter shows it once."""
    warnings.warn(f"the distance worker processes failed ({error}); computing the remaining distances in this "
                  "process", RuntimeWarning, stacklevel=2)


def _distance_workers(n: int) -> ProcessPoolExecutor | None:
    """``n`` worker processes for the distances (spawned, not forked: JAX's threads do not
    survive a fork), or None where they cannot start.

    They are started at once with a blank ``__main__``: a spawned worker otherwise runs the
    caller's script again first, which an unguarded script calling :func:`main` would turn into
    a second demo. The workers need only ``jcalib`` (the pickled :func:`_distance`)."""
    try:
        pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            started = [pool.submit(int, 0) for _ in range(n)]  # one process per task: all n start now
        finally:
            sys.modules["__main__"] = main
        for f in started:
            f.result()
        return pool
    except (OSError, RuntimeError, BrokenProcessPool):  # no processes here: the distances run in this one
        return None


def _demo(args) -> int:
    t0 = time.perf_counter()
    key = jax.random.key(args.seed)
    k_study, k_rel = split_into(key)
    # the reliability diagrams show the study's own runs at the largest horizon (its first seed):
    # no sweeps, nor programs, of their own
    keep = {(f, n) for f in _RELIABILITY_FORECASTERS for n in _reliability_natures(max(args.T))}
    # the distances (NumPy and SciPy on the host, most of a run's work after compiling) in two
    # worker processes, started while the sweeps compile
    workers = _distance_workers(2) if args.distance_seeds else None
    figures = {}

    def draw(runs, samples):  # the figures that need no distance, while the workers finish theirs
        figures["ece"] = _ece_figure(runs, args.out)
        figures["reliability"] = _reliability(args.out, max(args.T), k_rel, samples)

    try:
        runs, samples = _study(args.T, args.seeds, key=k_study, distance_seeds=args.distance_seeds,
                               forecasters_for=F.binary_suite, natures_for=_natures, threads=2, distance_map=map,
                               progress=not args.no_progress, keep=keep, distance_pool=workers,
                               before_distances=draw,
                               intervals=_Intervals(None if args.no_cache else os.path.join(args.out, "distances.json")))
    finally:
        if workers is not None:
            workers.shutdown(cancel_futures=True)
    paths = _report(runs, args.out, "jcalib demo: online calibration (Arunachaleswaran et al. 2024)", figures["ece"])
    paths["reliability"] = figures["reliability"]
    print(Path(paths["summary"]).read_text())
    print(f"{len(runs)} runs in {time.perf_counter() - t0:.0f} s; wrote:")
    for k, v in paths.items():
        print(f"  {k:12s} {v}")
    return 0


def _int_in(flag: str):
    lo, hi = _LIMITS[flag]

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {hi}, got {v}")
        return v

    parse.__name__ = "integer"
    return parse


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jcalib", description="jcalib command line")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="AOSA and every baseline against every nature "
                                    "(Arunachaleswaran et al.'s (2024) guarantee, measured)",
                       description="Play Almost-One-Step-Ahead and every baseline against every nature for many seeds "
                                   "and horizons; write a summary table and figures.")
    d.add_argument("--T", type=_int_in("T"), nargs="+", default=[100, 1000, 10000],
                   help=f"horizons, each in {_LIMITS['T']} (default: 100 1000 10000)")
    d.add_argument("--seeds", type=_int_in("seeds"), default=64,
                   help=f"seeds per (forecaster, nature), in {_LIMITS['seeds']} (default: 64)")
    d.add_argument("--distance-seeds", type=_int_in("distance-seeds"), default=2,
                   help="certify the distance to calibration for the first this-many seeds of each "
                        "(forecaster, nature, T), at most --seeds (default: 2; ECE and AOSA's certificate cover every seed)")
    d.add_argument("--seed", type=_int_in("seed"), default=0, help="master PRNG seed, a non-negative 32-bit integer (default: 0)")
    d.add_argument("--out", default=os.path.join("results", "demo"), help="output folder (default: results/demo)")
    d.add_argument("--no-progress", action="store_true", help="hide progress bars")
    d.add_argument("--no-cache", action="store_true",
                   help="do not use the persistent compilation cache (default: on, in $JAX_COMPILATION_CACHE_DIR, "
                        "else $XDG_CACHE_HOME/jcalib/xla or ~/.cache/jcalib/xla; JCALIB_COMPILATION_CACHE=0 also "
                        "turns it off), nor the distances an earlier run certified (OUT/distances.json)")
    d.set_defaults(func=_demo, parser=d)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line (``jcalib demo ...``, the console script ``jcalib``).

    The first run compiles its programs (most of a small demo's time) and keeps them in JAX's
    persistent compilation cache, so later runs read them back: the folder is
    ``$JAX_COMPILATION_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/jcalib/xla`` or
    ``~/.cache/jcalib/xla``; ``--no-cache`` or ``JCALIB_COMPILATION_CACHE=0`` turns it off.
    A compilation that takes more than a few seconds prints a one-line notice to stderr.

    Args:
        argv: the arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code (0). A bad argument exits through argparse with code 2 and a one-line
        error.

    Example:
        >>> from jcalib import cli
        >>> cli.main(["demo", "--T", "100", "--seeds", "4", "--out", "results/tiny"])  # doctest: +SKIP
    """
    args = _build_parser().parse_args(argv)
    if args.command == "demo" and args.distance_seeds > args.seeds:
        args.parser.error(f"argument --distance-seeds: must be at most --seeds ({args.seeds}), got {args.distance_seeds}")
    # programs compiled by an earlier run are read back instead of compiled again
    enable_compilation_cache(enabled=not args.no_cache)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

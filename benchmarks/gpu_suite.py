"""The GPU measurements in one command (``make bench-gpu``): every workload that a GPU might
speed up, timed on JAX's default device and on the host's CPU in the same run.

Items (built from their benchmark scripts' setup functions, imported, where a script has one;
else called as the script calls them):

- ``orca``: ORCA as in the experiments of Marx et al. (2024) (``orca_throughput.setup``: 50 bins,
  the experiment payoff, 400 Adam steps a round) against ``OverconfidentGaussian``;
  ``jcalib.core.play`` at B = 1, ``jcalib.core.sweep`` at B > 1; over B and over ``unroll`` (Adam
  steps per iteration of the inner loop, ``ORCA(unroll=...)``), and again in a process of its own
  for each XLA flag set (``XLA_FLAGS`` is read when the backend starts);
- ``aosa``: AOSA (Arunachaleswaran et al. 2024) on Bernoulli(0.3) draws, ``record="summary"``, B up
  to 2^20, as ``aosa_throughput.py`` runs it;
- ``approachability``: the approachability recalibrator (Okoroafor et al. 2024) on the replayed
  model stream of ``approachability_throughput.model_stream``;
- ``decision``: the decision-calibration partition search (Zhao et al. 2021), 16 restarts, K = 2, on
  ``decision_calibration._data``, over ``unroll``;
- ``kernel_audit``: the kernel audit (Gopalan et al. 2024, Algorithm 2) on ``kernel_audit._data``;
- ``bootstrap``: the smooth-ECE bootstrap (``jcalib.stats.bootstrap(smooth_ece, ...)``) on the
  data of ``stats_bootstrap.py``;
- ``train_step``: one AdamW step of the digits MLP of ``experiments/train_with_calibration_loss.py``
  with cross-entropy + 0.5 · its smooth-ECE penalty (``jcalib.losses``).

Processes: one per device and flag set (the default device; the default device with each flag
set, on a GPU only; the host CPU with ``JAX_PLATFORMS=cpu``), one after another, each under a
time limit, each writing its figures as it goes. Inside a process every item has a time cap:
a cell (one size and ``unroll``) whose estimated end passes the cap is skipped and listed. The
default caps are meant to fit the full run into 8 minutes on one H100 (not yet tried on one).
Timing: one warm-up call per cell (its excess over the median is the compile time), then the
cells of one size (the values of ``unroll``) take turns, one call each per round, and the
median call counts.

Writes ``--out`` (JSON: every figure and the run's settings) and a markdown table next to it
(``.md``): throughput, the ratio to the same cell on the host CPU, and the ratio to the item's
baseline in the same process (ORCA: B = 1, ``unroll`` = 1, no flags; the decision search:
``unroll`` = 1 at the same size), compile time separately; the header gives the device, jax's
version and the 1-minute load.

    python benchmarks/gpu_suite.py                 # on a GPU machine: capped at 8 minutes
    python benchmarks/gpu_suite.py --quick         # tiny sizes on any machine (CI): ORCA on 10
                                                   # bins with the quantile block, the binned ECE's
                                                   # bootstrap (they compile in seconds); on a CPU the
                                                   # second process runs one cell
    python benchmarks/gpu_suite.py --items orca decision --baseline-path /tmp/old --turns 3 --no-cpu
        # old against new: the items of another jcalib checkout (its default unroll) in its own
        # process, taking turns with this checkout's, medians over the turns

The flag sets are the GPU routes around a ``while`` loop's per-iteration host round trip;
jcalib's library code never sets them (``docs/scaling.md``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ITEMS = ("orca", "aosa", "approachability", "decision", "kernel_audit", "bootstrap", "train_step")

# XLA flag sets measured on a GPU (GPU-only: skipped with a note elsewhere). Command buffers
# record the kernels of a loop body as one CUDA graph; with WHILE the loop itself is captured
# and, with unroll_loops, unrolled into the graph, so no iteration returns to the host.
FLAG_SETS = {
    "cmdbuf-while-unroll": "--xla_gpu_enable_command_buffer=+WHILE --xla_gpu_command_buffer_unroll_loops=true",
}

# Sizes, repeats and caps (seconds) per mode and device; "device" also serves the flag sets,
# which run ORCA only, on their own grid.
SETTINGS = {
    "full": {
        "device": dict(
            # B = 64 last: the B = 1 and 4096 groups matter more if the cap stops the grid
            orca_batches=[1, 4096, 64], orca_unrolls=[1, 4, 8], orca_rounds=10, orca_steps=400,
            aosa_batches=[4096, 65536, 2**20], aosa_T=2000,
            approach_batches=[1024, 65536], approach_T=2000,
            decision_sizes=[[10_000, 10], [100_000, 100]], decision_unrolls=[1, 4], decision_steps=50,
            kernel_sizes=[[10_000, 100, 4], [100_000, 100, 4]],
            bootstrap_sizes=[[100_000, 10_000]],
            train_steps=20, repeats=3,
            caps=dict(orca=140, aosa=20, approachability=15, decision=20, kernel_audit=20, bootstrap=15, train_step=15),
        ),
        "flags": dict(orca_batches=[1, 64, 4096], orca_unrolls=[1], orca_rounds=10, orca_steps=400, repeats=3,
                      caps=dict(orca=70)),
        "cpu": dict(
            orca_batches=[1, 64], orca_unrolls=[1], orca_rounds=10, orca_steps=400,
            aosa_batches=[4096, 65536], aosa_T=2000,
            approach_batches=[1024], approach_T=2000,
            decision_sizes=[[10_000, 10], [100_000, 100]], decision_unrolls=[1], decision_steps=50,
            kernel_sizes=[[10_000, 100, 4]],
            bootstrap_sizes=[[100_000, 1000]],
            train_steps=20, repeats=3,
            caps=dict(orca=30, aosa=15, approachability=10, decision=15, kernel_audit=10, bootstrap=10, train_step=10),
        ),
        # process time limits (s); the parent also stops at --budget-s in all
        "limits": dict(device=250, flags=85, cpu=110, baseline=250),
    },
    "quick": {
        "device": dict(
            orca_batches=[1], orca_unrolls=[1, 2], orca_rounds=3, orca_steps=20, orca_small=True,
            aosa_batches=[256], aosa_T=500,
            approach_batches=[64], approach_T=500,
            decision_sizes=[[1000, 5]], decision_unrolls=[1, 2], decision_steps=20,
            kernel_sizes=[[500, 5, 2]],
            bootstrap_sizes=[[2000, 100]], bootstrap_statistic="binned_ece",
            train_steps=3, repeats=1,
            caps=dict(orca=20, aosa=4, approachability=4, decision=5, kernel_audit=4, bootstrap=4, train_step=4),
        ),
        "flags": dict(orca_batches=[1], orca_unrolls=[1], orca_rounds=3, orca_steps=20, orca_small=True, repeats=1,
                      caps=dict(orca=10)),
        "cpu": dict(
            orca_batches=[1], orca_unrolls=[1], orca_rounds=3, orca_steps=20, orca_small=True,
            aosa_batches=[256], aosa_T=500,
            approach_batches=[64], approach_T=500,
            decision_sizes=[[1000, 5]], decision_unrolls=[1], decision_steps=20,
            kernel_sizes=[[500, 5, 2]],
            bootstrap_sizes=[[2000, 100]], bootstrap_statistic="binned_ece",
            train_steps=3, repeats=1,
            caps=dict(orca=4, aosa=4, approachability=4, decision=4, kernel_audit=4, bootstrap=4, train_step=4),
        ),
        # generous: a loaded CI machine skips cells (the caps), it should not lose whole items
        "limits": dict(device=300, flags=100, cpu=200, baseline=300),
    },
}


def load1() -> float:
    return os.getloadavg()[0]


# ----------------------------------------------------------------------------------- worker


def _import_path(name: str, path: Path):
    """Import a script by path, keeping ``JAX_PLATFORMS`` as it was: the experiment defaults it
    to ``cpu`` on import (the backend has started by then, so only a child process would see it;
    ``stats_bootstrap.py`` does the same, which is why its data are rebuilt here, not imported)."""
    before = os.environ.get("JAX_PLATFORMS")
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        if before is None:
            os.environ.pop("JAX_PLATFORMS", None)
        else:
            os.environ["JAX_PLATFORMS"] = before


class Cell(NamedTuple):
    """One measurement: ``make()`` builds the data and returns ``fn`` (a call that waits for its
    results), which does ``work`` units of ``unit`` a call."""

    spec: dict
    make: Callable
    work: float
    unit: str


class Recorder:
    """Appends one JSON line per figure to a file (a process stopped at its time limit keeps
    what it measured), and skips the cells of an item once its cap, or the process's time
    limit, would be passed."""

    def __init__(self, path: str, worker: str, caps: dict, limit: float):
        self.fh = open(path, "a")
        self.worker, self.caps = worker, caps
        self.deadline = time.perf_counter() + limit - 10  # 10 s for the last write and the exit

    def write(self, rec: dict) -> None:
        self.fh.write(json.dumps({"worker": self.worker, **rec}) + "\n")
        self.fh.flush()

    def run(self, item: str, groups: list, repeats: int) -> None:
        """Time ``groups`` (lists of :class:`Cell`) one after another. In a group (one size, the
        values of ``unroll``) every cell is first called once (compilation: that call's excess
        over the median), then the cells take turns, ``repeats`` rounds of one call each, so that
        a change of the machine's load hits all alike; the median call is recorded. A cell whose
        estimated end (the slowest cell so far) passes the item's cap or the process's limit is
        skipped, and so is every later one."""
        start, slowest, stop, index = time.perf_counter(), 0.0, None, 0
        for group in groups:
            live = []
            for cell in group:
                cell.spec["cell"], index = index, index + 1  # the table keeps this order
                now = time.perf_counter()
                if stop is None and now - start + slowest > self.caps[item]:
                    stop = f"the item's cap of {self.caps[item]:.0f} s (used {now - start:.0f} s, slowest cell {slowest:.0f} s)"
                elif stop is None and now + slowest > self.deadline:
                    stop = f"the process's time limit (slowest cell {slowest:.0f} s)"
                if stop:
                    self.write({"item": item, **cell.spec, "skipped": stop})
                    continue
                try:
                    fn = cell.make()
                    t0 = time.perf_counter()
                    fn()
                    live.append((cell, fn, time.perf_counter() - t0, []))
                except Exception as exc:  # noqa: BLE001 - a failing cell is recorded, the others go on
                    self.write({"item": item, **cell.spec, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                slowest = max(slowest, time.perf_counter() - now)  # the warm-up, until the rounds are timed
            for _ in range(repeats):
                for _cell, fn, _first, times in live:
                    t0 = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - t0)
            for cell, _fn, first, times in live:
                slowest = max(slowest, first + sum(times))
                wall = statistics.median(times)
                self.write({"item": item, **cell.spec, "compile_s": max(first - wall, 0.0), "wall_s": wall,
                            "rate": cell.work / wall, "unit": cell.unit, "repeats": repeats, "load": load1()})


def _has_unroll(obj) -> bool:
    """Whether this jcalib knows ``unroll`` (an older checkout does not: its default only)."""
    import inspect

    if dataclasses.is_dataclass(obj):
        return any(f.name == "unroll" for f in dataclasses.fields(obj))
    return "unroll" in inspect.signature(obj).parameters


def bench_orca(rec: Recorder, s: dict) -> None:
    import jax

    import orca_throughput

    jcalib, f, nature = orca_throughput.setup(s["orca_steps"])
    if s.get("orca_small"):  # --quick: 10 bins and the quantile block alone compile in seconds
        from jcalib.distributions import uniform_edges

        edges = uniform_edges(10)
        f = dataclasses.replace(f, payoff=jcalib.payoffs.QuantileCalibration(9), edges=edges, spike_weights=(0.9,))
        nature = dataclasses.replace(nature, edges=edges)
    unrolls = s["orca_unrolls"] if _has_unroll(f) else [None]
    T, key = s["orca_rounds"], jax.random.key(0)

    def make(B, u):
        fu = f if u is None else dataclasses.replace(f, unroll=u)
        if B == 1:
            return lambda: jax.block_until_ready(jcalib.core.play(fu, nature, T, key=key).y)
        return lambda: jax.block_until_ready(jcalib.core.sweep(fu, nature, T, key=key, n_seeds=B).y)

    groups = [[Cell({"size": B, "unroll": u}, lambda B=B, u=u: make(B, u), B * T, "stream-rounds") for u in unrolls]
              for B in s["orca_batches"]]
    rec.run("orca", groups, s["repeats"])


def bench_aosa(rec: Recorder, s: dict) -> None:
    import jax

    import jcalib

    T = s["aosa_T"]
    f = jcalib.forecasters.AlmostOneStepAhead.for_horizon(T)
    nature = jcalib.natures.Bernoulli(0.3)

    def make(B):
        return lambda: jax.block_until_ready(
            jcalib.core.sweep(f, nature, T, key=jax.random.key(B), n_seeds=B, record="summary", progress=False))

    rec.run("aosa", [[Cell({"size": B, "unroll": None}, lambda B=B: make(B), B * T, "rounds")]
                     for B in s["aosa_batches"]], s["repeats"])


def bench_approachability(rec: Recorder, s: dict) -> None:
    import jax
    import numpy as np

    import approachability_throughput as at
    import jcalib

    T = s["approach_T"]
    f = jcalib.forecasters.ApproachabilityRecalibrator.for_horizon(T)
    q, y = at.model_stream(T, np.random.default_rng(0))
    nature = jcalib.natures.Replay(y, x=q)

    def make(B):
        return lambda: jax.block_until_ready(
            jcalib.core.sweep(f, nature, T, key=jax.random.key(0), n_seeds=B, record="summary", progress=False))

    rec.run("approachability", [[Cell({"size": B, "unroll": None}, lambda B=B: make(B), B * T, "rounds")]
                                for B in s["approach_batches"]], s["repeats"])


def bench_decision(rec: Recorder, s: dict) -> None:
    import jax

    import decision_calibration as dc
    from jcalib.metrics.decision import partition_search

    steps, key = s["decision_steps"], jax.random.key(1)
    from jcalib.metrics import PartitionSearch

    unrolls = s["decision_unrolls"]

    def make(n, c, u):
        probs, onehot, weights = dc._data(n, c)
        residual = onehot - probs
        search = PartitionSearch(n_restarts=16, n_steps=steps, unroll=u)
        return lambda: jax.block_until_ready(partition_search(
            probs, residual, weights, key=key, n_actions=2, search=search).value)

    groups = [[Cell({"size": f"N={n} C={c}", "unroll": u}, lambda n=n, c=c, u=u: make(n, c, u), steps,
                    "Adam steps (16 restarts)") for u in unrolls] for n, c in s["decision_sizes"]]
    rec.run("decision", groups, s["repeats"])


def bench_kernel_audit(rec: Recorder, s: dict) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import kernel_audit as ka
    from jcalib.metrics.kernel import kernel_audit_jit
    from jcalib.metrics import MultinomialKernel

    def make(n, k, d):
        v, y = ka._data(n, k)
        vj, yj = jnp.asarray(v), jnp.asarray(y)
        ker, sc = MultinomialKernel(d), float(np.sqrt(d + 1))
        return lambda: jax.block_until_ready(kernel_audit_jit(vj, yj, kernel=ker, s=sc, tile=512).value)

    rec.run("kernel_audit", [[Cell({"size": f"n={n} k={k} d={d}", "unroll": None}, lambda n=n, k=k, d=d: make(n, k, d),
                                   1, "audits")] for n, k, d in s["kernel_sizes"]], s["repeats"])


def bench_bootstrap(rec: Recorder, s: dict) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jcalib.metrics
    from jcalib.stats import bootstrap

    # --quick: the binned ECE, whose bootstrap compiles in a second (smooth ECE's: 20 s on 2 cores)
    name = s.get("bootstrap_statistic", "smooth_ece")
    statistic = getattr(jcalib.metrics, name)

    def make(n, b):
        rng = np.random.default_rng(0)  # the data of stats_bootstrap.py
        p = rng.random(n).astype(np.float32)
        y = (rng.random(n) < p**1.3).astype(np.int32)
        pj, yj = jnp.asarray(p), jnp.asarray(y)
        return lambda: jax.block_until_ready(
            bootstrap(statistic, pj, yj, key=jax.random.key(0), n_resamples=b).resamples)

    rec.run("bootstrap", [[Cell({"size": f"{name} n={n} B={b}", "unroll": None}, lambda n=n, b=b: make(n, b), b,
                                "resamples")] for n, b in s["bootstrap_sizes"]], s["repeats"])


def bench_train_step(rec: Recorder, s: dict) -> None:
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    n = s["train_steps"]

    def make():
        exp = _import_path("train_with_calibration_loss", ROOT / "experiments" / "train_with_calibration_loss.py")
        (X, y), _, _ = exp.load_digits_split(0)
        penalty = exp.penalties(int(y.max()) + 1)["smooth ECE"]
        model = eqx.nn.MLP(X.shape[1], int(y.max()) + 1, 128, depth=2, activation=jax.nn.relu, key=jax.random.key(0))
        params, static = eqx.partition(model, eqx.is_array)
        opt = optax.adamw(1e-3, weight_decay=1e-4)

        def objective(p):
            logits = jax.vmap(eqx.combine(p, static))(X)
            ce = jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))
            return ce + 0.5 * penalty(logits, y)

        @jax.jit
        def step(p, state):
            loss, grads = jax.value_and_grad(objective)(p)
            updates, state = opt.update(grads, state, p)
            return optax.apply_updates(p, updates), state, loss

        state0 = opt.init(params)

        def fn():
            p, st = params, state0
            for _ in range(n):  # one dispatch a step, as a training loop runs
                p, st, loss = step(p, st)
            jax.block_until_ready(loss)

        return fn

    spec = {"size": "digits n=1078, MLP 64-128-128-10", "unroll": None}
    rec.run("train_step", [[Cell(spec, make, n, "training steps")]], s["repeats"])


BENCH = {
    "orca": bench_orca, "aosa": bench_aosa, "approachability": bench_approachability, "decision": bench_decision,
    "kernel_audit": bench_kernel_audit, "bootstrap": bench_bootstrap, "train_step": bench_train_step,
}


def worker(config_path: str) -> None:
    """Run the items of a config (written by the parent) on this process's default device."""
    cfg = json.loads(Path(config_path).read_text())
    sys.path.insert(0, str(HERE))
    import jax

    import jcalib

    dev = jax.devices()[0]  # starts the backend (before any script import can touch JAX_PLATFORMS)
    rec = Recorder(cfg["lines"], cfg["worker"], cfg["settings"]["caps"], cfg["limit"])
    default = None
    try:
        from jcalib.core.optim import default_unroll

        default = default_unroll()
    except ImportError:
        pass
    rec.write({"env": True, "platform": dev.platform, "device_kind": dev.device_kind, "n_devices": jax.device_count(),
               "jax": jax.__version__, "jcalib": str(Path(jcalib.__file__).parent), "default_unroll": default,
               "xla_flags": os.environ.get("XLA_FLAGS", ""), "load": load1()})
    # ORCA last: the item with the most cells, so the process's time limit cuts its last cells
    # (written one by one) rather than a whole later item
    for item in sorted(cfg["items"], key=lambda i: i == "orca"):
        if item in cfg["settings"]["caps"]:
            BENCH[item](rec, cfg["settings"])


# ----------------------------------------------------------------------------------- parent


def run_worker(name: str, items, settings: dict, limit: float, lines: str, env_extra: dict, pythonpath=None) -> str:
    """One worker process; returns a note when it failed or ran out of time."""
    fd, config = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    Path(config).write_text(json.dumps({"worker": name, "items": list(items), "settings": settings, "lines": lines,
                                        "limit": limit}))
    env = dict(os.environ, **env_extra)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, os.environ.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    print(f"[{name}] started (limit {limit:.0f} s)", file=sys.stderr, flush=True)
    note = ""
    try:
        res = subprocess.run([sys.executable, __file__, "--worker", config], env=env, capture_output=True,
                             text=True, timeout=max(limit, 1.0))
        if res.returncode:
            note = f"{name}: exit {res.returncode}: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ''}"
    except subprocess.TimeoutExpired:
        note = f"{name}: stopped at its time limit of {limit:.0f} s; the cells it had not reached are missing"
    finally:
        os.remove(config)
    print(f"[{name}] done in {time.perf_counter() - t0:.0f} s{'; ' + note if note else ''}", file=sys.stderr,
          flush=True)
    return note


def _read(lines: str) -> tuple[list, dict]:
    """The workers' records so far, and their environment records by worker."""
    records = [json.loads(x) for x in Path(lines).read_text().splitlines() if x.strip()]
    return records, {r["worker"]: r for r in records if r.get("env")}


def _median_records(records: list) -> list:
    """One record per (worker, item, size, unroll): medians of rate, wall and compile over turns."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r["worker"], r["item"], str(r["size"]), str(r["unroll"])), []).append(r)
    out = []
    for group in groups.values():
        ok = [r for r in group if "rate" in r]
        if not ok:
            out.append(group[0])
            continue
        m = dict(ok[0])
        for k in ("rate", "wall_s", "compile_s", "load"):
            m[k] = statistics.median(r[k] for r in ok)
        m["turns"] = len(ok)
        out.append(m)
    return out


def _fmt(x, digits: int = 3) -> str:
    """``digits`` significant digits; 100 and above as integers, 10^5 and above as 1.23e5."""
    if x is None:
        return "—"
    if x >= 1e5:
        mant, exp = f"{x:.2e}".split("e")
        return f"{mant}e{int(exp)}"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def markdown(meta: dict, rows: list, notes: list) -> str:
    """The table: one row per figure, the ratios to the CPU and to the item's baseline."""
    envs = meta["workers"]
    lines = [
        f"# `benchmarks/gpu_suite.py` — {meta['date']}",
        "",
        f"Command: `{meta['command']}`; mode {meta['mode']}.  ",
        "Devices: " + "; ".join(f"{w}: {e['platform']} ({e['device_kind']}, {e['n_devices']} device(s))"
                                + (f", XLA_FLAGS `{e['xla_flags']}`" if e.get("xla_flags") else "")
                                for w, e in envs.items()) + ".  ",
        f"jax {', '.join(sorted({e['jax'] for e in envs.values()}))}; host {meta['host']}, {meta['cores']} cores; "
        f"1-minute load {meta['load_start']:.1f} at the start, {meta['load_end']:.1f} at the end; "
        "default unroll " + ", ".join(f"{w} {e.get('default_unroll')}" for w, e in envs.items()) + ".",
        "",
        "Throughput = work per call ÷ median wall time of a call after a warm-up; compile = the "
        "warm-up's excess over the median. × base: throughput ÷ the item's baseline in the same "
        "process (ORCA: B = 1, unroll = 1, no flags — for a flag set, the default device's; "
        "decision search: unroll = 1 at the same size). ÷ CPU: throughput ÷ the host CPU's at the "
        "same item, size and unroll (its own process, same run).",
        "",
        "| item | process | size | unroll | compile (s) | wall/call (s) | throughput | unit | × base | ÷ CPU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    index = {(r["worker"], r["item"], str(r["size"]), str(r["unroll"])): r for r in rows if "rate" in r}
    has_old = any(r["worker"] == "baseline" for r in rows)
    if has_old:
        lines[-2] += " ÷ old |"
        lines[-1] += " --- |"
    for r in rows:
        unroll = "default" if r["unroll"] is None else str(r["unroll"])
        head = f"| {r['item']} | {r['worker']} | {r['size']} | {unroll} |"
        if "rate" not in r:
            why = r.get("skipped") or r.get("error", "")
            lines.append(head + f" {why} |" + " |" * (6 if has_old else 5))
            continue
        base = None
        if r["item"] == "orca":
            w = r["worker"] if not r["worker"].startswith("device+") else "device"
            base = index.get((w, "orca", "1", "1"))
        elif r["item"] == "decision":
            base = index.get((r["worker"], "decision", str(r["size"]), "1"))
        cpu = None
        if r["worker"] != "cpu":
            cpu = index.get(("cpu", r["item"], str(r["size"]), str(r["unroll"])))
        cells = [_fmt(r["compile_s"], 2), _fmt(r["wall_s"]), _fmt(r["rate"]), r["unit"],
                 _fmt(r["rate"] / base["rate"]) if base else "—", _fmt(r["rate"] / cpu["rate"]) if cpu else "—"]
        if has_old:
            old = next((o for o in rows if o["worker"] == "baseline" and o["item"] == r["item"]
                        and str(o["size"]) == str(r["size"]) and "rate" in o), None)
            cells.append(_fmt(r["rate"] / old["rate"]) if old and r["worker"] != "baseline" else "—")
        lines.append(head + " " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: any machine, a CPU in about a minute")
    ap.add_argument("--out", default="results/gpu_suite/gpu_suite.json",
                    help="JSON file (the markdown table goes next to it, .md)")
    ap.add_argument("--items", nargs="+", choices=ITEMS, default=list(ITEMS))
    ap.add_argument("--orca-batches", type=int, nargs="+", help="ORCA's B on the default device")
    ap.add_argument("--orca-unrolls", type=int, nargs="+", help="ORCA's unroll values on the default device")
    ap.add_argument("--decision-sizes", type=int, nargs="+", metavar="N C",
                    help="the decision search's (N, C) pairs on the default device, flattened")
    ap.add_argument("--decision-unrolls", type=int, nargs="+", help="the decision search's unroll values")
    ap.add_argument("--decision-steps", type=int, help="Adam steps per timed call of the decision search")
    ap.add_argument("--repeats", type=int, help="timed rounds after the warm-up (default 3; quick: 1)")
    ap.add_argument("--no-limits", action="store_true",
                    help="no item caps, process limits or budget (a measurement where time is no object)")
    ap.add_argument("--flag-set", action="append", default=None, metavar="NAME=FLAGS",
                    help="an XLA flag set to measure ORCA under (GPU only; repeatable; default: "
                         + "; ".join(f"{k}={v}" for k, v in FLAG_SETS.items()) + "; 'none' for none)")
    ap.add_argument("--no-cpu", action="store_true", help="skip the host-CPU process")
    ap.add_argument("--baseline-path", default=None, help="another jcalib checkout, measured in turns with this one")
    ap.add_argument("--turns", type=int, default=1, help="with --baseline-path: old/new process pairs (default 1)")
    ap.add_argument("--budget-s", type=float, default=None, help="wall-time budget of the whole run (default: "
                    "470 s, 8 minutes less start-up; quick: 600 s)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0

    t_start = time.perf_counter()
    mode = "quick" if args.quick else "full"
    cfg = json.loads(json.dumps(SETTINGS[mode]))  # a copy
    if args.orca_batches:
        cfg["device"]["orca_batches"] = args.orca_batches
    if args.orca_unrolls:
        cfg["device"]["orca_unrolls"] = args.orca_unrolls
    if args.decision_sizes:
        if len(args.decision_sizes) % 2:
            ap.error("--decision-sizes takes N C pairs")
        cfg["device"]["decision_sizes"] = [args.decision_sizes[i:i + 2] for i in range(0, len(args.decision_sizes), 2)]
    if args.decision_unrolls:
        cfg["device"]["decision_unrolls"] = args.decision_unrolls
    for part in ("device", "flags", "cpu"):
        if args.repeats:
            cfg[part]["repeats"] = args.repeats
        if args.decision_steps and part != "flags":
            cfg[part]["decision_steps"] = args.decision_steps
    if args.no_limits:
        for part in ("device", "flags", "cpu"):
            cfg[part]["caps"] = {k: 1e9 for k in cfg[part]["caps"]}
        cfg["limits"] = {k: 1e6 for k in cfg["limits"]}  # 11 days (a poll timeout in ms must fit an int)
    budget = 1e6 if args.no_limits else args.budget_s or (600.0 if args.quick else 470.0)
    flag_sets = dict(FLAG_SETS)
    if args.flag_set is not None:
        flag_sets = {}
        for spec in args.flag_set:
            if spec != "none":
                name, _, flags = spec.partition("=")
                flag_sets[name] = flags
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, lines = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    notes, load_start = [], load1()
    limits = cfg["limits"]

    def remaining():
        return budget - (time.perf_counter() - t_start)

    def run(name, items, settings, limit, env=None, pythonpath=None):
        left = remaining()
        if left < 5:
            notes.append(f"{name}: not run, the run's budget of {budget:.0f} s was spent")
            return
        note = run_worker(name, items, settings, min(limit, left), lines, env or {}, pythonpath)
        if note:
            notes.append(note)

    for turn in range(args.turns if args.baseline_path else 1):
        if args.baseline_path:
            run("baseline", args.items, cfg["device"], limits["baseline"], pythonpath=args.baseline_path)
        run("device", args.items, cfg["device"], limits["device"], pythonpath=str(ROOT))
    platform_ = _read(lines)[1].get("device", {}).get("platform")
    if "orca" in args.items and flag_sets:
        if platform_ == "gpu":
            for name, flags in flag_sets.items():
                env = {"XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()}
                run(f"device+{name}", ["orca"], cfg["flags"], limits["flags"], env=env, pythonpath=str(ROOT))
        else:
            notes.append(f"XLA flag sets skipped: GPU-only, and the default device is {platform_ or 'unknown'} "
                         f"({', '.join(flag_sets)})")
    if not args.no_cpu:
        items, settings = args.items, cfg["cpu"]
        if platform_ == "cpu":  # the same device twice: one cell checks the comparison's plumbing
            items = args.items[:1]
            settings = dict(settings, orca_batches=settings["orca_batches"][:1], orca_unrolls=[1])
            notes.append(f"the default device is the host CPU: the second (CPU) process ran only {items[0]}'s "
                         "first cell")
        run("cpu", items, settings, limits["cpu"], env={"JAX_PLATFORMS": "cpu"}, pythonpath=str(ROOT))
    records, envs = _read(lines)
    os.remove(lines)
    order = {w: i for i, w in enumerate(dict.fromkeys(r["worker"] for r in records))}
    figures = sorted(_median_records([r for r in records if not r.get("env")]),
                     key=lambda r: (order[r["worker"]], ITEMS.index(r["item"]), r.get("cell", 0)))
    for item in args.items:
        if not any(r["item"] == item for r in figures):
            notes.append(f"{item}: no figure (its process did not reach it)")
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])),
        "mode": mode, "host": platform.processor() or platform.machine(), "cores": os.cpu_count(),
        "load_start": load_start, "load_end": load1(), "wall_s": time.perf_counter() - t_start,
        "budget_s": budget, "flag_sets": flag_sets, "settings": cfg, "workers": envs,
    }
    out.write_text(json.dumps({"meta": meta, "records": figures, "raw": records, "notes": notes}, indent=1))
    table = markdown(meta, figures, notes)
    out.with_suffix(".md").write_text(table)
    print(table)
    print(f"wrote {out} and {out.with_suffix('.md')} in {meta['wall_s']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    sys.exit(main())

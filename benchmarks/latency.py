"""First-call latency: what a user waits for the first answer of each entry point, and why.

Each entry point runs in a fresh process (an empty persistent compilation cache unless
``--warm-cache``): the first call (compilation included) and a second call on new data of the
same shapes, timed, with JAX's own counters (``jax.monitoring``) for the first call: XLA
compilations (``/jax/core/compile/backend_compile_duration`` events) and their seconds, jaxpr
traces and their seconds, and persistent-cache hits. ``demo`` and ``demo_tiny`` run the command
line (``python -m jcalib.cli demo``) as a whole; ``demo_warm`` and ``demo_tiny_warm`` run it twice
on one cache folder and one output folder, as ``make demo`` twice does (the second run reads back
the programs and the certified distances of the first), and report the second run (and the
first's time).

With ``--old PATH`` (a source tree of an earlier commit, e.g. a ``git worktree``), every entry
point runs in the old tree and the new one in alternating fresh processes (``PYTHONPATH``), and
the table gives new / old. The 1-minute load average is printed with every row: the machine may
be shared, so compare rows measured side by side.

Usage:
    python benchmarks/latency.py                       # every entry point but the full demo
    python benchmarks/latency.py --quick               # a subset, about a minute
    python benchmarks/latency.py --only smooth_ece --only demo_tiny
    python benchmarks/latency.py --old /tmp/old        # old against new, alternating
    python benchmarks/latency.py --only demo --only demo_warm --old /tmp/old   # make demo's cost
    python benchmarks/latency.py --only demo --by-program   # where the demo's compile time goes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ---- the entry points: name -> (setup, where setup(jcalib-modules) returns call(i) for data i) --


def _binary(i, n=10_000):
    import numpy as np

    rng = np.random.default_rng(i)
    p = rng.uniform(0.01, 0.99, n).astype(np.float32)
    return p, (rng.uniform(size=n) < p**1.3).astype(np.int32)


def _multiclass(i, n=2000, C=10):
    import numpy as np

    rng = np.random.default_rng(i)
    logits = rng.normal(size=(n, C)).astype(np.float32) * 2
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = np.array([rng.choice(C, p=q / q.sum()) for q in probs.astype(np.float64)], np.int32)
    return probs.astype(np.float32), labels


def _two_col(p):
    import numpy as np

    return np.stack([1 - p, p], axis=1)


def _key(i):
    import jax

    return jax.random.key(i)


def _metric(name, data=_binary, **kw):
    def setup():
        import jcalib.metrics as M

        fn = getattr(M, name)
        return lambda i: fn(*data(i), **kw)

    return setup


def _test(name, needs_key=False, **kw):
    def setup():
        import jcalib.stats as S

        fn = getattr(S, name)
        extra = (lambda i: {"key": _key(i)}) if needs_key else (lambda i: {})
        return lambda i: fn(*_binary(i, 5000), **extra(i), **kw)

    return setup


def _consistency():
    import jcalib.metrics as M
    import jcalib.stats as S

    return lambda i: S.consistency_test(M.binned_ece, *_binary(i, 5000), key=_key(i)).p_value


def _pit():
    import numpy as np

    import jcalib.stats as S

    return lambda i: S.pit_uniformity_test(np.random.default_rng(i).uniform(size=2000).astype(np.float32)).p_value


def _bootstrap(method, n, n_resamples):
    def setup():
        import jcalib.metrics as M
        import jcalib.stats as S

        return lambda i: S.bootstrap(M.smooth_ece, *_binary(i, n), key=_key(i), n_resamples=n_resamples, method=method).high

    return setup


def _recal(cls, binary=False, needs_key=False, **kw):
    def setup():
        import jcalib.recalibration as R

        method = getattr(R, cls)(**kw)

        def call(i):
            probs, labels = (_two_col(_binary(i, 2000)[0]), _binary(i, 2000)[1]) if binary else _multiclass(i)
            extra = {"key": _key(i)} if needs_key else {}
            return method.fit(probs, labels, **extra)(probs)

        return call

    return setup


def _play(forecaster, T, sweep=False, nature=None):
    """``play``/``sweep`` of ``forecaster`` against Bernoulli natures (a binary forecaster's
    sweep records a grid summary), or against ``nature(N)`` (twice in a sweep) with histories."""
    def setup():
        import jcalib.core as C
        import jcalib.forecasters as F
        import jcalib.natures as N

        f = forecaster(F)
        if sweep and nature is not None:
            return lambda i: C.sweep(f, [nature(N), nature(N)], T, key=_key(i), n_seeds=8, progress=False).y
        if sweep:
            return lambda i: C.sweep(f, [N.Bernoulli(0.3), N.Bernoulli(0.6)], T, key=_key(i), n_seeds=8,
                                     record="summary", n_bins=10, progress=False).counts
        return lambda i: C.play(f, N.Bernoulli(0.3) if nature is None else nature(N), T, key=_key(i),
                                progress=False).y

    return setup


def _approachability():
    import jcalib.core as C
    import jcalib.forecasters as F
    import jcalib.natures as N

    f = F.ApproachabilityRecalibrator(n_bins=10, step_size=0.05)
    return lambda i: C.play(f, N.DistortedModel(slope=2.0), 1000, key=_key(i), progress=False).forecast


def _decision():
    import jcalib.metrics as M

    return lambda i: M.decision_calibration_error(*_multiclass(i, 1000, 4), 2, key=_key(i)).value


def _orca(F):
    from jcalib.distributions import uniform_edges
    from jcalib.payoffs import QuantileCalibration

    return F.ORCA(payoff=QuantileCalibration(9), edges=uniform_edges(10), n_steps=100)


def _interval(N):
    """The real-outcome nature ORCA plays (its outcomes on [0, 1], ten cells)."""
    return N.IIDInterval.skewed(10)


ENTRY_POINTS = {
    "binned_ece": _metric("binned_ece"),
    "smooth_ece": _metric("smooth_ece"),
    "top_label_ece": _metric("top_label_ece", data=_multiclass),
    "classwise_ece": _metric("classwise_ece", data=_multiclass),
    "spiegelhalter_test": _test("spiegelhalter_test"),
    "ks_test": _test("ks_test"),
    "kuiper_test": _test("kuiper_test"),
    "consistency_test": _consistency,
    "skce_test": _test("skce_test", needs_key=True),
    "cme_test": _test("cme_test", needs_key=True),
    "pit_uniformity_test": _pit,
    "bootstrap_percentile": _bootstrap("percentile", 20_000, 1000),
    "bootstrap_bca": _bootstrap("bca", 20_000, 1000),
    "bootstrap_bca_small": _bootstrap("bca", 2000, 1000),
    "TemperatureScaling": _recal("TemperatureScaling"),
    "VectorScaling": _recal("VectorScaling"),
    "MatrixScaling": _recal("MatrixScaling"),
    "DirichletCalibration": _recal("DirichletCalibration"),
    "PlattScaling": _recal("PlattScaling", binary=True),
    "BetaCalibration": _recal("BetaCalibration", binary=True),
    "HistogramBinning": _recal("HistogramBinning", binary=True),
    "IsotonicCalibration": _recal("IsotonicCalibration", binary=True),
    "DecisionCalibration": _recal("DecisionCalibration", needs_key=True, n_actions=2, n_stages=5),
    "KernelCalibration": _recal("KernelCalibration"),
    "play_aosa": _play(lambda F: F.AlmostOneStepAhead(n_bins=10), 1000),
    "sweep_aosa": _play(lambda F: F.AlmostOneStepAhead(n_bins=10), 1000, sweep=True),
    "play_orca": _play(_orca, 100, nature=_interval),
    "sweep_orca": _play(_orca, 100, sweep=True, nature=_interval),
    "approachability": _approachability,
    "decision_calibration_error": _decision,
}
DEMOS = {
    "demo_tiny": ["demo", "--T", "100", "400", "--seeds", "4", "--no-progress"],
    "demo": ["demo", "--no-progress"],
}
QUICK = ["binned_ece", "smooth_ece", "spiegelhalter_test", "bootstrap_percentile", "TemperatureScaling",
         "play_aosa", "sweep_aosa", "demo_tiny"]
DEFAULT = [*ENTRY_POINTS, "demo_tiny"]
ALL = [*ENTRY_POINTS, *DEMOS, "demo_tiny_warm", "demo_warm"]

# ---- the child: one entry point in this process -------------------------------------------------


class _Counts:
    """jax.monitoring's compile events, summed (and by program with ``by_program``)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.n_compile = self.n_trace = self.cache_hits = 0
        self.compile_s = self.trace_s = self.lower_s = 0.0
        self.programs: dict[str, list] = {}

    def on_event(self, event, **kw):
        if event == "/jax/compilation_cache/cache_hits":
            self.cache_hits += 1

    def on_duration(self, event, duration, **kw):
        name = kw.get("fun_name", "?")
        if event == "/jax/core/compile/backend_compile_duration":
            self.n_compile += 1
            self.compile_s += duration
            row = self.programs.setdefault(name, [0, 0.0, 0, 0.0])
            row[0] += 1
            row[1] += duration
        elif event == "/jax/core/compile/jaxpr_trace_duration":
            self.n_trace += 1
            self.trace_s += duration
            row = self.programs.setdefault(name, [0, 0.0, 0, 0.0])
            row[2] += 1
            row[3] += duration
        elif event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            self.lower_s += duration

    def as_dict(self, by_program: bool):
        d = dict(n_compile=self.n_compile, compile_s=self.compile_s, n_trace=self.n_trace, trace_s=self.trace_s,
                 lower_s=self.lower_s, cache_hits=self.cache_hits)
        if by_program:
            d["programs"] = sorted(([k, *v] for k, v in self.programs.items()), key=lambda r: -(r[2] + r[4]))[:15]
        return d


def _child(name: str, by_program: bool) -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.monitoring

    counts = _Counts()
    jax.monitoring.register_event_listener(counts.on_event)
    jax.monitoring.register_event_duration_secs_listener(counts.on_duration)
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):  # the same cache settings for old and new trees
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    t0 = time.perf_counter()
    call = ENTRY_POINTS[name]()
    import_s = time.perf_counter() - t0
    out = {}
    for i, label in enumerate(("first", "second")):
        counts.reset()
        t0 = time.perf_counter()
        jax.block_until_ready(call(i))
        out[label + "_s"] = time.perf_counter() - t0
        out[label] = counts.as_dict(by_program and i == 0)
    out["import_s"] = import_s
    print("LATENCY " + json.dumps(out))


def _demo_child(argv: list[str], by_program: bool) -> None:
    """``jcalib demo`` in this process as ``make demo`` runs it (``python -m jcalib.cli``: the
    module is ``__main__``), counted (the distance workers, if any, are not)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.monitoring

    counts = _Counts()
    jax.monitoring.register_event_listener(counts.on_event)
    jax.monitoring.register_event_duration_secs_listener(counts.on_duration)

    t0 = time.perf_counter()
    import contextlib
    import io
    import runpy

    sys.argv = ["jcalib", *argv]
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            runpy.run_module("jcalib.cli", run_name="__main__", alter_sys=True)
        except SystemExit as done:
            if done.code:
                raise
    wall = time.perf_counter() - t0
    print("LATENCY " + json.dumps({"first_s": wall, "first": counts.as_dict(by_program)}))


# ---- the parent ---------------------------------------------------------------------------------


_KEEP: Path | None = None


def _load() -> float:
    return os.getloadavg()[0]


def _run(name: str, tree: Path, cache: str, by_program: bool, timeout: float, out: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), JAX_COMPILATION_CACHE_DIR=cache)
    env.setdefault("JAX_PLATFORMS", "cpu")
    demo = DEMOS.get(name)
    with tempfile.TemporaryDirectory() as out_dir:
        if demo is not None and _KEEP is not None:  # --keep-output: the demo's files stay
            out_dir = str(_KEEP / f"{name}-{tree.name}")
        out_dir = out or out_dir
        if demo is not None:
            args = ["--demo-child", json.dumps([*demo, "--out", out_dir])]
        else:
            args = ["--child", name]
        cmd = [sys.executable, str(Path(__file__).resolve()), *args] + (["--by-program"] if by_program else [])
        load = _load()
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=tree)
        except subprocess.TimeoutExpired:
            return {"error": f"over {timeout:.0f} s", "load": load, "process_s": time.perf_counter() - t0}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("LATENCY ")]
    if proc.returncode or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)[:300], "load": load}
    res = json.loads(lines[-1][len("LATENCY "):])
    res["load"] = load
    res["process_s"] = time.perf_counter() - t0
    return res


def _measure(name, tree, by_program, timeout, keep_cache: str | None):
    """One measurement; ``demo_warm`` (``demo_tiny_warm``) runs the demo twice, as ``make demo``
    twice does (one compilation cache, one output folder, whose ``distances.json`` the second
    run reads back), and keeps the second."""
    with tempfile.TemporaryDirectory(prefix="jcalib-xla-") as fresh, tempfile.TemporaryDirectory() as out:
        cache = keep_cache or fresh
        if name.endswith("_warm"):
            cold = _run(name.removesuffix("_warm"), tree, cache, False, timeout, out)
            warm = _run(name.removesuffix("_warm"), tree, cache, by_program, timeout, out)
            warm["cold_first_s"] = cold.get("first_s", float("nan"))
            return warm
        return _run(name, tree, cache, by_program, timeout)


def _fmt_row(name, which, r):
    if "error" in r:
        return f"| {name} | {which} | {r['error']} | | | | | {r['load']:.1f} |"
    f = r["first"]
    second = f"{r['second_s']:.3f}" if "second_s" in r else "—"
    if "cold_first_s" in r:  # demo_warm: the run on an empty cache, then the one reading it back
        second = f"(cold run before it: {r['cold_first_s']:.1f})"
    return (f"| {name} | {which} | {r['first_s']:.2f} | {second} | {f['n_compile']} ({f['cache_hits']} cached) | "
            f"{f['compile_s']:.1f} | {f['n_trace']} / {f['trace_s']:.1f} | {r['load']:.1f} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", choices=ALL, help="run this entry point (repeatable)")
    p.add_argument("--quick", action="store_true", help=f"a subset: {', '.join(QUICK)}")
    p.add_argument("--old", type=Path, help="an older source tree: run it and this one alternately and give ratios")
    p.add_argument("--repeats", type=int, default=1, help="alternating (old, new) pairs per entry point")
    p.add_argument("--warm-cache", metavar="DIR", help="use this persistent cache folder instead of an empty one")
    p.add_argument("--by-program", action="store_true", help="list the programs that take the most compile time")
    p.add_argument("--timeout", type=float, default=1200, help="seconds per process (default 1200)")
    p.add_argument("--json", type=Path, help="also write the measurements here")
    p.add_argument("--keep-output", type=Path, help="write the demos' results under this folder")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--demo-child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        _child(a.child, a.by_program)
        return 0
    if a.demo_child:
        _demo_child(json.loads(a.demo_child), a.by_program)
        return 0
    global _KEEP
    _KEEP = a.keep_output
    names = a.only or (QUICK if a.quick else DEFAULT)
    trees = [("old", a.old.resolve()), ("new", ROOT)] if a.old else [("new", ROOT)]
    print(f"# first-call latency, {os.cpu_count()} CPUs, JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS', 'cpu')}, "
          f"{'warm cache ' + a.warm_cache if a.warm_cache else 'empty persistent cache per process'}")
    print("| entry point | tree | first call s | second call s | XLA compiles (cache hits) | compile s "
          "| traces / s | load |")
    print("|---|---|---|---|---|---|---|---|")
    results: dict = {}
    for name in names:
        for _ in range(a.repeats):
            for which, tree in trees:
                r = _measure(name, tree, a.by_program, a.timeout, a.warm_cache)
                results.setdefault(name, {}).setdefault(which, []).append(r)
                print(_fmt_row(name, which, r), flush=True)
                for prog in r.get("first", {}).get("programs", []):
                    print(f"|   {prog[0][:60]} | | compiles {prog[1]} ({prog[2]:.1f} s), traces {prog[3]} ({prog[4]:.1f} s) | | | | | |")
    if a.old:
        print("\n| entry point | first call new / old | second call new / old |")
        print("|---|---|---|")
        for name, by in results.items():
            ok = lambda rs: [r for r in rs if "error" not in r]  # noqa: E731
            old, new = ok(by.get("old", [])), ok(by.get("new", []))
            if not old or not new:
                print(f"| {name} | — | — |")
                continue
            med = lambda rs, k: sorted(r[k] for r in rs)[len(rs) // 2]  # noqa: E731
            second = (f"{med(new, 'second_s') / med(old, 'second_s'):.2f}" if "second_s" in new[0] else "—")
            print(f"| {name} | {med(new, 'first_s') / med(old, 'first_s'):.2f} | {second} |")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

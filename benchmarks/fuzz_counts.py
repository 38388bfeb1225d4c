"""Counts of the public API's bad-input fuzz (``tests/fuzz.py``, examples in
``tests/fuzz_examples.py``): for invalid inputs, plain and under ``jax.jit``, how many got a
clear error, an obscure error, a silent value, a crash or a hang (and by package); for valid
but unusual inputs, how many were refused; and how many public callables are covered.

Usage (from the repository root)::

    PYTHONPATH=$PWD python benchmarks/fuzz_counts.py [--full] [--list] [--report DIR] [--json FILE]

The default is the CI sample of ``tests/test_fuzz.py``; ``--full`` runs every input (the
``slow`` test). ``--list`` prints every failing input; ``--report DIR`` writes them to
``DIR/A.txt`` (metrics, scoring, losses, stats, recalibration, config) and ``DIR/B.txt`` (the
other packages). The fuzz is read from the ``tests`` folder next to this script, the library
from ``PYTHONPATH``, so an older checkout can be measured with the same fuzz:
``PYTHONPATH=/path/to/old python benchmarks/fuzz_counts.py --full``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import jax  # noqa: E402

import fuzz  # noqa: E402

GROUP_A = ("metrics", "scoring", "losses", "stats", "recalibration", "config")


def _row(name, d, kinds):
    return f"| {name} | " + " | ".join(f"{d.get(k, 0):,}" for k in ("total",) + kinds) + " |"


def render(t: dict, n_callables: int, n_fuzzed: int, n_targets: int, seconds: float) -> str:
    inv, val = t["invalid"], t["valid"]
    lines = [
        f"public callables: {n_callables} (every one has an example; {n_fuzzed} take inputs to mutate); "
        f"targets with methods: {n_targets}; inputs: {sum(d['total'] for d in inv.values()) + sum(d['total'] for d in val.values()):,} "
        f"({seconds:.0f} s)",
        "",
        "| invalid inputs | total | clear error | obscure error | silent number or NaN | crash | hang |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        _row("plain calls", inv["plain"], fuzz.INVALID_KINDS),
        _row("under `jax.jit`", inv["jit"], fuzz.INVALID_KINDS),
        "",
        "| valid but unusual inputs | total | accepted | refused | crash | hang |",
        "| --- | --- | --- | --- | --- | --- |",
        _row("plain calls", val["plain"], fuzz.VALID_KINDS),
        _row("under `jax.jit`", val["jit"], fuzz.VALID_KINDS),
        "",
        "| package (invalid, plain) | total | clear | obscure | silent | crash | hang |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [_row(p, d, fuzz.INVALID_KINDS) for p, d in sorted(t["by_package"].items())]
    return "\n".join(lines)


def report(outcomes, folder: Path) -> None:
    """Failing inputs, one a line, to ``folder/A.txt`` and ``folder/B.txt`` (the time on top)."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    lines = fuzz.failures(outcomes)
    for name, keep in (("A", lambda t: t.split(".")[0] in GROUP_A), ("B", lambda t: t.split(".")[0] not in GROUP_A)):
        mine = [ln for ln, o in zip(lines, [o for o in outcomes if o.kind not in ("clear", "accepted")]) if keep(o.case.target)]
        (folder / f"{name}.txt").write_text(f"# fuzz failures, {stamp} ({len(mine)} inputs)\n" + "\n".join(mine) + "\n")


def compare(before: str, after: str) -> int:
    """The tables of two runs (``--json`` files) over the inputs both ran."""
    runs = [json.loads(Path(p).read_text()) for p in (before, after)]
    common = set(runs[0]["outcomes"]) & set(runs[1]["outcomes"])
    cases = {c.id: c for t in fuzz.targets() for c in fuzz.cases_of(t)}
    common = [i for i in common if i in cases]
    for name, run in zip(("before", "after"), runs):
        outcomes = [fuzz.Outcome(cases[i], run["outcomes"][i], "") for i in sorted(common)]
        print(f"## {name} ({len(common)} inputs run by both)\n")
        print(render(fuzz.table(outcomes), run["callables"], run["fuzzed"], len(fuzz.targets()), 0.0) + "\n")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="every input (the slow test)")
    ap.add_argument("--list", action="store_true", help="print every failing input")
    ap.add_argument("--report", default="", help="write failing inputs to DIR/A.txt and DIR/B.txt")
    ap.add_argument("--json", default="", help="write the counts to this file")
    ap.add_argument("--only", default="", help="comma-separated target prefixes (e.g. metrics,core.play)")
    ap.add_argument("--limit", type=int, default=0, help="run only the first LIMIT inputs of the fixed-seed order")
    ap.add_argument("--start", type=int, default=0, help="skip the first START inputs of that order (split a run over processes)")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print both runs' tables over the inputs both ran (JSON files)")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    jax.config.update("jax_numpy_dtype_promotion", "strict")  # as the test suite runs
    jax.config.update("jax_numpy_rank_promotion", "raise")
    t0 = time.perf_counter()
    targets = fuzz.targets()
    if args.only:
        targets = [t for t in targets if any(t.startswith(p) for p in args.only.split(","))]
    cases, broken = [], []
    for t in targets:
        try:
            cases += fuzz.cases_of(t)
        except Exception as e:  # noqa: BLE001 - an example that an older checkout cannot build
            broken.append(f"{t}: {type(e).__name__}: {e}")
    cases = fuzz.shuffled(cases) if args.full else fuzz.ci_sample(cases)
    if args.limit:
        cases = cases[: args.limit]
    cases = cases[args.start:]
    publics = fuzz.public_callables()
    fuzzed = sum(1 for t, _ in publics if fuzz.example_of(t) is not None and fuzz.example_of(t).fn is not None)

    def save(outcomes):
        if args.report:
            report(outcomes, Path(args.report))
        if args.json:
            Path(args.json).write_text(json.dumps({"table": fuzz.table(outcomes), "callables": len(publics), "fuzzed": fuzzed,
                                                   "inputs": len(outcomes), "of": len(cases),
                                                   "failures": fuzz.failures(outcomes),
                                                   "outcomes": {o.case.id: o.kind for o in outcomes}}, indent=1))

    outcomes = []
    with fuzz.Isolated() as iso:
        for i, c in enumerate(cases):
            outcomes.append(iso.classify(c) if c.isolate else fuzz.classify(c))
            if i % 250 == 249:
                print(f"... {i + 1}/{len(cases)} inputs ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
                save(outcomes)  # a prefix of the fixed-seed order is a uniform sample: usable if stopped
    save(outcomes)
    print(render(fuzz.table(outcomes), len(publics), fuzzed, len(targets), time.perf_counter() - t0))
    if broken:
        print(f"\nexamples that could not be built ({len(broken)}):\n" + "\n".join(broken))
    if args.list:
        print("\n" + "\n".join(fuzz.failures(outcomes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

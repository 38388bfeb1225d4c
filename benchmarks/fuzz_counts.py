"""Counts of the public API's bad-input battery (``tests/fuzz.py``): inputs, clear errors,
obscure errors, silent values, valid NumPy scalars accepted.

Usage::

    PYTHONPATH=$PWD python benchmarks/fuzz_counts.py [--full] [--list obscure,silent]

``--full`` runs every bad value of every role (the ``slow`` test); the default is the CI
battery of ``tests/test_fuzz.py``. ``--list`` prints the inputs of the given kinds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import jax  # noqa: E402

import fuzz  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="every bad value of every role")
    ap.add_argument("--list", default="", help="comma-separated kinds whose inputs to print")
    args = ap.parse_args(argv)
    jax.config.update("jax_numpy_dtype_promotion", "strict")  # as the test suite runs
    jax.config.update("jax_numpy_rank_promotion", "raise")
    t0 = time.perf_counter()
    outcomes = [fuzz.classify(c) for c in fuzz.cases(full=args.full)]
    c = fuzz.counts(outcomes)
    kinds = {k for k in args.list.split(",") if k}
    for o in outcomes:
        if o.kind in kinds:
            print(f"{o.kind:8s} {o.case.target}({o.case.param}: {o.case.bad}) -> {o.detail}")
    print(f"uncovered callables: {', '.join(fuzz.uncovered()) or 'none'}")
    print(
        f"inputs {c['inputs']}  clear {c['clear']}  obscure {c['obscure']}  silent {c['silent']}  "
        f"numpy-scalars-accepted {c['accepted']}  ({time.perf_counter() - t0:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Compilations of `play` for new values of float hyperparameters (after a first, compiling value).

Core v2 turns Python numbers in non-static fields into traced arrays, so the expected count is 0.

    python benchmarks/recompiles.py
"""

import jax, jcalib
n = [0]
jax.monitoring.register_event_duration_secs_listener(lambda e, d, **kw: n.__setitem__(0, n[0] + (e == "/jax/core/compile/backend_compile_duration")))
F, N = jcalib.forecasters, jcalib.natures
for rec in ("full", "summary"):
    for name, mk in [("Bernoulli(p)", lambda v: (F.AlmostOneStepAhead(n_bins=10), N.Bernoulli(v))),
                     ("Constant(p)", lambda v: (F.Constant(v), N.Bernoulli(0.5))),
                     ("Defensive bandwidth", lambda v: (F.DefensiveForecaster(n_grid=10, bandwidth=v), N.Bernoulli(0.5)))]:
        f, nat = mk(0.1)
        jcalib.play(f, nat, 25, jax.random.key(0), record=rec, grid=10)  # first value: compiles
        n[0] = 0
        for v in (0.2, 0.3, 0.45):
            f, nat = mk(v)
            jcalib.play(f, nat, 25, jax.random.key(0), record=rec, grid=10)
        print(f"{rec:8s} {name:20s} compilations for 3 new values: {n[0]}")

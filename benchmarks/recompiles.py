"""Compilations for new values of float hyperparameters (after a first, compiling value).

1. ``play`` with new values of float settings of forecasters and natures (``Bernoulli(p)``,
   ``Constant(p)``, a bandwidth): Core v2 turns Python numbers in non-static fields into traced
   arrays, so the expected count is 0.
2. The decision-calibration witness search (``partition_search``, Zhao et al. 2021) and the metric
   that wraps it, for new learning rates / scales, and a decision-recalibration fit for new ridges:
   traced since Core v2 (0 compilations); static jit arguments before (one per value).

Run it on an older checkout to see "before" (the script only uses names that exist there).

    python benchmarks/recompiles.py
"""

import jax
import jax.numpy as jnp

import jcalib
from jcalib.metrics import PartitionSearch, decision_calibration_error
from jcalib.metrics.decision import partition_search
from jcalib.recalibration import DecisionCalibration

n = [0]
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **kw: n.__setitem__(0, n[0] + (e == "/jax/core/compile/backend_compile_duration"))
)


def count(run, first, values):
    run(first)  # compiles
    n[0] = 0
    for v in values:
        jax.block_until_ready(run(v))
    return n[0]


F, N = jcalib.forecasters, jcalib.natures
for rec in ("full", "summary"):
    for name, mk in [("Bernoulli(p)", lambda v: (F.AlmostOneStepAhead(n_bins=10), N.Bernoulli(v))),
                     ("Constant(p)", lambda v: (F.Constant(v), N.Bernoulli(0.5))),
                     ("Defensive bandwidth", lambda v: (F.DefensiveForecaster(n_grid=10, bandwidth=v), N.Bernoulli(0.5)))]:
        c = count(lambda v: jcalib.core.play(*mk(v), 25, key=jax.random.key(0), record=rec, n_bins=10), 0.1, (0.2, 0.3, 0.45))
        print(f"play {rec:8s} {name:28s} compilations for 3 new values: {c}")

probs = jax.nn.softmax(jax.random.normal(jax.random.key(1), (500, 4)), axis=1)
labels = jax.random.categorical(jax.random.key(2), jnp.log(probs))
residual = jax.nn.one_hot(labels, 4, dtype=probs.dtype) - probs
weights = jnp.full((500,), 1.0 / 500, probs.dtype)
lrs = (2e-2, 5e-2, 1e-1)
c = count(lambda lr: partition_search(probs, residual, weights, key=jax.random.key(0), n_actions=2,
                                      search=PartitionSearch(4, 50, learning_rate=lr)), 1e-2, lrs)
print(f"partition_search, learning_rate            compilations for 3 new values: {c}")
c = count(lambda s: partition_search(probs, residual, weights, key=jax.random.key(0), n_actions=2,
                                     search=PartitionSearch(4, 50, scale=s)), 100.0, (10.0, 30.0, 300.0))
print(f"partition_search, scale                    compilations for 3 new values: {c}")
c = count(lambda lr: decision_calibration_error(probs, labels, 2, key=jax.random.key(0),
                                                search=PartitionSearch(4, 50, learning_rate=lr)).value, 1e-2, lrs)
print(f"decision_calibration_error, learning_rate  compilations for 3 new values: {c}")
fit = lambda r: DecisionCalibration(n_stages=2, search=PartitionSearch(2, 20, objective="squared"),  # noqa: E731
                                    ridge=r).fit(probs, labels, key=jax.random.key(0)).adjustment
fit(1e-6)  # the first call compiles the stage
c = count(fit, 1e-6, (1e-5, 1e-4, 1e-3))
print(f"DecisionCalibration.fit, ridge             compilations for 3 new values: {c}")
c = count(fit, 1e-6, (1e-6, 1e-6, 1e-6))
print(f"DecisionCalibration.fit, same ridge again  compilations for 3 repeated calls: {c}")

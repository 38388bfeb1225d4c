"""Where the time of one ORCA round goes: one Adam step of the inner problem per payoff block.

ORCA (Marx et al. 2024, Algorithm 2) spends each round in ``n_steps`` Adam steps on its objective
(:meth:`jcalib.forecasters.ORCA.objective`: the expected payoff under each of the 50
uniform-on-bin nature components, projected on the direction $c$, then a log-sum-exp). This
script times those steps for each block of the experiment payoff on its own and for the whole
payoff, with B streams vmapped, and the once-per-round work (the spiked-start screen and the
pointwise certificate) the same way:

- ``step``: ``jcalib.core.optimise`` of the objective for 100 steps inside one jitted,
  vmapped call, divided by 100 (µs per step of all B streams, and per stream);
- ``screen``: :meth:`ORCA.best_start` (151 candidate starts for the defaults), once;
- ``pointwise``: the payoff at every outcome of the pointwise certificate's check set, once.

The contexts are the experts of :class:`jcalib.natures.OverconfidentGaussian` and the direction
$c$ a fixed random vector, the same for every block. Only API that commit 8c59c64 also has is
used, so the script profiles the old code too:

    python benchmarks/profile_orca.py [--B 1 64] [--trace]
    PYTHONPATH=/tmp/orca_old python benchmarks/profile_orca.py      # a checkout of 8c59c64

``--trace`` also records the full-payoff steps (B = the last of ``--B``) with the JAX profiler
and prints the compiled program's operations by total time (see ``profile_aosa.py``).
Times are medians of 5 after a warm-up call.
"""

from __future__ import annotations

import argparse
import inspect
import os

import jax
import jax.numpy as jnp
import numpy as np

from _timing import profile_ops, timed  # benchmarks/ is on sys.path when a script here runs

import jcalib
from jcalib.core.optim import optimise, standard_promotion
from jcalib.forecasters import ORCA
from jcalib.natures import OverconfidentGaussian
from jcalib.payoffs import ExpertRegret, MomentCalibration, QuantileCalibration, experiment_payoff

N_STEPS = 100

BLOCKS = {
    "quantile (99 levels)": lambda: QuantileCalibration(99),
    "expert regret (CRPS, MSE)": lambda: ExpertRegret(("crps", "mse")),
    "moments (1, 2)": lambda: MomentCalibration((1, 2)),
    "experiment payoff (all three)": experiment_payoff,
}


def contexts(B: int):
    """B expert contexts of the OverconfidentGaussian nature (stacked) and B directions c."""
    nat = OverconfidentGaussian()
    keys = jax.random.split(jax.random.key(0), B)
    xs = jax.vmap(lambda k: nat.context(nat.init(k), k))(keys)
    return xs


def programs(f: ORCA, B: int):
    """Jitted, vmapped ``steps``, ``screen`` and ``pointwise`` for forecaster ``f`` and B streams."""
    xs = contexts(B)
    rng = np.random.default_rng(1)
    c = jnp.asarray(rng.normal(size=(B, f.payoff.dim)), jnp.result_type(float))
    theta = jnp.asarray(0.3 * rng.normal(size=(B, f.n_params)), jnp.result_type(float))
    opt = f._optimizer(theta.dtype)

    @jax.jit
    def steps(theta, c, xs):
        def one(th, cc, x):
            with standard_promotion():
                s = opt.init(th)
            return optimise(lambda t: f.objective(t, cc, x), th, opt, N_STEPS, state=s, project=f.project).params

        return jax.vmap(one)(theta, c, xs)

    @jax.jit
    def screen(theta, c, xs):
        return jax.vmap(f.best_start)(theta, c, xs)

    @jax.jit
    def pointwise(theta, c, xs):
        def one(th, cc, x):
            p = f.distribution(th)
            # check_points(x, p) since the payoffs declare their jumps; (p) before (commit 8c59c64)
            takes_x = "x" in inspect.signature(f.check_points).parameters
            ys = f.check_points(x, p) if takes_x else f.check_points(p)
            if hasattr(f.payoff, "along_at"):  # the payoff's own projection at many outcomes (closed forms)
                return jnp.max(f.payoff.along_at(x, p, cc, ys))
            return jnp.max(jax.vmap(lambda y: jnp.dot(cc, f.payoff(x, p, y)))(ys))

        return jax.vmap(one)(theta, c, xs)

    return {name: (lambda fn=fn: jax.block_until_ready(fn(theta, c, xs))) for name, fn in
            (("step", steps), ("screen", screen), ("pointwise", pointwise))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--trace", action="store_true", help="per-operation times from the JAX profiler")
    args = ap.parse_args(argv)
    print(f"jcalib from {os.path.dirname(jcalib.__file__)}; jax {jax.__version__} on {jax.devices()[0].platform}; "
          f"50 bins, {N_STEPS} Adam steps per call; load {os.getloadavg()[0]:.1f} (1 min)")
    print(f"{'payoff block':32s} {'B':>4s} {'step us':>9s} {'/stream':>8s} {'screen us':>10s} {'/stream':>8s} "
          f"{'pointwise us':>13s} {'/stream':>8s}")
    for B in args.B:
        for name, make in BLOCKS.items():
            f = ORCA(payoff=make())
            runs = programs(f, B)
            t_step = timed(runs["step"], 5)[1] / N_STEPS * 1e6
            t_screen = timed(runs["screen"], 5)[1] * 1e6
            t_point = timed(runs["pointwise"], 5)[1] * 1e6
            print(f"{name:32s} {B:4d} {t_step:9.1f} {t_step / B:8.2f} {t_screen:10.1f} {t_screen / B:8.2f} "
                  f"{t_point:13.1f} {t_point / B:8.2f}", flush=True)
    if args.trace:
        profile_ops(programs(ORCA(), args.B[-1])["step"], f"{N_STEPS} steps of the full payoff, B = {args.B[-1]}")
    print(f"load average: {os.getloadavg()[0]:.1f} (1 min)")


if __name__ == "__main__":
    from jcalib._cache import enable_compilation_cache
    enable_compilation_cache()  # reuse the programs that earlier runs compiled
    main()

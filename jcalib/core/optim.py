r"""Inner optimisation with optax for a fixed number of steps, inside ``lax.scan``.

ORCA's per-round minimax (Marx et al. 2024, Algorithm 2), the decision-calibration partition search
(Zhao et al. 2021) and the sigmoid-witness search (Gopalan et al. 2024) all run an optax optimiser for a
*static* number of steps (DESIGN.md, "Drivers own the loops": tolerance-based while-loops
stall vmapped batches). :func:`optimise` is that loop, written once (and
:func:`lbfgs_minimise` an L-BFGS for the smooth fits of offline recalibrators, one evaluation of
the loss per step, which idles once converged, and :func:`newton_minimise` Newton's method for
the fits of one to three parameters):

```
params_{k+1} = params_k + optimizer.update(∇ loss(params_k), state_k, params_k)   k = 0..n-1
params_{k+1} ← project(params_{k+1})                                               (optional)
```

It returns the final parameters and optimiser state (so a caller can warm-start the next call,
as ORCA does round to round) and the loss at each step. Learning rates and other float settings
of the optimiser may be traced arrays (``optax.adam(lr)`` with ``lr`` a JAX array), so a sweep
vmaps over them without recompiling; only ``n_steps`` and ``unroll`` fix the program.

``unroll`` (static) runs that many steps in each iteration of the compiled loop (``lax.scan``'s
own ``unroll``): the same arithmetic in the same order, fewer loop iterations. A loop iteration
has a fixed cost beyond its arithmetic -- on a GPU the ``while`` condition is read back by the
host and the body is a dozen kernel launches -- which matters when a step is a few thousand
flops, as ORCA's is. ``unroll=None`` (every caller's default) takes the value of
:data:`DEFAULT_UNROLL` for ``jax.default_backend()`` at trace time: 1 everywhere for now (on
the CPU unrolling measured no faster, ``benchmarks/RESULTS.md``; ``make bench-gpu`` measures the
GPU).

optax's Adam bias correction computes ``float ** int32`` and its simplex projection divides a
float by an int32, which strict dtype promotion (the test configuration) rejects; both are
exact under standard promotion, so the optimiser's own arithmetic is traced under
``jax.numpy_dtype_promotion("standard")`` here, in one place. The caller's loss keeps whatever
promotion mode the caller set.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from .._validation import BoundaryOnly, Custom, Int, check_finite, declare, shown

__all__ = [
    "DEFAULT_UNROLL",
    "OptimResult",
    "default_unroll",
    "optimise",
    "lbfgs_minimise",
    "newton_minimise",
    "optax_update",
    "standard_promotion",
]

# Steps per iteration of optimise's loop when a caller leaves ``unroll=None``, by
# ``jax.default_backend()``. CPU: 1, the rolled loop (measured on 2 cores: 2 and 4 within noise
# of 1, 8 slows ORCA by 26-36%, the decision search unchanged; benchmarks/RESULTS.md, "unroll on
# the CPU"). GPU and TPU: 1 as well, awaiting a measurement (``make bench-gpu`` times ORCA at
# unroll 1, 4 and 8 on the default device); a backend not listed gets 1.
DEFAULT_UNROLL: dict[str, int] = {"cpu": 1, "gpu": 1, "cuda": 1, "rocm": 1, "tpu": 1}


def standard_promotion():
    """Context manager for optax internals that mix int32 and float under strict promotion."""
    return jax.numpy_dtype_promotion("standard")


class OptimResult(NamedTuple):
    """What :func:`optimise` returns.

    Attributes:
        params: the parameters after the last step.
        state: the optimiser state after the last step (pass it back as ``state=`` to resume).
        losses: ``(n_steps,)`` the loss at the parameters each step started from.
    """

    params: Any
    state: Any
    losses: Float[Array, " n_steps"]


def _real_tree(tree, name: str):
    """``tree`` (a pytree of parameters or gradients) after its checks: every leaf a non-empty
    real floating array (an int, a string, a complex number refused), finite (NaN and ±inf in
    the graph when traced, behind ``jcalib.config.checks``). A flat list or tuple of numbers is
    read as one array."""
    if isinstance(tree, (list, tuple)) and tree and all(isinstance(v, (int, float, np.number)) for v in tree):
        tree = np.asarray(tree)
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        raise ValueError(f"{name} holds no arrays")
    for leaf in leaves:
        dtype = getattr(leaf, "dtype", None)
        if dtype is None:
            try:
                dtype = np.asarray(leaf).dtype
            except (TypeError, ValueError):
                dtype = None
        if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
            raise ValueError(f"{name} must hold real floating arrays, got a leaf {shown(leaf)}")
        if np.size(leaf) == 0:
            raise ValueError(f"{name} holds an empty array (shape {np.shape(leaf)})")
    return jax.tree_util.tree_map(lambda leaf: _finite_leaf(leaf, name), tree)


def _finite_leaf(leaf, name: str):
    """A leaf behind its finiteness check: in the graph when traced, in NumPy otherwise."""
    if isinstance(leaf, jax.core.Tracer):
        return check_finite(leaf, name)
    check_finite(np.asarray(leaf), name)
    return leaf


def _optimizer(optimizer, name, bound):
    if not (callable(getattr(optimizer, "init", None)) and callable(getattr(optimizer, "update", None))):
        raise ValueError(f"{name} must be an optax GradientTransformation, got {type(optimizer).__name__}")
    return optimizer


def _function(what: str, optional: bool = False):
    def check(fn, name, bound):
        if (fn is None and optional) or callable(fn):
            return fn
        raise ValueError(f"{name} must be a function of the parameters{' or None' if optional else ''}, got {type(fn).__name__}")
    return Custom(check, what)


def _same_shapes(grads, name, bound):
    params = bound["params"]
    g_shapes = jax.tree_util.tree_map(jnp.shape, grads)
    p_shapes = jax.tree_util.tree_map(jnp.shape, params)
    if g_shapes != p_shapes:
        raise ValueError(f"{name} must have the structure and shapes of params, got {shown(g_shapes)} and {shown(p_shapes)}")
    return grads


_OPTIMIZER = Custom(_optimizer, "an optax GradientTransformation")
_PARAMS = Custom(lambda v, name, bound: _real_tree(v, name), "a pytree of finite real floating arrays")


@declare(optimizer=_OPTIMIZER, params=_PARAMS,
         grads=Custom(lambda v, name, bound: _same_shapes(_real_tree(v, name), name, bound), "params' structure and shapes"))
def optax_update(optimizer: optax.GradientTransformation, grads, state, params):
    """One ``optimizer.update`` + ``apply_updates``, under standard promotion.

    Raises:
        ValueError: ``optimizer`` is not an optax transformation; ``grads`` or ``params`` hold a
            leaf that is not a real floating array, or (when concrete) NaN or ±inf; their
            structures or shapes differ.
    """
    return _optax_update(optimizer, grads, state, params)


def _optax_update(optimizer, grads, state, params):
    """:func:`optax_update` without the checks (inside :func:`optimise`'s steps)."""
    with standard_promotion():
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state


def default_unroll(backend: str | None = None) -> int:
    """The steps per loop iteration :func:`optimise` uses when ``unroll=None``: :data:`DEFAULT_UNROLL`
    for ``backend`` (default: ``jax.default_backend()``, read when the caller is traced)."""
    return DEFAULT_UNROLL.get(jax.default_backend() if backend is None else backend, 1)


# a bool is refused (Int): lax.scan reads True as every step unrolled, 400 copies of ORCA's step
# in one program; 0 (lax.scan: unroll everything) is below the minimum
# traced params are checked for their structure and dtype only: optimise runs inside the library's
# compiled programs (ORCA's rounds, the decision searches) on parameters they drew themselves,
# where an in-graph finiteness check is a host callback that keeps the program out of JAX's
# persistent cache
@declare(n_steps=Int(0, 2**24, what="optimiser steps"), loss=_function("a function of the parameters"),
         optimizer=_OPTIMIZER, params=BoundaryOnly(_PARAMS),
         project=_function("a map of the parameters", optional=True), unroll=Int(1, None, optional=True))
def optimise(
    loss: Callable[[Any], Array],
    params: Any,
    optimizer: optax.GradientTransformation,
    n_steps: int,
    *,
    state: Any = None,
    project: Callable[[Any], Any] | None = None,
    unroll: int | None = None,
) -> OptimResult:
    """Minimise ``loss`` from ``params`` with ``n_steps`` steps of ``optimizer`` in one ``lax.scan``.

    Args:
        loss: scalar function of the parameters (a pytree); differentiated with ``jax.grad``.
            To maximise, pass the negative.
        params: the starting parameters.
        optimizer: an optax gradient transformation (its float settings may be traced arrays).
        n_steps: number of steps (a Python int: it fixes the scan length).
        state: an optimiser state to resume from (default: ``optimizer.init(params)``).
        project: optional map applied after every step (projected gradient descent, e.g. a
            clip onto a box).
        unroll: steps per iteration of the compiled loop (an int >= 1, not a bool; static: each
            value is its own program). ``None``: :func:`default_unroll`, the backend's default. The
            result is the same as with ``unroll=1`` up to float rounding (XLA may fuse the
            copies of the step differently).

    Returns:
        :class:`OptimResult` with the final parameters, the final optimiser state and the loss
        at the start of every step.

    Raises:
        ValueError: ``n_steps`` not an integer in ``[0, 2**24]`` (NumPy integers accepted; a
            traced value raises ``TypeError``: it fixes the scan length); ``params`` holding a
            leaf that is not a real floating array or, when concrete, is not finite; ``loss``
            or ``project`` not callable; ``optimizer`` not an optax transformation.

    Example:
        >>> import jax.numpy as jnp, optax
        >>> res = optimise(lambda w: jnp.sum((w - 3.0) ** 2), jnp.zeros(2), optax.adam(0.1), 500)
        >>> bool(jnp.allclose(res.params, 3.0, atol=1e-2))
        True
    """
    unroll = default_unroll() if unroll is None else unroll
    if state is None:
        with standard_promotion():
            state = optimizer.init(params)
    value_and_grad = jax.value_and_grad(loss)

    def step(carry, _):
        p, s = carry
        value, grads = value_and_grad(p)
        p, s = _optax_update(optimizer, grads, s, p)
        if project is not None:
            p = project(p)
        return (p, s), value

    (params, state), losses = jax.lax.scan(step, (params, state), None, length=n_steps, unroll=unroll)
    return OptimResult(params, state, losses)


# sufficient decrease of a line-search step, f(x + t d) <= f(x) + c t g'd (Nocedal, Wright 2006, eq. 3.4)
_ARMIJO = 1e-4
_HALVINGS = 40  # the backtracking gives up below t = 2^-40


def lbfgs_minimise(loss: Callable, init, n_steps: int, memory: int = 10):
    r"""Minimise a smooth ``loss`` from ``init`` (a pytree, raveled to $k$ numbers) by L-BFGS
    with a backtracking line search, in a ``lax.scan`` of exactly ``n_steps`` evaluations of the
    loss and its gradient; returns the last accepted iterate.

    Each step evaluates $f$ and $\nabla f$ at one trial point $x + t d$ -- the loss appears once in
    the program, which keeps it small. The trial is accepted on sufficient decrease,
    $f(x + t d) \le f(x) + 10^{-4}\, t\, \nabla f(x)^\top d + \rho$ with
    $\rho = 2\epsilon(1 + |f(x)|)$ for the rounding of $f$ ($\epsilon$ the dtype's machine
    epsilon); then the pair $(s, y) = (t d, \nabla f(x + t d) - \nabla f(x))$ enters the memory of
    the ``memory`` newest pairs (skipped unless $s^\top y > \epsilon\, y^\top y$, which keeps
    the inverse-Hessian estimate positive definite without a curvature condition), the next
    direction is $d = -H \nabla f$ by the two-loop recursion with $H_0 = (s^\top y / y^\top y) I$
    (Nocedal and Wright 2006, Algorithms 7.4 and 7.5; the first direction is the gradient
    scaled to length at most 1), and $t = 1$. A rejected trial halves $t$ (Algorithm 3.1). A
    unit step is accepted at almost every iteration of the recalibrators' convex fits, so an
    iteration costs about one evaluation.

    Once the gradient norm is below $\epsilon(1 + |f|)$, or no step down to $t = 2^{-40}$
    passes, the remaining steps idle: a ``lax.cond`` skips their work when the fit is not
    vmapped (under vmap both branches run, so batched fits stay in lock-step and the step count
    stays fixed). The first evaluation is of ``init`` itself, so the objective at the result is
    never above its value at ``init`` (beyond the rounding $\rho$ per step).
    """
    x0, unravel = ravel_pytree(init)
    value_and_grad = jax.value_and_grad(lambda x: loss(unravel(x)))
    dt = x0.dtype
    eps = float(jnp.finfo(dt).eps)

    def direction(g, S, Y, rho):
        # the two-loop recursion over the memory, newest pair in row 0; an empty row has rho = 0
        # and drops out of both loops
        def newest_first(q, pair):
            s, y, r = pair
            a = r * jnp.dot(s, q)
            return q - a * y, a

        def oldest_first(r, pair):
            s, y, rh, a = pair
            return r + s * (a - rh * jnp.dot(y, r)), None

        q, a = lax.scan(newest_first, g, (S, Y, rho))
        yy = jnp.dot(Y[0], Y[0])
        # H0 = (s'y / y'y) I from the newest pair; with no pair yet, the gradient scaled to length <= 1
        h0 = jnp.where(rho[0] > 0, 1 / (rho[0] * jnp.where(yy > 0, yy, 1)), 1 / jnp.maximum(1, jnp.linalg.norm(g)))
        r, _ = lax.scan(oldest_first, h0 * q, (S, Y, rho, a), reverse=True)
        return -r

    def advance(carry):
        x, fx, g, d, t, S, Y, rho, _ = carry
        trial = x + t * d
        ft, gt = value_and_grad(trial)
        rounding = 2 * eps * (1 + jnp.abs(fx))
        accept = jnp.isfinite(ft) & (ft <= fx + _ARMIJO * t * jnp.dot(g, d) + rounding)
        s, y = t * d, gt - g
        sy = jnp.dot(s, y)
        store = accept & jnp.isfinite(fx) & (sy > eps * jnp.dot(y, y))

        def push(memory, row):
            return jnp.where(store, jnp.concatenate([row[None], memory[:-1]]), memory)

        S, Y, rho = push(S, s), push(Y, y), push(rho, 1 / jnp.where(store, sy, 1))
        x, fx, g = jnp.where(accept, trial, x), jnp.where(accept, ft, fx), jnp.where(accept, gt, g)
        new_d = direction(g, S, Y, rho)
        d = jnp.where(accept, jnp.where(jnp.dot(g, new_d) < 0, new_d, -g), d)
        done = (accept & (jnp.linalg.norm(g) <= eps * (1 + jnp.abs(fx)))) | (~accept & (t < 2.0**-_HALVINGS))
        t = jnp.where(accept, jnp.ones((), dt), t / 2)
        return x, fx, g, d, t, S, Y, rho, done

    def step(carry, _):
        return lax.cond(carry[-1], lambda c: c, advance, carry), None

    # the first trial is init itself (d = 0), accepted against f = inf
    zero, rows = jnp.zeros_like(x0), jnp.zeros((memory, x0.size), dt)
    carry = (x0, jnp.asarray(jnp.inf, dt), zero, zero, jnp.ones((), dt), rows, rows, jnp.zeros((memory,), dt),
             jnp.asarray(False))
    carry, _ = lax.scan(step, carry, None, length=n_steps)
    return unravel(carry[0])


def newton_minimise(loss: Callable, init, n_steps: int):
    r"""Minimise a smooth ``loss`` of a few parameters (a pytree, raveled to $k$ numbers) from
    ``init`` by Newton's method with a backtracking line search, in a ``lax.scan`` of exactly
    ``n_steps`` iterations; returns the last accepted iterate.

    Each iteration solves $(H + \lambda I)\,d = -g$ with the exact Hessian $H$ (forward over
    reverse mode) and $\lambda = \sqrt\epsilon\,(1 + \max_i |H_{ii}|)$ for the dtype's machine
    epsilon $\epsilon$: a damping far below the curvature of any direction the loss depends on, which
    keeps the step finite along directions it does not depend on (a restricted model's unused
    parameters: their gradient is 0 and so is their step). Where $d$ is not a descent direction
    (the Hessian indefinite) the step is $-g$. The step length halves from 1 until the
    sufficient decrease $f(x + t d) \le f(x) + 10^{-4}\, t\, g^\top d + \rho$ holds (Nocedal and
    Wright 2006, Algorithm 3.1), with $\rho = 2\epsilon(1 + |f(x)|)$ for the rounding of $f$.
    After a step whose Newton decrement $-g^\top d$ is below $\rho$ (nothing left to gain that
    float precision could show), or when no step length down to $2^{-40}$ passes, the remaining
    iterations idle (a ``lax.cond``; under ``vmap`` both branches run and the step count stays
    fixed, as in :func:`lbfgs_minimise`). Near the optimum the steps are decided by $g$ and $H$,
    not by differences of $f$ below its rounding, so a fit stops at the same point alone and in
    a vmapped batch.

    For the offline recalibrators' fits of one to three parameters (temperature, Platt and beta
    calibration): their objectives are convex in the parameters of the map (logistic and
    multinomial log-loss of a linear function of them), where Newton's method converges
    quadratically, and the program compiles in about half the time of L-BFGS's with optax's zoom
    line search.
    """
    x0, unravel = ravel_pytree(init)
    f = lambda x: loss(unravel(x))  # noqa: E731
    eps = float(jnp.finfo(x0.dtype).eps)
    eye = jnp.eye(x0.size, dtype=x0.dtype)

    def advance(carry):
        x, _ = carry
        # f, g and H from one linearisation of (f, grad f): the loss is traced twice in all
        # (here and in the line search), which keeps the program small
        (fx, g), tangent = jax.linearize(jax.value_and_grad(f), x)
        h = jax.vmap(lambda v: tangent(v)[1])(eye)
        lam = np.sqrt(eps) * (1 + jnp.max(jnp.abs(jnp.diag(h))))
        d = -jnp.linalg.solve(h + lam * eye, g)
        slope = jnp.dot(g, d)
        newton = jnp.all(jnp.isfinite(d)) & (slope < 0)
        d = jnp.where(newton, d, -g)
        slope = jnp.where(newton, slope, -jnp.dot(g, g))
        rounding = 2 * eps * (1 + jnp.abs(fx))  # what evaluating f may be off by

        def sufficient(t, ft):  # False for a NaN value
            return ft <= fx + _ARMIJO * t * slope + rounding

        def halve(s):  # the first pass tries t = 1
            t, _, k = s
            return t / 2, f(x + (t / 2) * d), k + 1

        t, ft, _ = lax.while_loop(lambda s: ~sufficient(s[0], s[1]) & (s[2] <= _HALVINGS), halve,
                                  (jnp.asarray(2, x.dtype), jnp.asarray(jnp.inf, x.dtype), 0))
        accept = sufficient(t, ft)
        # the Newton decrement -g'd / 2 estimates what is left to gain: below f's rounding, this
        # step (taken: near the optimum it is decided by g and H, which float rounding of f does
        # not blur) is the last
        done = ~accept | (-slope <= rounding)
        return jnp.where(accept, x + t * d, x), done

    def step(carry, _):
        return lax.cond(carry[-1], lambda c: c, advance, carry), None

    carry, _ = lax.scan(step, (x0, jnp.asarray(False)), None, length=n_steps)
    return unravel(carry[0])

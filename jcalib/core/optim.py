r"""Inner optimisation with optax for a fixed number of steps, inside ``lax.scan``.

ORCA's per-round minimax (paper 002, Algorithm 2), the decision-calibration partition search
(paper 004) and the sigmoid-witness search (paper 003) all run an optax optimiser for a
*static* number of steps (DESIGN.md, "Drivers own the loops": tolerance-based while-loops
stall vmapped batches). :func:`optimise` is that loop, written once:

```
params_{k+1} = params_k + optimizer.update(∇ loss(params_k), state_k, params_k)   k = 0..n-1
params_{k+1} ← project(params_{k+1})                                               (optional)
```

It returns the final parameters and optimiser state (so a caller can warm-start the next call,
as ORCA does round to round) and the loss at each step. Learning rates and other float settings
of the optimiser may be traced arrays (``optax.adam(lr)`` with ``lr`` a JAX array), so a sweep
vmaps over them without recompiling; only ``n_steps`` fixes the program.

optax's Adam bias correction computes ``float ** int32`` and its simplex projection divides a
float by an int32, which strict dtype promotion (the test configuration) rejects; both are
exact under standard promotion, so the optimiser's own arithmetic is traced under
``jax.numpy_dtype_promotion("standard")`` here, in one place. The caller's loss keeps whatever
promotion mode the caller set.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import optax
from jaxtyping import Array, Float

__all__ = ["OptimResult", "optimise", "optax_update", "standard_promotion"]


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


def optax_update(optimizer: optax.GradientTransformation, grads, state, params):
    """One ``optimizer.update`` + ``apply_updates``, under standard promotion."""
    with standard_promotion():
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state


def optimise(
    loss: Callable[[Any], Array],
    params: Any,
    optimizer: optax.GradientTransformation,
    n_steps: int,
    *,
    state: Any = None,
    project: Callable[[Any], Any] | None = None,
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

    Returns:
        :class:`OptimResult` with the final parameters, the final optimiser state and the loss
        at the start of every step.

    Example:
        >>> import jax.numpy as jnp, optax
        >>> res = optimise(lambda w: jnp.sum((w - 3.0) ** 2), jnp.zeros(2), optax.adam(0.1), 500)
        >>> bool(jnp.allclose(res.params, 3.0, atol=1e-2))
        True
    """
    if not isinstance(n_steps, int) or isinstance(n_steps, bool) or n_steps < 0:
        raise ValueError(f"n_steps must be a non-negative Python int, got {n_steps!r}")
    if state is None:
        with standard_promotion():
            state = optimizer.init(params)
    value_and_grad = jax.value_and_grad(loss)

    def step(carry, _):
        p, s = carry
        value, grads = value_and_grad(p)
        p, s = optax_update(optimizer, grads, s, p)
        if project is not None:
            p = project(p)
        return (p, s), value

    (params, state), losses = jax.lax.scan(step, (params, state), None, length=n_steps)
    return OptimResult(params, state, losses)

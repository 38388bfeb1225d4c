"""Batching: modules with traced hyperparameters, stacked modules, and the nested vmaps over
(forecaster, nature, seed) that a sweep runs.

A run's batch ``layout`` is a static tuple ``(F, N, S)`` of the stacked axes' sizes, ``None``
for an axis that is not stacked; a stacked axis is vmapped, an unstacked one is closed over and
shared, so data that every batch element reads (a Replay's sequence) is never copied per seed.
"""

from __future__ import annotations

from typing import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._validation import Custom, declare, to_device

__all__ = ["as_traced_module", "batch_axes", "nest", "stack_modules"]


def _module(module, name, bound):
    if isinstance(module, (str, bytes)):
        raise ValueError(f"{name} must be an equinox Module (a forecaster, a nature) or a pytree, got {type(module).__name__}")
    return module


@declare(module=Custom(_module, "an equinox Module or a pytree of settings"))
def as_traced_module(module):
    """``module`` with every Python int/float in a non-static field turned into a JAX array.

    Compiled functions treat non-array leaves as compile-time constants; arrays are traced, so
    new hyperparameter values reuse one compilation and sweeps can vmap over them.

    Raises:
        ValueError: ``module`` is a string (not a module, nor a pytree of settings).
    """
    def conv(x):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return to_device(x)
        return x

    return jax.tree_util.tree_map(conv, module)


def _stack(*xs):
    """The leaves stacked: in NumPy when all are concrete and strongly typed (``jnp.stack``
    compiles a program per shape), else by ``jnp.stack``, which keeps a weak type (a Python
    number's: it must not promote a low-precision state it meets)."""
    if any(isinstance(x, (jax.core.Tracer, int, float)) or (isinstance(x, jax.Array) and x.aval.weak_type) for x in xs):
        return jnp.stack(xs)
    return to_device(np.stack([np.asarray(x) for x in xs]))


def batch_axes(module):
    """vmap axes for a module whose array leaves carry a leading batch axis."""
    return jax.tree_util.tree_map(lambda x: 0 if eqx.is_array(x) else None, module)


def nest(fn, layout, forecaster, nature, arg_kinds: tuple):
    """vmap ``fn(f, n, *args)`` over the stacked axes of ``layout``.

    ``arg_kinds[i]`` is ``"seed"`` for an argument batched only over seeds (the seed keys, round
    keys), ``"all"`` for one batched over every stacked axis (states), and ``"shared"`` for one
    the whole batch shares (the round index).
    """
    n_f, n_n, n_s = layout

    def axes(level):
        return tuple(None if kind == "shared" else 0 if kind == "all" or level == "s" else None for kind in arg_kinds)

    # axis sizes are given explicitly: a nature without array fields (Contrarian) has nothing
    # to read the natures' axis from
    if n_s is not None:
        fn = eqx.filter_vmap(fn, in_axes=(None, None) + axes("s"), axis_size=n_s)
    if n_n is not None:
        fn = eqx.filter_vmap(fn, in_axes=(None, batch_axes(nature)) + axes("n"), axis_size=n_n)
    if n_f is not None:
        fn = eqx.filter_vmap(fn, in_axes=(batch_axes(forecaster), None) + axes("f"), axis_size=n_f)
    return fn


def stack_modules(modules: Sequence[eqx.Module], what: str):
    """Modules of one class stacked into one module with a leading batch axis on array fields.

    Returns the stacked module and the number of modules.
    """
    modules = list(modules)
    if not modules:
        raise ValueError(f"{what} must not be empty")
    cls = type(modules[0])
    if any(type(m) is not cls for m in modules):
        raise ValueError(f"all {what} in one sweep must be of one class; got {sorted({type(m).__name__ for m in modules})}")
    # Python numbers in non-static fields become arrays so they can be stacked; fields that fix
    # shapes are static (eqx.field(static=True)) and must agree.
    parts = [eqx.partition(as_traced_module(m), eqx.is_array) for m in modules]
    statics = [p[1] for p in parts]
    if any(s != statics[0] for s in statics[1:]):
        raise ValueError(f"{what} differ in a static (shape-fixing) field; sweep them in separate calls")
    shapes = [jax.tree_util.tree_map(jnp.shape, p[0]) for p in parts]
    if any(s != shapes[0] for s in shapes[1:]):
        raise ValueError(f"{what} in one sweep must have array fields of equal shapes (e.g. replays of one length)")
    stacked = jax.tree_util.tree_map(_stack, *[p[0] for p in parts])
    return eqx.combine(stacked, statics[0]), len(modules)

r"""The interface every distribution over the real line in :mod:`jcalib.distributions` shares.

A distribution is a frozen equinox module whose array fields carry a *batch shape* (one
distribution per entry), so a stack of them is itself a distribution, ``jax.vmap`` batches
them, and a :class:`jcalib.core.Mixture` can hold them as its support. Every method
broadcasts its argument against the batch shape with NumPy's rules, made explicit (the tests
run with rank promotion set to raise): ``cdf(y)`` of a batch ``(B,)`` at ``y`` of shape
``(B,)`` or ``()`` has shape ``(B,)``; to evaluate one distribution at many points, give it
batch shape ``()`` or vmap.

Outcomes are cast to the distribution's float dtype. A NaN outcome gives a NaN result (no
check inside traced code); :func:`check_outcomes` rejects NaN at the Python boundary.
"""

from __future__ import annotations

import abc
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import Custom, Int, RealArray, check_static_int, declare, shown

__all__ = ["AbstractDistribution", "check_outcomes"]


def _arg_name(value, name, bound) -> str:
    """The name an error message gives the checked argument: a string."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string (the argument's name in error messages), got {shown(value)}")
    return value


#: The spec of the ``name`` a public checker gives its argument in error messages.
ARG_NAME = Custom(_arg_name, "the argument's name in error messages")

_OUTCOMES = RealArray(ndim=None, finite=False, nonempty=False)  # ±inf allowed, NaN refused, any shape


@declare(name=ARG_NAME, y=Custom(lambda y, _, bound: _OUTCOMES.check(y, bound["name"], bound),
                                 "real outcomes of any shape, ±inf allowed, no NaN"))
def check_outcomes(y: ArrayLike, name: str = "y") -> Float[Array, "..."]:
    """Real outcomes as a float array; raises ``ValueError`` naming ``name`` if any is NaN.

    Infinite outcomes are allowed (``cdf`` gives 0 or 1 there; the CRPS is infinite). Any
    shape is accepted, empty included (the methods broadcast it against the batch shape).
    Concrete values are checked here; on tracers the check is staged into the graph
    (``eqx.error_if``, behind :mod:`jcalib.config`'s ``checks``).

    Example:
        >>> check_outcomes([0.2, 1.5]).shape
        (2,)
    """
    return y  # checked by the declaration


class AbstractDistribution(eqx.Module):
    """A batch of distributions over the real line (see the module docstring for shapes).

    Subclasses define ``dtype``, ``batch_shape`` and the methods below; :meth:`prob`,
    :meth:`std` and :meth:`_y` (cast and broadcast an outcome) are shared.
    """

    @property
    @abc.abstractmethod
    def batch_shape(self) -> tuple[int, ...]:
        raise NotImplementedError  # abstract

    @property
    @abc.abstractmethod
    def dtype(self) -> jnp.dtype:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def cdf(self, y: ArrayLike) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def quantile(self, alpha: ArrayLike) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def mean(self) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def moment(self, k: int) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def variance(self) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def expect(self, fn, n_points: int = 8) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def crps(self, y: ArrayLike) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def log_prob(self, y: ArrayLike) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def sample(self, shape: tuple[int, ...] = (), *, key: PRNGKeyArray) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    def value_rules(self) -> list[tuple[Array, str]]:
        """The rules on this distribution's parameter values as ``(bad, message)`` pairs of a
        boolean array and what it means. Concrete parameters are checked at construction; a
        public function that takes a distribution stages these rules into the graph when the
        parameters are traced (``declare``'s ``Distribution`` spec)."""
        return []

    def prob(self, y: ArrayLike) -> Float[Array, "..."]:
        """The density at ``y``: ``exp(log_prob(y))``."""
        return jnp.exp(self.log_prob(y))

    def std(self) -> Float[Array, "..."]:
        """The standard deviation, ``sqrt(variance())``."""
        return jnp.sqrt(self.variance())

    def _y(self, y: ArrayLike) -> Float[Array, "..."]:
        """``y`` in this distribution's dtype, broadcast against the batch shape."""
        y = jnp.asarray(y)
        y = y.astype(self.dtype)
        try:
            shape = jnp.broadcast_shapes(y.shape, self.batch_shape)
        except ValueError as e:
            raise ValueError(
                f"the outcome/level of shape {y.shape} does not broadcast against the batch shape {self.batch_shape}"
            ) from e
        return jnp.broadcast_to(y, shape)


def _jit(fn=None, *, static_argnames=None):
    """``jax.jit`` for a distribution's method (``self`` is a pytree argument).

    Called eagerly, a method then compiles once per batch shape instead of dispatching and
    compiling each of its small operations; inside a user's ``jit``/``vmap``/``grad`` it is
    inlined. Static arguments (a moment's order, a quadrature's size, an integrand) must be
    hashable.
    """
    if fn is None:
        return functools.partial(_jit, static_argnames=static_argnames)
    return functools.wraps(fn)(jax.jit(fn, static_argnames=static_argnames))


#: The spec of a static size (a number of bins, points): a Python int in ``[1, 2**24]``.
SIZE = Int(1, 2**24, bytes_per=8, what="its tables")


def _check_static_int(k, name: str, low: int = 0, high: int = 2**24) -> int:
    """A Python int in ``[low, high]`` (a static setting that fixes the computation, not an
    array; NumPy integers and 0-d integer arrays accepted, a traced value refused as non-static)."""
    return check_static_int(k, name, low, high, bytes_per=8, what="its tables")


def _batched(x: Array, shape: tuple[int, ...]) -> Array:
    """Broadcast ``x`` of shape ``batch + (n,)`` to ``shape + (n,)`` (explicitly)."""
    return jnp.broadcast_to(x, tuple(shape) + x.shape[-1:])

r"""Trivial baselines: a constant forecast and the running frequency of ones.

Neither is calibrated against an adversary: a contrarian nature drives the constant 1/2 to
ECE $= T/2$. Against i.i.d. Bernoulli($q$) outcomes the running frequency is calibrated in the
limit. They anchor the comparisons of the calibrated forecasters.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._validation import as_float_array, check_binary_probs, check_hyper, is_concrete
from ..core.keys import check_horizon
from ..core.types import AbstractForecaster, Forecast

__all__ = ["Constant", "ConstantState", "RunningFrequency", "RunningFrequencyState"]


class ConstantState(NamedTuple):
    """A constant forecaster has no state."""


class Constant(AbstractForecaster):
    """Forecast ``value`` every round (deterministic; ``public`` is the value).

    Attributes:
        value: the forecast, in [0, 1]. An array-valued field, so a ``sweep`` over several
            ``Constant`` forecasters vmaps over ``value``.

    Example:
        >>> Constant(0.25).predict(ConstantState(), None, None).value.item()
        0.25
    """

    outcome_space = None  # it never reads the outcome: any outcome space

    value: float = 0.5

    def __check_init__(self):
        if isinstance(self.value, (bool, np.bool_)):
            raise ValueError(f"value must be a probability in [0, 1], not a bool, got {self.value!r}")
        arr = as_float_array(self.value, "value")
        if arr.ndim != 0:
            raise ValueError(f"value must be a scalar, got shape {tuple(arr.shape)}")
        check_binary_probs(arr[None], "value")  # as 1-D: check_binary_probs reports bad entries by index

    @classmethod
    def for_horizon(cls, T: int) -> "Constant":
        """``Constant(0.5)``; ``T`` does not enter."""
        check_horizon(T)
        return cls()

    def init(self, key: PRNGKeyArray) -> ConstantState:
        return ConstantState()

    def predict(self, state: ConstantState, x, key: PRNGKeyArray) -> Forecast:
        v = jnp.asarray(self.value, jnp.result_type(float))
        return Forecast(v, v)

    def update(self, state: ConstantState, x, forecast: Forecast, y) -> ConstantState:
        return state


class RunningFrequencyState(NamedTuple):
    """Exact integer counts.

    Attributes:
        n: rounds so far (int32).
        ones: outcomes equal to 1 so far (int32).
    """

    n: Int[Array, ""]
    ones: Int[Array, ""]


class RunningFrequency(AbstractForecaster):
    r"""The smoothed running frequency of ones (deterministic):

    $$p_t = \frac{\sum_{s<t} y_s + a}{(t-1) + b},$$

    with prior pseudo-counts $a$ ones out of $b$ rounds ($a = 1, b = 2$: Laplace's rule of
    succession, $p_1 = 1/2$).

    Attributes:
        prior_ones: $a \ge 0$.
        prior_count: $b > 0$ with $a \le b$, so forecasts stay in $[0, 1]$.
    """

    outcome_space = "binary"

    prior_ones: float = 1.0
    prior_count: float = 2.0

    def __check_init__(self):
        check_hyper(self.prior_ones, "prior_ones", 0.0)
        check_hyper(self.prior_count, "prior_count", 0.0, open_lo=True)
        a = as_float_array(self.prior_ones, "prior_ones")
        b = as_float_array(self.prior_count, "prior_count")
        if is_concrete(a) and is_concrete(b):
            ok = jnp.isfinite(a) & jnp.isfinite(b) & (a >= 0) & (b > 0) & (a <= b)
            if not bool(jnp.all(ok)):
                raise ValueError(
                    "need 0 <= prior_ones <= prior_count and prior_count > 0, got "
                    f"prior_ones={self.prior_ones!r}, prior_count={self.prior_count!r}"
                )

    @classmethod
    def for_horizon(cls, T: int) -> "RunningFrequency":
        """Laplace's rule (``prior_ones=1, prior_count=2``); ``T`` does not enter."""
        check_horizon(T)
        return cls()

    def init(self, key: PRNGKeyArray) -> RunningFrequencyState:
        z = jnp.zeros((), jnp.int32)
        return RunningFrequencyState(n=z, ones=z)

    def predict(self, state: RunningFrequencyState, x, key: PRNGKeyArray) -> Forecast:
        fdt = jnp.result_type(float)
        num = state.ones.astype(fdt) + jnp.asarray(self.prior_ones, fdt)
        den = state.n.astype(fdt) + jnp.asarray(self.prior_count, fdt)
        v: Float[Array, ""] = num / den
        return Forecast(v, v)

    def update(self, state: RunningFrequencyState, x, forecast: Forecast, y) -> RunningFrequencyState:
        return RunningFrequencyState(n=state.n + 1, ones=state.ones + jnp.asarray(y, jnp.int32))

r"""The one shape of every offline recalibrator, and the scikit-learn adapter that serves them all.

An offline recalibrator has the forecasters' shape: an ``eqx.Module`` whose fields are its
settings, with a pure ``fit`` that returns an immutable fitted pytree, which applies itself:

```python
fitted = TemperatureScaling(n_steps=50).fit(probs, labels)        # a FittedTemperatureScaling
calibrated = fitted(new_probs)
fitted = DecisionCalibration(n_actions=2).fit(probs, labels, key=key)  # draws randomness
```

- ``fit(probs, labels, *, sample_weight=None)`` takes held-out probabilities ``(n, C)`` (rows on
  the simplex) and integer labels ``(n,)``; a method whose fit draws random numbers also takes a
  keyword-only ``key`` (no default), and says so with ``needs_key = True``.
- Both ``fit`` and the fitted map are pure and jit-able, and fitted maps are pytrees of arrays:
  they stack and vmap. A thousand bootstrap refits are one ``jax.vmap`` over ``sample_weight``:

```python
w = jax.random.multinomial(key, n, jnp.full(n, 1 / n), shape=(1000, n)).astype(p.dtype)  # doctest: +SKIP
fits = jax.vmap(lambda w: TemperatureScaling().fit(p, y, sample_weight=w))(w)            # doctest: +SKIP
recalibrated = jax.vmap(lambda f: f(p_test))(fits)                                      # doctest: +SKIP
```

- Settings that fix array shapes or loop lengths (``n_steps``, ``n_bins``) are static fields;
  real-valued settings (regularisation strengths) are leaves, so one may vmap over them.
- Inputs are validated at the Python boundary (``ValueError``/``TypeError`` naming the argument
  and the rule); traced inputs are checked in the graph (behind ``jcalib.config.checks``).

`SklearnRecalibrator` wraps any method in scikit-learn's ``fit`` / ``predict_proba`` protocol.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._validation import check_key, check_simplex_probs

__all__ = ["AbstractFittedRecalibrator", "AbstractRecalibrator", "SklearnRecalibrator"]


class AbstractFittedRecalibrator(eqx.Module):
    """A fitted recalibration map: an immutable pytree that maps probabilities ``(n, C)`` to
    recalibrated probabilities ``(n, C)`` when called."""

    @abc.abstractmethod
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        raise NotImplementedError  # abstract


class AbstractRecalibrator(eqx.Module):
    """An offline recalibration method: its fields are its settings; ``fit`` returns an
    `AbstractFittedRecalibrator`.

    Subclasses implement ``fit(probs, labels, *, sample_weight=None)``, adding a keyword-only
    ``key`` (and setting ``needs_key = True``) when the fit draws random numbers.
    """

    needs_key: ClassVar[bool] = False

    @abc.abstractmethod
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> AbstractFittedRecalibrator:
        raise NotImplementedError  # abstract


class SklearnRecalibrator:
    """scikit-learn's ``fit`` / ``predict_proba`` protocol for any `AbstractRecalibrator`.

    Args:
        method: the recalibration method with its settings, e.g. ``TemperatureScaling()``.
        key: a PRNG key, required when the method's fit draws random numbers
            (``method.needs_key``) and refused otherwise.

    Attributes:
        fitted_: the fitted map (an `AbstractFittedRecalibrator`), after ``fit``.
        n_classes_: the number of classes seen in ``fit``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jcalib.recalibration import TemperatureScaling
        >>> p = jnp.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
        >>> cal = SklearnRecalibrator(TemperatureScaling()).fit(p, jnp.array([0, 1, 1, 0]))
        >>> cal.predict_proba(p).shape
        (4, 2)
    """

    def __init__(self, method: AbstractRecalibrator, *, key: Any = None):
        if not isinstance(method, AbstractRecalibrator):
            raise TypeError(f"method must be a jcalib recalibrator (an AbstractRecalibrator), got {type(method).__name__}")
        if method.needs_key:
            key = check_key(key)
        elif key is not None:
            raise TypeError(f"{type(method).__name__}'s fit draws no random numbers; do not pass a key")
        self.method = method
        self.key = key
        self.fitted_: AbstractFittedRecalibrator | None = None

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's arguments (scikit-learn's estimator protocol)."""
        return {"method": self.method, "key": self.key}

    def set_params(self, **params) -> "SklearnRecalibrator":
        """Replace constructor arguments (scikit-learn's estimator protocol)."""
        merged = {**self.get_params(), **params}
        self.__init__(merged["method"], key=merged["key"])
        return self

    def fit(self, probs, labels, *, sample_weight=None) -> "SklearnRecalibrator":
        """Fit the method on held-out probabilities ``(n, C)`` and integer labels ``(n,)``."""
        extra = {"key": self.key} if self.method.needs_key else {}
        self.fitted_ = self.method.fit(probs, labels, sample_weight=sample_weight, **extra)
        self.n_classes_ = int(jnp.shape(probs)[1])
        return self

    def predict_proba(self, probs) -> jax.Array:
        """Recalibrated probabilities for ``probs`` ``(n, C)``."""
        if self.fitted_ is None:
            raise ValueError(f"this {type(self.method).__name__} adapter is not fitted; call fit(probs, labels) first")
        probs = check_simplex_probs(probs)
        if probs.shape[1] != self.n_classes_:
            raise ValueError(f"probs must have {self.n_classes_} columns (the classes seen in fit), got {probs.shape[1]}")
        return self.fitted_(probs)

    def predict(self, probs) -> jax.Array:
        """The most probable class after recalibration."""
        return jnp.argmax(self.predict_proba(probs), axis=1)

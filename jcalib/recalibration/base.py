"""The scikit-learn-style wrapper shared by every offline recalibrator (DESIGN.md,
"Offline recalibrators").

Each recalibrator has a functional core — ``fit(key, probs, labels, **settings) -> params`` and
``apply(params, probs) -> probs``, both jit- and vmap-friendly — and a thin wrapper subclassing
:class:`Recalibrator` that validates inputs at the Python boundary, stores ``params_`` and
exposes ``fit`` / ``predict_proba``.
"""

from __future__ import annotations

import abc
from typing import Any

import jax

from .._validation import check_class_labels, check_key, check_same_length, check_simplex_probs

__all__ = ["Recalibrator"]


class Recalibrator(abc.ABC):
    """Base of the ``fit`` / ``predict_proba`` wrappers.

    Subclasses set their settings in ``__init__`` and implement :meth:`_fit` and :meth:`_apply`
    by calling their functional core.
    """

    params_: Any = None

    def fit(self, probs, labels, *, key=None) -> "Recalibrator":
        """Fit on held-out predictions ``probs`` (n, C) and integer ``labels`` (n,)."""
        probs = check_simplex_probs(probs)
        labels = check_class_labels(labels, probs.shape[1])
        if check_same_length(probs=probs, labels=labels) == 0:
            raise ValueError("probs and labels are empty; fitting needs at least one sample")
        key = jax.random.key(0) if key is None else check_key(key)
        self.n_classes_ = probs.shape[1]
        self.params_ = self._fit(key, probs, labels)
        return self

    def predict_proba(self, probs) -> jax.Array:
        """Recalibrated probabilities for ``probs`` (n, C)."""
        if self.params_ is None:
            raise ValueError(f"{type(self).__name__} is not fitted; call fit(probs, labels) first")
        probs = check_simplex_probs(probs)
        if probs.shape[1] != self.n_classes_:
            raise ValueError(f"fitted on {self.n_classes_} classes, got probs with {probs.shape[1]}")
        return self._apply(self.params_, probs)

    @abc.abstractmethod
    def _fit(self, key, probs, labels) -> Any:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def _apply(self, params, probs) -> jax.Array:
        raise NotImplementedError  # abstract

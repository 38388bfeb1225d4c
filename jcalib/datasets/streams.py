r"""Real prediction streams for online recalibration (Okoroafor et al. 2024): a model's online forecasts on real data.

:func:`logistic_stream` runs an online logistic regression over a binary data set that ships
inside scikit-learn (no download), in a fixed stream order, and records the forecast it made
for each row **before** seeing the row's label — the $(q_t, y_t)$ stream a recalibrator sees.
It is computed on the host in NumPy (a one-off, like loading a file) and replayed inside a
sweep with ``jcalib.natures.Replay(y, x=q)``.

Data sets (all bundled with scikit-learn):

| name | rows | features | label |
| --- | --- | --- | --- |
| ``"breast_cancer"`` | 569 | 30 | malignant (1) vs benign |
| ``"digits"`` | 1797 | 64 | digit $\ge 5$ (1) vs $< 5$ |
| ``"wine"`` | 178 | 13 | class 0 (1) vs the others |
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from jaxtyping import PRNGKeyArray

from .._validation import Choice, Custom, Real, check_static_int, declare
from ..core.keys import MAX_ROUNDS
from ._seed import KEY, host_seed

__all__ = ["ModelStream", "logistic_stream", "STREAMS"]

STREAMS = ("breast_cancer", "digits", "wine")


class ModelStream(NamedTuple):
    """A model's forecasts and the outcomes, in stream order.

    Attributes:
        q: the model's forecast of $y_t = 1$, float64 ``(n,)`` in [0, 1].
        y: outcomes, int32 ``(n,)``.
    """

    q: np.ndarray
    y: np.ndarray


@functools.lru_cache(maxsize=None)
def _load(name: str):
    """The features and 0/1 outcomes of data set ``name`` (read once, returned read-only)."""
    X, y = _read(name)
    X.flags.writeable = y.flags.writeable = False
    return X, y


def _read(name: str):
    try:
        from sklearn import datasets
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("logistic_stream needs scikit-learn (pip install 'jcalib[experiments]')") from e
    if name == "breast_cancer":
        X, t = datasets.load_breast_cancer(return_X_y=True)
        return X, (t == 0).astype(np.int32)  # sklearn codes malignant as 0
    if name == "digits":
        X, t = datasets.load_digits(return_X_y=True)
        return X, (t >= 5).astype(np.int32)
    if name == "wine":
        X, t = datasets.load_wine(return_X_y=True)
        return X, (t == 0).astype(np.int32)
    raise ValueError(f"name must be one of {STREAMS}, got {name!r}")


def _passes(n_passes, name, bound):
    """Passes over data set ``bound["name"]``: at least 1, and few enough that the stream stays
    within play's horizon (``core.keys.MAX_ROUNDS`` rounds)."""
    n_rows = len(_load(bound["name"])[1])
    return check_static_int(n_passes, name, 1, max(1, MAX_ROUNDS // n_rows), what="rounds within play's horizon")


#: The declared ``(name, n_passes, key)`` of the model streams over scikit-learn data sets.
STREAM_INPUTS = dict(name=Choice(*STREAMS), n_passes=Custom(_passes, "passes within play's horizon"), key=KEY)


@declare(**STREAM_INPUTS, learning_rate=Real(0.0, open_lo=True, static=True))
def logistic_stream(
    name: str = "breast_cancer",
    *,
    n_passes: int = 1,
    learning_rate: float = 0.5,
    key: PRNGKeyArray,
) -> ModelStream:
    r"""Online logistic regression's forecasts over a scikit-learn data set, in stream order.

    Each pass visits the rows in a fresh random order (drawn with ``key``). At row $t$ the features are
    standardised with the running mean and variance of the rows seen so far (including this
    row's features, never its label), the model forecasts $q_t = \sigma(w^\top x_t + b)$, then
    takes one SGD step on the log loss with step ``learning_rate``$/\sqrt t$. How miscalibrated
    it is depends on the data and the stream's length. The slope of a logistic regression of
    $y$ on the forecasts' logits (1 when calibrated; above 1 under-confident, below 1
    over-confident), one pass in the order of ``jax.random.key(0)``: ``breast_cancer`` 1.38, ``wine`` 2.16,
    ``digits`` 0.82; over 20 passes of ``digits``, 1.01: a long stream of it is nearly calibrated.

    Args:
        name: one of :data:`STREAMS`.
        n_passes: passes over the data (the stream has ``n_passes * n_rows`` rounds).
        learning_rate: SGD step at $t = 1$.
        key: a JAX PRNG key (keyword-only, required): the stream order (NumPy's generator,
            seeded by the key; ``jax.random.key(s)`` gives the order of seed ``s``).

    Returns:
        :class:`ModelStream` ``(q, y)``.

    Example:
        >>> import jax
        >>> s = logistic_stream("wine", key=jax.random.key(0))
        >>> s.q.shape, s.y.dtype.name, bool((s.q >= 0).all() and (s.q <= 1).all())
        ((178,), 'int32', True)
    """
    X, y = _load(name)
    rng = np.random.default_rng(host_seed(key))
    order = np.concatenate([rng.permutation(len(y)) for _ in range(n_passes)])
    d = X.shape[1]
    w, b = np.zeros(d), 0.0
    mean, m2 = np.zeros(d), np.zeros(d)
    qs = np.empty(len(order))
    for t, r in enumerate(order, start=1):
        x = X[r]
        delta = x - mean  # Welford's running moments, this row's features included
        mean = mean + delta / t
        m2 = m2 + delta * (x - mean)
        sd = np.sqrt(m2 / t) if t > 1 else np.ones(d)
        z = (x - mean) / np.where(sd > 1e-12, sd, 1.0)
        logit = float(np.clip(z @ w + b, -30, 30))
        q = 1.0 / (1.0 + np.exp(-logit))
        qs[t - 1] = q
        g = q - y[r]
        step = learning_rate / np.sqrt(t)
        w -= step * g * z
        b -= step * g
    return ModelStream(np.clip(qs, 0.0, 1.0), y[order].astype(np.int32))

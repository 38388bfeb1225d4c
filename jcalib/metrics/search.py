r"""Settings of the searches that estimate a supremum by gradient ascent, one module per kind.

A metric that runs a search takes its settings as one object, ``search=``, instead of a row of
keyword arguments; a recalibrator built on the search holds it as a field:

```python
from jcalib.metrics import PartitionSearch, decision_calibration_error
res = decision_calibration_error(probs, labels, key=key, search=PartitionSearch(n_steps=100))
```

- :class:`PartitionSearch` — the linear-partition search of decision calibration (Zhao, Kim,
  Sahoo, Ma, Ermon 2021, Section 4.4): :func:`jcalib.metrics.decision_calibration_error`,
  :func:`jcalib.metrics.two_action_decision_calibration_error`,
  :func:`jcalib.metrics.decision.partition_search` and
  :class:`jcalib.recalibration.DecisionCalibration`.
- :class:`SigmoidSearch` — the projected gradient ascent over sigmoid weight functions
  (Gopalan, Hu, Rothblum 2024, Definition 7.7): :func:`jcalib.metrics.sigmoid_calibration_error`.

Both are ``eqx.Module``\ s: counts that fix loop lengths (``n_restarts``, ``n_steps``,
``unroll``) and the choice of objective are static fields; the step sizes are leaves, so one
compiled search serves every value and a ``jax.vmap`` over them is one program. Concrete
settings are checked once, in ``__check_init__``.
"""

from __future__ import annotations

import equinox as eqx
from jaxtyping import Array, Float

from .._validation import STEPS, Choice, Integer, Optional, Real, as_int, check_fields

__all__ = ["PartitionSearch", "SigmoidSearch"]


# The declared settings of both searches. Rates are floats or scalar arrays; traced values (a
# vmapped sweep over them) get their in-graph check where they are used.
_SETTINGS = dict(n_restarts=Integer(1, 2**16, what="parallel restarts"), n_steps=STEPS,
                 unroll=Optional(Integer(1, 2**20, what="unrolled steps")), learning_rate=Real(0, open_lo=True))


class PartitionSearch(eqx.Module):
    r"""Settings of the search for the worst linear partition (decision calibration, §4.4).

    The search ascends the softmax relaxation of Eq. (9),
    $\sum_a \|E[(Y - \hat p)\,\mathrm{softmax}_a(\langle \hat p, w_a\rangle)]\|_2$, over
    $w \in \mathbb R^{K\times C}$ by Adam, from ``n_restarts`` random starts (uniform in
    $\pm 1/\sqrt C$, the reference code's initialisation) updated together, for a fixed number
    of steps in one ``lax.scan`` (see :func:`jcalib.metrics.decision.partition_search`).

    Attributes:
        n_restarts: independent random starts $R$ (static).
        n_steps: Adam steps per start (static).
        learning_rate: Adam's initial learning rate (for $v$ below; ×0.8 every 500 steps, the
            reference code's schedule); a leaf.
        scale: the search moves $v$ with $w = \texttt{scale}\cdot v$, so Adam's step in $w$ is
            ``scale * learning_rate``; ``scale=1`` is the reference parametrisation, which
            needs about ten times more steps; a leaf.
        objective: ``"norm"`` ascends $\sum_a\|\cdot\|_2$ (Eq. 9 itself); ``"squared"``
            ascends $\sum_a\|\cdot\|_2^2$ (the reference code's surrogate; it bounds the L2
            gain of one recalibration stage) (static).
        unroll: Adam steps per iteration of the compiled loop (an int ≥ 1; ``None``: the
            backend's default, :func:`jcalib.core.optim.default_unroll`, set per backend in
            :data:`jcalib.core.optim.DEFAULT_UNROLL`) (static). The same steps, compiled
            differently: witnesses agree up to float rounding.

    Raises:
        ValueError: a count that is not a positive int, a concrete ``learning_rate`` or
            ``scale`` that is not a positive finite scalar, or an unknown ``objective``.

    Examples:
        >>> search = PartitionSearch(n_restarts=4, n_steps=100)
        >>> search.learning_rate, search.objective
        (0.01, 'norm')

    References:
        Zhao, Kim, Sahoo, Ma, Ermon (2021), *Calibrating Predictions to Decisions*, Section 4.4,
        Eq. (9), Proposition 3.
    """

    n_restarts: int = eqx.field(static=True, default=16, converter=as_int)
    n_steps: int = eqx.field(static=True, default=300, converter=as_int)
    learning_rate: float | Float[Array, ""] = 1e-2
    scale: float | Float[Array, ""] = 100.0
    objective: str = eqx.field(static=True, default="norm")
    unroll: int | None = eqx.field(static=True, default=None, converter=as_int)

    def __check_init__(self):
        check_fields(self, **_SETTINGS, scale=Real(0, open_lo=True), objective=Choice("norm", "squared"))


class SigmoidSearch(eqx.Module):
    r"""Settings of the projected gradient ascent over sigmoid weight functions (Def. 7.7).

    For every class, ``n_restarts`` starts ($a$ uniform in $[-1, 1]^k$, $b$ uniform in
    $[-L, L]$) are ascended by Adam for ``n_steps`` fixed steps, with $a$ clipped back into the
    box after every step (see :func:`jcalib.metrics.sigmoid_calibration_error`).

    Attributes:
        n_restarts: starts per class (static).
        n_steps: Adam steps (static).
        learning_rate: Adam's learning rate; a leaf.
        unroll: Adam steps per iteration of the compiled loop (an int ≥ 1; ``None``: the
            backend's default, :func:`jcalib.core.optim.default_unroll`) (static).

    Raises:
        ValueError: a count that is not a positive int, or a concrete ``learning_rate`` that is
            not a positive finite scalar.

    Examples:
        >>> SigmoidSearch(n_steps=100).learning_rate
        0.05

    References:
        Gopalan, Hu, Rothblum (2024), *On Computationally Efficient Multi-Class Calibration*,
        Definition 7.7.
    """

    n_restarts: int = eqx.field(static=True, default=16, converter=as_int)
    n_steps: int = eqx.field(static=True, default=300, converter=as_int)
    learning_rate: float | Float[Array, ""] = 0.05
    unroll: int | None = eqx.field(static=True, default=None, converter=as_int)

    def __check_init__(self):
        check_fields(self, **_SETTINGS)


def check_search(search, cls=None):
    """``search`` if it is a ``cls`` (default `PartitionSearch`), else a ``TypeError`` naming it."""
    cls = PartitionSearch if cls is None else cls
    if not isinstance(search, cls):
        raise TypeError(f"search must be a jcalib.metrics.{cls.__name__}, got {type(search).__name__}")
    return search

r"""An overconfident real model's stream for online recalibration (Okoroafor et al. 2024): Gaussian naive Bayes, online.

:func:`naive_bayes_stream` trains Gaussian naive Bayes online over a binary data set that
ships inside scikit-learn (the sets of :data:`~jcalib.datasets.streams.STREAMS`, no download)
and records, for each row, the forecast it made **before** learning the row's label
(prequential). Naive Bayes multiplies the likelihoods of correlated features as if they were
independent, so its forecasts pile up near 0 and 1 far more often than its accuracy warrants:
the textbook overconfident classifier, and the case a user of an online recalibrator has. Like
:func:`~jcalib.datasets.logistic_stream`, it runs on the host in NumPy (a one-off) and the
stream is replayed inside a sweep with ``jcalib.natures.Replay(y, x=q)``.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import PRNGKeyArray

from .._validation import Real, declare
from ._seed import host_seed
from .streams import STREAM_INPUTS, ModelStream, _load

__all__ = ["naive_bayes_stream"]


@declare(**STREAM_INPUTS, var_smoothing=Real(0.0, open_lo=True, static=True))
def naive_bayes_stream(
    name: str = "digits",
    *,
    n_passes: int = 1,
    var_smoothing: float = 1e-9,
    key: PRNGKeyArray,
) -> ModelStream:
    r"""Online Gaussian naive Bayes' forecasts over a scikit-learn data set, in stream order.

    Each pass visits the rows in a fresh random order (drawn with ``key``); the model keeps learning
    across passes, so from the second pass on it forecasts rows whose labels it has learnt
    (the stream is then a replay, not fresh data). Before row $t$ the model has seen rows
    $1, \dots, t-1$: per class $c$ their count $n_c$, feature means $\mu_{c}$ and
    (population) variances $v_{c}$, and over all of them the feature variances $v$. It
    forecasts
    $$q_t = \sigma\Big(\log\frac{n_1}{n_0} + \sum_j \big[\log\mathcal N(x_{tj}; \mu_{1j},
    v_{1j} + \epsilon) - \log\mathcal N(x_{tj}; \mu_{0j}, v_{0j} + \epsilon)\big]\Big),
    \qquad \epsilon = \texttt{var\_smoothing}\cdot\max_j v_j,$$
    which is exactly scikit-learn's ``GaussianNB(var_smoothing).fit(X[:t-1], y[:t-1])
    .predict_proba(x_t)[1]`` (tested), and then updates the moments with row $t$ (Welford).
    Until both classes have been seen and $\epsilon > 0$ it forecasts the Laplace-smoothed
    base rate $(n_1 + 1)/(t + 1)$ instead.

    Args:
        name: one of :data:`~jcalib.datasets.streams.STREAMS`.
        n_passes: passes over the data (the stream has ``n_passes * n_rows`` rounds).
        var_smoothing: the fraction of the largest feature variance added to every class
            variance (scikit-learn's parameter of that name).
        key: a JAX PRNG key (keyword-only, required): the stream order (NumPy's generator,
            seeded by the key; ``jax.random.key(s)`` gives the order of seed ``s``).

    Returns:
        :class:`~jcalib.datasets.ModelStream` ``(q, y)``.

    Example:
        >>> import jax
        >>> s = naive_bayes_stream("wine", key=jax.random.key(0))
        >>> s.q.shape, s.y.dtype.name, float(s.q[0])
        ((178,), 'int32', 0.5)

    References:
        Zadrozny and Elkan (2001), *Obtaining calibrated probability estimates from decision
        trees and naive Bayesian classifiers*; Niculescu-Mizil and Caruana (2005), *Predicting
        good probabilities with supervised learning* (naive Bayes pushes its forecasts to 0
        and 1).
    """
    X, y = _load(name)
    rng = np.random.default_rng(host_seed(key))
    order = np.concatenate([rng.permutation(len(y)) for _ in range(n_passes)])
    d = X.shape[1]
    n = np.zeros(2)
    mean, m2 = np.zeros((2, d)), np.zeros((2, d))  # per class
    mean_all, m2_all = np.zeros(d), np.zeros(d)  # all rows, for epsilon
    qs = np.empty(len(order))
    for t, r in enumerate(order):
        x, c = X[r], y[r]
        eps = var_smoothing * (m2_all / t).max() if t else 0.0
        if n.min() > 0 and eps > 0:
            var = m2 / n[:, None] + eps
            jll = np.log(n / t) - 0.5 * np.sum(np.log(2 * np.pi * var) + (x - mean) ** 2 / var, axis=1)
            # sigma(jll_1 - jll_0), written to stay finite for any gap
            qs[t] = 0.5 * (1.0 + np.tanh(0.5 * (jll[1] - jll[0])))
        else:
            qs[t] = (n[1] + 1) / (t + 2)
        # Welford's updates with row t: its class's moments and the pooled ones
        n[c] += 1
        delta = x - mean[c]
        mean[c] += delta / n[c]
        m2[c] += delta * (x - mean[c])
        delta = x - mean_all
        mean_all += delta / (t + 1)
        m2_all += delta * (x - mean_all)
    return ModelStream(np.clip(qs, 0.0, 1.0), y[order].astype(np.int32))

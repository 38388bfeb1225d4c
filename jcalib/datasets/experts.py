r"""Online experts from River, run on the host, whose forecast distributions are replayed as
contexts (Marx et al. 2024, §6.1: the forecasts ORCA and the isotonic baseline recalibrate).

Each expert is trained *prequentially* on a :class:`~jcalib.datasets.lagged.LaggedSeries`:
for every row, in time order, it first predicts from the 24 lag features, then learns the
outcome. Rows before the last ``horizon`` rows are a warm-up (the expert learns from them;
their forecasts are not returned), so by default an expert has seen the whole series up to the
forecast window, as an online learner would.

Outcomes and features are rescaled to $z = (y - \text{low}) / (\text{high} - \text{low})$ with the
series' known range (and clipped to [0, 1]); the forecast distributions live on
``n_bins`` equal bins of [0, 1] (50 in the paper, §6.1).

**The one rule by which a point-forecasting expert emits a distribution** (the paper does not
say how its experts did; this rule is jcalib's choice): with $\hat z_t$ the expert's prediction
clipped to [0, 1] and $\hat\sigma_t^2$ the running mean of its squared residuals
$(z_s - \hat z_s)^2$ over all earlier rows $s < t$ (warm-up included; $1/12$, the variance of
Uniform[0, 1], before any residual; floored at half a bin width),
$$p_{t,k} \propto \Phi\Big(\frac{e_{k+1} - \hat z_t}{\hat\sigma_t}\Big) - \Phi\Big(\frac{e_k - \hat z_t}{\hat\sigma_t}\Big),$$
the Gaussian $N(\hat z_t, \hat\sigma_t^2)$ conditioned on [0, 1] and binned onto the edges
$e_0 = 0 < \dots < e_K = 1$. The **marginal** expert's distribution is instead the histogram
of all earlier outcomes on the same bins (uniform before any). Every expert's bin masses are
then mixed with the uniform, $(1 - \varepsilon) p + \varepsilon / K$ with
$\varepsilon = 10^{-3}$, so that every bin has positive mass (finite logits).

The experts (River; ``pip install 'jcalib[river]'``, River < 0.26):

| name | River model |
| --- | --- |
| ``"sgt"`` | ``tree.SGTRegressor()`` (stochastic gradient trees, Gouk et al. 2019) |
| ``"mlp"`` | ``preprocessing.StandardScaler() | neural_net.MLPRegressor(hidden_dims=(20,), ReLU, SGD(1e-3))`` |
| ``"hat"`` | ``tree.HoeffdingAdaptiveTreeRegressor()`` (Bifet and Gavaldà 2009) |
| ``"bagging"`` | ``ensemble.BaggingRegressor(tree.HoeffdingTreeRegressor(), n_models=10)`` |
| ``"marginal"`` | none: the histogram of past outcomes |

River's hyperparameters are its defaults except the network's (River's documented example);
the paper does not give its own. River 0.25's ``MLPRegressor`` fails under pandas 3 (it sorts a
read-only column array on its first update); :class:`_MLPRegressor` initialises the same
weights itself before that line runs, and changes nothing else.
"""

from __future__ import annotations

import importlib.util
import math
import time
import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import ndtr
from jaxtyping import PRNGKeyArray
from tqdm.auto import tqdm

from .._validation import MAX_BINS, Bool, Choice, Custom, Int, Optional, check_static_int, declare
from ._seed import KEY, host_seed
from .lagged import LaggedSeries, _lagged_data

__all__ = ["EXPERTS", "ExpertForecasts", "make_expert", "run_expert", "gaussian_bin_probs"]

#: The expert names :func:`run_expert` knows.
EXPERTS = ("sgt", "mlp", "hat", "bagging", "marginal")

#: Weight of the uniform mixed into every expert forecast.
UNIFORM_MIX = 1e-3


class ExpertForecasts(NamedTuple):
    """An expert's forecasts over the forecast window (NumPy, float64; ``T`` = horizon).

    Attributes:
        probs: bin masses $p_{t,k}$, shape ``(T, n_bins)``, rows summing to 1, all positive.
        edges: the bin edges on the rescaled scale, ``(n_bins + 1,)`` from 0 to 1.
        y: the rescaled outcomes $z_t \\in [0, 1]$, shape ``(T,)``.
        point: the expert's point prediction $\\hat z_t$ (for the marginal: its mean), ``(T,)``.
        scale: $\\hat\\sigma_t$ (for the marginal: the histogram's standard deviation), ``(T,)``.
        low, high: the rescaling, $y = \\text{low} + z(\\text{high} - \\text{low})$.
        name: the expert's name.
        seconds: host wall time of the whole prequential run (warm-up included).
    """

    probs: np.ndarray
    edges: np.ndarray
    y: np.ndarray
    point: np.ndarray
    scale: np.ndarray
    low: float
    high: float
    name: str
    seconds: float


def _require_river():
    if importlib.util.find_spec("river") is None:
        raise ModuleNotFoundError("the River experts need the package 'river' (< 0.26); install the optional extra: pip install 'jcalib[river]'")


def _mlp_class():
    import pandas as pd
    from river.neural_net import MLPRegressor
    from river.neural_net.mlp import xavier_init

    class _MLPRegressor(MLPRegressor):
        """River's MLPRegressor with its first-update initialisation done outside pandas'
        read-only arrays (pandas 3); same weights, same updates."""

        def learn_many(self, X, y):
            if not hasattr(self, "w"):
                yf = y.to_frame() if isinstance(y, pd.Series) else y
                self.w, self.b = xavier_init(dims=(X.shape[1], *self.hidden_dims, yf.shape[1]), seed=self.seed)
                self.features = np.sort(np.array(X.columns))
                self.targets = np.array(yf.columns)
            return super().learn_many(X, y)

    return _MLPRegressor


def make_expert(name: str, seed: int = 0):
    """A fresh River model for ``name`` (see the module table); ``None`` for ``"marginal"``.

    Raises:
        ValueError: for an unknown name.
        ModuleNotFoundError: when River is not installed (names the extra).
    """
    if name not in EXPERTS:
        raise ValueError(f"name must be one of {EXPERTS}, got {name!r}")
    if name == "marginal":
        return None
    _require_river()
    with warnings.catch_warnings():
        # river.neural_net announces its own future removal on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from river import ensemble, neural_net, optim, preprocessing, tree

    if name == "sgt":
        return tree.SGTRegressor()
    if name == "hat":
        return tree.HoeffdingAdaptiveTreeRegressor(seed=seed)
    if name == "bagging":
        return ensemble.BaggingRegressor(model=tree.HoeffdingTreeRegressor(), n_models=10, seed=seed)
    act = neural_net.activations
    mlp = _mlp_class()(
        hidden_dims=(20,),
        activations=(act.ReLU, act.ReLU, act.Identity),
        optimizer=optim.SGD(1e-3),
        seed=seed,
    )
    return preprocessing.StandardScaler() | mlp


def gaussian_bin_probs(mean, scale, edges, eps: float = UNIFORM_MIX) -> np.ndarray:
    r"""Bin masses of $N(\text{mean}, \text{scale}^2)$ conditioned on ``[edges[0], edges[-1]]``,
    mixed with the uniform: $(1-\varepsilon)p + \varepsilon/K$. Broadcasts over leading axes of
    ``mean`` and ``scale``; returns shape ``(..., K)``.

    Example:
        >>> p = gaussian_bin_probs(0.5, 0.1, np.linspace(0, 1, 5))
        >>> bool(abs(p.sum() - 1) < 1e-12), bool(np.allclose(p, p[::-1]))
        (True, True)
    """
    m = np.asarray(mean, np.float64)[..., None]
    s = np.asarray(scale, np.float64)[..., None]
    if np.any(~np.isfinite(m)) or np.any(~(s > 0)):
        raise ValueError("mean must be finite and scale positive")
    cdf = ndtr((np.asarray(edges, np.float64) - m) / s)
    mass = np.diff(cdf, axis=-1)
    tot = mass.sum(axis=-1, keepdims=True)
    k = mass.shape[-1]
    # far outside the range all mass underflows: put it on the nearer end bin
    mid = 0.5 * (edges[0] + edges[-1])
    onehot = (np.arange(k) == np.where(m >= mid, k - 1, 0)).astype(np.float64)
    p = np.where(tot > 1e-300, mass / np.maximum(tot, 1e-300), onehot)
    return (1 - eps) * p + eps / k


def _finite_rows(data, name, bound):
    """Lagged data (:func:`~jcalib.datasets.lagged._lagged_data`) with finite outcomes and lags."""
    data = _lagged_data(data, name, bound)
    if not (np.all(np.isfinite(data.y)) and np.all(np.isfinite(data.x))):
        raise ValueError(f"{name} contains NaN or infinite values")
    return data


def _horizon(horizon, name, bound):
    """Forecast steps: at least 1, at most the rows of ``data``."""
    n = bound["data"].y.shape[0]
    horizon = check_static_int(horizon, name, 1)
    if horizon > n:
        raise ValueError(f"{name} {horizon} is longer than the series ({n} rows with lag features)")
    return horizon


def _warmup(warmup, name, bound):
    """Rows learnt before the window: from 0 to the rows before it."""
    return check_static_int(warmup, name, 0, bound["data"].y.shape[0] - bound["horizon"])


#: The declared ``n_bins`` of the experts' forecasts: equal bins of the rescaled range.
EXPERT_BINS = Int(1, MAX_BINS, bytes_per=8, what="its bin edges")


@declare(name=Choice(*EXPERTS), data=Custom(_finite_rows, "a LaggedSeries with finite rows and low < high"),
         horizon=Custom(_horizon, "forecast steps within the series"), n_bins=EXPERT_BINS,
         warmup=Optional(Custom(_warmup, "rows before the window")), key=KEY, progress=Bool())
def run_expert(
    name: str,
    data: LaggedSeries,
    *,
    horizon: int = 1000,
    warmup: int | None = None,
    n_bins: int = 50,
    key: PRNGKeyArray,
    progress: bool = True,
) -> ExpertForecasts:
    """Run expert ``name`` prequentially over ``data`` and return its forecasts for the last
    ``horizon`` rows.

    Args:
        name: one of :data:`EXPERTS`.
        data: a :class:`~jcalib.datasets.lagged.LaggedSeries` (e.g. ``sunspots()``).
        horizon: forecast steps returned (the last ``horizon`` rows; 1000 in the paper).
        warmup: rows the expert learns from before the window (default: all earlier rows).
        n_bins: number of equal bins of the rescaled range (50 in the paper).
        key: a JAX PRNG key (keyword-only, required): seeds the River model
            (``jax.random.key(s)`` gives River's seed ``s``).
        progress: show a progress bar.

    Returns:
        :class:`ExpertForecasts`.

    Raises:
        ValueError: unknown expert, ``horizon``/``warmup`` longer than the series, NaN in the
            data.
    """
    n = data.y.shape[0]
    warmup = n - horizon if warmup is None else warmup
    span = data.high - data.low
    z = np.clip((data.y - data.low) / span, 0.0, 1.0)
    zx = np.clip((data.x - data.low) / span, 0.0, 1.0)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    start = n - horizon - warmup
    model = make_expert(name, host_seed(key))
    feats = [f"lag{k + 1}" for k in range(zx.shape[1])]

    T = horizon
    point, scale = np.empty(T), np.empty(T)
    probs = np.empty((T, n_bins))
    counts = np.zeros(n_bins)  # marginal: histogram of past outcomes
    sq_sum, n_res = 0.0, 0
    floor = 0.5 / n_bins
    t0 = time.perf_counter()
    bar = tqdm(range(start, n), desc=f"{name} on {data.name}", leave=False, disable=not progress, unit="step")
    for i in bar:
        j = i - (n - horizon)
        if model is None:
            if j >= 0:
                hist = counts / counts.sum() if counts.sum() > 0 else np.full(n_bins, 1.0 / n_bins)
                mids = (edges[1:] + edges[:-1]) / 2
                mu = float(hist @ mids)
                # variance of the piecewise-uniform density: bin-mid variance + width²/12
                var = float(hist @ (mids - mu) ** 2) + (1.0 / n_bins) ** 2 / 12
                probs[j] = (1 - UNIFORM_MIX) * hist + UNIFORM_MIX / n_bins
                point[j], scale[j] = mu, math.sqrt(var)
            counts[min(int(z[i] * n_bins), n_bins - 1)] += 1
            continue
        xi = dict(zip(feats, zx[i].tolist()))
        pred = model.predict_one(xi)
        zhat = float(np.clip(0.0 if pred is None or not np.isfinite(pred) else pred, 0.0, 1.0))
        if j >= 0:
            sd = math.sqrt(sq_sum / n_res) if n_res else math.sqrt(1.0 / 12)
            point[j], scale[j] = zhat, max(sd, floor)
        sq_sum += (z[i] - zhat) ** 2
        n_res += 1
        model.learn_one(xi, float(z[i]))
    bar.close()
    if model is not None:
        probs = gaussian_bin_probs(point, scale, edges)
    seconds = time.perf_counter() - t0
    return ExpertForecasts(
        probs=probs, edges=edges, y=z[n - horizon :].copy(), point=point, scale=scale,
        low=float(data.low), high=float(data.high), name=name, seconds=seconds,
    )

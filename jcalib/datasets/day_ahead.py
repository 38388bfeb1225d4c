r"""Day-ahead experts: every hour of the next day forecast from data up to the end of the day before.

The operator of Marx et al. (2024), §6.2, "announces a commitment $a^{(i)}$ for each hour $i =
1, \dots, 24$ of the **next** 24-hour period", from "a probabilistic forecast for energy
generation over each of the next 24 hours". :func:`run_day_ahead_expert` makes those forecasts
from an hourly series cut into days of ``day_length`` hours: on day $d$ the expert sees the
``day_length`` values of day $d-1$ (lag $k$ = the value $k$ hours before midnight, most recent
first) and forecasts hour $h = 1, \dots,$ ``day_length`` of day $d$ (horizon $h$ hours past the
last value it saw); after the day it learns the day's outcomes. Day 0 has no previous day and is
skipped.

**Horizon as a feature (one model), not one model per horizon.** The model sees the lags plus
the horizon $h$ as one more feature, so every hour of every day is a training example: a year
of data gives 24× more examples to one model than to each of 24 per-horizon models, and the
Hoeffding trees of River need a few hundred examples per split (grace period 200), so 24
models fed one example a day each hardly grow. ``strategy="per_horizon"`` runs the other
choice for comparison (the wind-farm tutorial gives both).

Distributions follow the one rule of :mod:`jcalib.datasets.experts` with one change: the
running mean squared residual $\hat\sigma^2_h$ is kept **per horizon** (a day-ahead error grows
with the horizon; one pooled $\hat\sigma$ would be too wide at hour 1 and too narrow at hour
24). The marginal expert's histogram pools every earlier hour (it does not depend on $h$).
"""

from __future__ import annotations

import math
import time

import numpy as np
from jaxtyping import PRNGKeyArray
from tqdm.auto import tqdm

from .._validation import Bool, Choice, Custom, Optional, check_int, declare, shown
from ._seed import KEY, host_seed
from .experts import EXPERT_BINS, EXPERTS, UNIFORM_MIX, ExpertForecasts, gaussian_bin_probs, make_expert
from .lagged import LaggedSeries, _lagged_data

__all__ = ["DAY_AHEAD_STRATEGIES", "run_day_ahead_expert"]

#: ``"shared"``: one model with the horizon as a feature; ``"per_horizon"``: one model per hour.
DAY_AHEAD_STRATEGIES = ("shared", "per_horizon")


def _hourly(data, name, bound):
    """Lagged data (:func:`~jcalib.datasets.lagged._lagged_data`) whose ``series`` is a finite
    1-D array."""
    data = _lagged_data(data, name, bound)
    try:
        s = np.asarray(data.series, np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}.series must be a finite 1-D array, got {shown(data.series)}") from None
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise ValueError(f"{name}.series must be a finite 1-D array")
    return data


def _hours(data) -> int:
    return np.shape(data.series)[0]


def _day_length(day_length, name, bound):
    """Hours per day: at least 1, leaving 2 whole days in the series at least."""
    day_length = check_int(day_length, name, 1)
    if day_length > _hours(bound["data"]) // 2:
        raise ValueError(f"{name}={day_length} leaves fewer than 2 whole days in the series of {_hours(bound['data'])} hours")
    return day_length


def _days(days, name, bound):
    """Days forecast: at least 1, each with a previous day in the series."""
    days = check_int(days, name, 1)
    n_days = _hours(bound["data"]) // bound["day_length"]
    if days > n_days - 1:
        raise ValueError(f"{name} {days} is more than the {n_days - 1} days with a previous day in the series")
    return days


def _warmup_days(warmup_days, name, bound):
    """Days learnt before the window: from 0 to the days before it (after day 1)."""
    warmup_days = check_int(warmup_days, name, 0)
    room = _hours(bound["data"]) // bound["day_length"] - 1 - bound["days"]
    if warmup_days > room:
        raise ValueError(f"{name} must be at most {room}, got {warmup_days}")
    return warmup_days


@declare(name=Choice(*EXPERTS), strategy=Choice(*DAY_AHEAD_STRATEGIES),
         data=Custom(_hourly, "a LaggedSeries with a finite 1-D series and low < high"),
         day_length=Custom(_day_length, "hours per day, 2 whole days in the series at least"),
         days=Custom(_days, "days forecast, each with a previous day"), n_bins=EXPERT_BINS,
         warmup_days=Optional(Custom(_warmup_days, "days before the window")), key=KEY, progress=Bool())
def run_day_ahead_expert(
    name: str,
    data: LaggedSeries,
    *,
    days: int = 42,
    warmup_days: int | None = None,
    day_length: int = 24,
    strategy: str = "shared",
    n_bins: int = 50,
    key: PRNGKeyArray,
    progress: bool = True,
) -> ExpertForecasts:
    """Run expert ``name`` day by day over ``data.series`` and return its forecasts for every
    hour of the last ``days`` days.

    Args:
        name: one of :data:`jcalib.datasets.experts.EXPERTS`.
        data: a :class:`~jcalib.datasets.lagged.LaggedSeries`; only ``series``, ``low``,
            ``high`` and ``name`` are used (the lags are rebuilt per day).
        days: days forecast (the last ``days`` whole days of the series).
        warmup_days: days the expert learns from before the window (default: all earlier days
            from day 1).
        day_length: hours per day (24); also the number of horizons.
        strategy: one of :data:`DAY_AHEAD_STRATEGIES`.
        n_bins: equal bins of the rescaled range.
        key: a JAX PRNG key (keyword-only, required): seeds the River models
            (``jax.random.key(s)`` gives River's seed ``s``).
        progress: show a progress bar.

    Returns:
        :class:`~jcalib.datasets.experts.ExpertForecasts` with ``T = days * day_length`` rows in
        time order: row ``d * day_length + h - 1`` is horizon ``h`` of window day ``d``, so
        ``probs.reshape(days, day_length, n_bins)`` puts the horizon on axis 1.

    Raises:
        ValueError: unknown expert or strategy, bad sizes, NaN in the series.

    Example:
        >>> import jax
        >>> from jcalib.datasets import wind_power
        >>> f = run_day_ahead_expert("marginal", wind_power(), days=2, key=jax.random.key(0), progress=False)
        >>> f.probs.shape, f.y.shape
        ((48, 50), (48,))
    """
    s = np.asarray(data.series, np.float64)
    n_days = s.shape[0] // day_length
    warmup_days = n_days - 1 - days if warmup_days is None else warmup_days

    z = np.clip((s[: n_days * day_length] - data.low) / (data.high - data.low), 0.0, 1.0).reshape(n_days, day_length)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    first = n_days - days - warmup_days  # first day run (>= 1)
    n_models = day_length if strategy == "per_horizon" else 1
    models = [make_expert(name, host_seed(key)) for _ in range(n_models)]
    feats = [f"lag{k + 1}" for k in range(day_length)]

    point = np.empty((days, day_length))
    scale = np.empty((days, day_length))
    counts = np.zeros(n_bins)  # marginal: histogram of past outcomes
    hists = np.empty((days, n_bins))
    sq_sum, n_res = np.zeros(day_length), 0
    floor = 0.5 / n_bins
    mids = (edges[1:] + edges[:-1]) / 2
    t0 = time.perf_counter()
    bar = tqdm(range(first, n_days), desc=f"{name} day-ahead on {data.name}", leave=False, disable=not progress, unit="day")
    for d in bar:
        j = d - (n_days - days)
        if models[0] is None:
            if j >= 0:
                hist = counts / counts.sum() if counts.sum() > 0 else np.full(n_bins, 1.0 / n_bins)
                mu = float(hist @ mids)
                # variance of the piecewise-uniform density: bin-mid variance + width²/12
                var = float(hist @ (mids - mu) ** 2) + (1.0 / n_bins) ** 2 / 12
                hists[j], point[j], scale[j] = hist, mu, math.sqrt(var)
            np.add.at(counts, np.minimum((z[d] * n_bins).astype(int), n_bins - 1), 1)
            continue
        lags = dict(zip(feats, z[d - 1, ::-1].tolist()))  # lag 1 = the last hour of day d - 1
        xs = [{**lags, "horizon": float(h + 1)} if n_models == 1 else lags for h in range(day_length)]
        zhat = np.empty(day_length)
        for h, x in enumerate(xs):
            pred = models[h % n_models].predict_one(x)
            zhat[h] = float(np.clip(0.0 if pred is None or not np.isfinite(pred) else pred, 0.0, 1.0))
        if j >= 0:
            sd = np.sqrt(sq_sum / n_res) if n_res else np.full(day_length, math.sqrt(1.0 / 12))
            point[j], scale[j] = zhat, np.maximum(sd, floor)
        sq_sum += (z[d] - zhat) ** 2
        n_res += 1
        for h, x in enumerate(xs):
            models[h % n_models].learn_one(x, float(z[d, h]))
    bar.close()
    if models[0] is None:
        probs = (1 - UNIFORM_MIX) * np.repeat(hists, day_length, axis=0) + UNIFORM_MIX / n_bins
    else:
        probs = gaussian_bin_probs(point.reshape(-1), scale.reshape(-1), edges)
    return ExpertForecasts(
        probs=probs, edges=edges, y=z[n_days - days :].reshape(-1).copy(), point=point.reshape(-1),
        scale=scale.reshape(-1), low=float(data.low), high=float(data.high), name=name,
        seconds=time.perf_counter() - t0,
    )

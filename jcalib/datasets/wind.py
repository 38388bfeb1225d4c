r"""Hourly wind power for a typical meteorological year, built offline from shipped files.

**A substitute for the paper's data.** Section 6 of Marx et al. (2024) uses ERCOT's system-wide
hourly wind generation for 2022, which cannot be downloaded at run time here. What ships inside
registry packages is

* hourly wind speeds at 10 m for a typical meteorological year (TMY3, 8760 rows, column
  ``Wspd``) at two US stations in ``pvlib``: ``pvlib/data/703165TY.csv`` (Sand Point, Alaska)
  and ``pvlib/data/723170TYA.CSV`` (Greensboro, North Carolina);
* manufacturers' turbine power curves in ``windpowerlib``:
  ``windpowerlib/oedb/power_curves.csv``.

The series is the output of one turbine (default Enercon E-82/2300, 2.3 MW) at each of the two
stations, **summed** (a two-site portfolio), row by row (hour ``h`` of the typical year at both
stations; the two stations' TMY months come from different years, so the sum is a synthetic
portfolio, not a historical one). Wind speed is carried from 10 m to the hub height (default
100 m) with the power law $v_h = v_{10}(h/10)^{1/7}$ (Hellmann exponent 1/7, the usual
neutral-stability value), then through the power curve (linear interpolation between the
tabulated speeds, 0 above the last tabulated speed: cut-out).

Zero hours: a single site is calm often (about 9% of the hours at Sand Point and 12% at
Greensboro give zero power at 100 m with the E-82); the two-site sum is zero in about 1.4% of
the hours. Each zero hour adds 2 to the SMAPE sum whatever the forecast (``|0 - ŷ| / (ŷ/2)``)
unless the forecast mean is exactly 0, so SMAPE on this series has a floor of roughly
0.03 that no forecaster can remove; ERCOT's system-wide generation never reaches zero. The
files are read directly (``pvlib`` and ``windpowerlib`` are not imported).
"""

from __future__ import annotations

import csv

import numpy as np

from .._validation import Custom, Real, declare, shown
from .lagged import N_LAGS, LaggedSeries, _package_dir, lag_features

__all__ = ["wind_power", "WIND_SITES"]

#: The TMY3 files (inside ``pvlib/data``) whose hourly power is summed.
WIND_SITES = ("703165TY.csv", "723170TYA.CSV")


def _wind_speed(path) -> np.ndarray:
    with open(path, newline="") as f:
        f.readline()  # station metadata line
        rows = csv.DictReader(f)
        v = np.array([float(r["Wspd (m/s)"]) for r in rows], dtype=np.float64)
    if v.shape != (8760,) or not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"{path}: expected 8760 finite non-negative hourly wind speeds")
    return v


def _power_curve(turbine: str):
    path = _package_dir("windpowerlib", "data") / "oedb" / "power_curves.csv"
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    speeds = np.array([float(s) for s in rows[0][1:]])
    for r in rows[1:]:
        if r[0] == turbine:
            p = np.array([float(v) if v != "" else np.nan for v in r[1:]])
            keep = np.isfinite(p)
            return speeds[keep], p[keep]
    known = ", ".join(r[0] for r in rows[1:])
    raise ValueError(f"turbine {turbine!r} is not in {path.name}; known: {known}")


def _turbine(value, name, bound):
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a turbine_type string of windpowerlib's oedb/power_curves.csv, got {shown(value)}")
    return value


@declare(n_lags=N_LAGS, turbine=Custom(_turbine, "a turbine_type of windpowerlib's power curves"),
         hub_height=Real(0.0, open_lo=True, static=True))
def wind_power(n_lags: int = 24, *, turbine: str = "E-82/2300", hub_height: float = 100.0) -> LaggedSeries:
    """Hourly power (MW) of one turbine at each of two TMY3 stations, summed, with lag features.

    Needs the optional extra ``data`` (``pip install 'jcalib[data]'``: ``pvlib`` and
    ``windpowerlib``); no download at run time.

    Args:
        n_lags: past hours per row (default 24, Marx et al. 2024, §6).
        turbine: a ``turbine_type`` of windpowerlib's ``oedb/power_curves.csv``.
        hub_height: hub height in metres (> 0) for the power-law extrapolation from 10 m.

    Returns:
        A :class:`~jcalib.datasets.lagged.LaggedSeries` with ``series`` of length 8760 (MW) and
        range ``[0, 2 × the curve's maximum]`` (4.7 MW for the E-82/2300, whose curve peaks at 2.35 MW).

    Example:
        >>> d = wind_power()
        >>> d.series.shape, d.x.shape, d.high
        ((8760,), (8736, 24), 4.7)
    """
    data_dir = _package_dir("pvlib", "data") / "data"
    speeds, power = _power_curve(turbine)
    factor = (hub_height / 10.0) ** (1.0 / 7.0)
    total = np.zeros(8760)
    for site in WIND_SITES:
        v = _wind_speed(data_dir / site) * factor
        total += np.interp(v, speeds, power, left=0.0, right=0.0)
    series = total / 1e6  # W -> MW
    y, x = lag_features(series, n_lags)
    high = len(WIND_SITES) * float(np.max(power)) / 1e6
    return LaggedSeries(y=y, x=x, series=series, low=0.0, high=high, name="wind", unit="MW")

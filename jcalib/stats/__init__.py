r"""Statistical inference for calibration: bootstrap intervals and calibration tests with p-values.

* :func:`bootstrap` / :func:`paired_bootstrap`: percentile and BCa intervals of any metric,
  resampled by ``vmap`` over index draws in chunks (one compiled call for thousands of
  resamples); the paired form gives the interval of a difference between two forecasters.
* Tests, each a :class:`CalibrationTestResult` ``(statistic, p_value)`` whose null is
  "the forecasts are calibrated": :func:`consistency_test` (any metric),
  :func:`spiegelhalter_test`, :func:`skce_test`, :func:`cme_test` (the calibration mean
  embedding at test locations, with :func:`ucme` its estimate), :func:`ks_test`,
  :func:`kuiper_test`, :func:`pit_uniformity_test`; :func:`skce_interval`, a normal confidence
  interval of the SKCE.
* :func:`calibration_curve` and :func:`smooth_calibration_curve`: the arrays a reliability
  diagram draws (binned frequencies with Wilson or Clopper–Pearson intervals; the kernel
  regression at smooth ECE's bandwidth with a bootstrap band).
* CORP (Dimitriadis, Gneiting, Jordan 2021): :func:`score_decomposition` and
  :func:`quantile_score_decomposition` split a mean score into miscalibration, discrimination
  and uncertainty by isotonic recalibration, with bootstrap intervals; :func:`corp_curve`
  gives the PAV reliability curve with consistency bands.
"""

from ._result import CalibrationTestResult
from .resampling import BootstrapResult, bootstrap, paired_bootstrap
from .consistency import consistency_test
from .corp import CORPCurve, ScoreDecomposition, corp_curve, quantile_score_decomposition, score_decomposition
from .curve import CalibrationCurve, SmoothCalibrationCurve, calibration_curve, smooth_calibration_curve
from .cumulative import ks_calibration_error, ks_test, kuiper_calibration_error, kuiper_test, pit_uniformity_test
from .kernel import SKCEInterval, cme_test, skce, skce_interval, skce_test, ucme
from .spiegelhalter import spiegelhalter_test

__all__ = [
    "BootstrapResult",
    "CORPCurve",
    "CalibrationCurve",
    "CalibrationTestResult",
    "SKCEInterval",
    "ScoreDecomposition",
    "SmoothCalibrationCurve",
    "bootstrap",
    "calibration_curve",
    "cme_test",
    "consistency_test",
    "corp_curve",
    "ks_calibration_error",
    "ks_test",
    "kuiper_calibration_error",
    "kuiper_test",
    "paired_bootstrap",
    "pit_uniformity_test",
    "quantile_score_decomposition",
    "score_decomposition",
    "skce",
    "skce_interval",
    "skce_test",
    "smooth_calibration_curve",
    "spiegelhalter_test",
    "ucme",
]

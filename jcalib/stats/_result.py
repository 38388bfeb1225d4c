"""The result type shared by every calibration test."""

from __future__ import annotations

from typing import NamedTuple

from jaxtyping import Array

__all__ = ["CalibrationTestResult"]


class CalibrationTestResult(NamedTuple):
    """A test statistic and its p-value (small p-values are evidence against calibration).

    Attributes:
        statistic: the test statistic on the data (what each test's docstring names).
        p_value: the probability, under the test's null of calibration, of a statistic at least
            as extreme; in $[0, 1]$.
    """

    statistic: Array
    p_value: Array

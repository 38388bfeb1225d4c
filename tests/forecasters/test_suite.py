"""The forecasters' binary suite: AOSA and every baseline of the study in Arunachaleswaran et al. (2024)."""

import pytest

from jcalib.core import AbstractForecaster
from jcalib.forecasters import AlmostOneStepAhead, binary_suite


def test_binary_suite_sizes_for_the_horizon():
    fs = binary_suite(10_000)
    assert list(fs)[:2] == ["AOSA", "AOSA (tie high)"] and len(fs) == 7
    assert all(isinstance(f, AbstractForecaster) and f.outcome_space in ("binary", None) for f in fs.values())
    assert fs["AOSA"] == AlmostOneStepAhead.for_horizon(10_000) and fs["AOSA"].n_bins == 100


def test_binary_suite_checks_T():
    with pytest.raises(ValueError, match="T"):
        binary_suite(0)

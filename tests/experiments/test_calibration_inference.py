"""experiments/calibration_inference.py: --help, and the two forecasters it studies (naive
Bayes on the breast cancer test third, and its temperature-scaled version) are valid forecasts
of the same 190 labels, temperature scaling with T > 1 (it softens an over-confident model)."""

import numpy as np
import pytest


def test_help(capsys, experiment):
    with pytest.raises(SystemExit) as e:
        experiment("calibration_inference").main(["--help"])
    assert e.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_forecasters(experiment):
    fc, y, temperature = experiment("calibration_inference").forecasters(0)
    assert set(fc) == {"naive Bayes", "temperature-scaled"} and y.shape == (190,)
    for p in fc.values():
        assert p.shape == (190,) and np.all((p >= 0) & (p <= 1))
    assert temperature > 1

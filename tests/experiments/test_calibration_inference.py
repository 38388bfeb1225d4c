"""experiments/calibration_inference.py: --help, and the two forecasters it studies (naive
Bayes on the breast cancer test third, and its temperature-scaled version) are valid forecasts
of the same 190 labels, temperature scaling with T > 1 (it softens an over-confident model)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).parents[2] / "experiments" / "calibration_inference.py"


def _load():
    spec = importlib.util.spec_from_file_location("calibration_inference", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        _load().main(["--help"])
    assert e.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_forecasters():
    fc, y, temperature = _load().forecasters(0)
    assert set(fc) == {"naive Bayes", "temperature-scaled"} and y.shape == (190,)
    for p in fc.values():
        assert p.shape == (190,) and np.all((p >= 0) & (p <= 1))
    assert temperature > 1

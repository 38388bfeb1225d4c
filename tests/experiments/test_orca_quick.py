"""End-to-end smoke runs of paper 002's experiments (small T, few Adam steps): the pipeline
from data through River experts, the isotonic baseline and ORCA in one sweep to the CSVs,
claims, figure and timings. The numbers themselves are the full runs' business."""

import csv
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

for pkg in ("river", "pmdarima", "pvlib", "windpowerlib"):
    pytest.importorskip(pkg, reason=f"the optional extras 'data' and 'river' are not installed ({pkg})")

EXP = Path(__file__).resolve().parents[2] / "experiments"


def _load(name):
    sys.path.insert(0, str(EXP))
    spec = importlib.util.spec_from_file_location(name, EXP / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_table1_quick(tmp_path):
    mod = _load("orca_table1")
    res = mod.main(["--quick", "--horizon", "24", "--warmup", "100", "--steps", "5", "--experts", "hat", "marginal",
                    "--out", str(tmp_path), "--no-progress"])
    with open(tmp_path / "table1.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * 3
    assert {(r["series"], r["expert"], r["method"]) for r in rows} == {
        (s, e, m) for s in ("wind", "sunspots") for e in ("hat", "marginal") for m in ("expert", "isotonic", "orca")
    }
    for r in rows:
        for k in ("qce", "qce_mean_abs", "smape", "crps", "pit_ks", "coverage90"):
            assert np.isfinite(float(r[k]))
        assert 0 <= float(r["smape"]) <= 2 and float(r["qce"]) >= 0
    assert len(res["claims"]) == 5
    timing = json.loads((tmp_path / "timing.json").read_text())
    for k in ("experts_host_s", "isotonic_jax_s", "isotonic_sklearn_s", "orca_s", "total_s"):
        assert timing[k] > 0
    # the JAX isotonic baseline (float32) equals scikit-learn's refit-every-step (float64)
    assert timing["isotonic_jax_vs_sklearn_max_abs_diff"] < 1e-4
    assert (tmp_path / "table1.png").stat().st_size > 0 and (tmp_path / "table1.md").exists()


def test_wind_farm_quick(tmp_path):
    mod = _load("orca_wind_farm")
    res = mod.main(["--quick", "--days", "1", "--warmup", "100", "--steps", "5", "--out", str(tmp_path), "--no-progress"])
    with open(tmp_path / "decision_loss.csv") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["lambda"]) for r in rows] == [-0.8, -0.4, 0.0, 0.4, 0.8]
    for r in rows:
        for m in ("expert", "isotonic", "orca"):
            assert float(r[m]) >= 0 and np.isfinite(float(r[m]))
    assert (tmp_path / "wind_farm.png").exists()
    assert set(res["metrics"]) == {"expert", "isotonic", "orca"}


def test_bad_arguments():
    mod = _load("orca_table1")
    with pytest.raises(SystemExit):
        mod.parse(["--experts", "forest"])
    with pytest.raises(SystemExit):
        mod.parse(["--series", "tides"])

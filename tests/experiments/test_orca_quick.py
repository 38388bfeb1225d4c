"""End-to-end smoke runs of the experiments of Marx et al. (2024) (small T, few Adam steps): the
pipeline from data through River experts, the isotonic baseline and ORCA in one sweep to the CSVs,
claims, figure and timings. The numbers themselves are the full runs' business."""

import csv
import json

import numpy as np
import pytest

for pkg in ("river", "pmdarima", "pvlib", "windpowerlib"):
    pytest.importorskip(pkg, reason=f"the optional extras 'data' and 'river' are not installed ({pkg})")


def test_table1_quick(tmp_path, experiment):
    mod = experiment("orca_table1")
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


def _wind_farm(experiment, tmp_path, *extra):
    mod = experiment("orca_wind_farm")
    res = mod.main(["--quick", "--days", "2", "--warmup-days", "20", "--steps", "5", "--out", str(tmp_path), "--no-progress",
                    *extra])
    with open(tmp_path / "decision_loss.csv") as f:
        rows = list(csv.DictReader(f))
    with open(tmp_path / "metrics.csv") as f:
        metrics = list(csv.DictReader(f))
    return mod, res, rows, metrics


def _check_wind_farm(rows, metrics, methods):
    horizons = [str(h) for h in range(1, 25)] + ["all"]
    # one row per (λ, method, horizon or "all")
    assert [(float(r["lambda"]), r["method"], r["horizon"]) for r in rows] == [
        (lam, m, h) for lam in (-0.8, -0.4, 0.0, 0.4, 0.8) for m in methods for h in horizons
    ]
    for r in rows:
        for k in ("loss", "se", "diff_vs_expert", "diff_se"):
            assert np.isfinite(float(r[k]))
        assert float(r["loss"]) >= 0 and float(r["se"]) >= 0
        if r["method"] == "expert":
            assert float(r["diff_vs_expert"]) == 0.0
    by = {(float(r["lambda"]), r["method"], r["horizon"]): float(r["loss"]) for r in rows}
    for lam in (-0.8, 0.0, 0.8):
        for m in methods:  # the day's loss is the sum of its 24 hours'
            np.testing.assert_allclose(by[(lam, m, "all")], sum(by[(lam, m, h)] for h in horizons[:-1]), rtol=1e-4)
    assert [(r["method"], r["horizon"]) for r in metrics] == [(m, h) for m in methods for h in horizons]
    for r in metrics:
        assert float(r["qce"]) >= 0 and 0 <= float(r["smape"]) <= 2 and float(r["width80"]) > 0


def test_wind_farm_quick(tmp_path, experiment):
    _, res, rows, metrics = _wind_farm(experiment, tmp_path)
    _check_wind_farm(rows, metrics, ["expert", "isotonic", "orca"])
    timing = json.loads((tmp_path / "timing.json").read_text())
    for k in ("expert_host_s", "isotonic_s", "orca_s", "total_s"):
        assert timing[k] > 0
    assert timing["orca_rounds_per_payoff"] == 48
    assert (tmp_path / "wind_farm.png").stat().st_size > 0
    assert 0 <= res["orca_lower_2se"] <= res["orca_lower"] <= 5


@pytest.mark.slow
def test_wind_farm_ablation(tmp_path, experiment):
    mod, _, rows, metrics = _wind_farm(experiment, tmp_path, "--ablation", "all")
    _check_wind_farm(rows, metrics, ["expert", "isotonic", *mod.VARIANTS])


def test_wind_farm_payoff_blocks(experiment):
    from jcalib.payoffs import DecisionCalibration, PinballRegret

    mod = experiment("orca_wind_farm")
    full = mod.decision_payoff()
    assert [type(b).__name__ for b in full.blocks] == [
        "QuantileCalibration", "ExpertRegret", "MomentCalibration", "DecisionCalibration", "PinballRegret"]
    assert full.dim == 99 + 2 + 2 + 5 * 11 + 5 and full.bound() == 5.0
    reg = next(b for b in full.blocks if isinstance(b, PinballRegret))
    np.testing.assert_allclose(reg.levels, (0.1, 0.3, 0.5, 0.7, 0.9))
    for name, blocks in mod.VARIANTS.items():
        p = mod.decision_payoff(blocks)
        assert any(isinstance(b, DecisionCalibration) for b in p.blocks) == ("decision" in blocks), name
        assert any(isinstance(b, PinballRegret) for b in p.blocks) == ("regret" in blocks), name
    with pytest.raises(SystemExit):
        mod.parse(["--days", "1"])


def test_bad_arguments(experiment):
    mod = experiment("orca_table1")
    with pytest.raises(SystemExit):
        mod.parse(["--experts", "forest"])
    with pytest.raises(SystemExit):
        mod.parse(["--series", "tides"])

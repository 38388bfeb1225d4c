"""The experiment of Okoroafor et al. (2024), part (f), small: an overconfident real model's stream
(online Gaussian naive Bayes) recalibrated online in one vmapped sweep over stream orders; its
numbers against the recalibrator's guarantees, the JSON it writes and the figure."""

import json

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the optional extra 'experiments' is not installed (scikit-learn)")

def test_overconfident_model_recalibrated(tmp_path, monkeypatch, experiment):
    mod = experiment("approachability_recalibration")
    monkeypatch.setattr(mod, "RESULTS", tmp_path)
    out = {}
    res = mod.part_f(out, {"digits": 2}, 2, (0.5, 1.0), streams={"digits": mod.OVERCONFIDENT["digits"]},
                     variants={"no follow-the-oracle": {"follow_oracle": False}})
    json.dumps(out)  # what the script writes
    for name, run in res.items():
        assert [h["T"] for h in run["horizons"]] == [run["passes"] * run["rows_per_pass"] // 2, run["passes"] * run["rows_per_pass"]]
        full = run["horizons"][-1]
        T, eps = full["T"], full["eps"]
        # the diagrams pool both stream orders' rounds
        assert sum(run["diagram"]["model"]["count"]) == sum(run["diagram"]["recal"]["count"]) == 2 * T
        for h in run["horizons"]:
            # the guarantee bounds the regret against the model by O(eps); here it is far below eps
            assert max(h["regret"]["per_shuffle"]) < 0.2 * h["eps"]
            # the realised regret is the Brier scores' difference, up to float32 sums over T rounds
            np.testing.assert_allclose(h["recal_brier"]["mean"] - h["model_brier"]["mean"], h["regret_realised"]["mean"], atol=1e-4)
            assert h["hindsight_binned_brier"]["mean"] < h["model_brier"]["mean"]
    # digits: the model's binned ECE is about twice eps = 1/16 here; the recalibrated one comes
    # down to about eps in every stream order (the follow-the-oracle rule holds the grid
    # calibration at eps; the 10-bin ECE of the realised draws adds sampling noise, hence 1.25)
    d = res["digits"]["horizons"][-1]
    assert min(d["model_ece"]["per_shuffle"]) > 1.6 * d["eps"]
    assert max(d["recal_ece"]["per_shuffle"]) < 1.25 * d["eps"]
    assert max(d["recal_smooth_ece"]["per_shuffle"]) < 0.6 * min(d["model_smooth_ece"]["per_shuffle"])
    # Murphy's decomposition of the pooled 20-bin summaries: REL - RES + UNC is the Brier score up
    # to the within-bin spread of the forecasts (hence 0.01), and the recalibration lowers REL
    mu = d["murphy"]
    for who in ("model", "recal"):
        parts = mu[who]
        assert abs(parts["reliability"] - parts["resolution"] + parts["uncertainty"] - d[f"{who}_brier"]["mean"]) < 0.01
    assert mu["recal"]["reliability"] < 0.5 * mu["model"]["reliability"]
    # the ablation: without the follow-the-oracle rule calibration goes well below eps, and the
    # regret stays below the guarantee's scale
    v = res["digits"]["variants"]["no follow-the-oracle"]
    assert v["T"] == d["T"] and max(v["recal_ece"]["per_shuffle"]) < 0.5 * d["eps"]
    assert max(v["regret"]["per_shuffle"]) < 0.2 * d["eps"]
    paths = mod.figures(out, "_quick")
    assert [p.name for p in paths] == ["approachability_overconfident_quick.png"]
    assert paths[0].stat().st_size > 0

"""Smoke test of experiments/train_with_calibration_loss.py --quick (the CI run of the experiment)."""

import csv
import math

import pytest


def test_help(capsys, experiment):
    mod = experiment("train_with_calibration_loss")
    with pytest.raises(SystemExit) as e:
        mod.parse_args(["--help"])
    assert e.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_quick_run(tmp_path, monkeypatch, experiment):
    mod = experiment("train_with_calibration_loss")
    monkeypatch.chdir(tmp_path)
    img = tmp_path / "img"
    summary, timing = mod.main(["--quick", "--img-dir", str(img)])
    out = tmp_path / mod.OUT
    for name in ("runs.csv", "summary.csv", "summary.md", "timing.json", mod.FIGURE):
        assert (out / name).is_file(), name
    assert (img / mod.FIGURE).is_file()
    methods = {r["method"] for r in summary}
    assert methods == {"cross-entropy", "smooth ECE", "kernel CE (Gopalan et al. 2024)", "MMCE", "decision (Zhao et al. 2021)"}
    with open(out / "runs.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 2 * 5  # 2 seeds × {raw, temperature-scaled} × 5 methods (one weight each)
    for r in rows:
        for m in mod.METRICS:
            assert math.isfinite(float(r[m])), (r["method"], m)
        assert 0.0 <= float(r["top_label_ece"]) <= 1.0
    raw = {(r["method"], r["seed"]): r for r in rows if r["posthoc"] == "none"}
    for r in rows:
        if r["posthoc"] == "temperature":  # temperature scaling keeps the arg-max
            assert float(r["accuracy"]) == float(raw[(r["method"], r["seed"])]["accuracy"])
    ce = [r for r in summary if r["method"] == "cross-entropy" and r["posthoc"] == "none"][0]
    assert ce["accuracy"] > 0.8  # an MLP on digits after 40 full-batch steps (measured ≈ 0.97)

"""Smoke tests of experiments/recalibrate_classifier.py (the tutorial's table and figure)."""

import csv

import numpy as np
import pytest


def test_help(capsys, experiment):
    mod = experiment("recalibrate_classifier")
    with pytest.raises(SystemExit) as e:
        mod.parse_args(["--help"])
    assert e.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_summary_is_mean_and_sd_over_splits(experiment):
    mod = experiment("recalibrate_classifier")
    rows = [{"setting": "binary", "method": "m", "split": s, **{k: float(s) for k in mod.METRICS}} for s in range(3)]
    (row,) = mod.summarise(rows)
    assert row["ece_mean"] == 1.0 and np.isclose(row["ece_sd"], 1.0)
    assert "| m | 1.000 ± 1.000 |" in mod.markdown([row])


@pytest.mark.slow
def test_quick_run(tmp_path, monkeypatch, experiment):
    mod = experiment("recalibrate_classifier")
    monkeypatch.chdir(tmp_path)
    summary = mod.main(["--quick", "--img-dir", str(tmp_path / "img")])
    out = tmp_path / mod.OUT
    for name in ("runs.csv", "summary.csv", "summary.md", mod.FIGURE):
        assert (out / name).is_file(), name
    assert (tmp_path / "img" / mod.FIGURE).is_file()
    methods = {r["method"] for r in summary}
    assert {"uncalibrated", "Platt", "beta (abm)", "isotonic", "temperature", "Dirichlet (ODIR)"} <= methods
    with open(out / "runs.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 3 * len(methods)
    by = {(r["setting"], r["method"]): r for r in summary}
    for setting in ("binary", "multiclass"):  # Naive Bayes is over-confident: Platt fixes much of it
        assert by[(setting, "Platt")]["nll_mean"] < 0.5 * by[(setting, "uncalibrated")]["nll_mean"]

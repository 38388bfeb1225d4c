"""experiments/aosa_distance_bound.py end to end on a tiny configuration: the study of the
demo with its distances in a worker process, the per-run CSV and the log-log slope."""

import csv

import pytest


@pytest.mark.slow  # eleven compiled sweeps and a spawned worker: about half a minute on two idle cores
def test_tiny_run_writes_the_table_and_the_slope(tmp_path, experiment):
    mod = experiment("aosa_distance_bound")
    mod.main(["--T", "16", "64", "--seeds", "2", "--distance-seeds", "1", "--max-full-T", "16", "--workers", "1",
              "--out", str(tmp_path)])
    with open(tmp_path / "table.csv") as fh:
        rows = list(csv.DictReader(fh))
    # 7 forecasters at T = 16, the 4 grid forecasters (AOSA twice, Foster, Gupta-Ramdas) at
    # T = 64; 12 natures, 2 seeds
    assert len(rows) == (7 + 4) * 12 * 2
    certified = [r for r in rows if r["seed_index"] == "0"]
    assert all(float(r["dist_lower"]) <= float(r["dist_upper"]) <= float(r["ece"]) + 1e-4 for r in certified)
    summary = (tmp_path / "summary.md").read_text()
    assert "Log–log slope of AOSA's worst certified distance" in summary
    assert "| Defensive | — | — |" in summary  # no run at the largest T

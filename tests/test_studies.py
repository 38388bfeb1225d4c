"""Paper 000's distance study and report (what the demo and the full-size experiment run) on
a tiny configuration."""

import csv
from pathlib import Path

import jax
import numpy as np
import pytest

from jcalib import studies
from jcalib.forecasters import AlmostOneStepAhead, RunningFrequency, aosa_bound
from jcalib.natures import Bernoulli, Contrarian


def _forecasters(T):
    return {"AOSA": AlmostOneStepAhead.for_horizon(T), "Running frequency": RunningFrequency()}


def _natures(T):
    return {"Bernoulli(0.3)": Bernoulli(0.3), "Contrarian": Contrarian()}


@pytest.fixture(scope="module")
def rows():
    return studies.distance_study([20, 60], 3, jax.random.key(0), forecasters_for=_forecasters, natures_for=_natures,
                              distance_seeds=2, progress=False)


def test_study_rows_cover_every_combination(rows):
    assert len(rows) == 2 * 2 * 3 * 2
    for r in rows:
        assert r.bound == aosa_bound(r.T)  # the library's bound, T/m + m + 1 with m = ceil(sqrt(T))
        if r.seed < 2:
            # ECE >= CalDist (paper 000, Lemma 1) and the interval is ordered
            assert r.dist_lower <= r.dist_upper + 1e-9 and r.dist_upper <= r.ece + 1e-6
        else:
            assert np.isnan(r.dist_upper)
        if r.forecaster == "AOSA":
            # Theorem 1: CalDist <= certificate <= T/m + m + 1 (2 sqrt(T) + 1 when T is a square)
            assert r.certificate <= r.bound + 1e-9
            assert np.isnan(r.dist_upper) or r.dist_upper <= r.certificate + 1e-6
        else:
            assert np.isnan(r.certificate)


def test_study_rows_do_not_depend_on_threads():
    """Jobs run two at a time by default, the longest horizon first, with two distance workers;
    the rows come back in job order (horizons ascending) with equal numbers."""
    kw = dict(forecasters_for=_forecasters, natures_for=_natures, distance_seeds=1, progress=False)
    one = studies.distance_study([20, 30], 2, jax.random.key(1), threads=1, distance_workers=1, **kw)
    two = studies.distance_study([20, 30], 2, jax.random.key(1), threads=2, distance_workers=2, **kw)
    assert [r.T for r in one] == sorted(r.T for r in one)
    assert [(r.forecaster, r.nature, r.seed) for r in one] == [(r.forecaster, r.nature, r.seed) for r in two]
    np.testing.assert_array_equal([r.ece for r in one], [r.ece for r in two])
    np.testing.assert_array_equal([r.dist_upper for r in one], [r.dist_upper for r in two])


def test_compiler_options_per_job():
    """Unoptimised compiles only where they pay and keep the numbers: grid forecasters at short
    horizons; level 1 elsewhere."""
    fast, level1 = {"xla_backend_optimization_level": 0}, {"xla_backend_optimization_level": 1}
    assert studies.compiler_options_for(AlmostOneStepAhead.for_horizon(1000), 1000) == fast
    assert studies.compiler_options_for(AlmostOneStepAhead.for_horizon(10_000), 10_000) == level1
    assert studies.compiler_options_for(RunningFrequency(), 100) == level1


def test_report_files(rows, tmp_path):
    paths = studies.write_report(rows, str(tmp_path), title="tiny")
    with open(paths["table"]) as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == len(rows) and {"forecaster", "nature", "seed", "T", "ece", "dist_upper"} <= set(table[0])
    summary = Path(paths["summary"]).read_text()
    assert "Worst case for AOSA" in summary and "held in every AOSA run" in summary
    for k in ("distance", "ece"):
        with open(paths[k], "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"

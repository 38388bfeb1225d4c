"""The demo's command line, its study and report (on a tiny configuration), and the AOSA
tutorial's table, which must be what ``make demo`` writes."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jcalib import cli
from jcalib import metrics as M
from jcalib.forecasters import AlmostOneStepAhead, RunningFrequency, aosa_bound
from jcalib.natures import Bernoulli, Contrarian

PAGE = Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "aosa.md"


def test_demo_help():
    out = subprocess.run([sys.executable, "-m", "jcalib.cli", "demo", "--help"], capture_output=True, text=True, check=True)
    assert "--seeds" in out.stdout and "--distance-seeds" in out.stdout


@pytest.mark.parametrize("argv", [
    ["--T", "0"], ["--T", "-5"], ["--T", "100", "10000000000"], ["--T", "ten"], ["--seeds", "0"],
    ["--seeds", "-1"], ["--seeds", "1000000"], ["--distance-seeds", "-1"], ["--distance-seeds", "5", "--seeds", "2"],
    ["--seed", "-1"], ["--seed", str(2**40)],
], ids=lambda a: " ".join(a))
def test_demo_rejects_bad_numbers(argv, capsys):
    """A bad value of a numeric flag is a usage error (exit code 2, one error line), never a
    traceback from deep inside a run."""
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("jcalib demo: error: argument --") and "Traceback" not in "\n".join(err)


def _forecasters(T):
    return {"AOSA": AlmostOneStepAhead.for_horizon(T), "Running frequency": RunningFrequency()}


def _natures(T, key):
    return {"Bernoulli(0.3)": Bernoulli(0.3), "Contrarian": Contrarian()}


@pytest.fixture(scope="module")
def runs():
    return cli.study([20, 60], 3, key=jax.random.key(0), forecasters_for=_forecasters, natures_for=_natures,
                     distance_seeds=2)


def test_study_covers_every_combination(runs):
    assert len(runs) == 2 * 2 * 3 * 2
    assert [r.T for r in runs] == sorted(r.T for r in runs)
    for r in runs:
        assert r.bound == aosa_bound(r.T)  # T/m + m + 1 with m = ceil(sqrt(T))
        if r.seed_index < 2:
            # ECE >= CalDist (Arunachaleswaran et al. 2024, Lemma 1) and the interval is ordered
            assert r.dist_lower <= r.dist_upper + 1e-9 and r.dist_upper <= r.ece + 1e-4
        else:
            assert np.isnan(r.dist_upper)
        if r.forecaster == "AOSA":
            # Theorem 1: CalDist <= certificate <= T/m + m + 1
            assert r.certificate <= r.bound + 1e-4
            assert np.isnan(r.dist_upper) or r.dist_upper <= r.certificate + 1e-4
        else:
            assert np.isnan(r.certificate)


def test_study_numbers_do_not_depend_on_threads(runs):
    one = cli.study([20, 60], 3, key=jax.random.key(0), forecasters_for=_forecasters, natures_for=_natures,
                    distance_seeds=2, threads=1)
    assert [(r.forecaster, r.nature, r.seed_index, r.T) for r in one] == [(r.forecaster, r.nature, r.seed_index, r.T) for r in runs]
    np.testing.assert_array_equal([r.ece for r in one], [r.ece for r in runs])
    np.testing.assert_array_equal([r.dist_upper for r in one], [r.dist_upper for r in runs])


def test_study_needs_a_key():
    with pytest.raises(TypeError, match="must be a JAX PRNG key"):
        cli.study([20], 1, key=0, forecasters_for=_forecasters, natures_for=_natures)


def test_report_files(runs, tmp_path):
    paths = cli.report(runs, str(tmp_path), title="tiny")
    summary = Path(paths["summary"]).read_text()
    assert "Worst case for AOSA (either tie rule): AOSA" in summary and "held in every certified AOSA run" in summary
    assert _table_of(summary).splitlines()[0] == _table_of(PAGE.read_text()).splitlines()[0].replace("10^4", "60")
    for k in ("distance", "ece"):
        assert Path(paths[k]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _table_of(markdown: str) -> str:
    """The first markdown table of a page (its consecutive ``|`` lines)."""
    m = re.search(r"(^\|.*\|\n)+", markdown, flags=re.M)
    assert m, "no table"
    return m.group(0).strip()


def test_tutorial_quotes_the_demo():
    """The page says how its table was made: ``make demo`` (defaults) and the file it copies."""
    text = PAGE.read_text()
    assert "make demo" in text and "results/demo/summary.md" in text


@pytest.mark.slow
def test_tutorial_table_is_what_the_demo_writes(tmp_path):
    """``make demo`` at its defaults writes exactly the table the AOSA tutorial shows (minutes)."""
    assert cli.main(["demo", "--out", str(tmp_path), "--no-progress"]) == 0
    assert _table_of((tmp_path / "summary.md").read_text()) == _table_of(PAGE.read_text())


def test_study_compiles_each_forecaster_once():
    """One compiled chunk per forecaster: not one per nature (they play in one Switch), per chunk
    (later chunks and a last partial one reuse it), or per horizon whose shapes agree."""
    import jax.monitoring

    compiled = []

    def listen(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration" and "_chunk_body" in kw.get("fun_name", ""):
            compiled.append(kw["fun_name"])

    jax.clear_caches()  # programs an earlier test compiled in this process would not be counted
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        cli.study([100, 120], 2, key=jax.random.key(0), natures_for=_natures, distance_seeds=0,
                  forecasters_for=lambda T: {"Running frequency": RunningFrequency(), "AOSA": AlmostOneStepAhead(n_bins=8)})
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert len(compiled) == 2, compiled


def test_study_compiles_each_forecaster_once_across_horizons():
    """Horizons whose grids differ (m = ceil(sqrt T) for AOSA and the adaptive natures, Foster's
    and Gupta-Ramdas' own rules, a replayed sequence of length T) still share one compiled chunk
    per forecaster: the grids are padded to the largest horizon's with their size traced. Counted
    as traces of the chunk (a program read back from the persistent cache is still traced)."""
    import jax.monitoring

    from jcalib.forecasters import binary_suite

    traced = []

    def listen(event, duration, **kw):
        if event == "/jax/core/compile/jaxpr_trace_duration" and kw.get("fun_name") == "_chunk_body":
            traced.append(1)

    names = ("AOSA", "Foster", "Gupta-Ramdas")
    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        runs = cli.study([30, 100, 170], 2, key=jax.random.key(0), distance_seeds=0,
                         forecasters_for=lambda T: {k: v for k, v in binary_suite(T).items() if k in names})
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert len(traced) == len(names), traced
    assert len(runs) == 3 * len(names) * 12 * 2
    # the shortest horizon's numbers are those of a study of that horizon alone (its jobs and
    # natures draw with the same keys; there the grids are not padded past their own size)
    alone = cli.study([30], 2, key=jax.random.key(0), distance_seeds=0,
                      forecasters_for=lambda T: {k: v for k, v in binary_suite(T).items() if k in names})
    short = [r for r in runs if r.T == 30]
    assert [(r.forecaster, r.nature, r.seed_index) for r in alone] == [(r.forecaster, r.nature, r.seed_index) for r in short]
    np.testing.assert_array_equal([r.ece for r in alone], [r.ece for r in short])
    np.testing.assert_array_equal([r.certificate for r in alone], [r.certificate for r in short])


def test_distances_in_worker_processes_change_no_number():
    """The demo certifies the distances in spawned worker processes (each job's as soon as its
    sweep is done, equal runs once): the same numbers as the serial map."""
    kw = dict(key=jax.random.key(0), distance_seeds=2, forecasters_for=_forecasters, threads=2, distance_map=map,
              progress=False)
    serial, _ = cli._study([20, 60], 3, natures_for=_natures, **kw)
    workers = cli._distance_workers(2)
    assert workers is not None
    try:
        pooled, _ = cli._study([20, 60], 3, natures_for=_natures, distance_pool=workers, **kw)
    finally:
        workers.shutdown()
    assert [(r.forecaster, r.nature, r.seed_index, r.T) for r in pooled] == [(r.forecaster, r.nature, r.seed_index, r.T) for r in serial]
    np.testing.assert_array_equal([r.dist_lower for r in pooled], [r.dist_lower for r in serial])
    np.testing.assert_array_equal([r.dist_upper for r in pooled], [r.dist_upper for r in serial])


def test_a_second_study_reads_the_stored_intervals(tmp_path, monkeypatch):
    """The intervals a run certified are kept (``OUT/distances.json``) and read back by a later
    run on the same forecasts and outcomes: the same numbers, none certified again, with the
    worker processes or the serial map; a file of another code version, or an unreadable one,
    is ignored."""
    kw = dict(key=jax.random.key(0), distance_seeds=2, forecasters_for=_forecasters, natures_for=_natures,
              threads=2, progress=False)
    path = tmp_path / "distances.json"
    first, _ = cli._study([20, 60], 3, distance_map=map, intervals=cli._Intervals(path), **kw)
    stored = json.loads(path.read_text())
    assert stored["version"] == cli._code_version() and stored["intervals"]
    calls = []
    monkeypatch.setattr(cli, "_submit", lambda pool, task: calls.append(task))
    counted = lambda fn, *args: calls.extend(args[0]) or map(fn, *args)  # noqa: E731
    for pool in (object(), None):  # the demo's workers (never reached), then the serial map
        again, _ = cli._study([20, 60], 3, distance_map=counted, distance_pool=pool, intervals=cli._Intervals(path), **kw)
        assert not calls
        np.testing.assert_array_equal([r.dist_lower for r in again], [r.dist_lower for r in first])
        np.testing.assert_array_equal([r.dist_upper for r in again], [r.dist_upper for r in first])
    for text in (json.dumps({**stored, "version": "another"}), "{not json"):
        path.write_text(text)
        redone, _ = cli._study([20, 60], 3, distance_map=counted, intervals=cli._Intervals(path), **kw)
        assert calls
        np.testing.assert_array_equal([r.dist_upper for r in redone], [r.dist_upper for r in first])
        calls.clear()
    assert json.loads(path.read_text())["version"] == cli._code_version()  # rewritten by the last run


def test_the_code_version_follows_the_distance_source(monkeypatch, tmp_path):
    """Another distance implementation (its source file) gives another version: its intervals
    are certified afresh."""
    from jcalib.metrics import distance

    before = cli._code_version()
    copy = tmp_path / "distance.py"
    copy.write_bytes(Path(distance.__file__).read_bytes() + b"\n# changed\n")
    monkeypatch.setattr(distance, "__file__", str(copy))
    assert cli._code_version() != before


def test_make_demo_certifies_in_its_workers(tmp_path):
    """``make demo`` runs ``python -m jcalib.cli``, where this module is ``__main__``: its distance
    workers must still be able to run the tasks sent to them (they once could not import them,
    and every distance then ran after the sweeps in the main process, saying nothing). Also
    ``--distance-seeds 0``: no distance, no distance figure, the rest written."""
    env = {**os.environ, "JCALIB_COMPILATION_CACHE": "0"}
    base = [sys.executable, "-m", "jcalib.cli", "demo", "--T", "12", "--seeds", "2",
            "--no-progress"]
    done = subprocess.run(base + ["--distance-seeds", "1", "--out", str(tmp_path / "a")], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "worker" not in done.stderr, done.stderr[-2000:]
    assert (tmp_path / "a" / "distance_vs_T.png").exists()
    none = subprocess.run(base + ["--distance-seeds", "0", "--out", str(tmp_path / "b")], capture_output=True,
                          text=True, env=env)
    assert none.returncode == 0, none.stderr[-2000:]
    assert not (tmp_path / "b" / "distance_vs_T.png").exists()
    assert "`ece_vs_T.png`, `reliability.png`" in (tmp_path / "b" / "summary.md").read_text()
    assert (tmp_path / "a" / "distances.json").exists()
    fresh = subprocess.run(base + ["--distance-seeds", "1", "--no-cache", "--out", str(tmp_path / "c")],
                           capture_output=True, text=True, env=env)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert not (tmp_path / "c" / "distances.json").exists()  # --no-cache keeps nothing


def test_batched_ece_program_has_no_host_callback(monkeypatch):
    """The demo's ECE of every (nature, seed) run is checked on the host, so its program holds no
    in-graph check (a host callback would keep it out of the persistent compilation cache and
    every demo would compile it again), and it gives ``metrics.ece`` run by run."""
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(2, 3, 50)).astype(np.float32)
    y = (rng.uniform(size=p.shape) < p).astype(np.int32)
    original, traced = cli._ece_of_runs, []

    def spy(*args):  # the program as traced where the demo calls it
        traced.append(str(jax.make_jaxpr(original)(*args)))
        return original(*args)

    monkeypatch.setattr(cli, "_ece_of_runs", spy)
    got = np.asarray(cli._batched_ece(p, y))
    assert traced and "callback" not in traced[0]
    checked = jax.make_jaxpr(jax.vmap(jax.vmap(M.ece)))(p, y)  # traced with the checks on (a fresh trace)
    assert "callback" in str(checked)
    want = [[float(M.ece(p[i, j], y[i, j])) for j in range(3)] for i in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-6)  # float32: one program against 6 calls
    with pytest.raises(ValueError, match="forecasts contains NaN"):
        cli._batched_ece(np.where(p > 0.5, np.nan, p), y)
    with pytest.raises(ValueError, match="outcomes must be 0 or 1"):
        cli._batched_ece(p, y + 1)

"""Checkpoints: a resumed run returns exactly what an uninterrupted run returns; another run's
checkpoint (other code, closure values, precision, key, T, recorder) is refused; typed keys in a
state survive; concurrent writers do not collide; a corrupt file is reported by name; the bytes
written grow linearly with the number of chunks; results are host arrays."""

import os
import subprocess
import sys
import textwrap
import threading

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.core import CheckpointError, Forecast
from jcalib.core.checkpoint import Checkpoint
from jcalib.core.types import AbstractForecaster

F, N = jcalib.forecasters, jcalib.natures
KEY = jax.random.key(0)
AOSA = F.AlmostOneStepAhead(n_bins=10)


def _interrupted(f, n, T, key, record, path, stop, chunk=7):
    """Run the first `stop` rounds of the T-round run and leave its checkpoint behind."""

    class Stop(Exception):
        pass

    real = Checkpoint.save

    def save(self, carry, t, outs):
        real(self, carry, t, outs)
        if t >= stop:
            raise Stop

    Checkpoint.save = save
    try:
        with pytest.raises(Stop):
            jcalib.core.play(f, n, T, key=key, record=record, chunk=chunk, checkpoint=path, progress=False)
    finally:
        Checkpoint.save = real


def _play(f, n, T, path, record="full", chunk=7, key=KEY):
    return jcalib.core.play(f, n, T, key=key, record=record, chunk=chunk, checkpoint=path, progress=False)


@pytest.mark.parametrize("record", ["full", "summary", {"h": "full", "s": "summary"}])
def test_checkpoint_resume_is_exact(tmp_path, record):
    f, n, T = F.FosterRandomized(n_bins=6), N.Markov(0.2, 0.3), 60
    ref = jcalib.core.play(f, n, T, key=KEY, record=record, chunk=7, progress=False)
    for stop in (7, 21, 56):
        path = tmp_path / f"ck{stop}"
        _interrupted(f, n, T, KEY, record, path, stop)
        chex.assert_trees_all_equal(_play(f, n, T, path, record), ref)
        # a finished checkpoint returns the result again without running
        chex.assert_trees_all_equal(_play(f, n, T, path, record), ref)


@pytest.mark.parametrize(
    "change, what",
    [
        (dict(f=F.AlmostOneStepAhead(n_bins=10, tie="high")), "forecaster"),
        (dict(n=N.Bernoulli(0.7)), "nature"),
        (dict(key=jax.random.key(1)), "key"),
        (dict(T=40), "T"),
        (dict(T=100), "T"),
        (dict(record="full"), "recorder"),
    ],
)
def test_checkpoint_of_another_run_is_refused(tmp_path, change, what):
    path = tmp_path / "ck"
    args = dict(f=AOSA, n=N.Bernoulli(0.3), T=60, key=KEY, record="summary")
    _interrupted(args["f"], args["n"], args["T"], args["key"], args["record"], path, 21)
    args.update(change)
    with pytest.raises(ValueError, match=f"different run \\([^)]*{what}"):
        _play(args["f"], args["n"], args["T"], path, args["record"], key=args["key"])


class _KeyInState(AbstractForecaster):
    """Carries its own typed PRNG key in its state."""

    def init(self, key):
        return {"key": key, "n": jnp.zeros((), jnp.int32)}

    def predict(self, state, x, key):
        v = jax.random.uniform(state["key"], ())
        return Forecast(v, v)

    def update(self, state, x, forecast, y):
        return {"key": jax.random.split(state["key"])[0], "n": state["n"] + 1}


def test_state_holding_a_typed_key_resumes_exactly(tmp_path):
    ref = jcalib.core.play(_KeyInState(), N.Bernoulli(0.3), 40, key=KEY, chunk=9, progress=False)
    path = tmp_path / "ck"
    _interrupted(_KeyInState(), N.Bernoulli(0.3), 40, KEY, "full", path, 18, chunk=9)
    chex.assert_trees_all_equal(_play(_KeyInState(), N.Bernoulli(0.3), 40, path, chunk=9), ref)


def _cells(threshold, other_body=False):
    """Two functions named ``cell_of``: the same name and signature, other bodies."""
    if other_body:
        def cell_of(x):
            return (x >= threshold).astype(jnp.int32)
    else:
        def cell_of(x):
            return (x > threshold).astype(jnp.int32)
    return cell_of


def _partitioned(cell_of):
    return F.Partitioned(F.RunningFrequency(), 2, cell_of)


def test_fingerprint_hashes_function_bodies_and_closure_values(tmp_path):
    """A ``cell_of`` of the same name with another body, or the same body closing over another
    value, is another run; a new function object with the same code and values is the same."""
    nature, T = N.TwoLevelModel(), 60
    path = tmp_path / "ck"
    _interrupted(_partitioned(_cells(0.5)), nature, T, KEY, "full", path, 21)
    with pytest.raises(ValueError, match="different run \\(forecaster"):
        _play(_partitioned(_cells(0.5, other_body=True)), nature, T, path)
    with pytest.raises(ValueError, match="different run \\(forecaster"):
        _play(_partitioned(_cells(0.3)), nature, T, path)
    ref = jcalib.core.play(_partitioned(_cells(0.5)), nature, T, key=KEY, chunk=7, progress=False)
    chex.assert_trees_all_equal(_play(_partitioned(_cells(0.5)), nature, T, path), ref)


def test_float32_checkpoint_refuses_to_resume_under_x64(tmp_path):
    """AOSA (integer state, no float fields) on a replayed integer sequence: nothing in the
    modules changes under x64, yet the history's forecasts become float64."""
    path = tmp_path / "ck"
    f, n = AOSA, N.Replay((np.arange(60) % 3 == 0).astype(np.int32))
    _interrupted(f, n, 60, KEY, "full", path, 21)
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="different run \\([^)]*precision"):
            _play(f, n, 60, path)


_NEW_PROCESS = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp, numpy as np
    import jcalib

    class Cells:
        # a callable whose repr holds its memory address: <__main__.Cells object at 0x...>
        def __call__(self, x):
            return (x > 0.5).astype(jnp.int32)

    f = jcalib.forecasters.Partitioned(jcalib.forecasters.RunningFrequency(), 2, Cells())
    assert " at 0x" in repr(f.cell_of)
    out = jcalib.core.play(f, jcalib.natures.TwoLevelModel(), 60, key=jax.random.key(0), chunk=7, checkpoint=sys.argv[1],
                      progress=False)
    np.savez(sys.argv[2], forecast=out.forecast, y=out.y)
    """
)


def test_a_new_process_resumes_its_own_checkpoint(tmp_path):
    """The fingerprint never hashes memory addresses: a second process with an object whose repr
    holds one resumes the first process's checkpoint (and gets the same numbers)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                                         env.get("PYTHONPATH", "")])
    path = tmp_path / "ck"
    for i in (1, 2):
        done = subprocess.run([sys.executable, "-c", _NEW_PROCESS, str(path), str(tmp_path / f"run{i}.npz")],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    one, two = np.load(tmp_path / "run1.npz"), np.load(tmp_path / "run2.npz")
    for k in ("forecast", "y"):
        np.testing.assert_array_equal(one[k], two[k])


def test_concurrent_writers_of_one_path_do_not_collide(tmp_path):
    """Runs started together with the same arguments and path (e.g. a job array that repeats a
    task) each write through their own temporary file; every run completes, and the checkpoint
    left behind resumes to the uninterrupted result."""
    f, n, T = F.FosterRandomized(n_bins=6), N.Bernoulli(0.3), 96
    ref = jcalib.core.play(f, n, T, key=KEY, chunk=2, progress=False)  # compiles once for every thread
    path, errors = tmp_path / "ck", []

    def worker():
        try:
            chex.assert_trees_all_equal(jcalib.core.play(f, n, T, key=KEY, chunk=2, checkpoint=path, progress=False), ref)
        except BaseException as e:  # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    chex.assert_trees_all_equal(_play(f, n, T, path, chunk=2), ref)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def _corrupt_truncated(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_garbage(path):
    path.write_bytes(os.urandom(500))


def _corrupt_empty(path):
    path.write_bytes(b"")


def _corrupt_header(path):
    _savez(path, {"t": np.asarray(7), "leaf0": np.zeros(3)})


def _corrupt_tree(path):
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["leaf0"] = np.zeros((3, 3), arrays["leaf0"].dtype)
    _savez(path, arrays)


def _savez(path, arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize("corrupt", [_corrupt_truncated, _corrupt_garbage, _corrupt_empty, _corrupt_header, _corrupt_tree])
@pytest.mark.parametrize("which", ["main", "part"])
def test_corrupt_checkpoint_names_the_file_and_what_to_do(tmp_path, corrupt, which):
    f, n = F.RunningFrequency(), N.Bernoulli(0.3)
    path = tmp_path / "ck"
    _interrupted(f, n, 60, KEY, "full", path, 21)
    target = path if which == "main" else tmp_path / "ck.part1"
    if which == "part" and corrupt is _corrupt_tree:
        with np.load(target) as data:
            arrays = {k: data[k] for k in data.files}
        arrays["out1"] = arrays["out1"].astype(np.float16)
        _savez(target, arrays)
    else:
        corrupt(target)
    with pytest.raises(CheckpointError, match=f"checkpoint {target}(?s:.*)delete {path}"):
        _play(f, n, 60, path)


def test_missing_part_is_reported(tmp_path):
    path = tmp_path / "ck"
    _interrupted(F.RunningFrequency(), N.Bernoulli(0.3), 60, KEY, "full", path, 21)
    os.remove(tmp_path / "ck.part2")
    with pytest.raises(CheckpointError, match="part2 is missing"):
        _play(F.RunningFrequency(), N.Bernoulli(0.3), 60, path)


def test_bytes_written_grow_linearly_with_the_chunk_count(tmp_path, monkeypatch):
    """The history is appended one file per chunk, not rewritten: 4x the chunks write about 4x
    the bytes (rewriting the history every chunk wrote 14x)."""
    written = []
    real = os.replace

    def counting_replace(src, dst):
        written.append(os.path.getsize(src))
        real(src, dst)

    monkeypatch.setattr(os, "replace", counting_replace)
    totals = {}
    for n_chunks in (8, 32):
        written.clear()
        _play(AOSA, N.Bernoulli(0.3), 64 * n_chunks, tmp_path / f"ck{n_chunks}", chunk=64)
        totals[n_chunks] = sum(written)
    assert totals[32] / totals[8] < 4.4, totals  # linear: 4 plus the constant of the first chunk


@pytest.mark.parametrize("record", ["full", "summary", ("full", "summary")])
def test_results_are_host_arrays(record):
    for out in (jcalib.core.play(AOSA, N.Bernoulli(0.3), 300, key=KEY, record=record, chunk=128, progress=False),
                jcalib.core.sweep(AOSA, [N.Bernoulli(0.3), N.Bernoulli(0.5)], 300, key=KEY, n_seeds=3, record=record, progress=False),
                jcalib.core.sweep(AOSA, N.Bernoulli(0.3), 300, key=KEY, n_seeds=3, record=record, progress=False)):
        leaves = jax.tree_util.tree_leaves(out)
        assert leaves and all(isinstance(x, np.ndarray) for x in leaves), [type(x) for x in leaves]


def test_history_is_the_gathered_host_array_itself():
    """The history handed to ``finalise`` comes back as the same host array, not a device copy."""
    from jcalib.core import loop
    from jcalib.recorders import History

    outs = jcalib.core.Trajectory(None, np.zeros((2, 5), np.float32), np.ones((2, 5), np.int32))
    got = loop._finalise(History(), jnp.zeros((2, 0)), outs, 1)
    assert got.forecast is outs.forecast and got.y is outs.y

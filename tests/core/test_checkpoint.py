"""Checkpoints: a resumed run returns exactly what an uninterrupted run returns (after a
SIGKILL too, and with another chunk length); another run's checkpoint (other code, a helper or a
module-level global it reads, closure values, precision, key, T, recorder) is refused and the
message says what differs; a rewound or edited checkpoint is refused; typed keys in a state
survive; concurrent writers do not collide and a killed run's temporary files are removed on the
next start; every corrupt file is reported by name with what is wrong and what to do; the bytes
written grow linearly with the number of chunks; results are host arrays."""

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.core import CheckpointError, Forecast
from jcalib.core import checkpoint as ckpt_module
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


# ---- what the code reads beyond its own body: helpers, module-level globals, constants ----------

_USER_MODULE = textwrap.dedent(
    """
    import jax.numpy as jnp

    THRESHOLD = {threshold}


    def above(x):
        return x {op} THRESHOLD


    def cell_of(x):
        return above(x).astype(jnp.int32)
    """
)


def _user_module(folder, monkeypatch, threshold=0.5, op=">"):
    """The user's module ``usercells`` written to ``folder`` and imported (again): the same file
    and module name every time, as when a user edits a file and reruns the script."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # a rewrite within one second reuses no stale .pyc
    path = folder / "usercells.py"
    path.write_text(_USER_MODULE.format(threshold=threshold, op=op))
    spec = importlib.util.spec_from_file_location("usercells", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("change", [dict(threshold=0.3), dict(op=">=")], ids=["global", "helper"])
def test_a_changed_global_or_helper_of_cell_of_is_refused(tmp_path, monkeypatch, change):
    """``cell_of``'s own code is the same in both versions of the user's module; the module-level
    global it reads, or the helper it calls, changed. The traced program sees it."""
    nature, T, path = N.TwoLevelModel(), 60, tmp_path / "ck"
    old = _user_module(tmp_path, monkeypatch)
    _interrupted(_partitioned(old.cell_of), nature, T, KEY, "full", path, 21)
    new = _user_module(tmp_path, monkeypatch, **change)
    assert new.cell_of.__code__.co_code == old.cell_of.__code__.co_code
    with pytest.raises(CheckpointError, match="different run \\(program differ\\): the traced program of a round "
                                              "differs(?s:.*)To start the run afresh, delete"):
        _play(_partitioned(new.cell_of), nature, T, path)
    # the same code, imported once more, resumes bit for bit
    same = _user_module(tmp_path, monkeypatch)
    ref = jcalib.core.play(_partitioned(same.cell_of), nature, T, key=KEY, chunk=7, progress=False)
    chex.assert_trees_all_equal(_play(_partitioned(same.cell_of), nature, T, path), ref)


_LEVEL = 0.5
_OFFSETS = jnp.asarray([0.0, 0.1])


def _reads_globals(x):
    return (x > _LEVEL + _OFFSETS[1]).astype(jnp.int32)


def _fresh(fn):
    """A new function object with ``fn``'s code and globals, as a re-import of its module gives.
    (Within one process, jit's cache keeps the program it traced for a function object — what
    that process runs — and does not see a global rebound later, as JAX documents.)"""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__)


def test_a_rebound_global_or_captured_array_is_refused(tmp_path, monkeypatch):
    """A function of this module reading a global scalar and a global array: rebinding either
    changes the numbers, so the checkpoint is refused; restoring them resumes it."""
    nature, T, path = N.TwoLevelModel(), 60, tmp_path / "ck"
    _interrupted(_partitioned(_fresh(_reads_globals)), nature, T, KEY, "full", path, 21)
    for name, value in (("_LEVEL", 0.4), ("_OFFSETS", jnp.asarray([0.0, 0.2]))):
        with monkeypatch.context() as m:
            m.setattr(sys.modules[__name__], name, value)
            with pytest.raises(CheckpointError, match="different run \\(program differ\\)"):
                _play(_partitioned(_fresh(_reads_globals)), nature, T, path)
    f = _partitioned(_fresh(_reads_globals))
    ref = jcalib.core.play(f, nature, T, key=KEY, chunk=7, progress=False)
    chex.assert_trees_all_equal(_play(f, nature, T, path), ref)


def test_sweep_resume_is_exact(tmp_path, monkeypatch):
    """A sweep (stacked natures × seeds) stopped after round 21 resumes to the uninterrupted result."""
    f, natures, T = F.FosterRandomized(n_bins=6), [N.Markov(0.2, 0.3), N.Markov(0.4, 0.1)], 60
    run = lambda **kw: jcalib.core.sweep(f, natures, T, key=KEY, n_seeds=3, chunk=7, progress=False, **kw)  # noqa: E731
    ref, path, real = run(), tmp_path / "ck", Checkpoint.save

    def save(self, carry, t, outs):
        real(self, carry, t, outs)
        if t >= 21:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Checkpoint, "save", save)
        with pytest.raises(KeyboardInterrupt):
            run(checkpoint=path)
    chex.assert_trees_all_equal(run(checkpoint=path), ref)


def test_resume_with_another_chunk_length_is_exact(tmp_path):
    """The chunk length does not change the numbers and is not in the fingerprint."""
    f, n, T = F.FosterRandomized(n_bins=6), N.Markov(0.2, 0.3), 60
    ref = jcalib.core.play(f, n, T, key=KEY, chunk=7, progress=False)
    path = tmp_path / "ck"
    _interrupted(f, n, T, KEY, "full", path, 21)
    chex.assert_trees_all_equal(_play(f, n, T, path, chunk=5), ref)


@pytest.mark.parametrize(
    "change, shown",
    [
        (dict(T=40), "T or the batch layout differ: T=60, batch layout (None, None, None) in the file, "
                     "T=40, batch layout (None, None, None) in this run"),
        (dict(key=jax.random.key(1)), "the key differs"),
        (dict(key=jax.random.PRNGKey(0)), "the key differs: key<fry> keys of shape () in the file, "
                                          "raw uint32 keys of shape (2,) in this run"),
        (dict(n=N.Markov(0.2, 0.3)), "the nature differs (its class, settings, array values or code): "
                                     "Bernoulli in the file, Markov in this run"),
    ],
)
def test_the_refusal_says_what_differs(tmp_path, change, shown):
    path = tmp_path / "ck"
    args = dict(f=AOSA, n=N.Bernoulli(0.3), T=60, key=KEY)
    _interrupted(args["f"], args["n"], args["T"], args["key"], "summary", path, 21)
    args.update(change)
    with pytest.raises(CheckpointError) as info:
        _play(args["f"], args["n"], args["T"], path, "summary", key=args["key"])
    assert shown in str(info.value)
    assert f"delete {path} and its {path}.part* files, or pass a new checkpoint path" in str(info.value)


def test_the_refusal_names_the_state_array_whose_dtype_differs(tmp_path):
    path = tmp_path / "ck"
    f, n = AOSA, N.Replay((np.arange(60) % 3 == 0).astype(np.int32))
    _interrupted(f, n, 60, KEY, "full", path, 21)
    with jax.enable_x64(True):
        with pytest.raises(CheckpointError, match="the precision differs: jax_enable_x64=False in the file, "
                                                  "jax_enable_x64=True in this run"):
            _play(f, n, 60, path)


# ---- rewound and edited checkpoints -------------------------------------------------------------


def _load(path):
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _rewind(path, rounds):
    """What a user's script did: the main file rewritten with its round count ``t`` moved back."""
    arrays = _load(path)
    arrays["t"] = np.asarray(int(arrays["t"]) - rounds)
    _savez(path, arrays)


def test_a_rewound_round_count_is_refused(tmp_path):
    """t moved back by one chunk while the history parts stay: the parts hold more rounds than t
    (the resume used to return T + chunk rows)."""
    f, n, path = F.RunningFrequency(), N.Bernoulli(0.3), tmp_path / "ck"
    _interrupted(f, n, 60, KEY, "full", path, 21)
    _rewind(path, 7)
    with pytest.raises(CheckpointError, match=f"checkpoint {path} counts t = 14 rounds, but its 3 history parts hold "
                                              "21 rounds: it was rewound or edited(?s:.*)delete"):
        _play(f, n, 60, path)


def test_a_rewound_round_count_without_a_history_is_refused(tmp_path):
    """No history to count against: the digest of the main file's record refuses it."""
    f, n, path = AOSA, N.Bernoulli(0.3), tmp_path / "ck"
    _interrupted(f, n, 60, KEY, "summary", path, 21)
    _rewind(path, 7)
    with pytest.raises(CheckpointError, match=f"checkpoint {path} was edited after it was written: its round count "
                                              "\\(t = 14\\)"):
        _play(f, n, 60, path, "summary")


@pytest.mark.parametrize("record", ["full", "summary"])
def test_an_edited_state_is_refused(tmp_path, record):
    """A state array changed in place (same shape and dtype) is refused, and so is one whose
    state digest was rewritten to match (the record's digest no longer does)."""
    f, n, path = AOSA, N.Bernoulli(0.3), tmp_path / "ck"
    _interrupted(f, n, 60, KEY, record, path, 21)
    arrays = _load(path)
    leaf = next(k for k in arrays if k.startswith("leaf") and arrays[k].size and arrays[k].dtype.kind in "iuf")
    arrays[leaf] = arrays[leaf] + np.ones((), arrays[leaf].dtype)
    _savez(path, arrays)
    with pytest.raises(CheckpointError, match="holds a state \\(the players' and recorder's arrays\\) that differs "
                                              "from the one it was written with: it was edited"):
        _play(f, n, 60, path, record)
    host = [arrays[f"leaf{i}"] for i in range(sum(k.startswith("leaf") for k in arrays))]
    impls = [str(arrays[f"impl{i}"]) for i in range(len(host))]
    arrays["state"] = np.asarray(ckpt_module._arrays_digest(host, impls))
    _savez(path, arrays)
    with pytest.raises(CheckpointError, match="was edited after it was written"):
        _play(f, n, 60, path, record)


def test_an_edited_or_replaced_history_part_is_refused(tmp_path):
    f, n, path = F.RunningFrequency(), N.Bernoulli(0.3), tmp_path / "ck"
    _interrupted(f, n, 60, KEY, "full", path, 21)
    part = tmp_path / "ck.part1"
    arrays = _load(part)
    original = dict(arrays)
    arrays["out1"] = 1 - arrays["out1"]  # the outcomes of chunk 1 flipped
    _savez(part, arrays)
    with pytest.raises(CheckpointError, match=f"checkpoint {part} holds outputs that differ from the ones it was "
                                              "written with: it was edited"):
        _play(f, n, 60, path)
    # the same, with the part's own digest rewritten: the main file's running digest refuses it
    outs = [arrays[f"out{i}"] for i in range(sum(k.startswith("out") for k in arrays))]
    arrays["digest"] = np.asarray(ckpt_module._arrays_digest(outs))
    _savez(part, arrays)
    with pytest.raises(CheckpointError, match=f"checkpoint {path} does not match its history parts"):
        _play(f, n, 60, path)
    # a part of the wrong length (two rounds cut, its digest rewritten to match)
    short = {k: (v[:-2] if k.startswith("out") else v) for k, v in original.items()}
    short["digest"] = np.asarray(ckpt_module._arrays_digest([short[f"out{i}"] for i in range(len(outs))]))
    _savez(part, short)
    with pytest.raises(CheckpointError, match="counts t = 21 rounds, but its 3 history parts hold 19 rounds"):
        _play(f, n, 60, path)


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
    path.write_bytes(b"a results table, not a checkpoint\n" * 20)


def _corrupt_empty(path):
    path.write_bytes(b"")


def _corrupt_header(path):
    _savez(path, {"t": np.asarray(7), "leaf0": np.zeros(3)})


def _corrupt_old_format(path):
    arrays = _load(path)
    arrays["format"] = np.asarray("jcalib-checkpoint-2")
    _savez(path, arrays)


def _corrupt_tree(path):
    arrays = _load(path)
    if "leaf0" in arrays:
        arrays["leaf0"] = np.zeros((3, 3), arrays["leaf0"].dtype)
    else:
        arrays["out1"] = arrays["out1"].astype(np.float16)
    _savez(path, arrays)


def _savez(path, arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


_CORRUPTIONS = {
    "truncated": (_corrupt_truncated, "is truncated or damaged and cannot be read \\(BadZipFile: "),
    "not a checkpoint": (_corrupt_garbage, "is not a jcalib checkpoint( part)?: it is not a NumPy .npz archive"),
    "empty": (_corrupt_empty, "is empty \\(0 bytes\\): the run was stopped while creating it"),
    "no header": (_corrupt_header, "is not a jcalib checkpoint( part)?: it is an .npz archive without the "
                                   "'jcalib-checkpoint-3' header"),
    "old format": (_corrupt_old_format, "was written by another version of jcalib \\(format 'jcalib-checkpoint-2'"),
    "other structure": (_corrupt_tree, "holds (state array 0 as int32 \\(3, 3\\), where this run has int32 \\(\\)"
                                       "|output 1 as float16)"),
}


@pytest.mark.parametrize("corruption", list(_CORRUPTIONS))
@pytest.mark.parametrize("which", ["main", "part"])
def test_corrupt_checkpoint_names_the_file_and_what_to_do(tmp_path, corruption, which):
    """Each corrupt file: which file, what is wrong, and what to do."""
    f, n = F.RunningFrequency(), N.Bernoulli(0.3)
    path = tmp_path / "ck"
    _interrupted(f, n, 60, KEY, "full", path, 21)
    target = path if which == "main" else tmp_path / "ck.part1"
    corrupt, what = _CORRUPTIONS[corruption]
    corrupt(target)
    with pytest.raises(CheckpointError, match=f"^checkpoint {target} {what}(?s:.*)\\. To start the run afresh, delete "
                                              f"{path} and its {path}\\.part\\* files, or pass a new checkpoint path$"):
        _play(f, n, 60, path)


def test_missing_part_is_reported(tmp_path):
    path = tmp_path / "ck"
    _interrupted(F.RunningFrequency(), N.Bernoulli(0.3), 60, KEY, "full", path, 21)
    os.remove(tmp_path / "ck.part2")
    with pytest.raises(CheckpointError, match=f"checkpoint {tmp_path / 'ck.part2'} is missing \\({path} counts 3 "
                                              "history parts, .part0 to .part2\\)\\. To start the run afresh"):
        _play(F.RunningFrequency(), N.Bernoulli(0.3), 60, path)


# ---- killed runs --------------------------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_temporary_files_of_killed_runs_are_removed_on_the_next_start(tmp_path):
    """A temporary file of a process of this host that no longer runs, or one nobody touched for
    an hour, is removed; a running writer's (this process's, another host's recent one) and
    other files are kept."""
    host, dead, hour = ckpt_module._host(), _dead_pid(), ckpt_module.STALE_SECONDS
    stale = [f"ck.tmp-{dead}@{host}-k2j4a9_1.tmp", f"ck.part3.tmp-{dead}@{host}-x0y12345.tmp", "ck.q8w7e6r5.tmp",
             f"ck.part0.tmp-12@another-host-abcdefgh.tmp"]
    kept = [f"ck.tmp-{os.getpid()}@{host}-live1234.tmp", f"ck.tmp-12@another-host-abcdefgh.tmp", "ck.recent00.tmp",
            "ck2.tmp", "notes.txt"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"PK\x03\x04 half-written")
    for name in ("ck.q8w7e6r5.tmp", "ck.part0.tmp-12@another-host-abcdefgh.tmp"):  # not touched for over an hour
        os.utime(tmp_path / name, (time.time() - hour - 60,) * 2)
    _play(AOSA, N.Bernoulli(0.3), 30, tmp_path / "ck")
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["ck"] + [f"ck.part{k}" for k in range(5)])


_KILLED = textwrap.dedent(
    """
    import os, signal, sys, time
    import jax, numpy as np
    import jcalib
    from jcalib.core.checkpoint import Checkpoint

    path, mode = sys.argv[1], sys.argv[2]
    if mode == "writing":
        # killed while the main file after round 28 is half written: its temporary file stays
        real = np.savez

        def savez(fh, **arrays):
            if "t" in arrays and int(arrays["t"]) >= 28:
                fh.write(b"PK\\x03\\x04 half-written")
                fh.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            real(fh, **arrays)

        np.savez = savez
    else:
        # slowed down, to be killed from outside at any moment
        real = Checkpoint.save

        def save(self, carry, t, outs):
            real(self, carry, t, outs)
            time.sleep(0.02)

        Checkpoint.save = save
    f, n = jcalib.forecasters.FosterRandomized(n_bins=6), jcalib.natures.Markov(0.2, 0.3)
    jcalib.core.play(f, n, 700, key=jax.random.key(0), chunk=7, checkpoint=path, progress=False)
    """
)


@pytest.mark.parametrize("mode", ["writing", "anytime"])
def test_a_sigkilled_run_resumes_exactly(tmp_path, mode):
    """A run killed with SIGKILL (while writing a file, or at a moment chosen from outside) resumes
    in this process to the uninterrupted result, and its temporary files are removed."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                                         env.get("PYTHONPATH", "")])
    path = tmp_path / "ck"
    child = subprocess.Popen([sys.executable, "-c", _KILLED, str(path), mode], env=env, stderr=subprocess.PIPE)
    if mode == "anytime":
        deadline = time.monotonic() + 120
        while not (tmp_path / "ck.part3").exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(float(np.random.default_rng().uniform(0, 0.2)))
        child.send_signal(signal.SIGKILL)
    _, err = child.communicate(timeout=300)
    assert child.returncode == -signal.SIGKILL, err.decode()[-3000:]
    if mode == "writing":
        assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    f, n = F.FosterRandomized(n_bins=6), N.Markov(0.2, 0.3)
    ref = jcalib.core.play(f, n, 700, key=KEY, chunk=7, progress=False)
    chex.assert_trees_all_equal(_play(f, n, 700, path), ref)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


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

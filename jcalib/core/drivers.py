"""Drivers own the loops: :func:`play` runs the rounds as compiled chunks of ``lax`` loops;
:func:`sweep` vmaps it over forecasters × natures × seeds, shards the seeds over every local
device, and splits them over processes under ``jax.distributed``.

Each job lives in a module of its own: the round keys (:mod:`jcalib.core.keys`), the nested
vmaps and stacked modules (:mod:`jcalib.core.batching`), the chunked run loop
(:mod:`jcalib.core.loop`), checkpoints (:mod:`jcalib.core.checkpoint`), and the seeds' sharding
over devices and processes (:mod:`jcalib.core.sharding`).

Compilation: Python numbers in a module's non-static fields are turned into arrays before the
compiled functions see them, so ``Bernoulli(0.3)`` and ``Bernoulli(0.4)`` share one compiled
program. A run is one program per (forecaster, nature, recorder, chunk length, batch shape):
``T`` only sets how many times the chunk is called (the start round and the number of rounds
are traced, and the first call initialises), so every horizon reuses it. Shape-fixing (static)
fields recompile.

Results: called eagerly, ``play`` and ``sweep`` return NumPy arrays on the host. A history is
moved to the host chunk by chunk (memory on the device stays O(chunk)) and is never copied back
to a device; under ``jax.jit`` the results are traced arrays as usual.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from typing import Any, Sequence

import jax
import numpy as np
from jaxtyping import PRNGKeyArray

from .._validation import HORIZON, Custom, Int, Key, declare
from ..recorders.base import resolve_recorder
from .batching import as_traced_module, stack_modules
from .loop import check_compiler_options, chunk_length, run
from .sharding import gather_seeds, process_checkpoint, shard_seeds, split_keys, thread_parts
from .types import AbstractForecaster, AbstractNature, check_outcome_spaces

__all__ = ["play", "sweep"]


MAX_CHUNK = 2**20  # rounds per compiled call: a history's buffer holds this many rounds on the device
MAX_SEEDS = 2**24  # seeds of one sweep: each holds its own state on the device


# The drivers' settings, each bounded before anything is allocated.
_SIZES = dict(
    T=HORIZON,
    chunk=Int(1, MAX_CHUNK, bytes_per=8, what="a history's per-chunk buffer (per forecast)", optional=True),
    # the grid of record="summary" (checked even when another recorder ignores it)
    n_bins=Int(1, 2**22, bytes_per=8, what="its grid counts", optional=True),
    key=Key(),
)


def _forecasters(value, name, bound):
    seq = list(value) if isinstance(value, (list, tuple)) else [value]
    if not seq:
        raise ValueError(f"{name} must not be empty")
    for f in seq:
        if not isinstance(f, AbstractForecaster):
            raise ValueError(f"{name} must be an AbstractForecaster (or a list of them), got {type(f).__name__}")
    return value


def _natures(value, name, bound):
    seq = list(value) if isinstance(value, (list, tuple)) else [value]
    if not seq:
        raise ValueError(f"{name} must not be empty")
    fs = bound["forecaster"]
    fs = list(fs) if isinstance(fs, (list, tuple)) else [fs]
    for n in seq:
        if not isinstance(n, AbstractNature):
            raise ValueError(f"{name} must be an AbstractNature{' (or a list of them)' if name == 'natures' else ''}, "
                             f"got {type(n).__name__}")
    for f in fs:  # every forecaster plays every nature: their outcome spaces must agree
        check_outcome_spaces(f, seq[0])
    for n in seq[1:]:
        check_outcome_spaces(fs[0], n)
    return value


_FORECASTER = Custom(_forecasters, "a forecaster (sweep: or a list of them)")
_NATURES = Custom(_natures, "a nature (sweep: or a list of them) whose outcomes the forecasters take")


_COMPILED: set = set()
"""The signatures (:func:`_program_signature`) of the chunk programs a threaded sweep has run."""


def _program_signature(forecaster, nature, recorder, keys, chunk, layout, options):
    """What fixes a chunk program in jit's cache: the modules' structure and static fields, their
    arrays' shapes and dtypes, the keys', the chunk length, batch layout and compiler options
    (None when a static part cannot be hashed: then the caller waits as for a new program)."""
    leaves, treedef = jax.tree_util.tree_flatten((forecaster, nature, recorder, keys))
    parts = tuple((tuple(x.shape), str(x.dtype)) if hasattr(x, "shape") and hasattr(x, "dtype") else x for x in leaves)
    sig = (treedef, parts, chunk, layout, options)
    try:
        hash(sig)
    except TypeError:
        return None
    return sig


@declare(forecaster=_FORECASTER, nature=_NATURES, **_SIZES)
def play(
    forecaster: AbstractForecaster,
    nature: AbstractNature,
    T: int,
    *,
    key: PRNGKeyArray,
    record: Any = "full",
    n_bins: int | None = None,
    chunk: int | None = None,
    progress: bool | None = None,
    checkpoint: str | os.PathLike | None = None,
    compiler_options: dict | None = None,
):
    """Play ``forecaster`` against ``nature`` for ``T`` rounds.

    Args:
        forecaster: the forecaster (an equinox module).
        nature: the nature (an equinox module).
        T: number of rounds: a positive integer (Python or NumPy) of at most
            :data:`~jcalib.core.keys.MAX_ROUNDS` (2**31 - 128: round indices are int32). With
            ``record="full"`` the history must also fit in the host's memory.
        key: a JAX PRNG key (keyword-only, required), e.g. ``jax.random.key(0)``.
        record: what to keep: a recorder (``jcalib.recorders``), a tuple or dict of recorders,
            or a shorthand: ``"full"`` (:class:`~jcalib.recorders.History`, a
            :class:`~jcalib.core.Trajectory` with a leading axis of length T) or
            ``"summary"`` (the :class:`~jcalib.recorders.GridSummary` of Arunachaleswaran et al. 2024,
            memory O(``n_bins``)).
        n_bins: the grid size for ``record="summary"``: forecasts are counted on
            ``{0, 1/n_bins, ..., 1}`` (default: ``forecaster.value_grid``).
        chunk: rounds per compiled call, at most 2**20 (memory O(chunk) for a history, O(1) for
            summaries). One compiled chunk serves every ``T``: a last partial chunk runs fewer
            iterations of the same program. Default: ``T`` rounded up to a power of two,
            between :data:`~jcalib.core.keys.BLOCK` and :data:`~jcalib.core.loop.DEFAULT_CHUNK` (2048); pass a fixed ``chunk`` to
            share one program across all horizons.
        progress: show a progress bar between chunks (default: when there are several chunks).
        checkpoint: a file path; the carry is saved there after every chunk and the chunk's
            history appended next to it (``<checkpoint>.part<k>``, one file per chunk), and a
            run started again with the same arguments resumes from it and returns exactly what
            an uninterrupted run returns. A checkpoint written by a different run (the traced
            program of a round — code, helpers and globals included —, forecaster, nature, key,
            T, recorder, precision or platform), a rewound or edited one, and a corrupt one
            raise :class:`~jcalib.core.CheckpointError` naming the file, what is wrong and what
            to do. A killed run's temporary files are removed on the next start. See
            :mod:`jcalib.core.checkpoint`.
        compiler_options: XLA options for compiling the chunk (``jax.jit``'s
            ``compiler_options``), e.g. ``{"xla_backend_optimization_level": 0}``: on a CPU it
            compiles in about half the time and runs about 3x slower, a gain for short runs.
            Float results can change in the last bits (the optimiser may fuse a multiply and an
            add that an unoptimised program rounds separately), so compare before relying on
            equal numbers.

    Returns:
        The recorder's result, as NumPy arrays on the host (a history is moved there chunk by
        chunk and never copied back to a device; wrap with ``jnp.asarray`` to compute on a
        device). Under ``jax.jit`` the result is traced arrays. The numbers do not depend on
        ``chunk``.

    Example:
        >>> import jax, jcalib
        >>> f = jcalib.forecasters.AlmostOneStepAhead(n_bins=10)
        >>> traj = jcalib.core.play(f, jcalib.natures.Bernoulli(0.3), 100, key=jax.random.key(0))
        >>> traj.forecast.shape
        (100,)
    """
    recorder = resolve_recorder(record, forecaster, n_bins)
    chunk = chunk_length(T, chunk)
    f, n = as_traced_module(forecaster), as_traced_module(nature)
    return run(f, n, recorder, key, T, chunk, progress, checkpoint, (None, None, None),
               check_compiler_options(compiler_options))


@declare(forecaster=_FORECASTER, natures=_NATURES, **_SIZES,
         n_seeds=Int(1, MAX_SEEDS, bytes_per=8, what="the seeds' keys"), threads=Int(1, 4096, optional=True))
def sweep(
    forecaster: AbstractForecaster | Sequence[AbstractForecaster],
    natures: AbstractNature | Sequence[AbstractNature],
    T: int,
    *,
    key: PRNGKeyArray,
    n_seeds: int = 1,
    record: Any = "full",
    n_bins: int | None = None,
    chunk: int | None = None,
    progress: bool | None = None,
    checkpoint: str | os.PathLike | None = None,
    compiler_options: dict | None = None,
    threads: int | None = None,
):
    """Play every (forecaster, nature, seed) combination at once: nested ``vmap``s over the
    forecasters, the natures and the seeds, with the seed axis sharded over all devices along
    a 1-D mesh named ``"batch"``.

    Args:
        forecaster: one forecaster, or a sequence of forecasters of one class that differ only in
            array-valued hyperparameters (they are stacked and vmapped).
        natures: one nature or a sequence of natures of one class (stacked and vmapped). Put
            natures of different classes in a :class:`~jcalib.natures.Switch`.
        T: number of rounds, as in `play`.
        key: a JAX PRNG key (keyword-only, required).
        n_seeds: independent runs per (forecaster, nature), at most 2**24; seed ``s`` uses
            ``jax.random.split(key, n_seeds)[s]`` for every pair (common random numbers).
        record: what to keep, as in `play`.
        n_bins: the grid size for ``record="summary"``, as in `play`.
        chunk: rounds per compiled call, as in `play`.
        progress: progress bar between chunks, as in `play`.
        checkpoint: save and resume path, as in `play`.
        compiler_options: XLA options for compiling the chunk, as in `play`.
        threads: CPU threads the seeds are split over, each running the compiled program on its
            share (default: the cores this process may use, when JAX has a single CPU device and
            no ``checkpoint`` is given; 1 runs one program). XLA's CPU runtime runs the small
            operations of one program on one core; two programs of half the seeds run side by
            side (ORCA at B = 64 on two cores: 1.7x the rounds/s of one program).

    Returns:
        The recorder's result whose leaves have leading axes ``(F, N, n_seeds)`` — ``F`` only
        when a sequence of forecasters was given, ``N`` always (1 for a single nature) —
        followed by the round axis for histories; NumPy arrays on the host, as in `play`.

    Memory: array fields are stacked once per module and shared across seeds (a ``Replay`` of
    length T is stored N times, not N × n_seeds times).

    Several devices: the seed axis is padded to a multiple of the device count and sharded
    along a 1-D mesh named ``"batch"``; the numbers are identical to a single-device run (a
    CPU's cores become devices with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``).

    Several processes or hosts (``jax.distributed.initialize(...)`` called first in every
    process, see the "Scaling out" docs page): the seeds are split evenly over the processes,
    each process runs its shard on its local devices without communicating, and the shards are
    gathered at the end, so every process returns the full result — bit for bit what one
    process returns. With ``checkpoint``, each process keeps its own file
    (``<checkpoint>.process<p>-of-<P>``).
    """
    f_seq = isinstance(forecaster, (list, tuple))
    f_list = list(forecaster) if f_seq else [forecaster]
    n_list = list(natures) if isinstance(natures, (list, tuple)) else [natures]
    recorder = resolve_recorder(record, f_list[0], n_bins)
    chunk = chunk_length(T, chunk)
    fb, F = stack_modules(f_list, "forecasters") if f_seq else (as_traced_module(f_list[0]), 1)
    n_seq = isinstance(natures, (list, tuple))
    # a single nature is not stacked: no natures axis of size 1 inside the program (its gathers
    # and scatters would carry an extra index); the axis is added to the result
    nb, N = stack_modules(n_list, "natures") if n_seq else (as_traced_module(n_list[0]), None)

    shard = shard_seeds(key, n_seeds)
    options = check_compiler_options(compiler_options)
    parts = thread_parts(shard, threads, checkpoint)
    if parts == 1:
        out = run(fb, nb, recorder, shard.keys, T, chunk, progress, process_checkpoint(checkpoint, shard),
                  (F if f_seq else None, N, shard.n_local), options)
    else:  # the same program on equal shares of the seeds (padded with seed 0), side by side
        keys = split_keys(shard.keys, parts)
        # the first time a program runs, the other shares start once the first share's first call
        # has compiled it: started together, each thread would miss jit's cache and compile the
        # same program again
        layout_k = (F if f_seq else None, N, keys[0].shape[0])
        sig = _program_signature(fb, nb, recorder, keys[0], chunk, layout_k, options)
        compiled = None if sig is not None and sig in _COMPILED else threading.Event()
        with concurrent.futures.ThreadPoolExecutor(parts) as pool:
            outs = []
            for i, k in enumerate(keys):
                outs.append(pool.submit(run, fb, nb, recorder, k, T, chunk, progress if i == 0 else False, None,
                                        layout_k, options, compiled if i == 0 else None))
                if i == 0 and compiled is not None:
                    compiled.wait()
            outs = [o.result() for o in outs]
        if sig is not None:
            _COMPILED.add(sig)
        axis = int(f_seq) + int(n_seq)  # the seed axis of run's outputs
        cut = (slice(None),) * axis + (slice(0, shard.n_local),)  # without the padding
        out = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=axis)[cut], *outs)
    # outputs have axes (F?, N, S, ...); indexing keeps host arrays on the host
    seed_axis = 2 if f_seq else 1
    if not n_seq:
        out = jax.tree_util.tree_map(lambda x: x[(slice(None),) * (seed_axis - 1) + (None,)], out)
    if shard.n_proc > 1:
        out = gather_seeds(out, seed_axis)
    # drop the padded seeds
    return jax.tree_util.tree_map(lambda x: x[(slice(None),) * seed_axis + (slice(0, n_seeds),)], out)



"""Drivers own the loops: :func:`play` runs the rounds as compiled chunks of ``lax`` loops;
:func:`sweep` vmaps it over forecasters × natures × seeds, shards the seeds over every local
device, and splits them over processes under ``jax.distributed``.

Keys: the run key is split once into (forecaster-init, nature-init) and four round streams
(context, forecast, outcome, nature-update). Each stream's random bits come in blocks aligned
to absolute round indices: block ``b`` (rounds ``[b·BLOCK, (b+1)·BLOCK)``) is ``BLOCK`` threefry
hashes under ``fold_in(stream, b)``, and round ``t`` gets one hash's two words as its key (of
:data:`ROUND_KEY_IMPL`, whose first small draw reads those words without hashing again). So a
run's numbers do not depend on how it is chunked, nor on how many devices or processes share a
sweep.

Compilation: Python numbers in a module's non-static fields are turned into arrays before the
compiled functions see them, so ``Bernoulli(0.3)`` and ``Bernoulli(0.4)`` share one compiled
program. A run is one program per (forecaster, nature, recorder, chunk length, batch shape):
``T`` only sets how many times the chunk is called (the start round and the number of rounds
are traced, and the first call initialises), so every horizon reuses it. Shape-fixing (static)
fields recompile.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from typing import Any, NamedTuple, Sequence

import equinox as eqx
import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from tqdm.auto import tqdm

from .._validation import check_positive_int
from .recorders import AbstractRecorder, Round, resolve_recorder, stack_outputs
from .types import AbstractForecaster, AbstractNature, check_outcome_spaces

__all__ = ["play", "sweep", "as_traced_module"]


class _Carry(NamedTuple):
    fstate: Any
    nstate: Any
    rstate: Any


def as_traced_module(module):
    """``module`` with every Python int/float in a non-static field turned into a JAX array.

    Compiled functions treat non-array leaves as compile-time constants; arrays are traced, so
    new hyperparameter values reuse one compilation and sweeps can vmap over them.
    """

    def conv(x):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return jnp.asarray(x)
        return x

    return jax.tree_util.tree_map(conv, module)


# ---- random numbers: round keys cut from blocks of threefry output ------------------------------

BLOCK = 128
"""Rounds per block of random bits: block ``b`` of a stream covers rounds ``[b·BLOCK, (b+1)·BLOCK)``."""

DEFAULT_CHUNK = 2048
"""Rounds per compiled call when ``chunk`` is not given (a multiple of :data:`BLOCK`)."""

_THREEFRY = jax.extend.random.threefry_prng_impl


def _round_random_bits(key, bit_width: int, shape):
    # A round key's two words are themselves uniform threefry output (see _block_keys), so a
    # draw of at most 64 bits (a Bernoulli or a uniform, in float32 or float64) reads them as
    # they are; a larger draw hashes them as a threefry key.
    size = math.prod(shape)
    if bit_width == 64 and size == 1:
        hi, lo = (jax.lax.convert_element_type(w, jnp.uint64) for w in (key[0], key[1]))
        return ((hi << jnp.uint64(32)) | lo).reshape(shape)
    if bit_width <= 32 and size == 1:
        return jax.lax.convert_element_type(key[0], jnp.dtype(f"uint{bit_width}")).reshape(shape)
    if bit_width == 32 and size == 2:
        return key.reshape(shape)
    return _THREEFRY.random_bits(key, bit_width, shape)


ROUND_KEY_IMPL = jax.extend.random.define_prng_impl(
    key_shape=(2,),
    seed=_THREEFRY.seed,
    split=_THREEFRY.split,
    random_bits=_round_random_bits,
    fold_in=_THREEFRY.fold_in,
    name="jcalib_round",
    tag="rnd",
)
"""The PRNG implementation of the per-round keys that ``play``/``sweep`` hand to the players.

A round key holds 64 bits of threefry output. Its first draw of at most 64 bits (e.g.
``jax.random.bernoulli(key, p)``, ``jax.random.uniform(key)``) *is* those bits, without another
hash; ``split``, ``fold_in`` and larger draws are threefry's, keyed by the two words. So the
common case — one Bernoulli outcome per round — costs half a threefry hash per round (drawn in
blocks) instead of two hashes per round (a ``fold_in`` and the draw). ``jax.random.poisson``
accepts only threefry keys: there, use ``jax.random.wrap_key_data(jax.random.key_data(key))``.
"""


def _block_keys(stream, b):
    """The round keys of block ``b`` of ``stream``: ``BLOCK`` keys from ``BLOCK`` threefry hashes.

    Block ``b`` hashes the counters ``0..2·BLOCK-1`` under ``fold_in(stream, b)``; round
    ``b·BLOCK + i`` gets the two output words of the ``i``-th hash. A round's key depends only on
    the stream and the round's absolute index, never on chunking, batching or devices.
    """
    kd = jax.random.key_data(jax.random.fold_in(stream, b))
    words = jax.extend.random.threefry_2x32(kd, jnp.arange(2 * BLOCK, dtype=jnp.uint32))
    return jax.random.wrap_key_data(words.reshape(2, BLOCK).T, impl=ROUND_KEY_IMPL)


def _init(forecaster, nature, recorder, key):
    """The carry before round 0, and the four round streams (context, forecast, outcome, update)."""
    kf, kn, kx, kp, ky, ku = jax.random.split(key, 6)
    carry = _Carry(forecaster.init(kf), nature.init(kn), recorder.init())
    return carry, jnp.stack([kx, kp, ky, ku])


def _streams(key):
    return jnp.stack(list(jax.random.split(key, 6)[2:]))


def _one_round(forecaster, nature, recorder, c: _Carry, t, keys):
    kx, kp, ky, ku = keys
    x = nature.context(c.nstate, kx)
    fc = forecaster.predict(c.fstate, x, kp)
    y = nature.outcome(c.nstate, x, fc.public, ky)
    info = forecaster.info(c.fstate, x, fc, y)
    rstate, out = recorder.step(c.rstate, Round(t, x, fc, y, info))
    new = _Carry(forecaster.update(c.fstate, x, fc, y), nature.update(c.nstate, x, fc, y, ku), rstate)
    return new, out


def _scan_rounds(forecaster, nature, recorder, streams, carry: _Carry, t0, n, length: int):
    """Rounds ``t0, …, t0+n-1`` (``n <= length``, both traced) as loops over blocks and rounds.

    Returns the carry and the per-round outputs in a buffer of ``length`` rows (row ``t - t0``;
    rows past ``n`` are zeros). ``length`` fixes the program; ``t0`` and ``n`` do not, so every
    horizon T reuses one compiled chunk, and a last partial chunk runs fewer iterations of the
    same program instead of compiling another.
    """
    one = functools.partial(_one_round, forecaster, nature, recorder)
    t_like = jnp.zeros((), jnp.int32)
    key_like = _block_keys(streams[0], 0)[0]
    _, out_like = jax.eval_shape(one, carry, t_like, (key_like,) * 4)
    buf = jax.tree_util.tree_map(lambda o: jnp.zeros((length,) + o.shape, o.dtype), out_like)
    end = t0 + n

    def block(b, state):
        # A stream no player uses is dropped by XLA (its block is never hashed): a deterministic
        # forecaster against a Bernoulli nature hashes one block per BLOCK rounds.
        bkeys = [_block_keys(s, b) for s in streams]

        def round_(t, state):
            c, buf = state
            c, out = one(c, t, tuple(k[t - b * BLOCK] for k in bkeys))
            buf = jax.tree_util.tree_map(lambda a, o: jax.lax.dynamic_update_index_in_dim(a, o, t - t0, 0), buf, out)
            return c, buf

        lo = jnp.maximum(t0, b * BLOCK)
        hi = jnp.minimum(end, (b + 1) * BLOCK)
        return jax.lax.fori_loop(lo, hi, round_, state)

    return jax.lax.fori_loop(t0 // BLOCK, (end + BLOCK - 1) // BLOCK, block, (carry, buf))


def _check_modules(forecaster, nature):
    if not isinstance(forecaster, AbstractForecaster):
        raise ValueError(f"forecaster must be an AbstractForecaster, got {type(forecaster).__name__}")
    if not isinstance(nature, AbstractNature):
        raise ValueError(f"nature must be an AbstractNature, got {type(nature).__name__}")
    check_outcome_spaces(forecaster, nature)


# ---- the compiled pieces: one function, nested vmaps over (forecaster, nature, seed) ----------
# ``layout`` is a static tuple (F, N, S) of the stacked axes' sizes, ``None`` for an axis that is
# not stacked; a stacked axis is vmapped, an unstacked one is closed over and shared, so data
# that every batch element reads (a Replay's sequence) is never copied per seed.


def _nest(fn, layout, forecaster, nature, arg_kinds: tuple):
    """vmap ``fn(f, n, *args)`` over the stacked axes of ``layout``.

    ``arg_kinds[i]`` is ``"seed"`` for an argument batched only over seeds (the seed keys) and
    ``"all"`` for one batched over every stacked axis (states, round keys).
    """
    n_f, n_n, n_s = layout

    def axes(level):
        return tuple(0 if kind == "all" or level == "s" else None for kind in arg_kinds)

    # axis sizes are given explicitly: a nature without array fields (Contrarian) has nothing
    # to read the natures' axis from
    if n_s is not None:
        fn = eqx.filter_vmap(fn, in_axes=(None, None) + axes("s"), axis_size=n_s)
    if n_n is not None:
        fn = eqx.filter_vmap(fn, in_axes=(None, _batch_axes(nature)) + axes("n"), axis_size=n_n)
    if n_f is not None:
        fn = eqx.filter_vmap(fn, in_axes=(_batch_axes(forecaster), None) + axes("f"), axis_size=n_f)
    return fn


def _init_all(forecaster, nature, recorder, keys, layout):
    return _nest(lambda f, n, k: _init(f, n, recorder, k)[0], layout, forecaster, nature, ("seed",))(forecaster, nature, keys)


def _chunk_body(forecaster, nature, recorder, keys, carry, fresh, t0, n, length: int, layout):
    """One compiled chunk: ``n <= length`` rounds from ``t0`` (all traced) for the whole batch.

    With ``fresh`` (traced), the players' and recorder's init replaces ``carry`` first (a
    ``lax.cond``: the first call of a run initialises, later calls skip it), so a run compiles
    one program, not an init program and a chunk program. The round streams are re-derived
    from the seed keys at each call (three threefry hashes per sequence).
    """

    def one(f, nat, k, c):
        c = jax.lax.cond(fresh, lambda c: _init(f, nat, recorder, k)[0], lambda c: c, c)
        return _scan_rounds(f, nat, recorder, _streams(k), c, t0, n, length)

    return _nest(one, layout, forecaster, nature, ("seed", "all"))(forecaster, nature, keys, carry)


_chunk_all = eqx.filter_jit(_chunk_body)


@functools.lru_cache(maxsize=None)
def _chunk_with(compiler_options: tuple):
    """The chunk compiled with XLA ``compiler_options`` (a sorted tuple of items; () = defaults)."""
    if not compiler_options:
        return _chunk_all
    return eqx.filter_jit(_chunk_body, compiler_options=dict(compiler_options))


def _check_compiler_options(options) -> tuple:
    if options is None:
        return ()
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ValueError(f"compiler_options must be a dict of XLA option names to values, got {options!r}")
    return tuple(sorted(options.items()))


def _placeholder(like):
    """Zeros shaped like ``like`` (a tree of ShapeDtypeStructs): the carry a first chunk ignores."""

    # jnp.zeros also makes (all-zero) key arrays, for states that hold keys
    return jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), like)


@eqx.filter_jit
def _finalise_all(recorder, rstate, outs, n_batch: int):
    fn = recorder.finalise
    for _ in range(n_batch):
        fn = jax.vmap(fn)
    return fn(rstate, outs)


def _batch_axes(module):
    """vmap axes for a module whose array leaves carry a leading batch axis."""
    return jax.tree_util.tree_map(lambda x: 0 if eqx.is_array(x) else None, module)


# ---- checkpoints --------------------------------------------------------------------------------


def _fingerprint(forecaster, nature, recorder, keys, T: int, layout) -> str:
    """A hash of everything that determines a run's numbers (not the chunk length)."""
    h = hashlib.sha256()
    for part in (forecaster, nature, recorder):
        arrays, static = eqx.partition(part, eqx.is_array)
        h.update(repr(jax.tree_util.tree_structure(arrays)).encode())
        h.update(repr(static).encode())
        for leaf in jax.tree_util.tree_leaves(arrays):
            a = np.asarray(leaf)
            h.update(str((a.shape, a.dtype)).encode())
            h.update(np.ascontiguousarray(a).tobytes())
    h.update(np.asarray(jax.random.key_data(keys)).tobytes())
    h.update(repr((T, layout)).encode())
    return h.hexdigest()


def _save_checkpoint(path, carry, t, fingerprint, outs):
    leaves = jax.tree_util.tree_leaves(carry)
    arrays = {f"leaf{i}": np.asarray(x) for i, x in enumerate(leaves)}
    if outs is not None:
        arrays.update({f"out{i}": np.asarray(x) for i, x in enumerate(jax.tree_util.tree_leaves(outs))})
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, t=np.asarray(t), fingerprint=np.asarray(fingerprint), **arrays)
    os.replace(tmp, path)


def _load_checkpoint(path, carry_like, fingerprint, outs_like):
    with np.load(path, allow_pickle=False) as data:
        if "fingerprint" not in data.files or str(data["fingerprint"]) != fingerprint:
            raise ValueError(
                f"checkpoint {path} was written by a different run (forecaster, nature, key, T or "
                "recorder differ); delete it or pass another path"
            )
        leaves, treedef = jax.tree_util.tree_flatten(carry_like)
        new = [jnp.asarray(data[f"leaf{i}"], dtype=x.dtype) for i, x in enumerate(leaves)]
        carry = jax.tree_util.tree_unflatten(treedef, new)
        outs = None
        if outs_like is not None and any(k.startswith("out") for k in data.files):
            o_leaves, o_def = jax.tree_util.tree_flatten(outs_like)
            outs = jax.tree_util.tree_unflatten(o_def, [np.asarray(data[f"out{i}"]) for i in range(len(o_leaves))])
        return carry, int(data["t"]), outs


def _out_struct(forecaster, nature, recorder, keys, carry, layout):
    """The per-round outputs' structure (one round), for reading outputs back from a checkpoint."""
    one = jnp.ones((), jnp.int32)
    _, outs = eqx.filter_eval_shape(_chunk_all, forecaster, nature, recorder, keys, carry, one > 0, 0 * one, one, 1, layout)
    if not jax.tree_util.tree_leaves(outs):
        return None
    return outs


# ---- the run loop -------------------------------------------------------------------------------


def _traced(tree) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _first_rows(outs, n: int, axis: int):
    """The first n rounds of a chunk's output buffer: on the host, or in the graph when ``play``
    itself is being traced (``jax.jit(lambda k: play(..., k))``)."""
    if _traced(outs):
        return jax.tree_util.tree_map(lambda a: jax.lax.slice_in_dim(a, 0, n, axis=axis), outs)
    return jax.tree_util.tree_map(lambda a: np.asarray(a).take(np.arange(n), axis=axis), jax.device_get(outs))


def _concat(pieces: list, axis: int):
    if len(pieces) == 1:
        return pieces[0]
    if _traced(pieces):
        return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=axis), *pieces)
    return stack_outputs(pieces, axis)


def _run(forecaster, nature, recorder: AbstractRecorder, keys, T, chunk, progress, checkpoint, layout,
         compiler_options: tuple = ()):
    """``ceil(T / chunk)`` calls of one compiled chunk of ``chunk`` rounds (the first also
    initialises), then finalise."""
    chunk_fn = _chunk_with(compiler_options)
    n_batch = sum(a is not None for a in layout)
    round_axis = n_batch
    carry = _placeholder(eqx.filter_eval_shape(_init_all, forecaster, nature, recorder, keys, layout))
    fresh = True
    start, pieces = 0, []
    fingerprint = None
    if checkpoint is not None:
        fingerprint = _fingerprint(forecaster, nature, recorder, keys, T, layout)
        if os.path.exists(checkpoint):
            like = _out_struct(forecaster, nature, recorder, keys, carry, layout)
            carry, start, saved = _load_checkpoint(checkpoint, carry, fingerprint, like)
            fresh = False
            if saved is not None:
                pieces.append(saved)
    n_chunks = math.ceil((T - start) / chunk)
    show = (n_chunks > 1) if progress is None else bool(progress)
    bar = tqdm(total=T, initial=start, unit="round", disable=not show, leave=False)
    t = start
    while t < T:
        n = min(chunk, T - t)
        carry, outs = chunk_fn(forecaster, nature, recorder, keys, carry, jnp.asarray(fresh), jnp.asarray(t, jnp.int32),
                                 jnp.asarray(n, jnp.int32), chunk, layout)
        fresh = False
        if jax.tree_util.tree_leaves(outs):
            # the buffer holds `chunk` rows; a last partial chunk filled the first n
            pieces.append(_first_rows(outs, n, round_axis))
        t += n
        bar.update(n)
        if checkpoint is not None:
            so_far = _concat(pieces, round_axis) if pieces else None
            if so_far is not None:
                pieces = [so_far]
            _save_checkpoint(checkpoint, carry, t, fingerprint, so_far)
    bar.close()
    outs = _concat(pieces, round_axis) if pieces else None
    return _finalise_all(recorder, carry.rstate, outs, n_batch)


def _chunk_length(T: int, chunk) -> int:
    if chunk is None:
        # T rounded up to a power of two (at least BLOCK, at most DEFAULT_CHUNK): a few programs
        # cover every horizon (short runs stop the loops early) and a history's buffer is < 2T
        return min(DEFAULT_CHUNK, max(BLOCK, 1 << (T - 1).bit_length()))
    return check_positive_int(chunk, "chunk")


def play(
    forecaster: AbstractForecaster,
    nature: AbstractNature,
    T: int,
    key,
    *,
    record: Any = "full",
    grid: int | None = None,
    chunk: int | None = None,
    progress: bool | None = None,
    checkpoint: str | os.PathLike | None = None,
    compiler_options: dict | None = None,
):
    """Play ``forecaster`` against ``nature`` for ``T`` rounds.

    Args:
        forecaster: the forecaster (an equinox module).
        nature: the nature (an equinox module).
        T: number of rounds (a positive Python int; it fixes array shapes).
        key: a JAX PRNG key.
        record: what to keep: a recorder (``jcalib.recorders``), a tuple or dict of recorders,
            or a shorthand: ``"full"`` (:class:`~jcalib.recorders.History`, a
            :class:`~jcalib.core.Trajectory` with a leading axis of length T) or
            ``"summary"`` (paper 000's :class:`~jcalib.recorders.GridSummary`, memory O(m)).
        grid: the grid size m for ``record="summary"`` (default: ``forecaster.value_grid``).
        chunk: rounds per compiled call (memory O(chunk) for a history, O(1) for
            summaries). One compiled chunk serves every ``T``: a last partial chunk runs fewer
            iterations of the same program. Default: ``T`` rounded up to a power of two,
            between :data:`BLOCK` and :data:`DEFAULT_CHUNK` (2048); pass a fixed ``chunk`` to
            share one program across all horizons.
        progress: show a progress bar between chunks (default: when there are several chunks).
        checkpoint: a file path; with ``chunk``, the carry (and the history so far) is saved
            after every chunk, and a run started again with the same arguments resumes from it
            and returns exactly what an uninterrupted run returns. A checkpoint written by a
            different run (forecaster, nature, key, T or recorder) is refused.
        compiler_options: XLA options for compiling the chunk (``jax.jit``'s
            ``compiler_options``), e.g. ``{"xla_backend_optimization_level": 0}``: on a CPU it
            compiles in about half the time and runs about 3x slower, a gain for short runs.
            Float results can change in the last bits (the optimiser may fuse a multiply and an
            add that an unoptimised program rounds separately), so compare before relying on
            equal numbers.

    Returns:
        The recorder's result. The numbers do not depend on ``chunk``.

    Example:
        >>> import jax, jcalib
        >>> f = jcalib.forecasters.AlmostOneStepAhead(n_bins=10)
        >>> traj = jcalib.play(f, jcalib.natures.Bernoulli(0.3), 100, jax.random.key(0))
        >>> traj.forecast.shape
        (100,)
    """
    T = check_positive_int(T, "T")
    _check_modules(forecaster, nature)
    recorder = resolve_recorder(record, forecaster, grid)
    chunk = _chunk_length(T, chunk)
    f, n = as_traced_module(forecaster), as_traced_module(nature)
    return _run(f, n, recorder, key, T, chunk, progress, checkpoint, (None, None, None),
                _check_compiler_options(compiler_options))


def _stack(modules: Sequence[eqx.Module], what: str):
    modules = list(modules)
    if not modules:
        raise ValueError(f"{what} must not be empty")
    cls = type(modules[0])
    if any(type(m) is not cls for m in modules):
        raise ValueError(f"all {what} in one sweep must be of one class; got {sorted({type(m).__name__ for m in modules})}")
    # Python numbers in non-static fields become arrays so they can be stacked; fields that fix
    # shapes are static (eqx.field(static=True)) and must agree.
    parts = [eqx.partition(as_traced_module(m), eqx.is_array) for m in modules]
    statics = [p[1] for p in parts]
    if any(s != statics[0] for s in statics[1:]):
        raise ValueError(f"{what} differ in a static (shape-fixing) field; sweep them in separate calls")
    shapes = [jax.tree_util.tree_map(jnp.shape, p[0]) for p in parts]
    if any(s != shapes[0] for s in shapes[1:]):
        raise ValueError(f"{what} in one sweep must have array fields of equal shapes (e.g. replays of one length)")
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *[p[0] for p in parts])
    return eqx.combine(stacked, statics[0]), len(modules)


def sweep(
    forecaster: AbstractForecaster | Sequence[AbstractForecaster],
    natures: AbstractNature | Sequence[AbstractNature],
    T: int,
    key,
    *,
    n_seeds: int = 1,
    record: Any = "full",
    grid: int | None = None,
    chunk: int | None = None,
    progress: bool | None = None,
    checkpoint: str | os.PathLike | None = None,
    compiler_options: dict | None = None,
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
        key: a JAX PRNG key.
        n_seeds: independent runs per (forecaster, nature); seed ``s`` uses
            ``jax.random.split(key, n_seeds)[s]`` for every pair (common random numbers).
        record: what to keep, as in `play`.
        grid: the grid size for ``record="summary"``, as in `play`.
        chunk: rounds per compiled call, as in `play`.
        progress: progress bar between chunks, as in `play`.
        checkpoint: save and resume path, as in `play`.
        compiler_options: XLA options for compiling the chunk, as in `play`.

    Returns:
        The recorder's result whose leaves have leading axes ``(F, N, n_seeds)`` — ``F`` only
        when a sequence of forecasters was given, ``N`` always (1 for a single nature) —
        followed by the round axis for histories.

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
    T = check_positive_int(T, "T")
    n_seeds = check_positive_int(n_seeds, "n_seeds")
    f_seq = isinstance(forecaster, (list, tuple))
    f_list = list(forecaster) if f_seq else [forecaster]
    n_list = list(natures) if isinstance(natures, (list, tuple)) else [natures]
    if not f_list or not n_list:
        raise ValueError("forecasters and natures must not be empty")
    for f in f_list:
        _check_modules(f, n_list[0])
    for n in n_list:
        _check_modules(f_list[0], n)
    recorder = resolve_recorder(record, f_list[0], grid)
    chunk = _chunk_length(T, chunk)
    fb, F = _stack(f_list, "forecasters") if f_seq else (as_traced_module(f_list[0]), 1)
    n_seq = isinstance(natures, (list, tuple))
    # a single nature is not stacked: no natures axis of size 1 inside the program (its gathers
    # and scatters would carry an extra index); the axis is added to the result
    nb, N = _stack(n_list, "natures") if n_seq else (as_traced_module(n_list[0]), None)

    # Seeds are split evenly over processes, then over each process's devices: process p runs
    # seeds [p·S/P, (p+1)·S/P) with no communication until the final gather. Seed s always
    # uses split(key, n_seeds)[s], so the numbers do not depend on P or on the device count.
    n_proc, proc = jax.process_count(), jax.process_index()
    devices = jax.local_devices()
    unit = n_proc * len(devices)
    S = n_seeds + (-n_seeds) % unit
    keys = jax.random.split(key, n_seeds)
    if S > n_seeds:
        keys = jnp.concatenate([keys, jnp.repeat(keys[:1], S - n_seeds, axis=0)])
    S_local = S // n_proc
    keys = keys[proc * S_local:(proc + 1) * S_local]
    if len(devices) > 1:
        keys = jax.device_put(keys, NamedSharding(Mesh(np.array(devices), ("batch",)), PartitionSpec("batch")))
    if checkpoint is not None and n_proc > 1:
        checkpoint = f"{os.fspath(checkpoint)}.process{proc}-of-{n_proc}"
    out = _run(fb, nb, recorder, keys, T, chunk, progress, checkpoint, (F if f_seq else None, N, S_local),
               _check_compiler_options(compiler_options))
    if not n_seq:
        out = jax.tree_util.tree_map(lambda x: jnp.expand_dims(jnp.asarray(x), 1 if f_seq else 0), out)
    # outputs have axes (F?, N, S, ...)
    seed_axis = 2 if f_seq else 1
    if n_proc > 1:
        out = _gather_seeds(out, seed_axis)
    # drop the padded seeds
    return jax.tree_util.tree_map(lambda x: jax.lax.slice_in_dim(jnp.asarray(x), 0, n_seeds, axis=seed_axis), out)


def _gather_seeds(out, seed_axis: int):
    """Every process's shard of the seed axis, concatenated in process order, on every process."""
    from jax.experimental import multihost_utils

    def gather(x):
        front = np.moveaxis(np.asarray(x), seed_axis, 0)
        return np.moveaxis(np.asarray(multihost_utils.process_allgather(front, tiled=True)), 0, seed_axis)

    return jax.tree_util.tree_map(gather, out)

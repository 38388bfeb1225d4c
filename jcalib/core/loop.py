"""The chunked run loop: one compiled chunk of rounds, called ``ceil(T / chunk)`` times.

A run is one program per (forecaster, nature, recorder, chunk length, batch layout): the start
round and the number of rounds of a chunk are traced, and the first call initialises (a
``lax.cond``), so every horizon ``T`` reuses it. A history's per-round outputs are moved to the
host after every chunk and stay there: the result is NumPy arrays, never copied back to a
device. With a checkpoint, the carry is saved after every chunk and the chunk's history
appended (:mod:`jcalib.core.checkpoint`).
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from .._validation import check_positive_int, deferred_checks, format_bytes, once_per_signature, to_device, trace_once
from ..recorders.base import AbstractRecorder, Round, stack_outputs
from .batching import nest
from .checkpoint import Checkpoint, fingerprint
from .keys import BLOCK, block_keys, split_run_key

__all__ = ["DEFAULT_CHUNK", "run", "chunk_length", "check_compiler_options"]

DEFAULT_CHUNK = 2048
"""Rounds per compiled call when ``chunk`` is not given (a multiple of :data:`~jcalib.core.keys.BLOCK`)."""


class _Carry(NamedTuple):
    fstate: Any
    nstate: Any
    rstate: Any


def _init(forecaster, nature, recorder, key):
    """The carry before round 0."""
    kf, kn, _ = split_run_key(key)
    return _Carry(forecaster.init(kf), nature.init(kn), recorder.init())


def _one_round(forecaster, nature, recorder, c: _Carry, t, keys):
    kx, kp, ky, ku = keys
    x = nature.context(c.nstate, kx)
    fc = forecaster.predict(c.fstate, x, kp)
    y = nature.outcome(c.nstate, x, fc.public, ky)
    info = forecaster.info(c.fstate, x, fc, y)
    rstate, out = recorder.step(c.rstate, Round(t, x, fc, y, info))
    new = _Carry(forecaster.update(c.fstate, x, fc, y), nature.update(c.nstate, x, fc, y, ku), rstate)
    return new, out


def _checked(fn, messages: list):
    """``fn`` returning also its in-graph input checks as a bool vector (``deferred_checks``: no
    host callback in the chunk, so its program can be cached across processes); their messages
    go into ``messages`` when ``fn`` is traced."""

    def checked(*args):
        with deferred_checks() as box:
            out = fn(*args)
        messages[:] = box.messages
        return out, box.any()

    return checked


def _any_over_batch(flags):
    """A batch's check flags ``(..., n_checks)`` reduced to ``(n_checks,)``."""
    return jnp.any(flags, axis=tuple(range(flags.ndim - 1)))


def _scan_rounds(one, streams, batched: bool, carry: _Carry, t0, n, length: int, round_axis: int):
    """Rounds ``t0, …, t0+n-1`` (``n <= length``, both traced) as loops over blocks and rounds.

    ``one(carry, t, keys)`` is one round of the whole batch (the nested vmaps of
    :func:`_one_round`, returning the carry, the round's output and its check flags) and
    ``streams`` the four round streams (the seeds' with ``batched``). Returns the carry, the
    per-round outputs in a buffer of ``length`` rows along ``round_axis`` (row ``t - t0``; rows
    past ``n`` are zeros) and the flags of the checks failed in any round. ``length`` fixes the program;
    ``t0`` and ``n`` do not, so every horizon T reuses one compiled chunk, and a last partial
    chunk runs fewer iterations of the same program instead of compiling another.

    The loops run outside the vmaps (a vmapped round inside unbatched loops, not vmapped
    loops): the loop bounds are the same for the whole batch, and batching a ``while_loop``
    traces its body again until the batched carries settle (about a tenth of the tracing of a
    sweep over a dozen natures).
    """
    t_like = jnp.zeros((), jnp.int32)
    keys_like = tuple(_stream_block(s, 0, batched)[..., 0] for s in streams)
    (_, out_like, failed_like), one = trace_once(one, carry, t_like, keys_like)
    buf = jax.tree_util.tree_map(
        lambda o: jnp.zeros(o.shape[:round_axis] + (length,) + o.shape[round_axis:], o.dtype), out_like)
    end = t0 + n

    def block(b, state):
        # A stream no player uses is dropped by XLA (its block is never hashed): a deterministic
        # forecaster against a Bernoulli nature hashes one block per BLOCK rounds.
        bkeys = [_stream_block(s, b, batched) for s in streams]

        def round_(t, state):
            c, buf, failed = state
            c, out, flags = one(c, t, tuple(k[..., t - b * BLOCK] for k in bkeys))
            buf = jax.tree_util.tree_map(
                lambda a, o: jax.lax.dynamic_update_index_in_dim(a, o, t - t0, round_axis), buf, out)
            return c, buf, failed | flags

        lo = jnp.maximum(t0, b * BLOCK)
        hi = jnp.minimum(end, (b + 1) * BLOCK)
        return jax.lax.fori_loop(lo, hi, round_, state)

    failed = jnp.zeros(failed_like.shape, bool)
    return jax.lax.fori_loop(t0 // BLOCK, (end + BLOCK - 1) // BLOCK, block, (carry, buf, failed))


def _stream_block(stream, b, batched: bool):
    """:func:`~jcalib.core.keys.block_keys` of one stream, or of the seeds' streams (``batched``):
    keys of shape ``(BLOCK,)`` or ``(S, BLOCK)``."""
    fn = functools.partial(block_keys, b=b)
    return jax.vmap(fn)(stream) if batched else fn(stream)


# ---- the compiled pieces: one function, nested vmaps over (forecaster, nature, seed) ----------


def _init_all(forecaster, nature, recorder, keys, layout, messages=None):
    """The batch's carry before round 0; with ``messages`` (a list), also its init's check flags."""
    def init(f, n, k):
        return _init(f, n, recorder, k)

    if messages is None:
        return nest(init, layout, forecaster, nature, ("seed",))(forecaster, nature, keys)
    carry, flags = nest(_checked(init, messages), layout, forecaster, nature, ("seed",))(forecaster, nature, keys)
    return carry, _any_over_batch(flags)


def _chunk_body(forecaster, nature, recorder, keys, carry, fresh, t0, n, length: int, layout):
    """One compiled chunk: ``n <= length`` rounds from ``t0`` (all traced) for the whole batch.

    With ``fresh`` (traced), the players' and recorder's init replaces ``carry`` first (a
    ``lax.cond``: the first call of a run initialises, later calls skip it), so a run compiles
    one program, not an init program and a chunk program. The round streams are re-derived
    from the seed keys at each call (three threefry hashes per sequence).

    Returns the carry, the rounds' outputs, and the in-graph input checks of the players' init
    and rounds: a bool vector (true: failed somewhere in the chunk) and its messages (static),
    raised by the caller.
    """
    init_messages, round_messages = [], []

    def init(c):
        return _init_all(forecaster, nature, recorder, keys, layout, init_messages)

    (_, init_like), init = trace_once(init, carry)
    carry, init_failed = jax.lax.cond(fresh, init, lambda c: (c, jnp.zeros(init_like.shape, bool)), carry)
    # the four round streams, each of the seeds' keys (S,) (or one key): shared by the F and N axes
    batched = layout[2] is not None
    streams = jax.vmap(lambda k: tuple(split_run_key(k)[2]))(keys) if batched else tuple(split_run_key(keys)[2])

    def one(f, nat, c, t, ks):
        return _one_round(f, nat, recorder, c, t, ks)

    def round_all(c, t, ks):
        (c, out), flags = nest(_checked(one, round_messages), layout, forecaster, nature,
                               ("all", "shared", "seed"))(forecaster, nature, c, t, ks)
        return c, out, _any_over_batch(flags)

    carry, outs, round_failed = _scan_rounds(round_all, streams, batched, carry, t0, n, length,
                                             sum(a is not None for a in layout))
    return carry, outs, jnp.concatenate([init_failed, round_failed]), tuple(init_messages + round_messages)


def _raise_failed(failed, messages: tuple, x):
    """Raise the first failed check (``eqx.EquinoxRuntimeError``, as ``eqx.error_if`` would), or
    return ``x`` (the chunk's results); inside a caller's trace (``jax.jit`` around ``play``),
    ``x`` behind ``eqx.error_if``."""
    if isinstance(failed, jax.core.Tracer):
        for i, message in enumerate(messages):
            x = eqx.error_if(x, failed[i], message)
        return x
    for hit, message in zip(np.asarray(failed), messages):
        if hit:
            raise eqx.EquinoxRuntimeError(message)
    return x


_chunk_all = eqx.filter_jit(_chunk_body)


@functools.lru_cache(maxsize=None)
def _chunk_with(compiler_options: tuple):
    """The chunk compiled with XLA ``compiler_options`` (a sorted tuple of items; () = defaults)."""
    if not compiler_options:
        return _chunk_all
    return eqx.filter_jit(_chunk_body, compiler_options=dict(compiler_options))


def check_compiler_options(options) -> tuple:
    """``compiler_options`` as a hashable sorted tuple of items (``()`` for none)."""
    if options is None:
        return ()
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ValueError(f"compiler_options must be a dict of XLA option names to values, got {options!r}")
    return tuple(sorted(options.items()))


def _placeholder(like):
    """Zeros shaped like ``like`` (a tree of ShapeDtypeStructs): the carry a first chunk ignores.

    NumPy zeros, which reach the chunk without a program of their own (``jnp.zeros`` compiles
    one per shape and dtype on a first call); ``jnp.zeros`` for key arrays, which NumPy cannot
    hold."""

    def zeros(s):
        if jnp.issubdtype(s.dtype, jax.dtypes.prng_key):
            return jnp.zeros(s.shape, s.dtype)
        return np.zeros(s.shape, s.dtype)

    return jax.tree_util.tree_map(zeros, like)


def _vmapped_finalise(recorder, n_batch: int):
    fn = recorder.finalise
    for _ in range(n_batch):
        fn = jax.vmap(fn)
    return fn


@eqx.filter_jit
def _finalise_jit(recorder, rstate, outs, n_batch: int):
    return _vmapped_finalise(recorder, n_batch)(rstate, outs)


def _finalise(recorder, rstate, outs, n_batch: int):
    """The recorder's result, on the host: the history (host arrays) is never sent back to a device.

    The batched ``finalise`` is traced once per recorder configuration, shapes and batch depth
    (a warm ``play`` traced it at every call: about 0.5 ms of a 2.4 ms call of AOSA's), with the
    recorder's arrays as arguments, and its operations replayed one by one: a result that is a
    history array passed through (``History``) is that host array itself; what is computed from
    the (small) recorder state is computed on the device and fetched.
    """
    if outs is None or _traced((rstate, outs)):
        out = _finalise_jit(recorder, rstate, outs, n_batch)
        return out if _traced(out) else jax.device_get(out)
    arrays, static = eqx.partition((recorder, rstate, outs), eqx.is_array)

    def fn(arrays):
        r, state, history = eqx.combine(arrays, static)
        return _vmapped_finalise(r, n_batch)(state, history)

    replay = once_per_signature(_FINALISE_REPLAYS, lambda: trace_once(fn, arrays)[1], (recorder, rstate, outs),
                                n_batch)
    return jax.device_get(replay(arrays))


_FINALISE_REPLAYS: dict = {}
# The first chunk's carry placeholder is the init's shapes: traced once per signature, as the
# chunk is (a run of the same players with other arrays traces nothing), not once per run.
_INIT_SHAPES: dict = {}


# ---- the run loop -------------------------------------------------------------------------------


def _traced(tree) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _first_rows(outs, n: int, axis: int):
    """The first n rounds of a chunk's output buffer: on the host, or in the graph when ``play``
    itself is being traced (``jax.jit(lambda k: play(..., k))``)."""
    if _traced(outs):
        return jax.tree_util.tree_map(lambda a: jax.lax.slice_in_dim(a, 0, n, axis=axis), outs)
    return jax.tree_util.tree_map(lambda a: np.asarray(a).take(np.arange(n), axis=axis), jax.device_get(outs))


def _host_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX host
        return None


def _check_history_fits(piece, n: int, rounds: int) -> None:
    """Refuse a history that cannot fit in the host's memory, from the size of its first ``n``
    rounds, before more than one chunk of it is kept."""
    if _traced(piece):
        return
    per_round = sum(np.asarray(a).nbytes for a in jax.tree_util.tree_leaves(piece)) / n
    need, have = per_round * rounds, _host_memory()
    if have is not None and need > have:
        raise ValueError(f"T: the history of {rounds} rounds would need {format_bytes(need)} "
                         f"({format_bytes(per_round)} per round), more than this host's {format_bytes(have)} of "
                         "memory; record a summary instead (record='summary' or another recorder)")


def _concat(pieces: list, axis: int):
    if len(pieces) == 1:
        return pieces[0]
    if _traced(pieces):
        return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=axis), *pieces)
    return stack_outputs(pieces, axis)


def _open_checkpoint(path, forecaster, nature, recorder, keys, T, layout, carry, round_axis, compiler_options):
    if _traced((forecaster, nature, keys)):
        raise ValueError("checkpoint cannot be used when play or sweep is traced (inside jax.jit); call it eagerly")
    # the program of the first round (init and one round, the whole batch; traced once per
    # process by jit's cache): its jaxpr goes into the fingerprint, its outputs' structure is a
    # history part's
    one = jnp.ones((), jnp.int32)
    program, (_, outs, _, _), _ = eqx.filter_make_jaxpr(_chunk_all)(forecaster, nature, recorder, keys, carry,
                                                                     one > 0, 0 * one, one, 1, layout)
    like = outs if jax.tree_util.tree_leaves(outs) else None
    fp = fingerprint(forecaster, nature, recorder, keys, T, layout, carry, program, compiler_options)
    return Checkpoint(path, fp, carry, like, round_axis)


def run(forecaster, nature, recorder: AbstractRecorder, keys, T: int, chunk: int, progress, checkpoint, layout,
        compiler_options: tuple = (), compiled=None):
    """``ceil(T / chunk)`` calls of one compiled chunk of ``chunk`` rounds (the first also
    initialises), then finalise. ``layout`` is the batch layout (:mod:`jcalib.core.batching`).
    ``compiled`` (a ``threading.Event``, optional) is set once the first call has returned (the
    program is compiled and in jit's cache; its work may still run), or when the run fails."""
    try:
        return _run(forecaster, nature, recorder, keys, T, chunk, progress, checkpoint, layout, compiler_options,
                    compiled)
    finally:
        if compiled is not None:
            compiled.set()


def _run(forecaster, nature, recorder, keys, T, chunk, progress, checkpoint, layout, compiler_options, compiled):
    chunk_fn = _chunk_with(compiler_options)
    n_batch = sum(a is not None for a in layout)
    round_axis = n_batch
    carry = _placeholder(once_per_signature(
        _INIT_SHAPES, lambda: eqx.filter_eval_shape(_init_all, forecaster, nature, recorder, keys, layout),
        (forecaster, nature, recorder, keys), layout))
    fresh = True
    start, pieces = 0, []
    ckpt = None
    if checkpoint is not None:
        ckpt = _open_checkpoint(checkpoint, forecaster, nature, recorder, keys, T, layout, carry, round_axis,
                                compiler_options)
        if ckpt.exists():
            carry, start, pieces = ckpt.load()
            fresh = False
    n_chunks = math.ceil((T - start) / chunk)
    show = (n_chunks > 1) if progress is None else bool(progress)
    bar = tqdm(total=T, initial=start, unit="round", disable=not show, leave=False)
    t = start
    failed, messages = None, ()  # the checks failed in any chunk so far, read once at the end (no host sync per chunk)
    while t < T:
        n = min(chunk, T - t)
        carry, outs, now_failed, messages = chunk_fn(forecaster, nature, recorder, keys, carry, to_device(fresh),
                                                     to_device(np.int32(t)), to_device(np.int32(n)), chunk, layout)
        failed = now_failed if failed is None else failed | now_failed
        if ckpt is not None:  # a checkpoint never keeps a state past a failed check
            carry, outs = _raise_failed(failed, messages, (carry, outs))
        fresh = False
        if compiled is not None:
            compiled.set()
        # the buffer holds `chunk` rows; a last partial chunk filled the first n
        piece = _first_rows(outs, n, round_axis) if jax.tree_util.tree_leaves(outs) else None
        if piece is not None and t == start:
            _check_history_fits(piece, n, T - start)
        if piece is not None:
            pieces.append(piece)
        t += n
        bar.update(n)
        if ckpt is not None:
            ckpt.save(carry, t, piece)
    bar.close()
    if failed is not None:
        carry, pieces = _raise_failed(failed, messages, (carry, pieces))
    outs = _concat(pieces, round_axis) if pieces else None
    return _finalise(recorder, carry.rstate, outs, n_batch)


def chunk_length(T: int, chunk) -> int:
    """The rounds per compiled call: ``chunk``, or by default ``T`` rounded up to a power of two
    (at least :data:`~jcalib.core.keys.BLOCK`, at most :data:`DEFAULT_CHUNK`)."""
    if chunk is None:
        # a few programs cover every horizon (short runs stop the loops early) and a history's
        # buffer is < 2T
        return min(DEFAULT_CHUNK, max(BLOCK, 1 << (T - 1).bit_length()))
    return check_positive_int(chunk, "chunk")

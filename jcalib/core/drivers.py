"""Drivers own the loops: :func:`play` is one ``lax.scan``; :func:`sweep` vmaps it over a batch
of (forecaster, nature, seed) and shards that batch over every local device.

Keys: the run key is split once into (forecaster-init, nature-init, context, forecast,
outcome); round ``t`` draws its context, forecast and outcome keys as ``fold_in(stream, t)``. So a run's numbers do not depend on how it is chunked, nor on
how many devices share a sweep.
"""

from __future__ import annotations

import math
import os
from typing import Any, NamedTuple, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from tqdm.auto import tqdm

from .._validation import check_positive_int
from .types import AbstractForecaster, AbstractNature, Trajectory

__all__ = ["GridSummary", "forecast_grid", "play", "sweep", "summary_from_trajectory"]


class GridSummary(NamedTuple):
    """Running statistics that replace a full history (``record="summary"``).

    For forecasts on the grid {0, 1/m, …, 1}: per grid point ``i`` the number of rounds
    ``counts[i]`` that forecast i/m and the number ``ones[i]`` of those whose outcome was 1 —
    exactly what ECE (paper 000 §2) and the distance to calibration of a grid forecaster need.
    Counts are int32, so branch-free and exact in float32 runs (DESIGN.md, "Numbers").

    Attributes:
        counts, ones: int32 ``(m+1,)`` for the realised forecasts.
        off_grid: rounds whose forecast was more than 1e-3/m away from the grid (then the
            summary rounds them and is not exact; 0 for grid forecasters).
        info_counts, info_ones: the same for the forecaster's certificate (AOSA's look-ahead
            forecasts p̃_t); zeros when the forecaster has none.
        info_l1: Σ_t |p_t − p̃_t| (float), the first term of Theorem 1's triangle inequality.
        T: rounds recorded.
    """

    counts: jax.Array
    ones: jax.Array
    off_grid: jax.Array
    info_counts: jax.Array
    info_ones: jax.Array
    info_l1: jax.Array
    T: jax.Array


def _empty_summary(m: int) -> GridSummary:
    z = jnp.zeros((m + 1,), jnp.int32)
    zero = jnp.zeros((), jnp.int32)
    return GridSummary(z, z, zero, z, z, jnp.zeros((), jnp.result_type(float)), zero)


def _grid_index(v, m: int):
    scaled = jnp.asarray(v, jnp.result_type(float)) * m
    idx = jnp.clip(jnp.round(scaled), 0, m)
    # float32 round-off in v·m grows with m; a real off-grid forecast misses by far more
    return idx.astype(jnp.int32), jnp.abs(scaled - idx) > 1e-3


def _summary_step(s: GridSummary, value, y, info, m: int) -> GridSummary:
    i, off = _grid_index(value, m)
    y = jnp.asarray(y, jnp.int32)
    s = s._replace(
        counts=s.counts.at[i].add(1),
        ones=s.ones.at[i].add(y),
        off_grid=s.off_grid + off.astype(jnp.int32),
        T=s.T + 1,
    )
    if info is not None:
        j, _ = _grid_index(info, m)
        s = s._replace(
            info_counts=s.info_counts.at[j].add(1),
            info_ones=s.info_ones.at[j].add(y),
            info_l1=s.info_l1 + jnp.abs(jnp.asarray(value, s.info_l1.dtype) - jnp.asarray(info, s.info_l1.dtype)),
        )
    return s


def summary_from_trajectory(traj: Trajectory, m: int) -> GridSummary:
    """The :class:`GridSummary` of a recorded (unbatched) trajectory."""

    def body(s, row):
        v, y, info = row
        return _summary_step(s, v, y, info, m), None

    s, _ = jax.lax.scan(body, _empty_summary(m), (traj.forecast, traj.y, traj.info))
    return s


def forecast_grid(forecaster) -> int | None:
    """The grid size m of a grid forecaster (forecasts in {0, 1/m, …, 1}), else ``None``.

    Read from a ``value_grid`` attribute when the forecaster has one (e.g. Gupta–Ramdas scores
    interval midpoints on a grid twice as fine as its ``n_bins``), else from ``n_bins``.
    """
    m = getattr(forecaster, "value_grid", None)
    return int(m) if m is not None else (int(forecaster.n_bins) if hasattr(forecaster, "n_bins") else None)


def _grid_size(forecaster, grid):
    if grid is not None:
        return check_positive_int(grid, "grid")
    m = forecast_grid(forecaster)
    if m is None:
        raise ValueError(
            "record='summary' needs the forecast grid: pass grid=m (forecasts in {0, 1/m, ..., 1}); "
            f"{type(forecaster).__name__} has no n_bins field"
        )
    return m


class _Carry(NamedTuple):
    fstate: Any
    nstate: Any
    summary: Any


def _init(forecaster, nature, key):
    kf, kn, kx, kp, ky = jax.random.split(key, 5)
    return forecaster.init(kf), nature.init(kn), (kx, kp, ky)


def _scan_rounds(forecaster, nature, rkey, carry: _Carry, t0, length: int, record: str, m):
    """Rounds t0, …, t0+length-1 as one lax.scan."""

    def body(c: _Carry, keys):
        kx, kp, ky = keys
        x = nature.context(c.nstate, kx)
        fc = forecaster.predict(c.fstate, x, kp)
        y = nature.outcome(c.nstate, x, fc.public, ky)
        info = forecaster.info(c.fstate, x, fc, y)
        new = _Carry(
            forecaster.update(c.fstate, x, fc, y),
            nature.update(c.nstate, x, fc, y),
            c.summary if record == "full" else _summary_step(c.summary, fc.value, y, info, m),
        )
        out = Trajectory(x, fc.value, y, info) if record == "full" else None
        return new, out

    # Three key streams (context, forecast, outcome); round t draws fold_in(stream, t). Computed
    # for the whole chunk in one vectorised call; a stream no player uses is dropped by XLA, so a
    # deterministic forecaster against a Bernoulli nature costs two hashes per round.
    ts = t0 + jnp.arange(length, dtype=jnp.int32)
    keys = tuple(jax.vmap(jax.random.fold_in, in_axes=(None, 0))(k, ts) for k in rkey)
    return jax.lax.scan(body, carry, keys)


def _check_modules(forecaster, nature):
    if not isinstance(forecaster, AbstractForecaster):
        raise ValueError(f"forecaster must be an AbstractForecaster, got {type(forecaster).__name__}")
    if not isinstance(nature, AbstractNature):
        raise ValueError(f"nature must be an AbstractNature, got {type(nature).__name__}")


def _check_record(record):
    if record not in ("full", "summary"):
        raise ValueError(f"record must be 'full' or 'summary', got {record!r}")


@eqx.filter_jit
def _play_full(forecaster, nature, key, T: int):
    fstate, nstate, rkey = _init(forecaster, nature, key)
    _, traj = _scan_rounds(forecaster, nature, rkey, _Carry(fstate, nstate, None), 0, T, "full", None)
    return traj


def play(
    forecaster: AbstractForecaster,
    nature: AbstractNature,
    T: int,
    key,
    *,
    record: str = "full",
    grid: int | None = None,
    chunk: int | None = None,
    progress: bool | None = None,
    checkpoint: str | os.PathLike | None = None,
):
    """Play ``forecaster`` against ``nature`` for ``T`` rounds.

    Args:
        forecaster: the forecaster (an equinox module).
        nature: the nature (an equinox module).
        T: number of rounds (a positive Python int; it fixes array shapes).
        key: a JAX PRNG key.
        record: ``"full"`` returns a :class:`Trajectory` with a leading axis of length T;
            ``"summary"`` returns a :class:`GridSummary` (memory O(m), so T = 10⁷ fits).
        grid: the grid size m for ``record="summary"`` (default: ``forecaster.n_bins``).
        chunk: scan this many rounds per compiled call (memory O(chunk) with ``"summary"``);
            default: all T rounds in one ``lax.scan``.
        progress: show a progress bar between chunks (default: when there are several chunks).
        checkpoint: a file path; with ``chunk``, the carry is saved after every chunk and a run
            started again with the same arguments resumes from it.

    Returns:
        A :class:`Trajectory` or :class:`GridSummary`. The numbers do not depend on ``chunk``.

    Example:
        >>> import jax, jcalib
        >>> f = jcalib.forecasters.AlmostOneStepAhead(n_bins=10)
        >>> traj = jcalib.play(f, jcalib.natures.Bernoulli(0.3), 100, jax.random.key(0))
        >>> traj.forecast.shape
        (100,)
    """
    T = check_positive_int(T, "T")
    _check_modules(forecaster, nature)
    _check_record(record)
    if record == "full" and chunk is None and checkpoint is None:
        return _play_full(forecaster, nature, key, T)
    m = _grid_size(forecaster, grid) if record == "summary" else None
    out = _run_chunked(forecaster, nature, key[None], T, record, m, chunk or T, progress, checkpoint, batched=False)
    return out


def _stack(modules: Sequence[eqx.Module], what: str):
    modules = list(modules)
    if not modules:
        raise ValueError(f"{what} must not be empty")
    cls = type(modules[0])
    if any(type(m) is not cls for m in modules):
        raise ValueError(f"all {what} in one sweep must be of one class; got {sorted({type(m).__name__ for m in modules})}")
    # Python numbers in non-static fields become arrays so they can be stacked; fields that fix
    # shapes are static (eqx.field(static=True)) and must agree.
    modules = [jax.tree_util.tree_map(_to_array, m) for m in modules]
    parts = [eqx.partition(m, eqx.is_array) for m in modules]
    statics = [p[1] for p in parts]
    if any(s != statics[0] for s in statics[1:]):
        raise ValueError(f"{what} differ in a static (shape-fixing) field; sweep them in separate calls")
    arrays = [p[0] for p in parts]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *arrays)
    return stacked, statics[0], len(modules)


def _to_array(x):
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return jnp.asarray(x)
    return x


def _mesh():
    return Mesh(np.array(jax.devices()), ("batch",))


def _axes(module, batched: bool):
    return _batch_axes(module) if batched else None


@eqx.filter_jit
def _init_batch(forecaster, nature, keys, record: str, m, batched: bool):
    def one(f, n, k):
        fs, ns, rk = _init(f, n, k)
        return _Carry(fs, ns, _empty_summary(m) if record == "summary" else None), rk

    return eqx.filter_vmap(one, in_axes=(_axes(forecaster, batched), _axes(nature, batched), 0))(forecaster, nature, keys)


@eqx.filter_jit
def _run_batch(forecaster, nature, rkeys, carry, t0, length: int, record: str, m, batched: bool):
    def one(f, n, rk, c):
        return _scan_rounds(f, n, rk, c, t0, length, record, m)

    axes = (_axes(forecaster, batched), _axes(nature, batched), 0, 0)
    return eqx.filter_vmap(one, in_axes=axes)(forecaster, nature, rkeys, carry)


@eqx.filter_jit
def _play_batch(forecaster, nature, keys, T: int, record: str, m, batched: bool):
    """Init and all T rounds in one compiled program (the single-chunk case)."""

    def one(f, n, k):
        fs, ns, rk = _init(f, n, k)
        carry = _Carry(fs, ns, _empty_summary(m) if record == "summary" else None)
        return _scan_rounds(f, n, rk, carry, jnp.int32(0), T, record, m)

    return eqx.filter_vmap(one, in_axes=(_axes(forecaster, batched), _axes(nature, batched), 0))(forecaster, nature, keys)


def _run_chunked(forecaster, nature, keys, T, record, m, chunk, progress, checkpoint, batched):
    """Run a batch (leading axis of ``keys``; modules already carry that axis if ``batched``).

    The compiled functions are module-level, so repeated calls with the same shapes and
    settings reuse one compilation.
    """
    chunk = check_positive_int(chunk, "chunk")
    init = lambda f, n, k: _init_batch(f, n, k, record, m, batched)  # noqa: E731
    run = lambda f, n, rk, c, t0, length: _run_batch(f, n, rk, c, t0, length, record, m, batched)  # noqa: E731

    if chunk >= T and checkpoint is None:
        carry, traj = _play_batch(forecaster, nature, keys, T, record, m, batched)
        out = carry.summary if record == "summary" else traj
        return out if batched else jax.tree_util.tree_map(lambda x: x[0], out)
    carry, rkeys = init(forecaster, nature, keys)
    start = 0
    if checkpoint is not None and os.path.exists(checkpoint):
        carry, start = _load_checkpoint(checkpoint, carry)
    n_chunks = math.ceil((T - start) / chunk)
    show = (n_chunks > 1) if progress is None else bool(progress)
    pieces = []
    bar = tqdm(total=T, initial=start, unit="round", disable=not show, leave=False)
    t = start
    while t < T:
        length = min(chunk, T - t)
        carry, traj = run(forecaster, nature, rkeys, carry, jnp.asarray(t, jnp.int32), length)
        if record == "full":
            pieces.append(jax.device_get(traj))
        t += length
        bar.update(length)
        if checkpoint is not None:
            _save_checkpoint(checkpoint, carry, t)
    bar.close()
    if record == "summary":
        out = carry.summary
    else:
        # per-chunk histories have the round axis after the batch axis
        out = jax.tree_util.tree_map(lambda *xs: jnp.concatenate([jnp.asarray(x) for x in xs], axis=1), *pieces)
    if not batched:
        out = jax.tree_util.tree_map(lambda x: x[0], out)
    return out


def _batch_axes(module):
    """vmap axes for a module whose array leaves carry a leading batch axis."""
    return jax.tree_util.tree_map(lambda x: 0 if eqx.is_array(x) else None, module)


def _save_checkpoint(path, carry, t):
    leaves = jax.tree_util.tree_leaves(carry)
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, t=np.asarray(t), **{f"leaf{i}": np.asarray(x) for i, x in enumerate(leaves)})
    os.replace(tmp, path)


def _load_checkpoint(path, like):
    with np.load(path) as data:
        leaves, treedef = jax.tree_util.tree_flatten(like)
        if sum(1 for k in data.files if k.startswith("leaf")) != len(leaves):
            raise ValueError(f"checkpoint {path} does not match this run's state")
        new = [jnp.asarray(data[f"leaf{i}"], dtype=x.dtype) for i, x in enumerate(leaves)]
        for a, b in zip(new, leaves):
            if a.shape != b.shape:
                raise ValueError(f"checkpoint {path} does not match this run's state shapes")
        return jax.tree_util.tree_unflatten(treedef, new), int(data["t"])


def sweep(
    forecaster: AbstractForecaster | Sequence[AbstractForecaster],
    natures: AbstractNature | Sequence[AbstractNature],
    T: int,
    key,
    *,
    n_seeds: int = 1,
    record: str = "full",
    grid: int | None = None,
    chunk: int | None = None,
    progress: bool | None = None,
    checkpoint: str | os.PathLike | None = None,
):
    """Play every (forecaster, nature, seed) combination at once: ``vmap`` over one flat batch,
    sharded over all local devices along a 1-D mesh named ``"batch"``.

    Args:
        forecaster: one forecaster, or a sequence of forecasters of one class that differ only in
            array-valued hyperparameters (they are stacked and vmapped).
        natures: one nature or a sequence of natures of one class (stacked and vmapped). Sweep
            natures of different classes in separate calls.
        T: number of rounds, as in `play`.
        key: a JAX PRNG key.
        record: ``"full"`` or ``"summary"``, as in `play`.
        grid: the grid size for summaries, as in `play`.
        chunk: rounds per compiled call, as in `play`.
        progress: progress bar between chunks, as in `play`.
        checkpoint: save and resume path, as in `play`.
        n_seeds: independent runs per (forecaster, nature); seed ``s`` uses
            ``jax.random.split(key, n_seeds)[s]`` for every pair (common random numbers).

    Returns:
        A :class:`Trajectory` (or :class:`GridSummary`) whose leaves have leading axes
        ``(F, N, n_seeds)`` — ``F`` only when a sequence of forecasters was given, ``N`` always
        (1 for a single nature) — followed by the round axis for full trajectories.

    Several devices: the flat batch is padded to a multiple of the device count and sharded;
    the numbers are identical to a single-device run. For several hosts, call
    ``jax.distributed.initialize()`` first in every process; ``jax.devices()`` then spans all
    hosts and the same mesh shards the batch across them.
    """
    T = check_positive_int(T, "T")
    n_seeds = check_positive_int(n_seeds, "n_seeds")
    _check_record(record)
    f_seq = isinstance(forecaster, (list, tuple))
    f_list = list(forecaster) if f_seq else [forecaster]
    n_list = list(natures) if isinstance(natures, (list, tuple)) else [natures]
    if not f_list or not n_list:
        raise ValueError("forecasters and natures must not be empty")
    for f in f_list:
        _check_modules(f, n_list[0])
    for n in n_list:
        _check_modules(f_list[0], n)
    m = _grid_size(f_list[0], grid) if record == "summary" else None
    f_arr, f_static, F = _stack(f_list, "forecasters")
    n_arr, n_static, N = _stack(n_list, "natures")

    fi, ni, si = (a.ravel() for a in np.meshgrid(np.arange(F), np.arange(N), np.arange(n_seeds), indexing="ij"))
    B = fi.size
    n_dev = len(jax.devices())
    pad = (-B) % n_dev
    fi, ni, si = (np.concatenate([a, np.zeros(pad, a.dtype)]) for a in (fi, ni, si))

    seed_keys = jax.random.split(key, n_seeds)
    fb = eqx.combine(jax.tree_util.tree_map(lambda a: a[fi], f_arr), f_static)
    nb = eqx.combine(jax.tree_util.tree_map(lambda a: a[ni], n_arr), n_static)
    kb = seed_keys[si]
    if n_dev > 1:
        sharding = NamedSharding(_mesh(), PartitionSpec("batch"))
        fb, nb, kb = (_put(t, sharding) for t in (fb, nb, kb))
    out = _run_chunked(fb, nb, kb, T, record, m, chunk or T, progress, checkpoint, batched=True)
    shape = ((F,) if f_seq else ()) + (N, n_seeds)
    return jax.tree_util.tree_map(lambda x: x[:B].reshape(shape + x.shape[1:]), out)


def _put(tree, sharding):
    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.device_put(arrays, sharding), static)

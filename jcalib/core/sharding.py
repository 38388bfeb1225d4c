"""Sharding: a sweep's seeds split over processes (``jax.distributed``) and over each process's
devices (a 1-D mesh named ``"batch"``), and the shards gathered back on every process.

Seed ``s`` always uses ``jax.random.split(key, n_seeds)[s]``, so the numbers do not depend on
the number of processes or devices.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._threefry import key_data, keys_like, split
from .._validation import check_positive_int

__all__ = ["SeedShard", "shard_seeds", "gather_seeds", "process_checkpoint", "split_keys", "thread_parts"]


class SeedShard(NamedTuple):
    """This process's share of a sweep's seeds.

    Attributes:
        keys: the seed keys this process runs (padded, sharded over its local devices).
        n_local: how many seeds this process runs (padding included).
        n_proc: the number of processes.
        proc: this process's index.
    """

    keys: jax.Array
    n_local: int
    n_proc: int
    proc: int


def shard_seeds(key, n_seeds: int) -> SeedShard:
    """Split ``n_seeds`` seed keys evenly over processes, then over each process's devices.

    The seeds are padded (with copies of seed 0) to a multiple of processes × local devices;
    process ``p`` runs seeds ``[p·S/P, (p+1)·S/P)`` with no communication until the gather.
    """
    n_proc, proc = jax.process_count(), jax.process_index()
    devices = jax.local_devices()
    unit = n_proc * len(devices)
    S = n_seeds + (-n_seeds) % unit
    S_local = S // n_proc
    keys = _indexed(lambda k, xp: _pad(k, S, xp)[proc * S_local:(proc + 1) * S_local], split(key, n_seeds))
    if len(devices) > 1:
        keys = jax.device_put(keys, NamedSharding(Mesh(np.array(devices), ("batch",)), PartitionSpec("batch")))
    return SeedShard(keys, S_local, n_proc, proc)


def thread_parts(shard: SeedShard, threads, checkpoint) -> int:
    """How many CPU threads a sweep's seeds are split over (see ``sweep``'s ``threads``)."""
    if threads is not None:
        threads = check_positive_int(threads, "threads")
    keys = shard.keys
    one_cpu = (not isinstance(keys, jax.core.Tracer) and shard.n_proc == 1 and len(jax.local_devices()) == 1
               and jax.default_backend() == "cpu")
    if threads is None:
        if not one_cpu or checkpoint is not None:
            return 1
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    elif threads > 1 and not one_cpu:
        raise ValueError("threads > 1 needs one process with a single CPU device, and a sweep called eagerly (not under jax.jit)")
    elif threads > 1 and checkpoint is not None:
        raise ValueError("threads > 1 cannot be combined with checkpoint")
    return max(1, min(threads, shard.n_local))


def split_keys(keys, parts: int) -> list:
    """``keys`` padded with copies of the first to a multiple of ``parts`` and cut into equal parts."""
    size = -(-keys.shape[0] // parts)
    return _indexed(lambda k, xp: [_pad(k, size * parts, xp)[i * size:(i + 1) * size] for i in range(parts)], keys)


def _pad(keys, size: int, xp):
    """``keys`` padded with copies of the first to ``size`` rows."""
    if size == keys.shape[0]:
        return keys
    return xp.concatenate([keys, xp.repeat(keys[:1], size - keys.shape[0], axis=0)])


def _indexed(fn, keys):
    """``fn(keys, xp)`` (padding and slicing): for concrete keys done in NumPy on their data and
    put back as keys of the same kind (eager JAX indexing compiles a program per shape), for
    traced ones in the graph."""
    if isinstance(keys, jax.core.Tracer):
        return fn(keys, jnp)
    return jax.tree_util.tree_map(lambda d: keys_like(d, keys), fn(key_data(keys), np))


def process_checkpoint(checkpoint, shard: SeedShard):
    """The checkpoint path of this process: its own file when there are several processes."""
    if checkpoint is None or shard.n_proc == 1:
        return checkpoint
    return f"{os.fspath(checkpoint)}.process{shard.proc}-of-{shard.n_proc}"


def gather_seeds(out, seed_axis: int):
    """Every process's shard of the seed axis, concatenated in process order, on every process
    (host NumPy arrays)."""
    from jax.experimental import multihost_utils

    def gather(x):
        front = np.moveaxis(np.asarray(x), seed_axis, 0)
        return np.moveaxis(np.asarray(multihost_utils.process_allgather(front, tiled=True)), 0, seed_axis)

    return jax.tree_util.tree_map(gather, out)

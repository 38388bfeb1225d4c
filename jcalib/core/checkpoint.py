"""Checkpoints: a run's carry after every chunk, and its history appended one file per chunk.

Layout, for ``checkpoint="run.ckpt"``:

- ``run.ckpt``: the format header, the run's fingerprint, the round ``t`` reached, the number
  of history parts, and the carry (players' and recorder's states) — rewritten after every
  chunk, O(1) in the number of chunks;
- ``run.ckpt.part0``, ``run.ckpt.part1``, …: the per-round outputs of chunk ``k`` (only when
  the recorder keeps a history), each written once. The bytes written are linear in the
  number of chunks.

Every file is written to a unique temporary file in the target directory
(:func:`tempfile.mkstemp`) and moved into place with :func:`os.replace`, which is atomic: a
reader sees the old file or the new one, never a mixture, and writers of the same path (two
runs started with the same arguments) do not collide. A part is in place before the main file
counts it, so a run killed at any point resumes from the last complete chunk.

Typed PRNG keys in a state are saved as their ``jax.random.key_data`` with the key's
implementation, and restored with ``jax.random.wrap_key_data``.

The fingerprint hashes what determines the numbers: the modules' array fields (values, shapes,
dtypes), their static fields, the code of every callable they hold (the code objects' bytecode,
constants and names, nested code included, and the values of closure cells) and of their
classes' methods, the run key, ``T``, the batch layout, the carry's dtypes and the
``jax_enable_x64`` flag. It never hashes ``repr`` output that may hold a memory address, so a
new process resumes its own checkpoint; it does not hash the chunk length, which does not
change the numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import tempfile
import types
import zipfile
import zlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["CheckpointError", "Checkpoint", "fingerprint"]

FORMAT = "jcalib-checkpoint-2"
"""The header every checkpoint file carries (main file and history parts)."""


class CheckpointError(ValueError):
    """A checkpoint file that cannot be resumed from: corrupt, truncated, not a jcalib
    checkpoint, or holding a state of another structure. The message names the file."""


# ---- the fingerprint ------------------------------------------------------------------------------

# classes whose methods are the libraries', not the run's: hashed by name only
_LIBRARY_MODULES = ("builtins", "abc", "typing", "numpy", "jax", "jaxlib", "equinox", "functools", "collections")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _is_library(cls: type) -> bool:
    mod = getattr(cls, "__module__", "") or ""
    return mod.split(".")[0] in _LIBRARY_MODULES


def _functions_of(cls: type):
    """The functions a class defines (methods, properties, static/class methods), by name."""
    for name, attr in sorted(vars(cls).items()):
        if name.startswith("__") and name not in ("__call__", "__check_init__", "__post_init__"):
            continue
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if isinstance(attr, property):
            for part in (attr.fget, attr.fset):
                if part is not None:
                    yield name, part
        elif isinstance(attr, (types.FunctionType, functools.partial)):
            yield name, attr


class _Hasher:
    """Feeds a canonical, process-independent description of Python objects to sha256."""

    def __init__(self):
        self.h = hashlib.sha256()
        self._seen: set[int] = set()

    def tag(self, *parts) -> None:
        for p in parts:
            b = p if isinstance(p, bytes) else str(p).encode()
            self.h.update(len(b).to_bytes(8, "little") + b)

    def feed(self, obj: Any) -> None:  # noqa: C901 — one case per kind of object
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
            self.tag(type(obj).__name__, repr(obj))
        elif isinstance(obj, (np.dtype, jnp.dtype)) or (isinstance(obj, type) and issubclass(obj, np.generic)):
            self.tag("dtype", np.dtype(obj).str if not jax.dtypes.issubdtype(obj, jax.dtypes.prng_key) else str(obj))
        elif isinstance(obj, (jax.Array, np.ndarray, np.generic)):
            if jax.dtypes.issubdtype(obj.dtype, jax.dtypes.prng_key):
                self.tag("key", str(obj.dtype))
                obj = jax.random.key_data(obj)
            a = np.ascontiguousarray(np.asarray(obj))
            self.tag("array", a.shape, a.dtype.str, a.tobytes())
        elif isinstance(obj, types.CodeType):
            self.tag("code", obj.co_name, obj.co_code, obj.co_names, obj.co_varnames, obj.co_freevars)
            for c in obj.co_consts:
                self.feed(c)
        elif id(obj) in self._seen:
            self.tag("seen", type(obj).__qualname__)
        else:
            self._seen.add(id(obj))
            self._feed_object(obj)

    def _feed_object(self, obj: Any) -> None:
        if isinstance(obj, (tuple, list)):
            self.tag(type(obj).__qualname__, len(obj))
            for x in obj:
                self.feed(x)
        elif isinstance(obj, (frozenset, set)):
            # iteration order of a set of strings changes with hash randomisation
            subs = []
            for x in obj:
                sub = _Hasher()
                sub.feed(x)
                subs.append(sub.h.digest())
            self.tag(type(obj).__qualname__, *sorted(subs))
        elif isinstance(obj, dict):
            self.tag("dict", len(obj))
            for k in sorted(obj, key=repr):
                self.feed(k)
                self.feed(obj[k])
        elif isinstance(obj, types.FunctionType):
            self.tag("function", obj.__module__, obj.__qualname__)
            if (obj.__module__ or "").split(".")[0] in _LIBRARY_MODULES:
                return  # a library's function (jnp.round): its name says what it computes
            self.feed(obj.__code__)
            self.feed(obj.__defaults__)
            self.feed(obj.__kwdefaults__)
            for cell in obj.__closure__ or ():
                try:
                    self.feed(cell.cell_contents)
                except ValueError:  # an empty cell
                    self.tag("empty cell")
        elif isinstance(obj, types.MethodType):
            self.tag("method")
            self.feed(obj.__func__)
            self.feed(obj.__self__)
        elif isinstance(obj, functools.partial):
            self.tag("partial")
            self.feed(obj.func)
            self.feed(obj.args)
            self.feed(obj.keywords)
        elif isinstance(obj, types.ModuleType):
            self.tag("module", obj.__name__)
        elif isinstance(obj, type):
            self._feed_class(obj)
        elif callable(obj) and not hasattr(obj, "__dict__") and not dataclasses.is_dataclass(obj):
            # a builtin or C function (jnp.round, a ufunc): its name says what it computes
            self.tag("callable", getattr(obj, "__module__", ""), getattr(obj, "__qualname__", getattr(obj, "__name__", "")),
                     type(obj).__qualname__)
        else:
            self._feed_instance(obj)

    def _feed_class(self, cls: type) -> None:
        self.tag("class", cls.__module__, cls.__qualname__)
        if _is_library(cls):
            return
        for base in cls.__mro__:
            if base is object or _is_library(base):
                continue
            for name, fn in _functions_of(base):
                self.tag(base.__qualname__, name)
                self.feed(fn)

    def _feed_instance(self, obj: Any) -> None:
        self._feed_class(type(obj))
        if dataclasses.is_dataclass(obj):  # equinox modules
            for f in dataclasses.fields(obj):
                self.tag("field", f.name)
                self.feed(getattr(obj, f.name, None))
        elif hasattr(obj, "__dict__"):
            self.feed(dict(vars(obj)))
        else:
            # last resort for opaque objects: their repr, with memory addresses removed
            self.tag("repr", _ADDRESS.sub("0x", repr(obj)))


def _digest(*objs) -> str:
    h = _Hasher()
    for obj in objs:
        h.feed(obj)
    return h.h.hexdigest()


def fingerprint(forecaster, nature, recorder, keys, T: int, layout, carry_like) -> dict[str, str]:
    """Hashes of everything that determines a run's numbers, by component (not the chunk length).

    ``carry_like`` (the carry's shapes and dtypes) and the ``jax_enable_x64`` flag make a
    float32 checkpoint refuse to resume under x64 and vice versa. The components' names
    (forecaster, nature, recorder, key, T and batch, state, precision) say what differs.
    """
    carry_types = jax.tree_util.tree_map(lambda x: (tuple(x.shape), str(x.dtype)), carry_like)
    return {
        "forecaster": _digest(forecaster),
        "nature": _digest(nature),
        "recorder": _digest(recorder),
        "key": _digest(keys),
        "T and batch": _digest(T, layout),
        "state": _digest(jax.tree_util.tree_structure(carry_types).num_leaves, jax.tree_util.tree_leaves(carry_types)),
        "precision": _digest(bool(jax.config.jax_enable_x64)),
    }


# ---- files --------------------------------------------------------------------------------------


def _write_atomic(path: str, arrays: dict) -> None:
    """``np.savez`` to a unique temporary file next to ``path``, then an atomic ``os.replace``."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _to_host(leaf):
    """A leaf as a NumPy array and its key implementation ("" for a plain array)."""
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(leaf)), str(leaf.dtype)
    return np.asarray(leaf), ""


class Checkpoint:
    """One run's checkpoint at ``path``: the main file and its history parts.

    Args:
        path: the main file's path.
        fingerprint: the run's :func:`fingerprint`.
        carry_like: the carry (arrays or shape structs) whose structure a saved carry must have.
        outs_like: one chunk's per-round outputs (shape structs), or ``None`` for a run that
            keeps no history.
        round_axis: the round axis of the outputs (after the batch axes).
    """

    def __init__(self, path, fingerprint: dict[str, str], carry_like, outs_like, round_axis: int):
        self.path = os.fspath(path)
        self.fingerprint = fingerprint
        self.carry_like = carry_like
        self.outs_like = outs_like
        self.round_axis = round_axis
        self.n_parts = 0

    def part_path(self, k: int) -> str:
        return f"{self.path}.part{k}"

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def _fail(self, file: str, what: str) -> CheckpointError:
        return CheckpointError(
            f"checkpoint {file} {what}; delete {self.path} and its {self.path}.part* files to start the run "
            "again, or pass another checkpoint path"
        )

    # -- writing

    def save(self, carry, t: int, outs) -> None:
        """Record the carry after round ``t`` and (with a history) this chunk's outputs."""
        if outs is not None:
            leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(outs)]
            _write_atomic(self.part_path(self.n_parts), {
                "format": np.asarray(FORMAT), "fingerprint": np.asarray(self._combined()),
                "index": np.asarray(self.n_parts), **{f"out{i}": x for i, x in enumerate(leaves)},
            })
            self.n_parts += 1
        arrays = {"format": np.asarray(FORMAT), "t": np.asarray(t), "n_parts": np.asarray(self.n_parts)}
        arrays.update({f"fp:{k}": np.asarray(v) for k, v in self.fingerprint.items()})
        for i, leaf in enumerate(jax.tree_util.tree_leaves(carry)):
            arrays[f"leaf{i}"], arrays[f"impl{i}"] = (np.asarray(v) for v in _to_host(leaf))
        _write_atomic(self.path, arrays)

    def _combined(self) -> str:
        return _digest(sorted(self.fingerprint.items()))

    # -- reading

    def _read(self, path: str, what: str) -> dict:
        """Every array of one file, read eagerly; a file that cannot be read is a CheckpointError."""
        try:
            with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:
                contents = {k: np.asarray(data[k]) for k in data.files}
        except FileNotFoundError as e:
            raise self._fail(path, f"is missing ({self.path} counts it)") from e
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error) as e:
            raise self._fail(path, f"is truncated or corrupt ({type(e).__name__}: {e})") from e
        if str(contents.get("format", "")) != FORMAT:
            raise self._fail(path, f"is not a jcalib {what} (no '{FORMAT}' header)")
        return contents

    def load(self):
        """The saved carry, the round reached and the history parts (host arrays) so far."""
        data = self._read(self.path, "checkpoint")
        saved = {k[3:]: str(v) for k, v in data.items() if k.startswith("fp:")}
        differ = sorted(k for k in set(saved) | set(self.fingerprint) if saved.get(k) != self.fingerprint.get(k))
        if differ:
            raise ValueError(
                f"checkpoint {self.path} was written by a different run ({', '.join(differ)} differ); "
                f"delete it and its {self.path}.part* files, or pass another path"
            )
        for name in ("t", "n_parts"):
            if name not in data or data[name].shape != () or data[name].dtype.kind != "i":
                raise self._fail(self.path, f"has no valid '{name}' entry")
        carry = self._read_carry(data)
        t, n_parts = int(data["t"]), int(data["n_parts"])
        if n_parts and self.outs_like is None:
            raise self._fail(self.path, "holds a history, but this run keeps none")
        pieces = [self._read_part(k) for k in range(n_parts)]
        self.n_parts = n_parts
        return carry, t, pieces

    def _read_carry(self, data: dict):
        leaves, treedef = jax.tree_util.tree_flatten(self.carry_like)
        n_saved = sum(1 for k in data if k.startswith("leaf"))
        if n_saved != len(leaves) or any(f"impl{i}" not in data for i in range(n_saved)):
            raise self._fail(self.path, f"holds a state of {n_saved} arrays where this run's has {len(leaves)}")
        new = []
        for i, like in enumerate(leaves):
            a, impl = data[f"leaf{i}"], str(data[f"impl{i}"])
            if _is_key(like):
                proto = jnp.zeros(like.shape, like.dtype)
                want, want_impl = _to_host(proto)
                ok = impl == want_impl and a.shape == want.shape and a.dtype == want.dtype
                value = jax.random.wrap_key_data(a, impl=jax.random.key_impl(proto)) if ok else None
            else:
                ok = not impl and a.shape == tuple(like.shape) and a.dtype == np.dtype(like.dtype)
                value = jnp.asarray(a)
            if not ok:
                raise self._fail(self.path, f"holds state array {i} as {impl or a.dtype} {a.shape}, "
                                            f"where this run has {like.dtype} {tuple(like.shape)}")
            new.append(value)
        return jax.tree_util.tree_unflatten(treedef, new)

    def _read_part(self, k: int):
        path = self.part_path(k)
        data = self._read(path, "checkpoint part")
        if str(data.get("fingerprint", "")) != self._combined() or int(data.get("index", -1)) != k:
            raise self._fail(path, f"is not part {k} of this run's checkpoint")
        leaves, treedef = jax.tree_util.tree_flatten(self.outs_like)
        if sum(1 for f in data if f.startswith("out")) != len(leaves):
            raise self._fail(path, "holds outputs of another structure")
        ax = self.round_axis
        for i, like in enumerate(leaves):
            a = data[f"out{i}"]
            same = a.dtype == np.dtype(like.dtype) and a.ndim == len(like.shape) and all(
                a.shape[d] == like.shape[d] for d in range(a.ndim) if d != ax)
            if not same:
                raise self._fail(path, f"holds output {i} as {a.dtype} {a.shape}, where this run has "
                                       f"{like.dtype} {tuple(like.shape)} (any length on axis {ax})")
        return jax.tree_util.tree_unflatten(treedef, [data[f"out{i}"] for i in range(len(leaves))])


def _is_key(like) -> bool:
    return jax.dtypes.issubdtype(like.dtype, jax.dtypes.prng_key)

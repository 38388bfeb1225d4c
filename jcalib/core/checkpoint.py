"""Checkpoints: a run's carry after every chunk, and its history appended one file per chunk.

Layout, for ``checkpoint="run.ckpt"``:

- ``run.ckpt``: the format header, the run's fingerprint, the round ``t`` reached, the number
  of history parts, the carry (players' and recorder's states), a digest of the carry, a
  running digest of the history parts, and a digest of all of these together — rewritten
  after every chunk, O(1) in the number of chunks;
- ``run.ckpt.part0``, ``run.ckpt.part1``, …: the per-round outputs of chunk ``k`` (only when
  the recorder keeps a history) and their digest, each written once. The bytes written are
  linear in the number of chunks.

Every file is written to a unique temporary file in the target directory
(:func:`tempfile.mkstemp`, named ``<file>.tmp-<pid>@<host>-<random>.tmp``) and moved into
place with :func:`os.replace`, which is atomic: a reader sees the old file or the new one,
never a mixture, and writers of the same path (two runs started with the same arguments) do
not collide. A part is in place before the main file counts it, so a run killed at any point
resumes from the last complete chunk. The temporary files a killed run leaves behind are
removed when a run with the same checkpoint path starts: those of a process of this host that
no longer runs, and any not modified for :data:`STALE_SECONDS`.

Typed PRNG keys in a state are saved as their ``jax.random.key_data`` with the key's
implementation, and restored with ``jax.random.wrap_key_data``.

**The fingerprint** hashes what determines the numbers, by component, so a refusal says what
differs:

- ``program``: the traced program of the first round of the whole batch (the players' and
  recorder's ``init`` and one round: its jaxpr's text, with memory addresses and directories
  removed, and the values of the constants it captures). It sees everything the code computes
  with, wherever it lives: a helper function that a user's ``cell_of`` calls, a module-level
  global it reads, an array it closes over, a static setting, the library's version;
- ``forecaster``, ``nature``, ``recorder``: the modules' array fields (values, shapes,
  dtypes), their static fields, and the code of the callables they hold and of their classes'
  methods (bytecode, constants, closure values);
- ``key``: the run key's implementation, shape and data;
- ``T and batch``: ``T`` and the batch layout (forecasters × natures × seeds);
- ``state``: the carry's dtypes and shapes;
- ``precision``: ``jax_enable_x64``;
- ``platform``: the platform (``cpu``, ``gpu``, ``tpu``) and the XLA compiler options, which
  change floats in their last bits.

It never hashes memory addresses or temporary folders' paths, so a new process resumes its own
checkpoint; it does not hash the chunk length, which does not change the numbers (a run may
resume with another ``chunk``).

**A rewound or edited checkpoint is refused**: on resume, the round count ``t`` must equal the
number of rounds the history parts hold, each part must match the digest written with it and
the parts together the running digest of the main file, the carry must match its digest, and
``t``, the part count and these digests must match the digest of the whole record. Every
refusal is a :class:`CheckpointError` that names the file, says what is wrong and what to do
(delete the files, or pass a new path, to start afresh).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import socket
import tempfile
import time
import types
import zipfile
import zlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jax_core

__all__ = [
    "CheckpointError", "Checkpoint", "fingerprint", "program_constants", "program_text", "remove_stale_temporaries",
    "STALE_SECONDS",
]

FORMAT = "jcalib-checkpoint-3"
"""The header every checkpoint file carries (main file and history parts)."""

STALE_SECONDS = 3600.0
"""A temporary file not modified for this long is left by a run that no longer writes it."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from: written by a different run, rewound or edited,
    empty, truncated or damaged, not a jcalib checkpoint, missing a history part, or holding a
    state of another structure. The message names the file, says what is wrong, and says to
    delete the files (or pass a new path) to start afresh."""


# ---- the fingerprint ------------------------------------------------------------------------------

# classes whose methods are the libraries', not the run's: hashed by name only
_LIBRARY_MODULES = ("builtins", "abc", "typing", "numpy", "jax", "jaxlib", "equinox", "functools", "collections")
_ADDRESS = re.compile(r"0x[0-9a-fA-FX]+")
# the directories of an absolute path (a temporary folder's name changes from run to run)
_POSIX_DIRS = re.compile(r"(?<![\w./])/(?:[^\s/'\"<>(),\[\]{}:=]+/)+")
_WINDOWS_DIRS = re.compile(r"(?<![\w.])[A-Za-z]:\\(?:[^\s\\'\"<>(),\[\]{}:=]+\\)+")


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


def program_text(program) -> str:
    """A traced program's jaxpr as text that is the same in every process: memory addresses
    and the directories of file paths removed (the jaxpr names functions, never their files,
    but a callback's or a static field's ``repr`` might)."""
    text = str(program)
    text = _ADDRESS.sub("0x", text)
    text = _POSIX_DIRS.sub("", text)
    return _WINDOWS_DIRS.sub("", text)


def program_constants(program) -> list:
    """The values of the constants a traced program captures (arrays a function closes over or
    reads from a global), its sub-programs' (a ``jit``'s, a ``cond``'s branches) included, in
    the order the program's text lists them."""
    found, seen = [], set()

    def walk(obj):
        if isinstance(obj, jax_core.ClosedJaxpr):
            found.extend(obj.consts)
            walk(obj.jaxpr)
        elif isinstance(obj, jax_core.Jaxpr) and id(obj) not in seen:
            seen.add(id(obj))
            for eqn in obj.eqns:
                for value in eqn.params.values():
                    walk(value)
        elif isinstance(obj, (tuple, list)):
            for value in obj:
                walk(value)

    walk(program)
    return found


def _types(tree) -> list[str]:
    """Each leaf's dtype and shape, e.g. ``float32[6]``, ``key<fry>[]``."""
    return [f"{x.dtype}{list(x.shape)}".replace(" ", "") for x in jax.tree_util.tree_leaves(tree)]


def fingerprint(forecaster, nature, recorder, keys, T: int, layout, carry_like, program,
                compiler_options: tuple = ()) -> dict[str, tuple[str, str]]:
    """What determines a run's numbers, by component: ``{name: (digest, shown)}``.

    Args:
        forecaster, nature, recorder: the run's modules.
        keys: the run key (or a sweep's seed keys).
        T: the number of rounds.
        layout: the batch layout.
        carry_like: the carry (arrays or shape structs).
        program: the traced program of the run's first round (a ``ClosedJaxpr``); its text
            (:func:`program_text`) and the values of the constants it captures
            (:func:`program_constants`) are hashed.
        compiler_options: the XLA compiler options (a sorted tuple of items).

    Returns:
        Per component (``forecaster``, ``nature``, ``recorder``, ``key``, ``T and batch``,
        ``state``, ``precision``, ``platform``, ``program``), a sha256 hex digest and a short readable
        description that the refusal of another run's checkpoint shows when it differs. The
        chunk length is not part of it: it does not change the numbers.
    """
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        key_shown = f"{keys.dtype} keys of shape {tuple(keys.shape)}"
    else:
        key_shown = f"raw {keys.dtype} keys of shape {tuple(keys.shape)}"
    carry_types = _types(carry_like)
    x64, platform = bool(jax.config.jax_enable_x64), (jax.default_backend(), tuple(compiler_options))
    return {
        "forecaster": (_digest(forecaster), type(forecaster).__qualname__),
        "nature": (_digest(nature), type(nature).__qualname__),
        "recorder": (_digest(recorder), type(recorder).__qualname__),
        "key": (_digest(keys), key_shown),
        "T and batch": (_digest(T, layout), f"T={T}, batch layout {layout}"),
        "state": (_digest(carry_types), ", ".join(carry_types)),
        "precision": (_digest(x64), f"jax_enable_x64={x64}"),
        "platform": (_digest(platform), f"{platform[0]}, compiler options {dict(platform[1])}"),
        "program": (_digest(program_text(program), program_constants(program)), ""),
    }


_EXPLAINED = {
    "program": "the traced program of a round differs: the code the forecaster, nature or recorder run, a helper "
               "function they call, a module-level global or a captured constant they read, a static setting, "
               "or the version of jcalib or jax",
    "forecaster": "the forecaster differs (its class, settings, array values or code)",
    "nature": "the nature differs (its class, settings, array values or code)",
    "recorder": "the recorder differs",
    "key": "the key differs",
    "T and batch": "T or the batch layout differ",
    "state": "the state's dtypes or shapes differ",
    "precision": "the precision differs",
    "platform": "the platform or the XLA compiler options differ",
}


def _short(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _difference(name: str, saved: str, mine: str) -> str:
    """One differing component, explained, with what the file holds and what this run has."""
    what = _EXPLAINED.get(name, f"{name} differs")
    if name == "program" or saved == mine or not saved:
        return what
    if name == "state":
        a, b = saved.split(", "), mine.split(", ")
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"{what}: state array {i} is {x} in the file and {y} in this run"
        return f"{what}: the file's state has {len(a)} arrays, this run's {len(b)}"
    return f"{what}: {_short(saved)} in the file, {_short(mine)} in this run"


# ---- files --------------------------------------------------------------------------------------


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "host"


_TMP = re.compile(r"\.tmp-(?P<pid>\d+)@(?P<host>.*)-[a-z0-9_]+\.tmp$")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (True when it cannot be told)."""
    if pid == os.getpid() or os.name == "nt":  # on Windows os.kill would end the process
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's process
        return True
    return True


def remove_stale_temporaries(path) -> list[str]:
    """Remove the temporary files that killed runs left next to checkpoint ``path``.

    A temporary file of ``path`` or of its parts (``<path>.….tmp``) is stale when the process
    of this host that wrote it no longer runs, or when nobody modified it for
    :data:`STALE_SECONDS` (a file of another host, or of an older jcalib that did not name
    its writer). Files of running writers (another run of the same path) are kept.

    Returns:
        The removed files' paths.
    """
    directory = os.path.dirname(os.path.abspath(path))
    prefix = os.path.basename(os.fspath(path)) + "."
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed, host, now = [], _host(), time.time()
    for name in sorted(names):
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        full = os.path.join(directory, name)
        match = _TMP.search(name)
        try:
            stale = (now - os.path.getmtime(full) > STALE_SECONDS
                     or (match is not None and match["host"] == host and not _alive(int(match["pid"]))))
            if stale:
                os.remove(full)
                removed.append(full)
        except OSError:  # removed meanwhile by another run, or not ours to remove
            continue
    return removed


def _write_atomic(path: str, arrays: dict) -> None:
    """``np.savez`` to a unique temporary file next to ``path`` (named after this process and
    host, so that the next start can tell a killed writer's file), then an atomic
    ``os.replace``."""
    directory = os.path.dirname(os.path.abspath(path))
    prefix = f"{os.path.basename(path)}.tmp-{os.getpid()}@{_host()}-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
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


def _arrays_digest(arrays, impls=None) -> str:
    """sha256 of host arrays: each one's position, key implementation, dtype, shape and bytes."""
    h = hashlib.sha256()
    for i, a in enumerate(arrays):
        a = np.ascontiguousarray(a)
        impl = impls[i] if impls is not None else ""
        h.update(f"{i}|{impl}|{a.dtype.str}|{a.shape}|".encode())
        h.update(memoryview(a.reshape(-1).view(np.uint8)) if a.size else b"")
    return h.hexdigest()


def _chain(previous: str, part: str) -> str:
    """The running digest of the history parts after one more part."""
    return hashlib.sha256(f"{previous}|{part}".encode()).hexdigest()


_NO_HISTORY = hashlib.sha256(b"jcalib checkpoint history").hexdigest()


class Checkpoint:
    """One run's checkpoint at ``path``: the main file and its history parts.

    Creating it removes the stale temporary files that a killed run left next to ``path``
    (:func:`remove_stale_temporaries`).

    Args:
        path: the main file's path.
        fingerprint: the run's :func:`fingerprint`.
        carry_like: the carry (arrays or shape structs) whose structure a saved carry must have.
        outs_like: one chunk's per-round outputs (shape structs), or ``None`` for a run that
            keeps no history.
        round_axis: the round axis of the outputs (after the batch axes).
    """

    def __init__(self, path, fingerprint: dict[str, tuple[str, str]], carry_like, outs_like, round_axis: int):
        self.path = os.fspath(path)
        self.fingerprint = fingerprint
        self.carry_like = carry_like
        self.outs_like = outs_like
        self.round_axis = round_axis
        self.n_parts = 0
        self.history = _NO_HISTORY
        self.removed = remove_stale_temporaries(self.path)

    def part_path(self, k: int) -> str:
        return f"{self.path}.part{k}"

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def _fail(self, file: str, what: str) -> CheckpointError:
        return CheckpointError(
            f"checkpoint {file} {what}. To start the run afresh, delete {self.path} and its {self.path}.part* "
            "files, or pass a new checkpoint path"
        )

    def _combined(self) -> str:
        return _digest(sorted((k, d) for k, (d, _) in self.fingerprint.items()))

    def _record(self, t: int, n_parts: int, history: str, state: str) -> str:
        """The digest of the main file's record: what it says about the run and where it stands."""
        return hashlib.sha256(f"{FORMAT}|{self._combined()}|{t}|{n_parts}|{history}|{state}".encode()).hexdigest()

    # -- writing

    def save(self, carry, t: int, outs) -> None:
        """Record the carry after round ``t`` and (with a history) this chunk's outputs."""
        if outs is not None:
            leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(outs)]
            digest = _arrays_digest(leaves)
            _write_atomic(self.part_path(self.n_parts), {
                "format": np.asarray(FORMAT), "fingerprint": np.asarray(self._combined()),
                "index": np.asarray(self.n_parts), "digest": np.asarray(digest),
                **{f"out{i}": x for i, x in enumerate(leaves)},
            })
            self.n_parts += 1
            self.history = _chain(self.history, digest)
        host = [_to_host(leaf) for leaf in jax.tree_util.tree_leaves(carry)]
        state = _arrays_digest([a for a, _ in host], [impl for _, impl in host])
        arrays = {"format": np.asarray(FORMAT), "t": np.asarray(t), "n_parts": np.asarray(self.n_parts),
                  "history": np.asarray(self.history), "state": np.asarray(state),
                  "digest": np.asarray(self._record(t, self.n_parts, self.history, state))}
        for k, (digest, shown) in self.fingerprint.items():
            arrays[f"fp:{k}"], arrays[f"shown:{k}"] = np.asarray(digest), np.asarray(shown)
        for i, (a, impl) in enumerate(host):
            arrays[f"leaf{i}"], arrays[f"impl{i}"] = a, np.asarray(impl)
        _write_atomic(self.path, arrays)

    # -- reading

    def _read(self, path: str, what: str, missing: str) -> dict:
        """Every array of one file, read eagerly; a file that cannot be read is a CheckpointError."""
        try:
            with open(path, "rb") as fh:
                head = fh.read(4)
                fh.seek(0)
                contents = None
                if head == b"PK\x03\x04":  # a zip archive, as np.savez writes
                    with np.load(fh, allow_pickle=False) as data:
                        contents = {k: np.asarray(data[k]) for k in data.files}
        except FileNotFoundError as e:
            raise self._fail(path, f"is missing ({missing})") from e
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError, zlib.error) as e:
            raise self._fail(path, f"is truncated or damaged and cannot be read ({type(e).__name__}: "
                                   f"{_short(str(e), 100)})") from e
        if not head:
            raise self._fail(path, "is empty (0 bytes): the run was stopped while creating it, or the disk was full")
        if contents is None:
            raise self._fail(path, f"is not a jcalib {what}: it is not a NumPy .npz archive (it starts with {head!r})")
        found = str(contents.get("format", ""))
        if found.startswith("jcalib-checkpoint-") and found != FORMAT:
            raise self._fail(path, f"was written by another version of jcalib (format '{found}'; this version "
                                   f"reads '{FORMAT}')")
        if found != FORMAT:
            raise self._fail(path, f"is not a jcalib {what}: it is an .npz archive without the '{FORMAT}' header")
        return contents

    def _refuse_other_run(self, data: dict) -> None:
        saved = {k[3:]: str(v) for k, v in data.items() if k.startswith("fp:")}
        shown = {k[6:]: str(v) for k, v in data.items() if k.startswith("shown:")}
        mine = {k: d for k, (d, _) in self.fingerprint.items()}
        order = list(self.fingerprint) + sorted(set(saved) - set(mine))
        differ = [k for k in order if saved.get(k) != mine.get(k)]
        if differ:
            details = "; ".join(_difference(k, shown.get(k, ""), self.fingerprint.get(k, ("", ""))[1]) for k in differ)
            raise CheckpointError(
                f"checkpoint {self.path} was written by a different run ({', '.join(differ)} differ): {details}. "
                f"To start the run afresh, delete {self.path} and its {self.path}.part* files, or pass a new "
                "checkpoint path"
            )

    def _entry(self, data: dict, name: str, kind: str):
        a = data.get(name)
        if a is None or a.shape != () or a.dtype.kind != kind:
            raise self._fail(self.path, f"has no valid '{name}' entry")
        return a.item() if kind == "i" else str(a)

    def load(self):
        """The saved carry, the round reached and the history parts (host arrays) so far.

        Refuses (:class:`CheckpointError`) another run's checkpoint, a damaged file, and one
        whose round count, state or history parts were changed after they were written.
        """
        data = self._read(self.path, "checkpoint", "it was removed while the run started")
        self._refuse_other_run(data)
        t, n_parts = self._entry(data, "t", "i"), self._entry(data, "n_parts", "i")
        history, state, record = (self._entry(data, k, "U") for k in ("history", "state", "digest"))
        if t < 1 or n_parts < 0:
            raise self._fail(self.path, f"holds round count t = {t} and {n_parts} history parts")
        if n_parts and self.outs_like is None:
            raise self._fail(self.path, "holds a history, but this run keeps none")
        carry, host = self._read_carry(data)
        pieces, digests = zip(*(self._read_part(k, n_parts) for k in range(n_parts))) if n_parts else ((), ())
        if self.outs_like is not None:
            rounds = sum(jax.tree_util.tree_leaves(p)[0].shape[self.round_axis] for p in pieces)
            if rounds != t:
                raise self._fail(self.path, f"counts t = {t} rounds, but its {n_parts} history parts hold {rounds} "
                                            "rounds: it was rewound or edited, or a part was replaced")
        if record != self._record(t, n_parts, history, state):
            raise self._fail(self.path, f"was edited after it was written: its round count (t = {t}), part count "
                                        f"or digests do not match the digest of its record")
        if _arrays_digest([a for a, _ in host], [i for _, i in host]) != state:
            raise self._fail(self.path, "holds a state (the players' and recorder's arrays) that differs from the "
                                        "one it was written with: it was edited")
        chained = _NO_HISTORY
        for d in digests:
            chained = _chain(chained, d)
        if chained != history:
            raise self._fail(self.path, f"does not match its history parts {self.path}.part0…part{n_parts - 1}: a "
                                        "part was replaced by one of another stage of the run, or edited")
        self.n_parts, self.history = n_parts, history
        return carry, t, list(pieces)

    def _read_carry(self, data: dict):
        leaves, treedef = jax.tree_util.tree_flatten(self.carry_like)
        n_saved = sum(1 for k in data if k.startswith("leaf"))
        if n_saved != len(leaves) or any(f"impl{i}" not in data for i in range(n_saved)):
            raise self._fail(self.path, f"holds a state of {n_saved} arrays where this run's has {len(leaves)}")
        new, host = [], []
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
            host.append((a, impl))
        return jax.tree_util.tree_unflatten(treedef, new), host

    def _read_part(self, k: int, n_parts: int):
        """History part ``k`` (of ``n_parts``) and its digest."""
        path = self.part_path(k)
        data = self._read(path, "checkpoint part", f"{self.path} counts {n_parts} history parts, .part0 to "
                                                   f".part{n_parts - 1}")
        if str(data.get("fingerprint", "")) != self._combined() or data.get("index", np.asarray(-1)).item() != k:
            raise self._fail(path, f"is not part {k} of this run's checkpoint (it belongs to another run, or is "
                                   "another part renamed)")
        leaves, treedef = jax.tree_util.tree_flatten(self.outs_like)
        if sum(1 for f in data if f.startswith("out")) != len(leaves):
            raise self._fail(path, "holds outputs of another structure")
        ax = self.round_axis
        arrays = [data[f"out{i}"] for i in range(len(leaves))]
        for i, (a, like) in enumerate(zip(arrays, leaves)):
            same = a.dtype == np.dtype(like.dtype) and a.ndim == len(like.shape) and all(
                a.shape[d] == like.shape[d] for d in range(a.ndim) if d != ax)
            if not same:
                raise self._fail(path, f"holds output {i} as {a.dtype} {a.shape}, where this run has "
                                       f"{like.dtype} {tuple(like.shape)} (any length on axis {ax})")
        if len({a.shape[ax] for a in arrays}) > 1:
            raise self._fail(path, f"holds outputs of different lengths {sorted({a.shape[ax] for a in arrays})} "
                                   f"on the round axis {ax}")
        digest = _arrays_digest(arrays)
        if str(data.get("digest", "")) != digest:
            raise self._fail(path, "holds outputs that differ from the ones it was written with: it was edited")
        return jax.tree_util.tree_unflatten(treedef, arrays), digest


def _is_key(like) -> bool:
    return jax.dtypes.issubdtype(like.dtype, jax.dtypes.prng_key)

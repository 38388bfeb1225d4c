"""JAX's persistent compilation cache for jcalib's command line, experiments and benchmarks, and
the one-line notice a long first compilation shows.

A program XLA has compiled once is written to a folder and read back by every later process
that compiles the same program (same code, shapes, dtypes, settings, JAX version and device), so
a second ``jcalib demo`` or a second run of an experiment skips XLA's compilation. The library
itself never turns the cache on (importing it writes nothing to a user's home); the command line
and the scripts in ``experiments/`` and ``benchmarks/`` call :func:`enable_compilation_cache`
first. The folder, in order of precedence:

1. ``JAX_COMPILATION_CACHE_DIR`` when the user sets it (JAX's own variable);
2. ``$XDG_CACHE_HOME/jcalib/xla``;
3. ``~/.cache/jcalib/xla``.

``JCALIB_COMPILATION_CACHE=0`` (or ``off``, ``false``, ``no``) turns it off, as does
``jcalib demo --no-cache``. Every program is cached however small or quick to compile (JAX's
defaults skip programs that compile in under a second, which are most of jcalib's).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import jax
import jax.monitoring

__all__ = ["CACHE_ENV", "cache_disabled", "default_cache_dir", "enable_compilation_cache", "install_notice"]

CACHE_ENV = "JCALIB_COMPILATION_CACHE"
"""Set to ``0``, ``off``, ``false`` or ``no`` to turn the persistent cache off."""

_OFF = {"0", "off", "false", "no"}

NOTICE_AFTER_S = 5.0
"""A compilation (tracing, lowering or XLA's backend compile) running longer than this shows the
one-line notice."""


def cache_disabled() -> bool:
    """Whether ``JCALIB_COMPILATION_CACHE`` turns the persistent cache off."""
    return os.environ.get(CACHE_ENV, "").strip().lower() in _OFF


def default_cache_dir() -> Path:
    """The cache folder: ``JAX_COMPILATION_CACHE_DIR``, else ``$XDG_CACHE_HOME/jcalib/xla``,
    else ``~/.cache/jcalib/xla``."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jcalib" / "xla"


def enable_compilation_cache(path: str | os.PathLike | None = None, *, enabled: bool = True,
                             notice: bool = True) -> Path | None:
    """Turn on JAX's persistent compilation cache for this process, for programs of any size, and
    the notice for long compilations (:func:`install_notice`).

    Args:
        path: the folder (default: :func:`default_cache_dir`).
        enabled: ``False`` (e.g. a ``--no-cache`` flag) leaves the cache off.
        notice: install the notice (also when the cache stays off).

    Returns:
        The folder used, or ``None`` when the cache stays off (``enabled=False`` or
        ``JCALIB_COMPILATION_CACHE=0``).
    """
    if notice:
        install_notice()
    if not enabled or cache_disabled():
        return None
    folder = Path(path).expanduser() if path is not None else default_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # a read-only home: run without the cache rather than fail
        print(f"jcalib: compilation cache off ({folder}: {err.strerror})", file=sys.stderr)
        return None
    # cache every program: JAX's defaults skip those compiling in under 1 s, most of jcalib's
    settings = {"jax_compilation_cache_dir": str(folder), "jax_persistent_cache_min_compile_time_secs": 0.0,
                "jax_persistent_cache_min_entry_size_bytes": -1}
    for name, value in settings.items():
        jax.config.update(name, value)
        # worker processes (an experiment's process pool) read JAX's settings from the environment
        os.environ[name.upper()] = str(value)
    global _cache_on
    _cache_on = True
    return folder


_cache_on = False

# ---- the notice ---------------------------------------------------------------------------------

_SPANS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
          "/jax/core/compile/backend_compile_duration")


class _Notice:
    """Watches JAX's compile spans (their start is a scalar event, their end a duration event)
    and prints one line to stderr, once per process, when one has run for ``NOTICE_AFTER_S``."""

    def __init__(self):
        self.lock = threading.Lock()
        self.open: dict[tuple, tuple[float, str]] = {}  # (thread, event, name) -> (start, name)
        self.done = False
        self.thread: threading.Thread | None = None

    def start(self, event, value, **kw):
        if self.done or event not in _SPANS:
            return
        with self.lock:
            self.open[(threading.get_ident(), event, kw.get("fun_name", ""))] = (time.monotonic(), kw.get("fun_name", ""))
            if self.thread is None:
                self.thread = threading.Thread(target=self.watch, name="jcalib-compile-notice", daemon=True)
                self.thread.start()

    def end(self, event, duration, **kw):
        if self.done or event not in _SPANS:
            return
        with self.lock:
            self.open.pop((threading.get_ident(), event, kw.get("fun_name", "")), None)

    def watch(self):
        while not self.done:
            time.sleep(0.5)
            now = time.monotonic()
            with self.lock:
                late = [name for start, name in self.open.values() if now - start > NOTICE_AFTER_S]
            if late:
                self.done = True
                what = _readable(late[0])
                later = ("cached for later runs" if _cache_on else
                         "turn on the persistent compilation cache to skip it in later runs")
                print(f"jcalib: compiling {what} (first call; {later})", file=sys.stderr, flush=True)


def _readable(fun_name: str) -> str:
    name = fun_name.removeprefix("jit_").removeprefix("_").strip("_") or "a program"
    return name.replace("__", "_")


_notice = _Notice()


def install_notice() -> None:
    """Register the notice's listeners with :mod:`jax.monitoring` (idempotent; it writes nothing
    and costs a dictionary update per compilation)."""
    global _installed
    if _installed or os.environ.get("JCALIB_QUIET", "").strip().lower() not in ("", *_OFF):
        return
    _installed = True
    jax.monitoring.register_scalar_listener(_notice.start)
    jax.monitoring.register_event_duration_secs_listener(_notice.end)


_installed = False

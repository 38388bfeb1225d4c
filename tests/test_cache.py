"""The persistent compilation cache of the command line, experiments and benchmarks: its folder,
its switches (``JCALIB_COMPILATION_CACHE``, ``--no-cache``), and a second process reading back
what a first one compiled. Each case runs in a fresh process, so this process's JAX settings
stay as the suite set them."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from jcalib import _cache

PROBE = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp
    hits = []
    jax.monitoring.register_event_listener(lambda e, **k: hits.append(e) if e.endswith("cache_hits") else None)
    from jcalib._cache import enable_compilation_cache
    folder = enable_compilation_cache()
    jax.jit(lambda x: jnp.sin(x) * 2 + 1)(jnp.arange(5.0)).block_until_ready()
    print(json.dumps({"folder": None if folder is None else str(folder),
                      "config": jax.config.jax_compilation_cache_dir, "hits": len(hits)}))
""")


def _probe(tmp_path, env_extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_COMPILATION_CACHE_DIR", "XDG_CACHE_HOME", _cache.CACHE_ENV)}
    env.update(HOME=str(tmp_path / "home"), JAX_PLATFORMS="cpu", **env_extra)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_default_folder_is_per_user(tmp_path, monkeypatch):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert _cache.default_cache_dir() == tmp_path / ".cache" / "jcalib" / "xla"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache.default_cache_dir() == tmp_path / "xdg" / "jcalib" / "xla"
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "mine"))
    assert _cache.default_cache_dir() == tmp_path / "mine"


def test_jax_variable_wins_and_a_second_process_reads_back(tmp_path):
    folder = tmp_path / "mine"
    first = _probe(tmp_path, {"JAX_COMPILATION_CACHE_DIR": str(folder), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert first["folder"] == str(folder) == first["config"] and first["hits"] == 0
    assert os.listdir(folder)  # even this tiny program was written
    second = _probe(tmp_path, {"JAX_COMPILATION_CACHE_DIR": str(folder)})
    assert second["hits"] >= 1


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_environment_switch_turns_it_off(tmp_path, monkeypatch, value):
    monkeypatch.setenv(_cache.CACHE_ENV, value)
    assert _cache.cache_disabled()
    assert _cache.enable_compilation_cache(tmp_path / "c") is None and not (tmp_path / "c").exists()


def test_enabled_false_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv(_cache.CACHE_ENV, "1")
    assert not _cache.cache_disabled()
    assert _cache.enable_compilation_cache(tmp_path / "c", enabled=False) is None and not (tmp_path / "c").exists()


def test_cli_flag(monkeypatch):
    seen = []
    monkeypatch.setattr("jcalib.cli.enable_compilation_cache", lambda enabled: seen.append(enabled))
    monkeypatch.setattr("jcalib.cli._demo", lambda args: 0)
    from jcalib import cli

    assert cli.main(["demo", "--no-cache"]) == 0 and cli.main(["demo"]) == 0
    assert seen == [False, True]


def test_library_import_turns_nothing_on(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env.update(HOME=str(tmp_path), JAX_PLATFORMS="cpu")
    code = "import jax, jcalib, jcalib.metrics, jcalib.core; print(jax.config.jax_compilation_cache_dir)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None" and not (tmp_path / ".cache").exists()


def test_notice_once_for_a_long_compile(tmp_path, monkeypatch):
    """A compilation past the threshold prints one line naming it; a second does not."""
    code = textwrap.dedent("""
        import time, jax, jax.numpy as jnp
        from jcalib import _cache
        _cache.NOTICE_AFTER_S = 0.2
        _cache.install_notice()
        def slow(x):
            time.sleep(1.0)  # a trace that takes a while
            return x + 1
        jax.jit(slow)(jnp.ones(3)).block_until_ready()
        jax.jit(lambda x: slow(x) * 2)(jnp.ones(3)).block_until_ready()
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("JCALIB_QUIET", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("jcalib:")]
    assert len(lines) == 1 and "compiling slow (first call" in lines[0], out.stderr

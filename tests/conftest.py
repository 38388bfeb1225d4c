"""Test-wide JAX settings (DESIGN.md, "Tests").

Strict dtype promotion and rank promotion that raises catch silent upcasts and accidental
broadcasting; pytest turns warnings into errors (pyproject.toml).  Tests of exactness run
in float64 through the ``x64`` fixture; everything else runs in JAX's default float32.
"""

import gc
import os
from pathlib import Path

import jax
import pytest

from jcalib._cache import enable_compilation_cache

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

# One persistent compilation cache for the suite, in the build tree (ignored by git): `make
# test`'s two workers read back what the other compiled, and a second run of the suite reads
# back every program. JCALIB_COMPILATION_CACHE=0 runs without it; JAX_COMPILATION_CACHE_DIR
# names another folder. The command line's tests find the folder in the environment.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(__file__).resolve().parent.parent / "build" / "jax-cache"))
enable_compilation_cache(notice=False)

# Every program XLA compiles for the CPU keeps 3-4 memory mappings of its own for as long as it
# is cached, and Linux caps a process's mappings (vm.max_map_count, 65530 by default): a test
# worker that has compiled some 15 000 programs (tests/stats alone reaches 28 000 mappings) has
# its next compilation fail to map memory inside LLVM, which ends the process with a segfault.
# After each test, a worker past a quarter of the cap drops JAX's caches, which frees them.
try:
    with open("/proc/sys/vm/max_map_count") as fh:
        MAPS_CAP = int(fh.read())
except (OSError, ValueError):  # not Linux: Linux's default
    MAPS_CAP = 65530


def memory_maps() -> int:
    """How many memory mappings this process holds (0 where /proc is not there)."""
    try:
        with open("/proc/self/maps") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return 0


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    yield
    if memory_maps() > MAPS_CAP // 4:
        jax.clear_caches()
        gc.collect()


@pytest.fixture
def x64():
    """Run a test body with 64-bit floats and ints enabled."""
    with jax.enable_x64(True):
        yield


# Make `from reference.<name> import ...` work from every test directory.
import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

"""Test-wide JAX settings (DESIGN.md, "Tests").

Strict dtype promotion and rank promotion that raises catch silent upcasts and accidental
broadcasting; pytest turns warnings into errors (pyproject.toml).  Tests of exactness run
in float64 through the ``x64`` fixture; everything else runs in JAX's default float32.
"""

import jax
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def x64():
    """Run a test body with 64-bit floats and ints enabled."""
    with jax.enable_x64(True):
        yield


# Make `from reference.<name> import ...` work from every test directory.
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

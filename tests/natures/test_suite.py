"""The natures' binary suite: every nature of the study in Arunachaleswaran et al. (2024), sized for a horizon."""

import jax
import numpy as np
import pytest

import jcalib
from jcalib.core import AbstractNature
from jcalib.natures import Switch, binary_suite


def test_binary_suite_plays_in_one_sweep():
    natures = binary_suite(50, 7, key=jax.random.key(0))
    assert len(natures) == 12 and all(isinstance(n, AbstractNature) for n in natures.values())
    out = jcalib.core.sweep(jcalib.forecasters.Constant(0.5), Switch.all_of(list(natures.values())), 50,
                            key=jax.random.key(1), progress=False)
    assert out.y.shape == (12, 1, 50) and set(np.unique(out.y)) <= {0, 1}
    # the replayed coin is drawn with the key: the same key, the same sequence
    again = binary_suite(50, 7, key=jax.random.key(0))["Replay (sine-modulated coin)"].y
    np.testing.assert_array_equal(natures["Replay (sine-modulated coin)"].y, again)


@pytest.mark.parametrize("key", [0, None])
def test_binary_suite_needs_a_key(key):
    with pytest.raises(TypeError, match="must be a JAX PRNG key"):
        binary_suite(50, 7, key=key)

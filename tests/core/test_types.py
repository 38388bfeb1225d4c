"""core.types: a Mixture's support given as a list of numbers."""

import jax.numpy as jnp
import pytest

from jcalib.core import Mixture


def test_a_list_of_numbers_is_a_support_of_numbers():
    m = Mixture([0.2, 0.5, 0.8], jnp.array([0.2, 0.3, 0.5]))
    assert abs(float(m.mean()) - (0.04 + 0.15 + 0.4)) < 1e-6  # float32 round-off


def test_a_list_of_the_wrong_length_is_named():
    with pytest.raises(ValueError, match="support must have a leading axis of len\\(probs\\) = 3"):
        Mixture([0.2, 0.5], jnp.array([0.2, 0.3, 0.5])).mean()

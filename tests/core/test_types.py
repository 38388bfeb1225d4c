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


def test_the_context_check_is_traced_once_per_nature_signature():
    """A forecaster that reads a context is checked against its nature's context before a run
    (jax.eval_shape of the nature's init and context): traced once per nature signature, not at
    every play or sweep (a warm play of the approachability recalibrator spent a sixth of its
    time there), and still refused for a nature without a context."""
    from jcalib.core.types import check_outcome_spaces
    from jcalib.forecasters import ApproachabilityRecalibrator
    from jcalib.natures import Bernoulli, DistortedModel

    calls = []

    class Counted(DistortedModel):
        def context(self, state, key):
            calls.append(1)
            return super().context(state, key)

    f = ApproachabilityRecalibrator(n_bins=4, step_size=0.1)
    check_outcome_spaces(f, Counted(slope=2.0))
    check_outcome_spaces(f, Counted(slope=0.5))  # other values of the same shapes
    assert len(calls) == 1
    with pytest.raises(ValueError, match="has no context"):
        check_outcome_spaces(f, Bernoulli(0.3))

"""Switch: one compiled sweep over natures of different classes, each member's outcomes
unchanged."""

import chex
import jax
import numpy as np
import pytest

import jcalib
from jcalib.forecasters import AlmostOneStepAhead
from jcalib.natures import Bernoulli, Contrarian, Markov, Switch

MEMBERS = (Bernoulli(0.3), Markov(0.1, 0.2), Contrarian())


def test_switch_member_equals_the_member_alone():
    f = AlmostOneStepAhead(n_bins=8)
    key = jax.random.key(3)
    for i, member in enumerate(MEMBERS):
        via_switch = jcalib.core.play(f, Switch(MEMBERS, i), 50, key=key)
        alone = jcalib.core.play(f, member, 50, key=key)
        np.testing.assert_array_equal(via_switch.y, alone.y)
        np.testing.assert_array_equal(via_switch.forecast, alone.forecast)


def test_sweep_over_switch_indices_matches_per_class_sweeps():
    f = AlmostOneStepAhead(n_bins=8)
    key = jax.random.key(0)
    together = jcalib.core.sweep(f, Switch.all_of(MEMBERS), 40, key=key, n_seeds=3)
    assert together.y.shape == (len(MEMBERS), 3, 40)
    for i, member in enumerate(MEMBERS):
        alone = jcalib.core.sweep(f, member, 40, key=key, n_seeds=3)
        np.testing.assert_array_equal(together.y[i], alone.y[0])


def test_switch_compiles_once_for_every_index():
    f = AlmostOneStepAhead(n_bins=8)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(index, key):
        return jcalib.core.play(f, Switch(MEMBERS, index), 20, key=key).y

    for i in range(len(MEMBERS)):
        run(np.int32(i), jax.random.key(i))


@pytest.mark.parametrize("bad", [(), (Bernoulli(0.5), "not a nature")])
def test_bad_members_raise(bad):
    with pytest.raises(ValueError):
        Switch(bad, 0)


def test_index_out_of_range_raises():
    with pytest.raises(ValueError, match="index"):
        Switch(MEMBERS, 3)


def test_traced_out_of_range_index_raises():
    """A traced index is checked once when the run starts (eqx.error_if), not clipped."""
    f = AlmostOneStepAhead(n_bins=8)

    def run(i):
        return jcalib.core.play(f, Switch(MEMBERS, i), 10, key=jax.random.key(0)).y

    np.testing.assert_array_equal(jax.jit(run)(np.int32(1)), jcalib.core.play(f, MEMBERS[1], 10, key=jax.random.key(0)).y)
    for bad in (len(MEMBERS), -1):  # above and below the range: raised, not clipped
        with pytest.raises(Exception, match="out of range"):
            jax.block_until_ready(jax.jit(run)(np.int32(bad)))


def test_switch_over_natures_with_contexts():
    from jcalib.forecasters import Partitioned, RunningFrequency, UniformCells
    from jcalib.natures import DistortedModel, TwoLevelModel

    members = (TwoLevelModel(), DistortedModel(2.0))
    f = Partitioned(RunningFrequency(), 4, UniformCells(4))
    key = jax.random.key(1)
    together = jcalib.core.sweep(f, Switch.all_of(members), 30, key=key, n_seeds=2)
    for i, m in enumerate(members):
        alone = jcalib.core.sweep(f, m, 30, key=key, n_seeds=2)
        np.testing.assert_array_equal(together.x[i], alone.x[0])
        np.testing.assert_array_equal(together.y[i], alone.y[0])


def test_contexts_from_some_members_only_raise():
    with pytest.raises(ValueError, match="every member"):
        jcalib.core.play(AlmostOneStepAhead(n_bins=4), Switch((Bernoulli(0.3), jcalib.natures.TwoLevelModel()), 0), 5, key=jax.random.key(0))


def test_the_index_must_be_an_integer():
    import numpy as np
    import pytest

    from jcalib.natures import Bernoulli, Switch

    for index in (1.5, None, True):
        with pytest.raises(ValueError, match="index must be an integer"):
            Switch((Bernoulli(0.3), Bernoulli(0.5)), index=index)
    assert int(Switch((Bernoulli(0.3), Bernoulli(0.5)), index=np.int64(1)).index) == 1


@pytest.mark.parametrize("bad", [[1, 1], "1", 1.5, None, True])
def test_index_that_is_not_one_integer_is_named(bad):
    with pytest.raises(ValueError, match="index must be"):
        Switch((Bernoulli(0.2), Bernoulli(0.8)), bad)

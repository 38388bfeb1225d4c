"""Search settings (jcalib/metrics/search.py): checked once when built, static counts, traced
step sizes, and one clear error for a wrong settings object."""

import jax
import jax.numpy as jnp
import pytest

from jcalib.metrics import PartitionSearch, SigmoidSearch, decision_calibration_error
from jcalib.metrics.search import check_search


def test_defaults_are_the_metrics_defaults():
    s = PartitionSearch()
    assert (s.n_restarts, s.n_steps, s.learning_rate, s.scale, s.objective, s.unroll) == (16, 300, 1e-2, 100.0, "norm", None)
    g = SigmoidSearch()
    assert (g.n_restarts, g.n_steps, g.learning_rate, g.unroll) == (16, 300, 0.05, None)


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: PartitionSearch(n_restarts=0), "n_restarts"),
        (lambda: PartitionSearch(n_steps=2.5), "n_steps"),
        (lambda: PartitionSearch(learning_rate=-1.0), "learning_rate"),
        (lambda: PartitionSearch(scale=float("nan")), "scale"),
        (lambda: PartitionSearch(objective="max"), "objective"),
        (lambda: PartitionSearch(unroll=0), "unroll"),
        (lambda: SigmoidSearch(n_steps=0), "n_steps"),
        (lambda: SigmoidSearch(learning_rate=0.0), "learning_rate"),
    ],
)
def test_bad_settings_raise_naming_the_setting(build, match):
    with pytest.raises((ValueError, TypeError), match=match):
        build()


def test_check_search_names_the_expected_type():
    s = PartitionSearch()
    assert check_search(s) is s
    with pytest.raises(TypeError, match="search must be a jcalib.metrics.SigmoidSearch, got PartitionSearch"):
        check_search(s, SigmoidSearch)
    with pytest.raises(TypeError, match="search must be a jcalib.metrics.PartitionSearch, got dict"):
        decision_calibration_error(jnp.full((4, 2), 0.5), jnp.array([0, 1, 0, 1]), key=jax.random.key(0), search={"n_steps": 3})


def test_counts_are_static_and_step_sizes_are_leaves():
    s = PartitionSearch(n_restarts=2, n_steps=5, learning_rate=0.1)
    leaves = jax.tree_util.tree_leaves(s)
    assert leaves == [0.1, 100.0]  # learning_rate and scale; counts and objective are static


def test_one_program_for_every_learning_rate():
    probs = jax.nn.softmax(jax.random.normal(jax.random.key(1), (40, 3)), axis=1)
    labels = jax.random.categorical(jax.random.key(2), jnp.log(probs))

    def dce(lr):
        return decision_calibration_error(probs, labels, 2, key=jax.random.key(3), search=PartitionSearch(2, 10, learning_rate=lr)).value

    rates = jnp.array([1e-3, 1e-2, 1e-1])
    batched = jax.vmap(dce)(rates)
    single = jnp.stack([dce(r) for r in rates])
    # the same steps batched or not: equal up to float32 rounding of the reductions
    assert jnp.allclose(batched, single, rtol=1e-5, atol=1e-6)

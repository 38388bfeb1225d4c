"""Real model streams: an online logistic regression's forecasts, made before each label."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jcalib
from jcalib.datasets import logistic_stream
from jcalib.forecasters import ApproachabilityRecalibrator
from jcalib.natures import Replay
from jcalib.recorders import RecalibrationCounts


@pytest.mark.parametrize("name", ["breast_cancer", "digits", "wine"])
def test_stream_is_a_useful_model(name):
    s = logistic_stream(name, n_passes=2, key=jax.random.key(0))
    assert s.q.shape == s.y.shape and s.y.dtype == np.int32
    assert np.all((s.q >= 0) & (s.q <= 1))
    assert set(np.unique(s.y)) == {0, 1}
    late = slice(len(s.y) // 2, None)
    # the model learns: its late Brier score beats the base rate's
    base = np.mean((s.y[late] - s.y.mean()) ** 2)
    assert np.mean((s.q[late] - s.y[late]) ** 2) < 0.7 * base


def test_stream_is_deterministic_and_online():
    a, b = logistic_stream("wine", key=jax.random.key(3)), logistic_stream("wine", key=jax.random.key(3))
    np.testing.assert_array_equal(a.q, b.q)
    assert not np.array_equal(a.q, logistic_stream("wine", key=jax.random.key(4)).q)
    # the first forecast is made before any label: sigmoid(0)
    assert a.q[0] == 0.5


def test_replayed_through_a_recalibrator():
    s = logistic_stream("breast_cancer", key=jax.random.key(0))
    T = len(s.y)
    f = ApproachabilityRecalibrator.for_horizon(T)
    out = jcalib.core.play(f, Replay(s.y, x=s.q), T, key=jax.random.key(0), record=RecalibrationCounts(f.n_bins))
    assert int(out.T) == T and int(out.model_counts.sum()) == T


def test_bad_input():
    with pytest.raises(ValueError, match="name"):
        logistic_stream("covertype", key=jax.random.key(0))
    with pytest.raises(ValueError, match="n_passes"):
        logistic_stream("wine", n_passes=0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="learning_rate"):
        logistic_stream("wine", learning_rate=-1.0, key=jax.random.key(0))


def test_the_key_seeds_the_order_as_its_integer_seed_did():
    """``key=jax.random.key(s)`` gives the host generator the seed ``s`` (the orders, and every
    number built on them, are those of the integer seeds they replace); other keys use both
    32-bit words; an int or ``None`` is not a key."""
    from jcalib.datasets._seed import host_seed

    assert [host_seed(jax.random.key(s)) for s in (0, 3, 2**32 - 1)] == [0, 3, 2**32 - 1]
    k1, k2 = jax.random.split(jax.random.key(0))
    assert host_seed(k1) != host_seed(k2)
    for bad in (0, None):
        with pytest.raises(TypeError, match="must be a JAX PRNG key"):
            logistic_stream("wine", key=bad)


def test_settings_are_checked_and_numpy_numbers_and_other_keys_accepted():
    from jcalib.datasets import lag_features
    from jcalib.datasets._seed import host_seed

    assert host_seed(jax.random.key(3)) == 3 == host_seed(jax.random.PRNGKey(3))
    assert 0 <= host_seed(jax.random.key(3, impl="rbg")) < 2**32  # four words folded into one seed
    with pytest.raises(TypeError, match="a batch of keys"):
        host_seed(jax.random.split(jax.random.key(0), 2))
    with pytest.raises(ValueError, match="learning_rate must be a real number, not a bool"):
        logistic_stream(key=jax.random.key(0), learning_rate=True)
    with pytest.raises(ValueError, match="n_passes=1000000000000 exceeds"):
        logistic_stream(key=jax.random.key(0), n_passes=10**12)
    y, x = lag_features(np.arange(6.0), np.int64(2))
    assert x.shape == (4, 2)
    with pytest.raises(ValueError, match="series must be a 1-D array of real numbers"):
        lag_features(["a", "b", "c"], 1)
    with pytest.raises(ValueError, match="n_lags must be an integer, not a bool"):
        lag_features(np.arange(6.0), True)


def test_the_data_sets_declare_their_inputs():
    """Each loader states its inputs once (``declare``): a name outside the data sets, a bool
    setting or an int key is refused before anything is read or drawn."""
    from jcalib import datasets
    from jcalib._validation import declared

    for fn in (datasets.load_predictions, datasets.save_predictions, datasets.logistic_stream,
               datasets.naive_bayes_stream, datasets.lag_features, datasets.sunspots, datasets.wind_power,
               datasets.run_expert, datasets.run_day_ahead_expert):
        assert declared(fn), fn.__name__
    with pytest.raises(ValueError, match="name must be one of 'breast_cancer', 'digits', 'wine'"):
        logistic_stream("iris", key=jax.random.key(0))
    with pytest.raises(ValueError, match="n_lags must be an integer, not a bool"):
        datasets.sunspots(True)
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        datasets.naive_bayes_stream("wine", key=3)

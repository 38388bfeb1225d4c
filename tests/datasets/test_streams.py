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
    s = logistic_stream(name, n_passes=2)
    assert s.q.shape == s.y.shape and s.y.dtype == np.int32
    assert np.all((s.q >= 0) & (s.q <= 1))
    assert set(np.unique(s.y)) == {0, 1}
    late = slice(len(s.y) // 2, None)
    # the model learns: its late Brier score beats the base rate's
    base = np.mean((s.y[late] - s.y.mean()) ** 2)
    assert np.mean((s.q[late] - s.y[late]) ** 2) < 0.7 * base


def test_stream_is_deterministic_and_online():
    a, b = logistic_stream("wine", seed=3), logistic_stream("wine", seed=3)
    np.testing.assert_array_equal(a.q, b.q)
    assert not np.array_equal(a.q, logistic_stream("wine", seed=4).q)
    # the first forecast is made before any label: sigmoid(0)
    assert a.q[0] == 0.5


def test_replayed_through_a_recalibrator():
    s = logistic_stream("breast_cancer")
    T = len(s.y)
    f = ApproachabilityRecalibrator.for_horizon(T)
    out = jcalib.core.play(f, Replay(s.y, x=s.q), T, key=jax.random.key(0), record=RecalibrationCounts(f.n_bins))
    assert int(out.T) == T and int(out.model_counts.sum()) == T


def test_bad_input():
    with pytest.raises(ValueError, match="name"):
        logistic_stream("covertype")
    with pytest.raises(ValueError, match="n_passes"):
        logistic_stream("wine", n_passes=0)
    with pytest.raises(ValueError, match="learning_rate"):
        logistic_stream("wine", learning_rate=-1.0)

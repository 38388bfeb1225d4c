"""The grid summary recorder: ``record="summary"`` checks its grid against the forecaster's."""

import jax
import pytest

import jcalib
from jcalib.forecasters import AlmostOneStepAhead, Constant
from jcalib.natures import Bernoulli


def test_summary_grid_must_hold_the_forecasters_grid():
    f = AlmostOneStepAhead(10)
    # grid 7 cannot hold the forecasts j/10: it used to run and count them off-grid
    with pytest.raises(ValueError, match="grid=7 does not match AlmostOneStepAhead's forecast grid m=10"):
        jcalib.play(f, Bernoulli(0.3), 20, jax.random.key(0), record="summary", grid=7)
    s = jcalib.play(f, Bernoulli(0.3), 20, jax.random.key(0), record="summary", grid=20)
    assert int(s.off_grid) == 0 and int(s.counts.sum()) == 20
    assert int(jcalib.play(f, Bernoulli(0.3), 20, jax.random.key(0), record="summary").counts.sum()) == 20
    # a forecaster without a declared grid takes the grid it is given
    s = jcalib.play(Constant(0.5), Bernoulli(0.3), 20, jax.random.key(0), record="summary", grid=4)
    assert int(s.counts[2]) == 20

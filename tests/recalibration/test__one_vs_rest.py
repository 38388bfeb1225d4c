"""Tests of the one-vs-rest reduction shared by the binary recalibrators
(jcalib/recalibration/_one_vs_rest.py): applying a fitted map column by column against a NumPy
reference (C = 2 and C > 2, a row of zeros becoming uniform), one compiled program per map and
shapes, and the column-count check."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.recalibration._one_vs_rest import apply_one_vs_rest, check_one_vs_rest_probs

TRACES = []


class _Slope(eqx.Module):
    slope: jnp.ndarray


def _scaled(params, scores):
    TRACES.append(1)  # runs once per trace
    return params.slope * scores


def _reference(slope, probs):
    """The reduction in NumPy: C = 2 maps column 1; C > 2 maps every column (slope per class),
    clips to [0, 1] and renormalises each row (a row of zeros becomes uniform)."""
    c = probs.shape[1]
    if c == 2:
        q = np.clip(slope * probs[:, 1], 0, 1)
        return np.stack([1 - q, q], axis=1)
    q = np.clip(probs * slope[None, :], 0, 1)
    total = q.sum(axis=1, keepdims=True)
    return np.where(total > 0, q / np.where(total > 0, total, 1), 1 / c)


def test_binary_maps_the_positive_column():
    probs = np.array([[0.9, 0.1], [0.4, 0.6], [0.0, 1.0]], np.float32)
    got = apply_one_vs_rest(_scaled, _Slope(jnp.float32(1.5)), jnp.asarray(probs))
    np.testing.assert_allclose(np.asarray(got), _reference(1.5, probs), rtol=1e-6)  # float32 round-off


def test_multiclass_renormalises_and_a_row_of_zeros_is_uniform():
    probs = np.array([[0.2, 0.3, 0.5], [0.0, 0.0, 1.0], [0.6, 0.4, 0.0]], np.float32)
    slope = np.array([2.0, 0.5, 0.0], np.float32)  # row 2 maps to (0, 0, 0)
    got = np.asarray(apply_one_vs_rest(_scaled, _Slope(jnp.asarray(slope)), jnp.asarray(probs)))
    np.testing.assert_allclose(got, _reference(slope, probs), rtol=1e-6)  # float32 round-off
    np.testing.assert_allclose(got[1], [1 / 3] * 3, rtol=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1, rtol=1e-6)


def test_one_program_per_map_and_shapes():
    rng = np.random.default_rng(0)
    params = _Slope(jnp.asarray([1.0, 0.8, 1.2], jnp.float32))
    TRACES.clear()
    for _ in range(3):  # new data and new parameters of the same shapes: no new trace
        probs = rng.dirichlet(np.ones(3), 50).astype(np.float32)
        apply_one_vs_rest(_scaled, params, jnp.asarray(probs))
        params = _Slope(params.slope * 1.1)
    assert len(TRACES) == 1
    apply_one_vs_rest(_scaled, params, jnp.asarray(rng.dirichlet(np.ones(3), 60).astype(np.float32)))
    assert len(TRACES) == 2  # another number of rows: one more program


def test_the_column_count_must_match_the_fit():
    probs = jnp.full((4, 3), 1 / 3)
    assert check_one_vs_rest_probs(probs, jnp.zeros((3,)), 0) is probs  # three classes
    with pytest.raises(ValueError, match="probs must have 2 columns"):
        check_one_vs_rest_probs(probs, jnp.zeros(()), 0)

"""Tests of jcalib.metrics.multiclass: parity with plain-loop references, conformance (jit, vmap, no
retrace), the relations between confidence, top-label and class-wise calibration
(Gopalan et al. 2024, §2), and input validation."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import multiclass as ref

from jcalib.metrics import (
    accuracy,
    classwise_ece,
    confidence_ece,
    l2_error,
    nll,
    one_hot,
    top_label_ece,
)
from jcalib.metrics import multiclass as multiclass_module

ECES = {"confidence": confidence_ece, "top_label": top_label_ece, "classwise": classwise_ece}


def _data(seed, n=60, c=4, weights=False):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, c)) * 2.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = rng.integers(0, c, size=n)
    w = rng.uniform(0.0, 2.0, size=n) if weights else None
    return probs, labels, w


def _mixed_confidence():
    """Predicted class 0 is over-confident (0.7 vs 50% right), class 1 under-confident
    (0.7 vs 90%): the errors cancel in the confidence ECE and not in the top-label ECE."""
    v0 = np.tile([0.7, 0.3], (10, 1))
    v1 = np.tile([0.3, 0.7], (10, 1))
    y0 = np.array([0] * 5 + [1] * 5)
    y1 = np.array([1] * 9 + [0] * 1)
    return np.concatenate([v0, v1]), np.concatenate([y0, y1])


# ---------------------------------------------------------------------------------------------
# Parity


@pytest.mark.parametrize("name", sorted(ECES))
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weights", [False, True])
def test_ece_matches_reference(x64, name, strategy, weights):
    probs, labels, w = _data(1, weights=weights)
    got = ECES[name](jnp.asarray(probs), jnp.asarray(labels), n_bins=7, strategy=strategy, sample_weight=w)
    want = getattr(ref, f"{name}_ece")(probs, labels, w, n_bins=7, strategy=strategy)
    np.testing.assert_allclose(float(got), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(ECES))
def test_ece_lp_matches_reference(x64, name):
    probs, labels, w = _data(2, weights=True)
    got = ECES[name](jnp.asarray(probs), jnp.asarray(labels), n_bins=5, sample_weight=w, order=2)
    want = getattr(ref, f"{name}_ece")(probs, labels, w, n_bins=5, p=2)
    np.testing.assert_allclose(float(got), want, rtol=1e-10)


def test_top_label_with_unpredicted_class(x64):
    # class 2 is never the arg-max: it must contribute nothing (not NaN)
    probs, labels, _ = _data(3, c=3)
    probs[:, 2] *= 0.01
    probs /= probs.sum(axis=1, keepdims=True)
    assert not np.any(probs.argmax(axis=1) == 2)
    got = top_label_ece(jnp.asarray(probs), jnp.asarray(labels))
    assert np.isfinite(float(got))
    np.testing.assert_allclose(float(got), ref.top_label_ece(probs, labels), rtol=1e-10)


@pytest.mark.parametrize("weights", [False, True])
def test_helpers_match_reference(x64, weights):
    probs, labels, w = _data(4, weights=weights)
    p, y = jnp.asarray(probs), jnp.asarray(labels)
    np.testing.assert_allclose(float(l2_error(p, y, sample_weight=w)), ref.l2_error(probs, labels, w), rtol=1e-12)
    np.testing.assert_allclose(float(nll(p, y, sample_weight=w, eps=1e-12)), ref.nll(probs, labels, w), rtol=1e-12)
    np.testing.assert_allclose(float(accuracy(p, y, sample_weight=w)), ref.accuracy(probs, labels, w), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(one_hot(y, 4)), np.eye(4)[labels])


def test_docstring_examples():
    result = doctest.testmod(multiclass_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------------------------------------
# Conformance


@pytest.mark.parametrize("name", sorted(ECES))
def test_ece_jit_vmap_no_retrace(name):
    fn = ECES[name]
    probs = jax.nn.softmax(jax.random.normal(jax.random.key(0), (3, 40, 5)) * 2, axis=-1)
    labels = jax.random.randint(jax.random.key(1), (3, 40), 0, 5)
    chex.clear_trace_counter()  # the counter is keyed by code, shared across parametrisations

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched(p, y):
        return jax.vmap(lambda a, b: fn(a, b, n_bins=6))(p, y)

    out = batched(probs, labels)
    out2 = batched(probs[::-1], labels[::-1])  # new values, same shapes: no retrace
    chex.assert_shape(out, (3,))
    for i in range(3):
        np.testing.assert_allclose(out[i], fn(probs[i], labels[i], n_bins=6), rtol=1e-5)
        np.testing.assert_allclose(out2[i], out[2 - i], rtol=1e-6)


def test_helpers_jit_vmap():
    probs = jax.nn.softmax(jax.random.normal(jax.random.key(0), (2, 30, 3)), axis=-1)
    labels = jax.random.randint(jax.random.key(1), (2, 30), 0, 3)
    for fn in (accuracy, nll, l2_error):
        out = jax.jit(jax.vmap(fn))(probs, labels)
        np.testing.assert_allclose(out[1], fn(probs[1], labels[1]), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Definitions and relations (Gopalan et al. 2024, §2)


def test_perfectly_calibrated_dataset_scores_zero():
    # v = (0.75, 0.25) on four samples, three of which are class 0: every conditional
    # frequency equals the prediction exactly, so every ECE is 0.
    probs = jnp.tile(jnp.array([[0.75, 0.25]]), (4, 1))
    labels = jnp.array([0, 0, 0, 1])
    for fn in ECES.values():
        assert float(fn(probs, labels)) == pytest.approx(0.0, abs=1e-7)


def test_top_label_sees_what_confidence_misses():
    probs, labels = _mixed_confidence()
    conf = float(confidence_ece(jnp.asarray(probs), jnp.asarray(labels)))
    top = float(top_label_ece(jnp.asarray(probs), jnp.asarray(labels)))
    cw = float(classwise_ece(jnp.asarray(probs), jnp.asarray(labels)))
    assert conf == pytest.approx(0.0, abs=1e-6)  # 0.7 confidence, 70% right overall
    assert top == pytest.approx(0.2, abs=1e-6)  # |0.7 - 0.5| and |0.7 - 0.9| per predicted class
    assert cw == pytest.approx(0.2, abs=1e-6)  # each one-vs-rest problem is off by 0.2 in both bins


@pytest.mark.parametrize("seed", range(5))
def test_top_label_dominates_confidence_with_uniform_bins(seed):
    # per uniform bin, |Σ_ℓ bias_ℓb| ≤ Σ_ℓ |bias_ℓb| (triangle inequality)
    probs, labels, w = _data(10 + seed, n=80, c=3, weights=True)
    conf = float(confidence_ece(jnp.asarray(probs), jnp.asarray(labels), sample_weight=w))
    top = float(top_label_ece(jnp.asarray(probs), jnp.asarray(labels), sample_weight=w))
    assert top >= conf - 1e-6  # float32 round-off
    assert top > conf + 1e-3  # and strictly on random data


def test_integer_weights_equal_repetition():
    # quantile bins are the case where weights change the binning itself (weighted ranks);
    # uniform bins with weights are covered by the parity tests
    probs, labels, _ = _data(5, n=30, c=3)
    reps = np.random.default_rng(0).integers(0, 3, size=30)
    reps[0] = 1
    rep_p, rep_y = jnp.asarray(np.repeat(probs, reps, axis=0)), jnp.asarray(np.repeat(labels, reps))
    for fn in ECES.values():
        weighted = fn(jnp.asarray(probs), jnp.asarray(labels), n_bins=4, strategy="quantile", sample_weight=reps.astype(float))
        repeated = fn(rep_p, rep_y, n_bins=4, strategy="quantile")
        np.testing.assert_allclose(weighted, repeated, rtol=1e-5)  # float32 sums in another order


def test_calibrated_sampling_gives_small_ece():
    # labels drawn from the predictions themselves: every ECE is a pure sampling error
    key_p, key_y = jax.random.split(jax.random.key(7))
    probs = jax.nn.softmax(jax.random.normal(key_p, (20_000, 4)) * 2, axis=1)
    labels = jax.random.categorical(key_y, jnp.log(probs))
    for fn in ECES.values():
        # 15 bins × up to 4 classes of ~300-5000 samples: sampling error ~0.01-0.02
        assert float(fn(probs, labels)) < 0.03
    # the same labels against sharpened predictions are visibly miscalibrated
    sharp = jax.nn.softmax(3 * jnp.log(probs), axis=1)
    for fn in ECES.values():
        assert float(fn(sharp, labels)) > 0.05


def test_l2_error_bounds():
    labels = jnp.array([0, 1, 2])
    assert float(l2_error(one_hot(labels, 3), labels)) == 0.0
    wrong = one_hot(jnp.array([1, 2, 0]), 3)
    assert float(l2_error(wrong, labels)) == pytest.approx(2.0)


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("fn", [*ECES.values(), accuracy, nll, l2_error])
def test_bad_inputs_raise(fn):
    good_p = jnp.array([[0.6, 0.4], [0.1, 0.9]])
    good_y = jnp.array([0, 1])
    with pytest.raises(ValueError, match="NaN"):
        fn(jnp.array([[jnp.nan, 1.0], [0.1, 0.9]]), good_y)
    with pytest.raises(ValueError, match="sum to 1"):
        fn(jnp.array([[0.6, 0.6], [0.1, 0.9]]), good_y)
    with pytest.raises(ValueError, match="non-negative"):
        fn(jnp.array([[-0.1, 1.1], [0.1, 0.9]]), good_y)
    with pytest.raises(ValueError, match="lie in"):
        fn(good_p, jnp.array([0, 2]))
    with pytest.raises(ValueError, match="mismatched"):
        fn(good_p, jnp.array([0, 1, 1]))
    with pytest.raises(ValueError, match="shape"):
        fn(jnp.array([0.6, 0.4]), good_y)
    with pytest.raises(ValueError, match="sums to zero"):
        fn(good_p, good_y, sample_weight=jnp.zeros(2))
    with pytest.raises(ValueError, match="sample_weight"):
        fn(good_p, good_y, sample_weight=jnp.ones(3))


@pytest.mark.parametrize("fn", list(ECES.values()))
def test_bad_binning_raises(fn):
    p, y = jnp.array([[0.6, 0.4], [0.1, 0.9]]), jnp.array([0, 1])
    with pytest.raises(ValueError, match="n_bins"):
        fn(p, y, n_bins=0)
    with pytest.raises(ValueError, match="strategy"):
        fn(p, y, strategy="equal")
    with pytest.raises(ValueError, match="order must"):
        fn(p, y, order=0.5)


def test_one_hot_rejects_bad_labels():
    with pytest.raises(ValueError):
        one_hot(jnp.array([0, 3]), 3)
    with pytest.raises(ValueError):
        one_hot(jnp.array([0, 1]), 0)

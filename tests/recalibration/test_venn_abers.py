"""Tests of Venn–Abers predictors (jcalib.recalibration.venn_abers): (p0, p1) against the
definition (isotonic regression with the test point labelled 0 and 1) and against the
venn-abers package (binary, ties, the pre-fitted one-vs-rest variant; to 1e-10 in float64);
the cross Venn–Abers merges; p0 <= merged <= p1; conformance (jit without retracing, one vmap
over folds equal to fits on each fold, float32); the adapter and bad input."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import venn_abers as ref

from jcalib.recalibration import SklearnRecalibrator, VennAbers, cross_venn_abers
from jcalib.recalibration import venn_abers as va_module

va_peer = pytest.importorskip("venn_abers.venn_abers")


def _binary(n, seed, decimals=2):
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(size=n), decimals)
    y = (rng.uniform(size=n) < s).astype(np.int64)
    return np.stack([1 - s, s], axis=1), y


def _multiclass(n, c, seed):
    rng = np.random.default_rng(seed)
    p = np.exp(rng.normal(size=(n, c)))
    p = np.round(p / p.sum(1, keepdims=True), 3)
    p /= p.sum(1, keepdims=True)
    y = np.array([rng.choice(c, p=r) for r in p])
    return p, y


def _test_scores(p_cal, seed):
    s = np.concatenate([np.random.default_rng(seed).uniform(size=40), p_cal[:6, 1], [0.0, 1.0]])
    return np.stack([1 - s, s], axis=1)


def test_docstrings():
    assert doctest.testmod(va_module, optionflags=doctest.ELLIPSIS).failed == 0


@pytest.mark.parametrize("n,seed", [(1, 0), (2, 1), (12, 2), (80, 3)])
def test_matches_definition(x64, n, seed):
    p, y = _binary(n, seed)
    pt = _test_scores(p, seed)
    w = np.random.default_rng(seed).integers(1, 3, n).astype(float)
    for weights in (None, w):
        iv = VennAbers().fit(p, y, sample_weight=weights).interval(pt)
        p0, p1 = ref.p0_p1(p[:, 1], y, pt[:, 1], weights)
        np.testing.assert_allclose(iv.p0, p0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(iv.p1, p1, rtol=0, atol=1e-12)
        np.testing.assert_allclose(iv.probs[:, 1], ref.merged(p0, p1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n,seed", [(5, 0), (60, 1), (400, 2)])
def test_matches_venn_abers_package(x64, n, seed):
    p, y = _binary(n, seed)
    pt = _test_scores(p, seed)
    peer = va_peer.VennAbers()
    with np.errstate(divide="ignore", invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            peer.fit(p, y)
            probs, p01 = peer.predict_proba(pt)
    iv = VennAbers().fit(p, y).interval(pt)
    np.testing.assert_allclose(iv.p0, p01[:, 0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(iv.p1, p01[:, 1], rtol=0, atol=1e-10)
    np.testing.assert_allclose(iv.probs, probs, rtol=0, atol=1e-10)


def test_one_vs_rest_matches_prefitted_variant(x64):
    p, y = _multiclass(150, 4, 5)
    pt = p[:25] * 0.9 + 0.1 / 4
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        probs, p01 = va_peer.predict_proba_prefitted_va(p, y, pt, va_tpe="one_vs_rest")
    iv = VennAbers().fit(p, y).interval(pt)
    np.testing.assert_allclose(iv.probs, probs, rtol=0, atol=1e-10)
    for c in range(4):
        np.testing.assert_allclose(iv.p0[:, c], p01[c][:, 0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(iv.p1[:, c], p01[c][:, 1], rtol=0, atol=1e-10)


@pytest.mark.parametrize("loss", ["log", "brier"])
def test_cross_venn_abers_is_one_vmap_over_folds(x64, loss):
    p, y = _binary(90, 6)
    pt = _test_scores(p, 6)
    folds = np.arange(90) % 3
    masks = jnp.asarray((folds[None, :] == np.arange(3)[:, None]).astype(float))
    fits = jax.vmap(lambda w: VennAbers(loss=loss).fit(p, y, sample_weight=w))(masks)
    per_fold_test = np.stack([pt, pt[::-1], pt])  # each fold's own classifier
    civ = cross_venn_abers(fits, per_fold_test)
    chex.assert_shape((civ.p0, civ.p1, civ.probs), ((3, len(pt)), (3, len(pt)), (len(pt), 2)))
    for k in range(3):  # fold k of the vmap = an IVAP fitted on fold k alone
        single = VennAbers(loss=loss).fit(p[folds == k], y[folds == k]).interval(per_fold_test[k])
        np.testing.assert_allclose(civ.p0[k], single.p0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(civ.p1[k], single.p1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(civ.probs[:, 1], ref.cross_merged(np.asarray(civ.p0), np.asarray(civ.p1), loss),
                               rtol=0, atol=1e-12)
    shared = cross_venn_abers(fits, pt)  # one classifier's predictions for every fold
    chex.assert_shape(shared.p0, (3, len(pt)))


def test_interval_properties():
    p, y = _multiclass(200, 3, 7)
    iv = VennAbers().fit(p, y).interval(p)
    assert np.all(np.asarray(iv.p0) <= np.asarray(iv.p1) + 1e-7)
    assert np.all((np.asarray(iv.p0) >= 0) & (np.asarray(iv.p1) <= 1))
    np.testing.assert_allclose(np.sum(iv.probs, axis=1), 1, atol=1e-6)
    pb, yb = _binary(200, 8)
    ivb = VennAbers().fit(pb, yb).interval(pb)
    q = np.asarray(ivb.probs[:, 1])
    assert np.all((np.asarray(ivb.p0) - 1e-6 <= q) & (q <= np.asarray(ivb.p1) + 1e-6))
    # the interval shrinks as the calibration set grows
    small = VennAbers().fit(pb[:20], yb[:20]).interval(pb)
    assert float(jnp.mean(small.p1 - small.p0)) > float(jnp.mean(ivb.p1 - ivb.p0))


def test_jit_vmap_no_retrace():
    p, y = _binary(64, 9)
    p32 = jnp.asarray(p, jnp.float32)
    W = jax.random.poisson(jax.random.key(1), 1.0, (4, 64)).astype(jnp.float32)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def refits(W):
        return jax.vmap(lambda w: VennAbers().fit(p32, y, sample_weight=w)(p32))(W)

    out = refits(W)
    refits(W + 1.0)
    chex.assert_shape(out, (4, 64, 2))
    np.testing.assert_allclose(out[2], VennAbers().fit(p32, y, sample_weight=W[2])(p32), atol=1e-6)


def test_adapter_and_bad_input():
    p, y = _binary(30, 10)
    cal = SklearnRecalibrator(VennAbers()).fit(p, y)
    assert cal.predict_proba(p).shape == (30, 2)
    with pytest.raises(ValueError, match="loss"):
        VennAbers(loss="hinge")
    fitted = VennAbers().fit(p, y)
    with pytest.raises(ValueError, match="columns"):
        fitted.interval(np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="fold"):
        cross_venn_abers(fitted, p)
    fits = jax.vmap(lambda w: VennAbers().fit(p, y, sample_weight=w))(jnp.ones((2, 30)))
    with pytest.raises(ValueError, match="one slice per fold"):
        cross_venn_abers(fits, np.stack([p, p, p]))

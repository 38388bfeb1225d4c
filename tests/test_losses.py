"""Tests for jcalib.losses: gradients against finite differences (float64), finite gradients at
the edges, values against the metrics they differentiate and against NumPy references, bad
input, jit/vmap, memory of the tiled kernel losses at n = 10^5, and the bound of
Zhao et al. (2021)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from reference import losses as ref

from jcalib import losses
from jcalib.core import optimise
from jcalib.metrics import smooth_ece
from jcalib.metrics.decision import decision_objective
from jcalib.metrics import GaussianKernel, LaplacianKernel, MultinomialKernel, kernel_audit

N, C = 40, 4


def _data(seed, n=N, c=C, scale=2.0):
    rng = np.random.default_rng(seed)
    z = scale * rng.normal(size=(n, c))
    y = rng.integers(0, c, size=n)
    w = rng.uniform(0.2, 2.0, size=n)
    return z, y, w


def _loss_matrices(seed, m=5, k=3, c=C):
    return np.random.default_rng(seed).normal(size=(m, k, c))


# Every multi-class loss as f(logits, labels, weights) with logits as input.
MULTICLASS = {
    "confidence_smooth_ece": lambda z, y, w: losses.confidence_smooth_ece_loss(z, y, sample_weight=w, from_logits=True),
    "kce_multinomial": lambda z, y, w: losses.kernel_calibration_loss(z, y, sample_weight=w, from_logits=True),
    "kce_multinomial_sqrt": lambda z, y, w: losses.kernel_calibration_loss(z, y, sample_weight=w, squared=False, from_logits=True),
    "kce_gaussian_unbiased": lambda z, y, w: losses.kernel_calibration_loss(
        z, y, sample_weight=w, kernel=GaussianKernel(0.3), unbiased=True, tile=16, from_logits=True
    ),
    "mmce": lambda z, y, w: losses.mmce_loss(z, y, sample_weight=w, tile=16, from_logits=True),
    "mmce_squared": lambda z, y, w: losses.mmce_loss(z, y, sample_weight=w, squared=True, from_logits=True),
    "decision": lambda z, y, w: losses.decision_calibration_loss(z, y, _loss_matrices(7), sample_weight=w, from_logits=True),
    "decision_max_squared": lambda z, y, w: losses.decision_calibration_loss(
        z, y, _loss_matrices(7), sample_weight=w, reduction="max", squared=True, temperature=0.3, from_logits=True
    ),
}


def _binary_smece(z, y, w):
    return losses.smooth_ece_loss(z[:, 0], (y % 2), sample_weight=w, from_logits=True)


def _qce(z, y, w):
    # quantiles from the first three columns, sorted; targets from the last
    q = jnp.sort(z[:, :3], axis=1)
    return losses.quantile_calibration_loss(q, z[:, 3] * 0.5, jnp.array([0.1, 0.5, 0.9]), sample_weight=w, temperature=0.3)


ALL = dict(MULTICLASS, smooth_ece_binary=_binary_smece, qce=_qce)


# --------------------------------------------------------------------------------------------
# Gradients


def _directional_fd(f, x, u, h):
    return (f(x + h * u) - f(x - h * u)) / (2 * h)


@pytest.mark.parametrize("name", sorted(ALL))
def test_gradient_matches_central_differences(name, x64):
    f = ALL[name]
    z, y, w = _data(1)
    z = jnp.asarray(z)
    y = jnp.asarray(y)
    w = jnp.asarray(w)
    loss = lambda zz: f(zz, y, w)  # noqa: E731
    g = jax.grad(loss)(z)
    assert g.dtype == jnp.float64
    rng = np.random.default_rng(2)
    for _ in range(4):  # random directions: all coordinates at once
        u = jnp.asarray(rng.normal(size=z.shape))
        fd = _directional_fd(loss, z, u, 1e-6)
        # smooth ECE splits masses linearly between grid points of spacing ≈ σ/10: a forecast
        # that crosses a grid point within ±h changes its slope by O(spacing/σ) of its own
        # share, hence the 1e-3 relative tolerance; the other losses are smooth (1e-6).
        rtol = 1e-3 if "smooth_ece" in name else 1e-6
        np.testing.assert_allclose(float(jnp.vdot(g, u)), float(fd), rtol=rtol, atol=1e-9)
    # and per coordinate, on a few coordinates
    for idx in [(0, 0), (3, 2), (N - 1, 1)]:
        e = jnp.zeros_like(z).at[idx].set(1.0)
        fd = _directional_fd(loss, z, e, 1e-6)
        np.testing.assert_allclose(float(g[idx]), float(fd), rtol=1e-3 if "smooth_ece" in name else 1e-6, atol=1e-9)


def _edge_cases(dtype):
    eye = jnp.eye(C, dtype=dtype)
    labels = jnp.arange(12) % C
    onehot_right = eye[labels]  # probabilities 0 and 1, all correct
    onehot_wrong = eye[(labels + 1) % C]  # probabilities 0 and 1, all wrong
    mixed = jnp.concatenate([onehot_right[:6], onehot_wrong[6:]])
    equal = jnp.full((12, C), 1.0 / C, dtype)  # all-equal predictions
    one_class = jnp.zeros_like(labels)  # a single class in the labels
    return {
        "onehot_right": (onehot_right, labels),
        "onehot_wrong": (onehot_wrong, labels),
        "onehot_mixed": (mixed, labels),
        "all_equal": (equal, labels),
        "one_class": (jax.nn.softmax(jnp.linspace(-1, 1, 12 * C, dtype=dtype).reshape(12, C), axis=1), one_class),
        "equal_one_class": (equal, one_class),
    }


PROB_LOSSES = {
    "confidence_smooth_ece": losses.confidence_smooth_ece_loss,
    "kce": losses.kernel_calibration_loss,
    "kce_sqrt": lambda p, y: losses.kernel_calibration_loss(p, y, squared=False),
    "kce_gaussian": lambda p, y: losses.kernel_calibration_loss(p, y, kernel=GaussianKernel(0.2)),
    "kce_unbiased": lambda p, y: losses.kernel_calibration_loss(p, y, unbiased=True),
    "mmce": losses.mmce_loss,
    "decision": lambda p, y: losses.decision_calibration_loss(p, y, _loss_matrices(3).astype(np.float32)),
    "binary_smooth_ece": lambda p, y: losses.smooth_ece_loss(p[:, 0], (y == 0).astype(jnp.int32)),
}


@pytest.mark.parametrize("case", sorted(_edge_cases(jnp.float32)))
@pytest.mark.parametrize("name", sorted(PROB_LOSSES))
def test_gradient_finite_at_edges(name, case):
    p, y = _edge_cases(jnp.float32)[case]
    f = PROB_LOSSES[name]
    val, g = jax.value_and_grad(f)(p, y)
    assert jnp.isfinite(val)
    assert bool(jnp.all(jnp.isfinite(g))), (name, case, g)
    # the same through logits that saturate float32's softmax (probabilities exactly 0 and 1)
    z = 200.0 * (p - 0.5)
    gz = jax.grad(lambda zz: f(jax.nn.softmax(zz, axis=1), y))(z)
    assert bool(jnp.all(jnp.isfinite(gz))), (name, case)


@pytest.mark.parametrize("loss", ["kce", "mmce", "smece", "decision"])
def test_gradient_finite_from_huge_logits(loss):
    z = jnp.array([[1e4, -1e4, 0.0], [-3e4, 3e4, 1.0], [0.0, 0.0, 0.0]], jnp.float32)
    y = jnp.array([0, 0, 2])
    f = {
        "kce": losses.kernel_calibration_loss,
        "mmce": losses.mmce_loss,
        "smece": losses.confidence_smooth_ece_loss,
        "decision": lambda z, y, from_logits: losses.decision_calibration_loss(
            z, y, np.ones((2, 2, 3), np.float32), from_logits=from_logits
        ),
    }[loss]
    g = jax.grad(lambda zz: f(zz, y, from_logits=True))(z)
    assert bool(jnp.all(jnp.isfinite(g)))


def test_qce_gradient_finite_at_edges():
    y = jnp.zeros((10,))
    q = jnp.zeros((10, 3))  # every target exactly on every quantile, all-equal predictions
    g = jax.grad(losses.quantile_calibration_loss)(q, y, jnp.array([0.1, 0.5, 0.9]), temperature=1e-3)
    assert bool(jnp.all(jnp.isfinite(g)))
    big = jnp.stack([jnp.full((10,), -1e6), jnp.zeros((10,)), jnp.full((10,), 1e6)], axis=1)
    g = jax.grad(losses.quantile_calibration_loss)(big, y, jnp.array([0.1, 0.5, 0.9]))
    assert bool(jnp.all(jnp.isfinite(g)))


# --------------------------------------------------------------------------------------------
# Values: the loss is the metric


def test_smooth_ece_losses_equal_the_metric(x64):
    z, y, w = _data(3)
    p = jax.nn.softmax(jnp.asarray(z), axis=1)
    conf = jnp.max(p, axis=1)
    correct = (jnp.argmax(p, axis=1) == jnp.asarray(y)).astype(jnp.int32)
    for sw in (None, w):
        unit = np.ones(N) / N if sw is None else sw / sw.sum()  # the loss rescales to mass 1
        want = smooth_ece(conf, correct, sample_weight=unit)
        np.testing.assert_allclose(losses.confidence_smooth_ece_loss(p, y, sample_weight=sw), want, rtol=1e-12)
        np.testing.assert_allclose(losses.confidence_smooth_ece_loss(z, y, sample_weight=sw, from_logits=True), want, rtol=1e-12)
        # against the metric's own multiplicities: the 1e-4 density floor is relative to the
        # mass, which moves the value by ~1e-4 relative (see smooth_ece_loss), hence 1e-3
        np.testing.assert_allclose(losses.confidence_smooth_ece_loss(p, y, sample_weight=sw), smooth_ece(conf, correct, sample_weight=sw), rtol=1e-3)
        np.testing.assert_allclose(
            jax.grad(losses.confidence_smooth_ece_loss)(p, y, sample_weight=sw),
            jax.grad(lambda q: smooth_ece(jnp.max(q, axis=1), correct, sample_weight=unit))(p),
            rtol=1e-9, atol=1e-12,
        )
    pb = jax.nn.sigmoid(jnp.asarray(z[:, 0]))
    yb = y % 2
    np.testing.assert_allclose(losses.smooth_ece_loss(pb, yb, sample_weight=w), smooth_ece(pb, yb, sample_weight=w / w.sum()), rtol=1e-12)
    np.testing.assert_allclose(losses.smooth_ece_loss(z[:, 0], yb, sample_weight=w, from_logits=True), smooth_ece(pb, yb, sample_weight=w), rtol=1e-3)


@pytest.mark.parametrize("kernel", [MultinomialKernel(1), MultinomialKernel(3), GaussianKernel(0.5)])
def test_kernel_loss_equals_the_audit(kernel, x64):
    z, y, _ = _data(4, n=90)
    p = jax.nn.softmax(jnp.asarray(z), axis=1)
    audit = kernel_audit(p, y, kernel, tile=32)
    np.testing.assert_allclose(losses.kernel_calibration_loss(p, y, kernel=kernel, squared=False, tile=7), audit.value, rtol=1e-10)
    np.testing.assert_allclose(
        losses.kernel_calibration_loss(p, y, kernel=kernel, tile=64), jnp.sum(audit.per_class**2), rtol=1e-10
    )


@pytest.mark.parametrize("squared,unbiased", [(True, False), (False, False), (True, True)])
@pytest.mark.parametrize("kernel,ref_kernel,s", [
    (MultinomialKernel(2), ref.multinomial(2), 3**0.5),
    (GaussianKernel(0.4), ref.gaussian(0.4), 1.0),
])
def test_kernel_loss_matches_reference(kernel, ref_kernel, s, squared, unbiased, x64):
    z, y, w = _data(5, n=25, c=3)
    p = np.asarray(jax.nn.softmax(jnp.asarray(z), axis=1))
    for sw in (None, w):
        got = losses.kernel_calibration_loss(p, y, sample_weight=sw, kernel=kernel, squared=squared, unbiased=unbiased, tile=6)
        want = ref.kernel_calibration(p, y, ref_kernel, s, sw, squared=squared, unbiased=unbiased)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


def test_mmce_matches_reference(x64):
    z, y, w = _data(6, n=30)
    p = np.asarray(jax.nn.softmax(jnp.asarray(z), axis=1))
    for sw in (None, w):
        for squared in (False, True):
            for bw in (0.4, 0.1):
                got = losses.mmce_loss(p, y, sample_weight=sw, bandwidth=bw, squared=squared, tile=8)
                np.testing.assert_allclose(got, ref.mmce(p, y, sw, bw, squared), rtol=1e-10)


def test_decision_loss_matches_reference_and_metric(x64):
    z, y, w = _data(8, n=30)
    p = np.asarray(jax.nn.softmax(jnp.asarray(z), axis=1))
    L = _loss_matrices(9)
    for sw in (None, w):
        for red in ("mean", "max"):
            for sq in (False, True):
                got = losses.decision_calibration_loss(p, y, L, sample_weight=sw, temperature=0.2, reduction=red, squared=sq)
                np.testing.assert_allclose(got, ref.soft_decision(p, y, L, 0.2, sw, red, sq), rtol=1e-10)
    # one matrix: exactly the metric module's Eq. (9) objective at w = −L/τ
    resid = jax.nn.one_hot(jnp.asarray(y), C, dtype=jnp.float64) - p
    want = decision_objective(-jnp.asarray(L[0]) / 0.2, jnp.asarray(p), resid, jnp.full((30,), 1 / 30))
    np.testing.assert_allclose(losses.decision_calibration_loss(p, y, L[0], temperature=0.2), want, rtol=1e-12)


def test_decision_loss_tends_to_hard_cells_and_bounds_the_loss_gap(x64):
    """Zhao et al. (2021): as τ → 0 the soft cells become the Bayes partition (Eq. 8), and the loss
    gap of Eq. (10) is at most max_a ‖L_a‖₂ times that summand (Cauchy–Schwarz, Prop. 2's proof)."""
    z, y, w = _data(10, n=300)
    p = np.asarray(jax.nn.softmax(jnp.asarray(z), axis=1))
    L = _loss_matrices(11, m=20)
    for m in range(L.shape[0]):
        hard = ref.soft_decision(p, y, L[m : m + 1], None, w, hard=True)
        soft = float(losses.decision_calibration_loss(p, y, L[m], sample_weight=w, temperature=1e-6))
        # softmax cells at τ = 1e-6 differ from the argmax only for samples within ~1e-5 of a tie
        np.testing.assert_allclose(soft, hard, rtol=1e-6, atol=1e-9)
        gap = ref.loss_gap(p, y, L[m], w)
        assert gap <= np.max(np.linalg.norm(L[m], axis=1)) * hard + 1e-12


def test_qce_matches_reference_and_tends_to_hard_qce(x64):
    rng = np.random.default_rng(12)
    y = rng.normal(size=60)
    q = np.sort(rng.normal(size=(60, 4)), axis=1) * 1.3
    levels = np.array([0.1, 0.3, 0.7, 0.9])
    w = rng.uniform(0.5, 2, size=60)
    for sw in (None, w):
        for tau in (0.5, 0.05):
            got = losses.quantile_calibration_loss(q, y, levels, sample_weight=sw, temperature=tau)
            np.testing.assert_allclose(got, ref.qce(q, y, levels, sw, tau), rtol=1e-10)
        # tiny τ: within 1e-6 of the hard QCE unless a target sits within ~1e-6·30 of a quantile
        got = losses.quantile_calibration_loss(q, y, levels, sample_weight=sw, temperature=1e-8)
        np.testing.assert_allclose(got, ref.qce(q, y, levels, sw), atol=1e-6)


def test_integer_weights_are_multiplicities(x64):
    z, y, _ = _data(13, n=20)
    reps = np.random.default_rng(0).integers(1, 4, size=20)
    zr, yr = np.repeat(z, reps, axis=0), np.repeat(y, reps)
    for name in sorted(ALL):
        if name == "kce_gaussian_unbiased":  # the U-statistic drops i = j pairs, not duplicates
            continue
        if "smooth_ece" in name:  # smooth_ece's own tests cover its weights (and it is slow to compile)
            continue
        f = ALL[name]
        np.testing.assert_allclose(
            f(jnp.asarray(z), jnp.asarray(y), jnp.asarray(reps, jnp.float64)),
            f(jnp.asarray(zr), jnp.asarray(yr), None),
            rtol=1e-9,
            err_msg=name,
        )


# --------------------------------------------------------------------------------------------
# jit, vmap, memory


# smooth_ece_binary shares its jitted core with confidence_smooth_ece (and compiles slowly)
@pytest.mark.parametrize("name", sorted(set(ALL) - {"smooth_ece_binary"}))
def test_jitted_and_batched(name):
    # (chex rejects functions whose qualified name contains "vmap.", hence the test's name)
    f = ALL[name]
    chex.clear_trace_counter()  # the counter is keyed by code, shared across parametrisations
    z, y, w = _data(14)
    z = jnp.asarray(z, jnp.float32)
    y, w = jnp.asarray(y), jnp.asarray(w, jnp.float32)
    batch = jnp.stack([z, 0.5 * z, 2 * z])

    @chex.assert_max_traces(n=1)
    def one(b):
        return f(b, y, w)

    jitted = jax.jit(one)
    loop = jnp.stack([jitted(b) for b in batch])  # one trace for all three
    np.testing.assert_allclose(loop[0], f(z, y, w), rtol=1e-6)  # jit = eager
    assert loop.dtype == jnp.float32
    np.testing.assert_allclose(jax.vmap(lambda b: f(b, y, w))(batch), loop, rtol=1e-5, atol=1e-7)
    grads = jax.jit(jax.vmap(jax.grad(lambda b: f(b, y, w))))(batch)
    assert grads.shape == batch.shape and bool(jnp.all(jnp.isfinite(grads)))


@pytest.mark.parametrize("loss", ["kce", "mmce"])
def test_tiled_gradient_fits_in_memory_at_n_1e5(loss):
    """The compiled value-and-gradient at n = 10^5, k = 10 needs O(tile · n) scratch memory, not
    the 40 GB of an n×n float32 Gram matrix (checked on the compiled program, without running)."""
    n, k = 100_000, 10
    spec = jax.ShapeDtypeStruct((n, k), jnp.float32)
    labels = jnp.zeros((n,), jnp.int32)
    f = {"kce": losses.kernel_calibration_loss, "mmce": losses.mmce_loss}[loss]
    fn = jax.jit(jax.value_and_grad(lambda z: f(z, labels, from_logits=True)))
    mem = fn.lower(spec).compile().memory_analysis()
    assert mem.temp_size_in_bytes < 1.5e9, mem.temp_size_in_bytes  # measured 0.64 GB (kce), 0.41 GB (mmce)


@pytest.mark.slow
def test_penalty_alone_fits_a_temperature():
    """Minimising each multi-class penalty over a temperature of over-confident logits moves the
    temperature above 1 and lowers the penalty (the losses are usable with jcalib.core.optimise)."""
    rng = np.random.default_rng(15)
    n = 600
    true = rng.normal(size=(n, 3)) * 1.5
    p_true = np.exp(true) / np.exp(true).sum(1, keepdims=True)
    y = jnp.asarray((rng.random((n, 1)) > np.cumsum(p_true, 1)).sum(1))
    z = jnp.asarray(3.0 * true, jnp.float32)  # three times too confident
    L = _loss_matrices(7, c=3)
    fs = {
        "confidence_smooth_ece": MULTICLASS["confidence_smooth_ece"],
        "kce_multinomial": MULTICLASS["kce_multinomial_sqrt"],
        "mmce": MULTICLASS["mmce"],
        "decision": lambda z, y, w: losses.decision_calibration_loss(z, y, L, sample_weight=w, from_logits=True),
    }
    for name, f in fs.items():
        loss = lambda log_t: f(z * jnp.exp(-log_t), y, None)  # noqa: E731
        res = optimise(loss, jnp.zeros((), jnp.float32), optax.adam(0.05), 40)
        assert float(jnp.exp(res.params)) > 1.5, name
        assert float(loss(res.params)) < 0.5 * float(loss(jnp.zeros((), jnp.float32))), name


# --------------------------------------------------------------------------------------------
# Bad input


def test_bad_inputs():
    z, y, w = _data(16)
    p = np.asarray(jax.nn.softmax(jnp.asarray(z, jnp.float32), axis=1))
    zn = z.copy()
    zn[0, 0] = np.nan
    with pytest.raises(ValueError, match="logits"):
        losses.kernel_calibration_loss(zn, y, from_logits=True)
    with pytest.raises(ValueError, match="logits"):
        losses.mmce_loss(z[:, 0], y, from_logits=True)
    with pytest.raises(ValueError, match="sum to 1"):
        losses.mmce_loss(p * 1.5, y)
    with pytest.raises(ValueError, match="labels"):
        losses.confidence_smooth_ece_loss(p, y + C)
    with pytest.raises(ValueError, match="sample_weight"):
        losses.kernel_calibration_loss(p, y, sample_weight=w[:-1])
    with pytest.raises(ValueError, match="sample_weight"):
        losses.kernel_calibration_loss(p, y, sample_weight=-w)
    with pytest.raises(ValueError, match="unbiased"):
        losses.kernel_calibration_loss(p, y, unbiased=True, squared=False)
    with pytest.raises(ValueError, match="kernel"):
        losses.kernel_calibration_loss(p, y, kernel="gauss")
    with pytest.raises(ValueError, match="s must"):
        losses.kernel_calibration_loss(p, y, s=-1.0)
    with pytest.raises(ValueError, match="tile"):
        losses.kernel_calibration_loss(p, y, tile=0)
    with pytest.raises(ValueError, match="bandwidth"):
        losses.mmce_loss(p, y, bandwidth=0.0)
    with pytest.raises(ValueError, match="bandwidth"):
        LaplacianKernel(-1.0)
    with pytest.raises(ValueError, match="probs"):
        losses.smooth_ece_loss(np.array([0.2, 1.3]), np.array([0, 1]))
    with pytest.raises(ValueError, match="labels"):
        losses.smooth_ece_loss(np.array([0.2, 0.3]), np.array([0, 2]))
    with pytest.raises(ValueError, match="losses"):
        losses.decision_calibration_loss(p, y, np.ones((2, 2, C + 1)))
    with pytest.raises(ValueError, match="reduction"):
        losses.decision_calibration_loss(p, y, np.ones((2, 2, C)), reduction="sum")
    with pytest.raises(ValueError, match="temperature"):
        losses.decision_calibration_loss(p, y, np.ones((2, 2, C)), temperature=0.0)
    q = np.sort(z[:, :3], axis=1)
    with pytest.raises(ValueError, match="levels"):
        losses.quantile_calibration_loss(q, z[:, 3], np.array([0.1, 0.5, 1.0]))
    with pytest.raises(ValueError, match="levels"):
        losses.quantile_calibration_loss(q, z[:, 3], np.array([0.1, 0.5]))
    with pytest.raises(ValueError, match="mismatched"):
        losses.quantile_calibration_loss(q, z[:-1, 3], np.array([0.1, 0.5, 0.9]))
    with pytest.raises(ValueError, match="targets"):
        losses.quantile_calibration_loss(q, np.full(N, np.nan), np.array([0.1, 0.5, 0.9]))
    with pytest.raises(ValueError, match="temperature"):
        losses.quantile_calibration_loss(q, z[:, 3], np.array([0.1, 0.5, 0.9]), temperature=-1.0)


def test_traced_bad_values_raise_inside_jit():
    y = jnp.arange(4) % 2
    bad_logits = jnp.array([[0.0, jnp.nan]] * 4)
    with pytest.raises(Exception, match="logits in probs must be finite"):
        jax.jit(lambda z: losses.mmce_loss(z, y, from_logits=True))(bad_logits)
    bad_probs = jnp.array([[1.5, -0.5]] * 4)
    with pytest.raises(Exception, match="probs must be finite"):
        jax.jit(lambda p: losses.kernel_calibration_loss(p, y))(bad_probs)


def test_traced_bad_labels_raise_inside_jit():
    import jcalib

    p = jnp.array([0.2, 0.5, 0.9])
    with pytest.raises(Exception, match="labels must be 0 or 1"):
        jax.block_until_ready(jax.jit(losses.smooth_ece_loss)(p, [0, 1, 2]))
    v = jnp.full((3, 3), 1 / 3)
    with pytest.raises(Exception, match=r"labels must be integer class indices in \[0, 3\)"):
        jax.block_until_ready(jax.jit(losses.mmce_loss)(v, jnp.array([0, 1, 3])))
    # the switch: traced with checks off, the graph carries none (a fresh function: traced now)
    with jcalib.config.checks(False):
        out = jax.jit(lambda v, y: losses.mmce_loss(v, y))(v, jnp.array([0, 1, 3]))
    assert out.shape == ()


def test_unbiased_kernel_loss_needs_two_weighted_samples(x64):
    v = jnp.array([[0.3, 0.7], [0.6, 0.4]])
    y = jnp.array([1, 0])
    with pytest.raises(ValueError, match="two samples with positive weight"):
        losses.kernel_calibration_loss(v[:1], y[:1], unbiased=True)  # n = 1: Σω² = 1, was -inf
    with pytest.raises(ValueError, match="two samples with positive weight"):
        losses.kernel_calibration_loss(v, y, sample_weight=jnp.array([1.0, 0.0]), unbiased=True)  # all weight on one
    with pytest.raises(Exception, match="two samples with positive weight"):
        jax.block_until_ready(jax.jit(lambda v, y: losses.kernel_calibration_loss(v, y, unbiased=True))(v[:1], y[:1]))
    assert np.isfinite(float(losses.kernel_calibration_loss(v, y, unbiased=True)))
    import jcalib

    with jcalib.config.checks(False):  # documented value with the checks off: NaN, not -inf
        out = jax.jit(lambda v, y: losses.kernel_calibration_loss(v, y, unbiased=True))(v[:1], y[:1])
    assert np.isnan(float(out))


@pytest.mark.slow  # compiles every loss's gradient again at new shapes: ~11 s of CPU
def test_docstring_examples_run():
    import doctest

    assert doctest.testmod(losses, raise_on_error=True).attempted >= 7


def test_sample_weight_is_keyword_only():
    import inspect

    for name in losses.__all__:
        obj = getattr(losses, name)
        params = inspect.signature(obj).parameters if callable(obj) and not isinstance(obj, type) else {}
        if "sample_weight" in params:
            assert params["sample_weight"].kind is inspect.Parameter.KEYWORD_ONLY, name

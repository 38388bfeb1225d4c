"""Every statistic of rows in ``jcalib.stats`` and ``jcalib.metrics`` is the same in any row order.

The test walks both packages' ``__all__``. Each public callable that takes rows (forecasts,
labels, optional sample weights; binary ``(n,)``, multi-class ``(n, C)``, PIT values, real
outcomes, per-bucket summaries …) has an entry in :data:`REGISTRY`: a generator of random
inputs **with many ties** (forecasts on coarse grids, whole rows duplicated, equal forecasts
with different labels, zero weights) and a call. The rows of every row-aligned array are
permuted together (weights included) and the result must not change, to :data:`RTOL`.
Elementwise functions are checked for equivariance instead (permuting the input permutes the
output). Randomised procedures (a key that draws resamples by row index) are checked on their
deterministic field only. A callable that is not a statistic of rows, or whose value depends
on the row order by design, is listed in :data:`NOT_ROW_STATISTICS` with the reason; a public
callable that is in neither list fails :func:`test_every_public_callable_is_covered`.

Adding a new public name is one line in :data:`REGISTRY`, e.g.
``"metrics.my_metric": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),``
(``f`` is the public callable, ``d`` one draw; see the generators below for the fields).
"""

from __future__ import annotations

import inspect
import zlib
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib.metrics
import jcalib.stats

N = 30  # rows per draw (fixed, so each callable compiles once)
DRAWS = 3  # random inputs per callable
PERMUTATIONS = 2  # row permutations per draw
# A permutation changes only the order of floating-point additions: in float64 that moves a
# sum of N = 30 terms by about N * 2.2e-16 relatively. 1e-9 leaves room for the fixed-step
# searches (gradient ascent, bisection) that carry such differences through many steps,
# and is still far below any real order effect (the KS tie bug moved statistics by 0.1).
RTOL, ATOL = 1e-9, 1e-12


# ---------------------------------------------------------------------------------------------
# Generators of row-aligned inputs with many ties. Each returns a NamedTuple whose fields are
# arrays with N rows: all of them are permuted together.

_GRIDS = (np.linspace(0, 1, 11), np.array([0.2, 0.5, 0.7]), np.array([0.0, 0.5, 1.0]))
_WEIGHTS = np.array([0.0, 0.5, 1.0, 2.0])
_ROWS3 = np.array([  # simplex rows with ties inside rows and equal confidences across rows
    [1 / 3, 1 / 3, 1 / 3], [0.4, 0.4, 0.2], [0.2, 0.4, 0.4], [0.5, 0.25, 0.25], [0.1, 0.2, 0.7],
    [0.2, 0.1, 0.7], [0.7, 0.2, 0.1], [1.0, 0.0, 0.0], [0.6, 0.3, 0.1],
])


def _duplicated(rng, n_base, *columns):
    """N rows drawn with replacement from ``n_base`` base rows: whole rows repeat."""
    idx = rng.integers(0, n_base, N)
    idx[: n_base // 2] = np.arange(n_base // 2)  # a few base rows for sure
    return [c[idx] for c in columns]


def _weights(rng, n_base):
    w = rng.choice(_WEIGHTS, n_base)
    w[0] = 1.0  # a positive total
    return w


class Binary(NamedTuple):
    p: np.ndarray  # forecasts on a coarse grid
    y: np.ndarray  # 0/1 labels, both labels at equal forecasts
    w: np.ndarray  # weights in {0, 0.5, 1, 2}
    k: np.ndarray  # integer multiplicities in {1, 2, 3}
    q: np.ndarray  # a second forecaster (an expert's forecast) on the grid


def binary(rng) -> Binary:
    grid = _GRIDS[rng.integers(len(_GRIDS))]
    b = 12
    p, q = rng.choice(grid, b), rng.choice(grid, b)
    y = rng.integers(0, 2, b)
    # half the base rows repeat another base row's forecast with the other label
    y[: b // 2] = 1 - y[b // 2 : b]
    p[: b // 2] = p[b // 2 : b]
    cols = _duplicated(rng, b, p, y.astype(np.int64), _weights(rng, b), rng.integers(1, 4, b), q)
    return Binary(*cols)


class Multiclass(NamedTuple):
    P: np.ndarray  # (N, 3) rows from a small pool (ties inside rows, equal confidences)
    y: np.ndarray  # class labels
    w: np.ndarray


def multiclass(rng) -> Multiclass:
    b = 12
    rows = rng.integers(0, len(_ROWS3), b)
    return Multiclass(*_duplicated(rng, b, _ROWS3[rows], rng.integers(0, 3, b), _weights(rng, b)))


class Pit(NamedTuple):
    u: np.ndarray  # PIT values on the grid {0, 0.1, ..., 1}
    w: np.ndarray


def pit_values(rng) -> Pit:
    b = 12
    return Pit(*_duplicated(rng, b, rng.integers(0, 11, b) / 10, _weights(rng, b)))


_EDGES = (0.0, 0.25, 0.5, 0.75, 1.0)
_MASSES = np.array([[0.25, 0.25, 0.25, 0.25], [0.1, 0.4, 0.4, 0.1], [0.5, 0.25, 0.15, 0.1]])


class Regression(NamedTuple):
    y: np.ndarray  # real outcomes on a coarse grid (in [0, 1], the densities' support)
    y_hat: np.ndarray  # point forecasts on a coarse grid
    quantiles: np.ndarray  # (N, 3) forecast quantiles at levels 0.1, 0.5, 0.9
    masses: np.ndarray  # (N, 4) bin masses of piecewise-constant forecast densities on _EDGES
    w: np.ndarray


def regression(rng) -> Regression:
    b = 12
    y = rng.choice(np.array([0.0, 0.25, 0.5, 0.6, 1.0]), b)
    y_hat = rng.choice(np.array([0.25, 0.5, 0.75]), b)
    quantiles = y_hat[:, None] + np.array([-0.2, 0.0, 0.2])
    masses = _MASSES[rng.integers(0, 3, b)]
    return Regression(*_duplicated(rng, b, y, y_hat, quantiles, masses, _weights(rng, b)))


class Buckets(NamedTuple):
    counts: np.ndarray  # rounds per bucket (the "rows" are the buckets here)
    ones: np.ndarray
    values: np.ndarray  # the bucket's forecast value


def buckets(rng) -> Buckets:
    counts = rng.integers(0, 5, N)
    counts[0] = 3
    ones = rng.integers(0, counts + 1)
    return Buckets(counts, ones, rng.choice(np.linspace(0, 1, 6), N))


def _dist(masses):
    from jcalib.distributions import PiecewiseConstant

    return PiecewiseConstant(jnp.asarray(masses), _EDGES)


# ---------------------------------------------------------------------------------------------
# The registry.


class Case(NamedTuple):
    draw: Callable[[np.random.Generator], Any]  # one random input (a NamedTuple of rows)
    call: Callable[[Callable, Any], Any]  # call(f, draw) -> the result
    out: Callable[[Any], Any] = lambda r: r  # the part of the result that must not move
    equivariant: bool = False  # elementwise: the result's rows move with the input's
    xfail: str | None = None  # a known order dependence in a file this test may not fix
    needs: tuple[str, ...] = ()  # keyword arguments the call uses that are still being added


def invariant(draw, call, out=lambda r: r, *, xfail=None, needs=()) -> Case:
    return Case(draw, call, out, False, xfail, needs)


def equivariant(draw, call) -> Case:
    return Case(draw, call, equivariant=True)


def _ece(p, y, sample_weight=None):
    return jcalib.metrics.binned_ece(p, y, n_bins=5, sample_weight=sample_weight)


def _streaming(f, d, **settings):
    acc = f(**settings)
    return acc.finalise(acc.step(acc.init(), d.p, d.y, sample_weight=d.w))


_T = lambda r: r.statistic  # the statistic of a randomised test (its p-value resamples rows)
_KEY = jax.random.key(0)
_SEARCH = jcalib.metrics.PartitionSearch(n_restarts=2, n_steps=20)
_TEST_P, _TEST_Y = _ROWS3[[0, 4, 6]], np.array([0, 2, 1])  # fixed CME test locations

REGISTRY: dict[str, Case | tuple[Case, ...]] = {
    # jcalib.stats
    "stats.bootstrap": invariant(binary, lambda f, d: f(_ece, d.p, d.y, key=_KEY, n_resamples=16, sample_weight=d.w), lambda r: r.estimate),
    "stats.calibration_curve": (
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=5, sample_weight=d.w)),
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=4, sample_weight=d.w, strategy="quantile"), needs=("strategy",)),
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=4, interval="clopper-pearson")),
    ),
    "stats.cme_test": invariant(multiclass, lambda f, d: f(d.P, d.y, test_probs=_TEST_P, test_labels=_TEST_Y)),
    "stats.consistency_test": invariant(binary, lambda f, d: f(_ece, d.p, d.y, key=_KEY, n_resamples=16, sample_weight=d.w), _T),
    "stats.ks_calibration_error": (
        invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    ),
    "stats.ks_test": (
        invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y)),
    ),
    "stats.kuiper_calibration_error": (
        invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    ),
    "stats.kuiper_test": (
        invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y)),
    ),
    "stats.paired_bootstrap": invariant(binary, lambda f, d: f(_ece, d.p, d.q, d.y, key=_KEY, n_resamples=16, sample_weight=d.w), lambda r: r.estimate),
    "stats.pit_uniformity_test": invariant(pit_values, lambda f, d: f(d.u)),
    "stats.skce": (
        invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y, estimator="biased", sample_weight=d.w)),
    ),
    "stats.skce_interval": invariant(multiclass, lambda f, d: f(d.P, d.y, estimator="unbiased")),
    "stats.skce_test": invariant(binary, lambda f, d: f(d.p, d.y, key=_KEY, n_resamples=16), _T),
    "stats.smooth_calibration_curve": (
        invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w, n_points=21)),
        # with a key the band comes from resampled rows: the curve itself must not move
        invariant(binary, lambda f, d: f(d.p, d.y, key=_KEY, n_resamples=8, n_points=21), lambda r: (r.t, r.curve, r.density, r.bandwidth)),
    ),
    "stats.spiegelhalter_test": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
    "stats.score_decomposition": invariant(
        binary, lambda f, d: f(d.p, d.y, sample_weight=d.w), lambda r: (r.score, r.miscalibration, r.discrimination, r.uncertainty)),
    "stats.quantile_score_decomposition": invariant(
        binary, lambda f, d: f(np.stack([d.q * 0.5, d.q], 1), d.p, np.array([0.25, 0.75])),
        lambda r: (r.score, r.miscalibration, r.discrimination, r.uncertainty)),
    "stats.corp_curve": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w), lambda r: (r.forecasts, r.recalibrated)),
    # the groups are a function of each row's forecast, so they move with the rows
    "metrics.multicalibration_error": invariant(
        binary, lambda f, d: f(d.p, d.y, np.stack([d.p > 0.3, d.p < 0.7], 1), n_bins=4, sample_weight=d.w),
        lambda r: (r.per_group, r.group_size, r.worst)),
    "stats.ucme": invariant(multiclass, lambda f, d: f(d.P, d.y, test_probs=_TEST_P, test_labels=_TEST_Y, sample_weight=d.w)),
    # jcalib.metrics: binary forecasts
    "metrics.ace": (
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=4, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y, n_bins=4, sample_weight=d.w)),
    ),
    "metrics.bin_index": equivariant(binary, lambda f, d: f(d.p, 4)),
    "metrics.binned_ece": (
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=4, sample_weight=d.w)),
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=4, strategy="quantile", sample_weight=d.w, order=2)),
    ),
    "metrics.brier": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
    "metrics.ece": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
    "metrics.log_loss": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
    "metrics.lp_calibration_error": (
        invariant(binary, lambda f, d: f(d.p, d.y, 0.25, sample_weight=d.w)),
        invariant(binary, lambda f, d: f(d.p, d.y, 0.1, order=2, sample_weight=d.w, n_bins=10)),
    ),
    "metrics.mce": (
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=4, sample_weight=d.w)),
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=4, strategy="quantile", sample_weight=d.w)),
    ),
    "metrics.quantile_bin_index": equivariant(binary, lambda f, d: f(d.p, 4, sample_weight=d.w)),
    "metrics.distance_to_calibration": (
        invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.k), lambda r: (r.lower, r.upper)),
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=10), lambda r: (r.lower, r.upper)),
    ),
    "metrics.lower_distance_to_calibration": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
    "metrics.smooth_calibration_error": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w)),
    "metrics.smooth_ece": invariant(binary, lambda f, d: f(d.p, d.y, sample_weight=d.w, return_bandwidth=True)),
    "metrics.smooth_ece_at_bandwidth": invariant(binary, lambda f, d: f(d.p, d.y - d.p, 0.1, sample_weight=d.w)),
    "metrics.StreamingBinnedECE": invariant(binary, lambda f, d: _streaming(f, d, n_bins=5)),
    "metrics.StreamingSmoothECE": invariant(binary, lambda f, d: _streaming(f, d, n_grid=257)),
    "metrics.average_regret": invariant(binary, lambda f, d: f(d.p, d.q, d.y)),
    "metrics.eps_calibration": (
        invariant(binary, lambda f, d: f(d.p, d.y, n_bins=10)),
        invariant(binary, lambda f, d: f(d.p, d.y, n_buckets=4, form="norm")),
    ),
    # per-bucket summaries: the buckets are the rows
    "metrics.calibration_from_buckets": invariant(buckets, lambda f, d: f(d.counts, d.ones, d.values, int(d.counts.sum()))),
    # jcalib.metrics: multi-class predictions
    "metrics.decision_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, 2, key=_KEY, search=_SEARCH, sample_weight=d.w)),
    "metrics.decision_loss_gap": invariant(multiclass, lambda f, d: f(d.P, d.y, 16, 2, key=_KEY, sample_weight=d.w)),
    "metrics.kernel_audit": invariant(multiclass, lambda f, d: f(d.P, d.y), lambda r: (r.value, r.per_class, r.lam, r.s)),
    "metrics.accuracy": invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    "metrics.classwise_ece": invariant(multiclass, lambda f, d: f(d.P, d.y, n_bins=4, strategy="quantile", sample_weight=d.w)),
    "metrics.confidence_ece": (
        invariant(multiclass, lambda f, d: f(d.P, d.y, n_bins=4, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y, n_bins=4, strategy="quantile", sample_weight=d.w)),
    ),
    "metrics.l2_error": invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    "metrics.nll": invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    "metrics.one_hot": equivariant(multiclass, lambda f, d: f(d.y, 3)),
    "metrics.top_label_ece": (
        invariant(multiclass, lambda f, d: f(d.P, d.y, n_bins=4, sample_weight=d.w)),
        invariant(multiclass, lambda f, d: f(d.P, d.y, n_bins=4, strategy="quantile", sample_weight=d.w)),
    ),
    "metrics.max_classwise_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, 4, "quantile", sample_weight=d.w)),
    "metrics.full_smooth_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    "metrics.lipschitz_correlation": invariant(binary, lambda f, d: f(d.p, d.y - d.p)),
    "metrics.low_degree_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, 2, sample_weight=d.w)),
    "metrics.projected_smooth_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    "metrics.sigmoid_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, 4.0, key=_KEY, search=jcalib.metrics.SigmoidSearch(n_restarts=2, n_steps=20), sample_weight=d.w)),
    "metrics.subset_smooth_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, sample_weight=d.w)),
    "metrics.two_action_decision_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, key=_KEY, search=_SEARCH)),
    "metrics.weighted_calibration_error": invariant(multiclass, lambda f, d: f(d.P, d.y, lambda v: v**2, sample_weight=d.w)),
    # jcalib.metrics: regression forecasts
    "metrics.central_interval_coverage": invariant(pit_values, lambda f, d: f(d.u, level=0.8, sample_weight=d.w)),
    "metrics.crps_score": invariant(regression, lambda f, d: f(_dist(d.masses), d.y, sample_weight=d.w)),
    "metrics.miscalibration_area": (
        invariant(pit_values, lambda f, d: f(d.u, n_levels=11, sample_weight=d.w)),
        invariant(pit_values, lambda f, d: f(d.u, kind="quantile")),
    ),
    "metrics.pinball_loss": invariant(regression, lambda f, d: f(d.quantiles, d.y, np.array([0.1, 0.5, 0.9]), sample_weight=d.w)),
    "metrics.pit": equivariant(regression, lambda f, d: f(_dist(d.masses), d.y)),
    "metrics.pit_histogram": invariant(pit_values, lambda f, d: f(d.u, n_bins=5, sample_weight=d.w)),
    "metrics.pit_uniformity": invariant(pit_values, lambda f, d: f(d.u)),
    "metrics.quantile_calibration_error": invariant(pit_values, lambda f, d: f(d.u, levels=np.array([0.1, 0.5, 0.9]), sample_weight=d.w)),
    "metrics.quantile_frequencies": invariant(pit_values, lambda f, d: f(d.u, sample_weight=d.w)),
    "metrics.smape": invariant(regression, lambda f, d: f(d.y_hat, d.y + 1, sample_weight=d.w)),
}

NOT_ROW_STATISTICS: dict[str, str] = {
    "metrics.ece_from_counts": "per-grid-point counts: position i is the forecast i/m, so the order is data",
    "metrics.atoms_from_counts": "per-grid-point counts: position i is the forecast i/m, so the order is data",
    "metrics.qce_calibrated_expectation": "a function of the sample size T and the levels, no rows",
    "metrics.KernelAudit": "a result container (an equinox module of arrays)",
    "metrics.KernelWitness": "a fitted witness function built from rows, not a statistic; kernel_audit is covered",
    "metrics.partition_search": "the search behind decision_calibration_error (covered), on residuals and an init",
    "metrics.partition_weights": "a row-wise map (each row's cell weights), no aggregate over rows",
    "metrics.decision_objective": "the objective of given cell weights; decision_calibration_error covers it",
    "metrics.GaussianKernel": "a kernel (settings), no rows",
    "metrics.mcgrad_multicalibration_error": "ECCE's running sums go over the rows sorted by forecast, tied forecasts in row order (as mcgrad's do)",
    "metrics.SparseGroups": "group memberships (each row's group ids), no statistic; multicalibration_error covers them",
    "metrics.multicalibration_audit": "the p-value resamples rows with the key; multicalibration_error covers its statistic",
    "metrics.LaplacianKernel": "a kernel (settings), no rows",
    "metrics.MultinomialKernel": "a kernel (settings), no rows",
    "metrics.PartitionSearch": "search settings, no rows",
    "metrics.SigmoidSearch": "search settings, no rows",
}

# Parts of covered callables whose value depends on the row order by design, left out of the
# comparison above (the registry entry compares the rest).
ORDER_DEPENDENT_BY_DESIGN: dict[str, str] = {
    "stats.skce": "estimator='block' averages the U-statistic of consecutive rows (linear time)",
    "stats.skce_interval": "estimator='block' (the default), as skce's block estimator",
    "stats.skce_test": "estimator='block', as skce's; the p-value resamples rows by index with the key",
    "stats.cme_test": "with a key, the test locations are rows drawn by index (given locations are compared)",
    "stats.bootstrap": "low, high and resamples: resamples index rows with the key (estimate is compared)",
    "stats.paired_bootstrap": "low, high and resamples, as bootstrap's",
    "stats.consistency_test": "the p-value: the key's draws are assigned to rows by position",
    "stats.smooth_calibration_curve": "with a key, low and high (a bootstrap band over rows)",
    "metrics.distance_to_calibration": "the witness lists rows by index",
    "metrics.kernel_audit": "the witness's support is the rows themselves",
}


# ---------------------------------------------------------------------------------------------
# The tests.


def _public():
    """(qualified name, object) of every public callable that is not a result type or a warning."""
    out = []
    for package in (jcalib.stats, jcalib.metrics):
        short = package.__name__.split(".")[-1]
        for name in package.__all__:
            obj = getattr(package, name)
            if not callable(obj):  # constants, e.g. QCE_LEVELS
                continue
            if inspect.isclass(obj) and issubclass(obj, (tuple, Warning)):  # NamedTuple results, warnings
                continue
            out.append((f"{short}.{name}", obj))
    return out


def _lookup(qualified):
    package, name = qualified.split(".")
    return getattr({"stats": jcalib.stats, "metrics": jcalib.metrics}[package], name, None)


def test_every_public_callable_is_covered():
    missing = [q for q, _ in _public() if q not in REGISTRY and q not in NOT_ROW_STATISTICS]
    assert not missing, (
        f"public callables neither in REGISTRY (tests/test_row_permutation.py) nor listed in "
        f"NOT_ROW_STATISTICS with a reason: {missing}"
    )
    both = set(REGISTRY) & set(NOT_ROW_STATISTICS)
    assert not both, f"both covered and listed as not a statistic of rows: {sorted(both)}"
    loose = set(ORDER_DEPENDENT_BY_DESIGN) - set(REGISTRY)
    assert not loose, f"ORDER_DEPENDENT_BY_DESIGN names callables that have no entry: {sorted(loose)}"


def _cases():
    for qualified, entry in REGISTRY.items():
        for i, case in enumerate((entry,) if isinstance(entry, Case) else entry):
            marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
            yield pytest.param(qualified, case, id=f"{qualified}-{i}", marks=marks)


def _permute(draw, perm):
    return type(draw)(*(np.asarray(a)[perm] for a in draw))


def _leaves(tree):
    return [np.asarray(x, dtype=float) for x in jax.tree_util.tree_leaves(tree)]


def _assert_same(got, want, what):
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w), what
    for a, b in zip(g, w):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("qualified, case", list(_cases()))
def test_row_permutation(x64, qualified, case):
    f = _lookup(qualified)
    if f is None:  # an entry added ahead of its export (another branch)
        pytest.skip(f"{qualified} is not exported (yet)")
    absent = [a for a in case.needs if a not in inspect.signature(f).parameters]
    if absent:
        pytest.skip(f"{qualified} does not take {absent} (yet)")
    rng = np.random.default_rng(zlib.crc32(qualified.encode()))  # fixed, one stream per name
    for draw_no in range(DRAWS):
        d = case.draw(rng)
        base = case.out(case.call(f, d))
        for _ in range(PERMUTATIONS):
            perm = rng.permutation(N)
            got = case.out(case.call(f, _permute(d, perm)))
            if case.equivariant:
                _assert_same(got, np.asarray(base)[perm], f"{qualified}, draw {draw_no}: not equivariant")
            else:
                _assert_same(got, base, f"{qualified}, draw {draw_no}, permutation {perm.tolist()}")

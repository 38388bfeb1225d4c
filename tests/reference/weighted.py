"""Plain NumPy/SciPy references for weighted multi-class calibration (Gopalan et al. 2024, §2,
Def. 2.2–2.6, 6.5, 7.7). Dense formulations, brute force over every subset / monomial: small cases only."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linprog


def residuals(probs, labels):
    v = np.asarray(probs, np.float64)
    return v, np.eye(v.shape[1])[np.asarray(labels)] - v


def weighted_ce_loop(probs, labels, weights, sample_weight=None):
    """max_m |mean_i ω_i <z_i, W[m, i]>| with explicit loops."""
    v, z = residuals(probs, labels)
    n = len(v)
    om = np.ones(n) if sample_weight is None else np.asarray(sample_weight, np.float64)
    om = om / om.sum()
    best = 0.0
    for wm in np.asarray(weights).reshape(-1, *v.shape):
        c = sum(om[i] * float(np.dot(z[i], wm[i])) for i in range(n))
        best = max(best, abs(c))
    return best


def lipschitz_lp_dense(t, r, lipschitz=1.0):
    """max Σ r_i φ(t_i), |φ| ≤ 1, |φ(t_i) − φ(t_j)| ≤ L|t_i − t_j| for EVERY pair (no merging)."""
    t = np.asarray(t, np.float64)
    n = len(t)
    rows, b = [], []
    for i in range(n):
        for j in range(n):
            if i != j:
                row = np.zeros(n)
                row[i], row[j] = 1.0, -1.0
                rows.append(row)
                b.append(lipschitz * abs(t[i] - t[j]))
    res = linprog(-np.asarray(r, np.float64), A_ub=np.array(rows), b_ub=np.array(b), bounds=(-1, 1), method="highs")
    return -res.fun


def subset_smooth_bruteforce(probs, labels, m=None):
    v, z = residuals(probs, labels)
    n, k = v.shape
    m = k if m is None else m
    best = 0.0
    for size in range(1, m + 1):
        for T in itertools.combinations(range(k), size):
            T = list(T)
            best = max(best, lipschitz_lp_dense(v[:, T].sum(1), z[:, T].sum(1) / n))
    return best


def projected_smooth_two_classes(probs, labels, m=2.0):
    """Exact psCE_m for k = 2: the class {φ(a·v)} is every s-Lipschitz function of v_1 with
    s = max |a_1 − a_2| over a ∈ [−1,1]², ‖a‖² ≤ m, i.e. s = min(2, sqrt(2m))."""
    v, z = residuals(probs, labels)
    n = len(v)
    s = min(2.0, np.sqrt(2 * m))
    return sum(lipschitz_lp_dense(v[:, 0], z[:, ell] / n, s) for ell in range(2))


def full_smooth_dense(probs, labels):
    """fsCE: per class, max Σ z_iℓ h_i / n, |h| ≤ 1, h_i − h_j ≤ ‖v_i − v_j‖_1 for every pair."""
    v, z = residuals(probs, labels)
    n, k = v.shape
    rows, b = [], []
    for i in range(n):
        for j in range(n):
            if i != j:
                row = np.zeros(n)
                row[i], row[j] = 1.0, -1.0
                rows.append(row)
                b.append(np.abs(v[i] - v[j]).sum())
    total = 0.0
    for ell in range(k):
        res = linprog(-z[:, ell] / n, A_ub=np.array(rows), b_ub=np.array(b), bounds=(-1, 1), method="highs")
        total += -res.fun
    return total


def low_degree_bruteforce(probs, labels, degree):
    """Σ_ℓ max over ORDERED tuples t ∈ [k]^i, i ≤ d, of |mean z_ℓ v_t1 ... v_ti|."""
    v, z = residuals(probs, labels)
    n, k = v.shape
    best = np.abs(z.mean(0))
    for i in range(1, degree + 1):
        for t in itertools.product(range(k), repeat=i):
            f = np.prod(v[:, list(t)], axis=1)
            best = np.maximum(best, np.abs((f[:, None] * z).mean(0)))
    return best.sum()


def sigmoid_grid_two_classes(probs, labels, L, n_grid=801):
    """For k = 2, tanh(L a·v + b) = tanh(c + s v_1) with s = L(a_1 − a_2) ∈ [−2L, 2L], c ∈ R.
    Grid search over (s, c); a lower bound that is fine enough to compare with."""
    v, z = residuals(probs, labels)
    s = np.linspace(-2 * L, 2 * L, n_grid)
    c = np.linspace(-3 * L, 3 * L, n_grid)
    total = 0.0
    for ell in range(2):
        best = 0.0
        for si in s:
            vals = np.tanh(c[:, None] + si * v[None, :, 0]) @ z[:, ell] / len(v)
            best = max(best, vals.max())
        total += best
    return total

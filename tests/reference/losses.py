"""Plain NumPy references for the calibration losses (jcalib/losses.py).

Double loops over pairs of samples, written from the papers' formulas; for small n in tests.
"""

from __future__ import annotations

import numpy as np


def _norm_weights(n, weights):
    w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
    return w / w.sum()


def kernel_calibration(probs, labels, kernel, s, weights=None, squared=True, unbiased=False):
    """Σ_ℓ Λ_ℓ² (or Σ_ℓ Λ_ℓ), Λ_ℓ² = Σ_{i,j} ω_i ω_j z_iℓ z_jℓ ker(v_i, v_j) / s² (Gopalan et al. 2024, Alg. 2).

    ``kernel(a, b)`` takes two 1-D points and returns a float."""
    v = np.asarray(probs, np.float64)
    n, k = v.shape
    z = np.eye(k)[np.asarray(labels)] - v
    om = _norm_weights(n, weights)
    lam2 = np.zeros(k)
    for i in range(n):
        for j in range(n):
            if unbiased and i == j:
                continue
            lam2 += om[i] * om[j] * z[i] * z[j] * kernel(v[i], v[j])
    if unbiased:
        lam2 /= 1.0 - np.sum(om**2)
    lam2 /= s**2
    return float(lam2.sum()) if squared else float(np.sqrt(np.maximum(lam2, 0.0)).sum())


def multinomial(degree):
    return lambda a, b: sum(float(a @ b) ** i for i in range(degree + 1))


def gaussian(bandwidth):
    return lambda a, b: float(np.exp(-np.sum((a - b) ** 2) / (2 * bandwidth**2)))


def mmce(probs, labels, weights=None, bandwidth=0.4, squared=False):
    """Kumar, Sarawagi, Jain (2018), Eq. (2): Σ_{i,j} ω_i ω_j (c_i − r_i)(c_j − r_j) e^{−|r_i − r_j|/ω}."""
    v = np.asarray(probs, np.float64)
    n = v.shape[0]
    r = v.max(axis=1)
    c = (v.argmax(axis=1) == np.asarray(labels)).astype(np.float64)
    om = _norm_weights(n, weights)
    total = 0.0
    for i in range(n):
        for j in range(n):
            total += om[i] * om[j] * (c[i] - r[i]) * (c[j] - r[j]) * np.exp(-abs(r[i] - r[j]) / bandwidth)
    return total if squared else float(np.sqrt(max(total, 0.0)))


def soft_decision(probs, labels, loss_matrices, temperature, weights=None, reduction="mean", squared=False, hard=False):
    """The summand of Eq. (9) of Zhao et al. (2021) at the Bayes partition of each loss matrix, reduced over them."""
    v = np.asarray(probs, np.float64)
    n, k = v.shape
    y = np.eye(k)[np.asarray(labels)]
    om = _norm_weights(n, weights)
    vals = []
    for L in np.asarray(loss_matrices, np.float64):
        expected = v @ L.T  # (n, K): <L_a, q_i>
        if hard:
            cells = np.eye(L.shape[0])[np.argmin(expected, axis=1)]
        else:
            s = -expected / temperature
            s = np.exp(s - s.max(axis=1, keepdims=True))
            cells = s / s.sum(axis=1, keepdims=True)
        total = 0.0
        for a in range(L.shape[0]):
            m = np.zeros(k)
            for i in range(n):
                m += om[i] * (y[i] - v[i]) * cells[i, a]
            total += np.sum(m**2) if squared else np.sqrt(np.sum(m**2))
        vals.append(total)
    return float(np.mean(vals) if reduction == "mean" else np.max(vals))


def loss_gap(probs, labels, L, weights=None):
    """|E<L_δ, p̂> − E L_{δ, Y}| for the Bayes rule δ(q) = argmin_a <L_a, q> (Zhao et al. 2021,
    Eq. 10 before the division by max_a ‖L_a‖₂)."""
    v = np.asarray(probs, np.float64)
    n = v.shape[0]
    om = _norm_weights(n, weights)
    a = np.argmin(v @ np.asarray(L).T, axis=1)
    pred = sum(om[i] * float(L[a[i]] @ v[i]) for i in range(n))
    true = sum(om[i] * float(L[a[i], labels[i]]) for i in range(n))
    return abs(pred - true)


def qce(quantiles, targets, levels, weights=None, temperature=None):
    """Quantile calibration error (1/J) Σ_j |Σ_i ω_i 1[y_i ≤ q_ij] − α_j|; with a temperature the
    indicator is sigmoid((q_ij − y_i)/τ)."""
    q = np.asarray(quantiles, np.float64)
    y = np.asarray(targets, np.float64)
    n, J = q.shape
    om = _norm_weights(n, weights)
    out = 0.0
    for j in range(J):
        cov = 0.0
        for i in range(n):
            if temperature is None:
                ind = 1.0 if y[i] <= q[i, j] else 0.0
            else:
                ind = 1.0 / (1.0 + np.exp(-(q[i, j] - y[i]) / temperature))
            cov += om[i] * ind
        out += abs(cov - levels[j])
    return out / J

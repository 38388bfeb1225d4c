"""Plain NumPy reference for kernel auditing (Gopalan et al. 2024, Algorithms 1–2, Lemma 4.2).

Materialises the full n×n Gram matrix and follows the paper's formulas line by line; only for
small n in tests (and as the "direct" baseline in benchmarks/kernel_audit.py).
"""

from __future__ import annotations

import itertools

import numpy as np


def multinomial_gram(u: np.ndarray, v: np.ndarray, degree: int) -> np.ndarray:
    """ker_d(u_i, v_j) = sum_{i=0..d} (u_i . v_j)^i as a full matrix."""
    g = u @ v.T
    return sum(g**i for i in range(degree + 1))


def multinomial_features(v: np.ndarray, degree: int) -> np.ndarray:
    """The explicit feature map psi of Definition 6.3: every ordered monomial v_t1 ... v_ti,
    t in [k]^i, i = 0..d (1 + k + ... + k^d columns)."""
    n, k = v.shape
    cols = [np.ones(n)]
    for i in range(1, degree + 1):
        for t in itertools.product(range(k), repeat=i):
            cols.append(np.prod(v[:, list(t)], axis=1))
    return np.stack(cols, axis=1)


def audit(probs: np.ndarray, labels: np.ndarray, gram_fn, s: float):
    """Algorithm 2 with the full Gram matrix. Returns (value, lam, coef, witness_fn)."""
    v = np.asarray(probs, np.float64)
    n, k = v.shape
    z = np.eye(k)[np.asarray(labels)] - v
    K = gram_fn(v, v)
    lam = np.empty(k)
    coef = np.zeros((n, k))
    for ell in range(k):
        lam2 = 0.0
        for i in range(n):
            lam2 += z[i, ell] * (K[i] @ z[:, ell])
        lam[ell] = np.sqrt(max(lam2, 0.0))
        if lam[ell] > 0:
            coef[:, ell] = z[:, ell] / (lam[ell] * s)

    def witness(u):
        return gram_fn(np.asarray(u, np.float64), v) @ coef

    value = float(np.mean(np.sum(z * witness(v), axis=1)))
    return value, lam, coef, witness


def project_simplex(x: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row onto the simplex (Duchi et al. 2008, sort-based)."""
    x = np.atleast_2d(np.asarray(x, np.float64))
    out = np.empty_like(x)
    for r, row in enumerate(x):
        u = np.sort(row)[::-1]
        css = np.cumsum(u)
        rho = max(j for j in range(len(u)) if u[j] - (css[j] - 1) / (j + 1) > 0)
        theta = (css[rho] - 1) / (rho + 1)
        out[r] = np.maximum(row - theta, 0.0)
    return out


def post_process(probs, labels, gram_fn, s, beta, max_steps, eta=None):
    """Lemma 4.2 loop: audit; if value >= beta, v <- Proj(v + eta w(v)). Returns (v, losses, values)."""
    v = np.asarray(probs, np.float64).copy()
    k = v.shape[1]
    onehot = np.eye(k)[np.asarray(labels)]
    losses, values = [np.mean(np.sum((v - onehot) ** 2, axis=1))], []
    for _ in range(max_steps):
        value, _, _, witness = audit(v, labels, gram_fn, s)
        values.append(value)
        if value < beta:
            break
        w = witness(v)
        step = value / np.mean(np.sum(w**2, axis=1)) if eta is None else eta
        v = project_simplex(v + step * w)
        losses.append(np.mean(np.sum((v - onehot) ** 2, axis=1)))
    return v, np.array(losses), np.array(values)

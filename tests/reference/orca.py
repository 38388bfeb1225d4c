"""Slow NumPy reference for ORCA's inner objective (Marx et al. 2024, Eq. 9): the value of each
uniform-on-bin nature component, by brute-force integration over y (no closed forms)."""

import numpy as np


def pc_cdf_vec(probs, edges, z):
    e = np.asarray(edges)
    t = np.clip((z[:, None] - e[:-1]) / np.diff(e), 0, 1)
    return t @ probs


def crps_numeric(probs, edges, y, n=4001):
    z = np.linspace(edges[0], edges[-1], n)
    F = pc_cdf_vec(probs, edges, z)
    g = (F - (z >= y)) ** 2
    return np.trapezoid(g, z)


def experiment_payoff_np(probs, expert, edges, y, n_levels):
    """quantile ⊕ regret(CRPS, MSE) ⊕ moments(1, 2), each block / sqrt(B_i)."""
    e = np.asarray(edges)
    alphas = np.arange(1, n_levels + 1) / (n_levels + 1)
    u = pc_cdf_vec(probs, edges, np.array([y]))[0]
    q = (u <= alphas) - alphas
    Bq = max(np.sum(alphas[:j] ** 2) + np.sum((1 - alphas[j:]) ** 2) for j in range(n_levels + 1))
    mid = (e[:-1] + e[1:]) / 2
    m2 = (e[:-1] ** 2 + e[:-1] * e[1:] + e[1:] ** 2) / 3
    mean_p, mean_e = probs @ mid, expert @ mid
    reg = np.array([
        crps_numeric(probs, edges, y) - crps_numeric(expert, edges, y),
        (mean_p - y) ** 2 - (mean_e - y) ** 2,
    ])
    mom = np.array([mean_p - y, probs @ m2 - y * y])
    return np.concatenate([q / np.sqrt(Bq), reg / np.sqrt(2.0), mom / np.sqrt(2.0)])


def component_values(probs, expert, edges, c, n_levels, n_y=400):
    """v_k = mean over a midpoint grid of y in bin k of <c, π(p, y)>."""
    e = np.asarray(edges)
    out = []
    for a, b in zip(e[:-1], e[1:]):
        ys = a + (np.arange(n_y) + 0.5) / n_y * (b - a)
        out.append(np.mean([c @ experiment_payoff_np(probs, expert, edges, y, n_levels) for y in ys]))
    return np.array(out)

"""Slow plain-NumPy references (loops, no JAX) for the payoffs and App. C oracles of Marx et al. (2024)."""

import numpy as np
from scipy.optimize import linprog


def pc_cdf(probs, edges, y):
    F = 0.0
    for p, a, b in zip(probs, edges[:-1], edges[1:]):
        F += p * min(max((y - a) / (b - a), 0.0), 1.0)
    return F


def tent(p, m):
    return np.array([max(0.0, 1.0 - abs(m * p - v)) for v in range(m + 1)])


def binary_payoff(p, y, m):
    return tent(p, m) * (p - y)


def quantile_payoff_eq19(f_left, f_right, alphas):
    """Eq. 19 literally: alpha+ / alpha- from the range of F near y, lambda, two indicators.

    The range of F around the outcome is modelled as [0, f_left] ∪ [f_right, 1] (a jump from
    f_left to f_right at y), which is what matters for the payoff at y."""
    out = []
    for a in alphas:
        if f_left < a < f_right:  # a not in Range F: linearise across the jump
            a_minus, a_plus = f_left, f_right
        else:
            a_minus = a_plus = a
        lam = 1.0 if a_plus == a_minus else (a_plus - a) / (a_plus - a_minus)
        out.append(lam * (f_right <= a_minus) + (1 - lam) * (f_right <= a_plus) - a)
    return np.array(out)


def tent_root(c):
    m = len(c) - 1
    if c[0] >= 0:
        return 0.0
    if c[-1] <= 0:
        return 1.0
    for i in range(m):
        if c[i] < 0 <= c[i + 1]:
            return (i + c[i] / (c[i] - c[i + 1])) / m
    raise AssertionError("unreachable")


def conformal_matrix(c, beta):
    M = len(c) - 1
    return np.array([[c[a] * ((a >= j) - beta) for a in range(M + 1)] for j in range(1, M + 1)])


def conformal_certificate(c, q, beta):
    return max(float(row @ q) for row in conformal_matrix(c, beta))


def conformal_lp(c, beta):
    """min_q max_j sum_a c_a q_a (1{a >= j} - beta) by scipy's LP solver."""
    M = len(c) - 1
    A = conformal_matrix(c, beta)
    res = linprog(
        np.r_[np.zeros(M + 1), 1.0],
        A_ub=np.c_[A, -np.ones(M)],
        b_ub=np.zeros(M),
        A_eq=np.r_[np.ones(M + 1), 0.0][None],
        b_eq=[1.0],
        bounds=[(0, None)] * (M + 1) + [(None, None)],
        method="highs",
    )
    assert res.success
    return res.fun, res.x[:-1]


def conformal_rule(c, rule="corrected"):
    """The rule's mixed strategy, except the LP case (returns None there)."""
    M = len(c) - 1
    q = np.zeros(M + 1)

    def bracket(i):
        w = np.zeros(M + 1)
        w[i], w[i + 1] = 1 / abs(c[i]), 1 / abs(c[i + 1])
        return w / w.sum()

    if rule == "paper":
        if np.all(c >= 0):
            q[0] = 1
            return q
        if np.all(c <= 0):
            q[-1] = 1
            return q
        for i in range(M):
            if np.sign(c[i]) * np.sign(c[i + 1]) < 0:
                return bracket(i)
        raise AssertionError("unreachable")
    if c[0] >= 0:
        q[0] = 1
        return q
    if c[-1] <= 0:
        q[-1] = 1
        return q
    for i in range(M + 1):
        if c[i] == 0:
            q[i] = 1
            return q
    for i in range(M):
        if c[i] > 0 > c[i + 1]:
            return bracket(i)
    return None


def moment_certificate_brute(c, f, weights_fn, n_y=20001):
    """max over a fine y grid of <c, w(f) (f - (y, y^2))> (deterministic moment payoff)."""
    w = weights_fn(f)
    g = (w[:, None] * c.reshape(-1, 2)).sum(0)
    y = np.linspace(0, 1, n_y)
    return float(np.max(g[0] * (f[0] - y) + g[1] * (f[1] - y * y)))


def freudenthal_dense(f, m):
    u = np.asarray(f, float) * m
    i, j = (int(min(max(np.floor(v), 0), m - 1)) for v in u)
    r0, r1 = u[0] - i, u[1] - j
    w = np.zeros((m + 1) ** 2)
    if r0 >= r1:
        for (a, b), wt in zip([(i, j), (i + 1, j), (i + 1, j + 1)], [1 - r0, r0 - r1, r1]):
            w[a * (m + 1) + b] += wt
    else:
        for (a, b), wt in zip([(i, j), (i, j + 1), (i + 1, j + 1)], [1 - r1, r1 - r0, r0]):
            w[a * (m + 1) + b] += wt
    return w


def pc_quantile(probs, edges, alpha, n_iter=200):
    """Q(α) = inf{y : F(y) >= α} of a piecewise-constant density, by bisection on pc_cdf."""
    probs = np.asarray(probs, np.float64) / np.sum(probs)
    lo, hi = float(edges[0]), float(edges[-1])
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        if pc_cdf(probs, edges, mid) >= alpha:
            hi = mid
        else:
            lo = mid
    return hi


def pinball_np(a, y, alpha):
    """ρ_α(y - a) written out by cases."""
    return alpha * (y - a) if y >= a else (1 - alpha) * (a - y)


def pinball_regret_np(p_probs, e_probs, edges, y, levels):
    """π_j = ρ_j(y - Q_p(α_j)) - ρ_j(y - Q_e(α_j)), one level at a time."""
    return pinball_regret_at_np(_quantile_pairs(p_probs, e_probs, edges, levels), y, levels)


def _quantile_pairs(p_probs, e_probs, edges, levels):
    return [(pc_quantile(p_probs, edges, a), pc_quantile(e_probs, edges, a)) for a in levels]


def pinball_regret_at_np(pairs, y, levels):
    return np.array([pinball_np(qp, y, a) - pinball_np(qe, y, a) for (qp, qe), a in zip(pairs, levels)])


def pinball_regret_uniform_np(p_probs, e_probs, edges, lo, hi, levels, n=4001):
    """E_{y ~ U[lo, hi]} π by a midpoint rule with n points (the payoff is piecewise linear in y)."""
    pairs = _quantile_pairs(p_probs, e_probs, edges, levels)
    ys = lo + (hi - lo) * (np.arange(n) + 0.5) / n
    return np.mean([pinball_regret_at_np(pairs, y, levels) for y in ys], axis=0)

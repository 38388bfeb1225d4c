"""Point-by-point loops of the distance-to-calibration DPs (one NumPy step per lattice point,
per atom or per layer), with the group cost searched element by element: the vectorised DPs of
jcalib.metrics.distance must return the same numbers and paths bit for bit."""

import numpy as np


def side_cost(side, c, a):
    """sum over the first c sorted rounds of one label of |p - a| (``_Side.P``, three searches)."""
    c, a = np.broadcast_arrays(np.asarray(c, np.float64), np.asarray(a, np.float64))
    if side.v.size == 0:
        return np.zeros(c.shape)

    def sum_first(x):
        k = np.clip(np.searchsorted(side.C, x, side="right") - 1, 0, side.v.size - 1)
        return side.S[k] + (x - side.C[k]) * side.v[k]

    below = side.C[np.searchsorted(side.v, a, side="right")]
    k = np.minimum(c, below)
    sk, sc = sum_first(k), sum_first(c)
    return a * k - sk + (sc - sk) - a * (c - k)


def group_cost(one, zero, i0, j0, i1, j1):
    di, dj = i1 - i0, j1 - j0
    den = np.where(di + dj > 0, di + dj, 1)
    a = di / den
    cost = side_cost(one, i1, a) - side_cost(one, i0, a) + side_cost(zero, j1, a) - side_cost(zero, j0, a)
    return np.where(di + dj > 0, cost, np.inf)


def exact_path(one, zero):
    n1, n0 = int(one.n), int(zero.n)
    F = np.full((n1 + 1, n0 + 1), np.inf)
    F[0, 0] = 0.0
    back = np.zeros((n1 + 1, n0 + 1, 2), np.int64)
    ii, jj = np.meshgrid(np.arange(n1 + 1), np.arange(n0 + 1), indexing="ij")
    for i in range(n1 + 1):
        for j in range(n0 + 1):
            if i == 0 and j == 0:
                continue
            cost = F[: i + 1, : j + 1] + group_cost(one, zero, ii[: i + 1, : j + 1], jj[: i + 1, : j + 1], i, j)
            k = int(np.argmin(cost))
            F[i, j] = cost.flat[k]
            back[i, j] = divmod(k, j + 1)
    path = [(n1, n0)]
    while path[-1] != (0, 0):
        path.append(tuple(int(x) for x in back[path[-1]]))
    return float(F[n1, n0]), np.array(path[::-1], np.float64)


def staircase_path(one, zero, span):
    v = np.concatenate([zero.v, one.v])
    y = np.concatenate([np.zeros(zero.v.size), np.ones(one.v.size)])
    w = np.concatenate([zero.w, one.w])
    o = np.lexsort((y, v))
    I = np.concatenate([[0.0], np.cumsum(w[o] * y[o])])
    J = np.concatenate([[0.0], np.cumsum(w[o] * (1 - y[o]))])
    A = w.size
    F = np.full(A + 1, np.inf)
    F[0] = 0.0
    arg = np.zeros(A + 1, np.int64)
    for k in range(1, A + 1):
        lo = max(0, k - span)
        cost = F[lo:k] + group_cost(one, zero, I[lo:k], J[lo:k], I[k], J[k])
        a = int(np.argmin(cost))
        arg[k], F[k] = lo + a, cost[a]
    ks = [A]
    while ks[-1] != 0:
        ks.append(int(arg[ks[-1]]))
    ks = np.array(ks[::-1])
    return float(F[A]), np.stack([I[ks], J[ks]], axis=1)


def layered_path(one, zero, guide, reach=3):
    g = np.asarray(guide, np.float64)

    def cands(x, C):
        lo = np.searchsorted(C, x, side="right") - 1
        at = C[np.clip(np.stack([lo - 1, lo, lo + 1, lo + 2], axis=1), 0, C.size - 1)]
        return np.concatenate([np.floor(x)[:, None], np.ceil(x)[:, None], at], axis=1)

    ci, cj = cands(g[:, 0], one.C), cands(g[:, 1], zero.C)
    K, c = g.shape[0], ci.shape[1]
    si, sj = np.repeat(ci, c, axis=1), np.tile(cj, (1, c))
    si[0], sj[0] = 0.0, 0.0
    si[-1], sj[-1] = one.n, zero.n
    S = si.shape[1]
    F = np.full((K, S), np.inf)
    F[0] = 0.0
    back = np.zeros((K, S, 2), np.int64)
    for k in range(1, K):
        lo = max(0, k - reach)
        pi, pj, pf = si[lo:k].ravel(), sj[lo:k].ravel(), F[lo:k].ravel()
        cost = group_cost(one, zero, pi[None, :], pj[None, :], si[k][:, None], sj[k][:, None])
        bad = (pi[None, :] > si[k][:, None]) | (pj[None, :] > sj[k][:, None])
        tot = np.where(bad, np.inf, cost + pf[None, :])
        a = np.argmin(tot, axis=1)
        F[k] = tot[np.arange(S), a]
        back[k, :, 0], back[k, :, 1] = lo + a // S, a % S
    if not np.isfinite(F[-1, 0]):
        return np.inf, None
    path, k, s = [], K - 1, 0
    while k > 0:
        path.append((si[k, s], sj[k, s]))
        k, s = back[k, s]
    path.append((0.0, 0.0))
    return float(F[-1, 0]), np.array(path[::-1])

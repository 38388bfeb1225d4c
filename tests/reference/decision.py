"""Plain NumPy reference for decision calibration (Zhao et al. 2021): loops over actions and
samples, no vectorisation tricks, written straight from the equations."""

import numpy as np


def cells(w, probs, hard):
    """(N, K) memberships: softmax_a ⟨q, w_a⟩, or one-hot argmax (first maximiser on ties)."""
    n, k = probs.shape[0], w.shape[0]
    out = np.zeros((n, k))
    for i in range(n):
        scores = np.array([np.dot(probs[i], w[a]) for a in range(k)])
        if hard:
            out[i, int(np.argmax(scores))] = 1.0
        else:
            e = np.exp(scores - scores.max())
            out[i] = e / e.sum()
    return out


def cell_residuals(w, probs, labels, hard, sample_weight=None):
    """m_a = Σ_i s_i b(p̂_i, a) (y_i − p̂_i) / Σ_i s_i, shape (K, C)."""
    n, c = probs.shape
    s = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    b = cells(w, probs, hard)
    m = np.zeros((w.shape[0], c))
    for a in range(w.shape[0]):
        for i in range(n):
            y = np.zeros(c)
            y[labels[i]] = 1.0
            m[a] += s[i] * b[i, a] * (y - probs[i])
    return m / s.sum()


def objective(w, probs, labels, hard, sample_weight=None):
    """Σ_a ‖m_a‖₂: Eq. (8) with hard cells, Eq. (9) with soft cells."""
    m = cell_residuals(w, probs, labels, hard, sample_weight)
    return float(sum(np.linalg.norm(m[a]) for a in range(m.shape[0])))


def adjustment(cell_matrix, probs, labels):
    """D = argmin_D ‖(Y − P̂) − W D‖_F by least squares (no ridge)."""
    c = probs.shape[1]
    resid = np.eye(c)[labels] - probs
    return np.linalg.lstsq(cell_matrix, resid, rcond=None)[0]


def stage(w, probs, labels, hard):
    """One stage of Algorithm 1 for a given witness: returns (D, P̂ + W D)."""
    b = cells(w, probs, hard)
    d = adjustment(b, probs, labels)
    return d, probs + b @ d


def loss_gap(probs, labels, losses, sample_weight=None, true_probs=None):
    """Per loss matrix L (K, C): (predicted, true, normalised gap) of the Bayes rule (Eq. 10).
    With ``true_probs`` the true loss is the expectation Σ_c p*_ic L[a*, c] instead of L[a*, y_i]."""
    n = probs.shape[0]
    s = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    out = []
    for L in losses:
        pred = true = 0.0
        for i in range(n):
            expected = [np.dot(L[a], probs[i]) for a in range(L.shape[0])]
            a_star = int(np.argmin(expected))
            pred += s[i] * expected[a_star]
            if true_probs is None:
                true += s[i] * L[a_star, labels[i]]
            else:
                true += s[i] * np.dot(L[a_star], true_probs[i])
        pred, true = pred / s.sum(), true / s.sum()
        scale = max(np.linalg.norm(L[a]) for a in range(L.shape[0]))
        out.append((pred, true, abs(pred - true) / scale))
    return np.array(out)


def dce_for_losses(probs, labels, losses, sample_weight=None):
    """Decision calibration error over the Bayes partitions of the given losses: the largest
    Eq. (8) value Σ_a ‖m_a‖₂ over the matrices L, with the cells of a*(q) = argmin_a ⟨L_a, q⟩
    (first minimiser on ties)."""
    best = 0.0
    for L in losses:
        n, c = probs.shape
        s = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
        m = np.zeros((L.shape[0], c))
        for i in range(n):
            a_star = int(np.argmin([np.dot(L[a], probs[i]) for a in range(L.shape[0])]))
            m[a_star] += s[i] * (np.eye(c)[labels[i]] - probs[i])
        m /= s.sum()
        best = max(best, float(sum(np.linalg.norm(m[a]) for a in range(L.shape[0]))))
    return best

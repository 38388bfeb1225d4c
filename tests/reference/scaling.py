"""NumPy/SciPy references for temperature, vector, matrix and Dirichlet (ODIR) scaling.

Every map is softmax(affine(log clip(p, 1e-12, 1))); the objective is the weighted mean NLL plus
the ODIR penalty λ/(C(C−1)) Σ_{j≠k} W_jk² + μ/C Σ_j b_j² (Kull et al. 2019, §4). Temperature
scaling is fitted by a 1-D grid search; the others by ``scipy.optimize.minimize`` (L-BFGS-B with
the analytic gradient of the multinomial log-likelihood), run to tight tolerances.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.special

LOG_CLIP = 1e-12


def log_probs(probs):
    return np.log(np.clip(np.asarray(probs, np.float64), LOG_CLIP, 1.0))


def _nll_and_grad_logits(logits, labels, weights):
    """Weighted mean NLL of softmax(logits) and its gradient with respect to the logits."""
    labels = np.asarray(labels)
    w = np.ones(len(labels)) if weights is None else np.asarray(weights, np.float64)
    log_q = logits - scipy.special.logsumexp(logits, axis=1, keepdims=True)
    nll = -np.sum(w * log_q[np.arange(len(labels)), labels]) / w.sum()
    g = np.exp(log_q)
    g[np.arange(len(labels)), labels] -= 1.0
    return nll, g * (w / w.sum())[:, None]


def apply(kind, params, probs):
    """Recalibrated probabilities; ``params`` as returned by :func:`fit` (a dict)."""
    z = log_probs(probs)
    if kind == "temperature":
        logits = z / params["T"]
    elif kind == "vector":
        logits = z * params["a"] + params["b"]
    else:
        logits = z @ params["W"].T + params["b"]
    return scipy.special.softmax(logits, axis=1)


def objective(kind, params, probs, labels, reg_lambda=0.0, reg_mu=0.0, weights=None):
    """The regularised objective at ``params`` (dict), in float64."""
    z = log_probs(probs)
    c = z.shape[1]
    if kind == "temperature":
        logits = z / params["T"]
    elif kind == "vector":
        logits = z * params["a"] + params["b"]
    else:
        logits = z @ params["W"].T + params["b"]
    nll, _ = _nll_and_grad_logits(logits, labels, weights)
    if kind in ("matrix", "dirichlet"):
        off = params["W"] * (1 - np.eye(c))
        nll += reg_lambda * np.sum(off**2) / (c * (c - 1)) + reg_mu * np.sum(params["b"] ** 2) / c
    return nll


def fit_temperature_grid(probs, labels, weights=None, grid=None):
    """Temperature minimising the NLL over a log-spaced grid of T (default 10⁻¹..10¹, 4001 points)."""
    grid = np.logspace(-1, 1, 4001) if grid is None else grid
    values = [objective("temperature", {"T": t}, probs, labels, weights=weights) for t in grid]
    return {"T": float(grid[int(np.argmin(values))])}


def fit(kind, probs, labels, reg_lambda=0.0, reg_mu=0.0, weights=None):
    """Minimise the regularised objective with SciPy L-BFGS-B from the identity map."""
    z = log_probs(probs)
    n, c = z.shape
    labels = np.asarray(labels)

    if kind == "vector":

        def unpack(x):
            return {"a": x[:c], "b": x[c:]}

        x0 = np.concatenate([np.ones(c), np.zeros(c)])

        def fun(x):
            p = unpack(x)
            nll, g = _nll_and_grad_logits(z * p["a"] + p["b"], labels, weights)
            return nll, np.concatenate([np.sum(g * z, axis=0), np.sum(g, axis=0)])

    elif kind in ("matrix", "dirichlet"):

        def unpack(x):
            return {"W": x[: c * c].reshape(c, c), "b": x[c * c :]}

        x0 = np.concatenate([np.eye(c).ravel(), np.zeros(c)])
        off_mask = 1 - np.eye(c)

        def fun(x):
            p = unpack(x)
            nll, g = _nll_and_grad_logits(z @ p["W"].T + p["b"], labels, weights)
            gW = g.T @ z + 2 * reg_lambda * p["W"] * off_mask / (c * (c - 1))
            gb = np.sum(g, axis=0) + 2 * reg_mu * p["b"] / c
            reg = reg_lambda * np.sum((p["W"] * off_mask) ** 2) / (c * (c - 1)) + reg_mu * np.sum(p["b"] ** 2) / c
            return nll + reg, np.concatenate([gW.ravel(), gb])

    else:
        raise ValueError(kind)

    res = scipy.optimize.minimize(
        fun, x0, jac=True, method="L-BFGS-B", options={"maxiter": 10_000, "ftol": 1e-15, "gtol": 1e-10}
    )
    return unpack(res.x)

"""Slow NumPy reference of Algorithm 1 of Marx, Kuleshov, Ermon et al. with the Kakade–Foster oracle."""

import numpy as np
from reference.payoffs import binary_payoff, tent, tent_root


def kakade_foster_run(y, m):
    """Algorithm 1 with the deterministic KF oracle on binary/real outcomes y in [0, 1].

    Keeps the running mean by the paper's recursion pi_t = (t-1)/t pi_{t-1} + pi/t (float64)."""
    pibar = np.zeros(m + 1)
    forecasts, certs, means = [], [], []
    for t, yt in enumerate(y, start=1):
        f = tent_root(pibar)
        g = tent(f, m) @ pibar
        certs.append(max(g * f, g * (f - 1)))
        forecasts.append(f)
        pibar = (t - 1) / t * pibar + binary_payoff(f, float(yt), m) / t
        means.append(pibar.copy())
    return np.array(forecasts), np.array(certs), np.array(means)

"""Slow, obviously-correct Poisson-binomial pmfs: enumeration of outcomes, and the textbook DP."""

import itertools

import numpy as np


def pmf_by_enumeration(q):
    """P(sum = s) by summing the probability of every one of the 2^m outcome vectors."""
    q = np.asarray(q, dtype=float)
    pmf = np.zeros(q.size + 1)
    for ys in itertools.product((0, 1), repeat=q.size):
        ys = np.array(ys, dtype=int)
        pmf[int(ys.sum())] += np.prod(np.where(ys == 1, q, 1 - q))
    return pmf


def pmf_by_dp(q):
    """Add one Bernoulli at a time: pmf_k(s) = (1 - q_k) pmf_{k-1}(s) + q_k pmf_{k-1}(s - 1)."""
    pmf = np.ones(1)
    for qk in np.asarray(q, dtype=float):
        pmf = np.concatenate([pmf * (1 - qk), [0.0]]) + np.concatenate([[0.0], pmf * qk])
    return pmf

r"""Arunachaleswaran et al.'s (2024) line-up of binary natures, sized for a horizon: oblivious
streams, a replayed sequence and adaptive adversaries (the demo's and
``experiments/aosa_distance_bound.py``'s natures)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray

from .._grid import MAX_GRID
from .._validation import Int, Key, declare
from ..core.types import AbstractNature
from .adaptive import Contrarian, MaxCalibrationError, RandomMixture
from .oblivious import Bernoulli, Drifting, Markov, Periodic, RegimeSwitch, Replay

__all__ = ["binary_suite"]


# T: the replayed coin is a (T,) sequence drawn here (2**27 rounds: 1 GiB)
@declare(T=Int(1, 2**27, bytes_per=8, what="its replayed sequence"), n_bins=Int(1, MAX_GRID, bytes_per=8, what="the adaptive natures' tables"),
         key=Key())
def binary_suite(T: int, n_bins: int, *, key: PRNGKeyArray) -> dict[str, AbstractNature]:
    r"""Every binary nature, by display name, sized for horizon ``T``.

    Four Bernoulli rates, a drift from 0.1 to 0.9 over ``T`` rounds, a periodic rate (period
    ``T/10``), a sticky Markov chain, switches between three regimes, a replayed coin whose
    rate follows $0.5 + 0.4\sin(t/50)$, and three adaptive adversaries that see each forecast:
    the contrarian, the calibration-error maximiser and a random mixture of the two with i.i.d.
    coins.

    Args:
        T: the horizon (a positive int).
        n_bins: the grid the adaptive adversaries bucket forecasts on (e.g. AOSA's
            ``n_bins``).
        key: a JAX PRNG key (keyword-only, required): draws the replayed sequence.

    Returns:
        A dict of twelve natures, in the order above.

    Example:
        >>> import jax
        >>> from jcalib.natures import binary_suite
        >>> len(binary_suite(100, 10, key=jax.random.key(0)))
        12
    """
    wave = 0.5 + 0.4 * jnp.sin(jnp.arange(T) / 50)
    coin = jax.random.bernoulli(key, wave).astype(jnp.int32)
    return {
        "Bernoulli(0.1)": Bernoulli(0.1),
        "Bernoulli(0.37)": Bernoulli(0.37),
        "Bernoulli(0.5)": Bernoulli(0.5),
        "Bernoulli(0.83)": Bernoulli(0.83),
        "Drifting 0.1->0.9": Drifting(0.1, 0.9, T),
        "Periodic": Periodic(0.5, 0.4, max(2, T // 10)),
        "Markov": Markov(0.05, 0.1),
        "Regime switch": RegimeSwitch(jnp.asarray([0.2, 0.8, 0.5]), 0.01),
        "Replay (sine-modulated coin)": Replay(coin),
        "Contrarian": Contrarian(),
        "Max calibration error": MaxCalibrationError(n_bins=n_bins),
        "Random mixture": RandomMixture(n_bins=n_bins),
    }

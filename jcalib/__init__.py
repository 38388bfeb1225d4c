"""jcalib: calibration research in JAX.

Online calibrated forecasters as pure state transitions (``jcalib.forecasters``) played against
adversaries and data streams (``jcalib.natures``) by ``jcalib.core.play`` and
``jcalib.core.sweep``, which keep what a recorder asks for (``jcalib.recorders``); calibration
metrics (``jcalib.metrics``); offline recalibration (``jcalib.recalibration``); data loaders
(``jcalib.datasets``); Blackwell payoffs and half-space oracles (``jcalib.payoffs``);
distributions over an interval (``jcalib.distributions``); proper scoring rules
(``jcalib.scoring``); differentiable calibration losses for training (``jcalib.losses``);
bootstrap intervals and calibration tests with p-values (``jcalib.stats``); the switch for in-graph input checks (``jcalib.config``).

The top level holds the subpackages only: every public name lives in (and is exported from)
one of them, e.g. ``jcalib.core.play``, ``jcalib.forecasters.AlmostOneStepAhead``.
"""

from . import (
    config,
    core,
    datasets,
    distributions,
    forecasters,
    losses,
    metrics,
    natures,
    payoffs,
    recalibration,
    recorders,
    scoring,
    stats,
)

__version__ = "0.1.0"

__all__ = [
    "config",
    "core",
    "datasets",
    "distributions",
    "forecasters",
    "losses",
    "metrics",
    "natures",
    "payoffs",
    "recalibration",
    "recorders",
    "scoring",
    "stats",
]

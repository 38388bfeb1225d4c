"""The timing rule every benchmark here shares: one warm-up call, then the median of repeats."""

from __future__ import annotations

import statistics
import time


def timed(fn, repeats: int = 3) -> tuple[float, float]:
    """``(seconds of the first call, median seconds of the next repeats calls)`` of ``fn()``.

    The first call includes compilation; ``fn`` must wait for its own results (e.g.
    ``jax.block_until_ready``), since dispatch is asynchronous.
    """
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)

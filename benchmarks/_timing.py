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


def profile_ops(run, title: str, top: int = 25) -> None:
    """Print the operations of ``run()``'s compiled programs by total wall time (the JAX profiler).

    ``run`` is called once to warm up, then once under ``jax.profiler``; the trace is read with
    ``jax.profiler.ProfileData`` (no TensorBoard needed). XLA's operations run on the executor's
    threads or, for small programs, on the calling thread: every line is kept, without the
    Python tracer's own events.
    """
    import collections
    import glob
    import tempfile

    import jax
    from jax.profiler import ProfileData

    run()
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        run()
        jax.profiler.stop_trace()
        data = ProfileData.from_file(glob.glob(f"{d}/**/*.xplane.pb", recursive=True)[0])
    total, calls = collections.Counter(), collections.Counter()
    for plane in data.planes:
        for line in plane.lines:
            for ev in line.events:
                if ".py" in ev.name or ev.name.startswith("$") or "pjit" in ev.name.lower():
                    continue
                total[ev.name] += ev.duration_ns
                calls[ev.name] += 1
    print(f"\nJAX profiler, {title}: operations by total time")
    print(f"{'ms':>9s} {'calls':>7s} {'us/call':>8s}  operation")
    for name, ns in total.most_common(top):
        print(f"{ns / 1e6:9.2f} {calls[name]:7d} {ns / calls[name] / 1e3:8.2f}  {name[:80]}")

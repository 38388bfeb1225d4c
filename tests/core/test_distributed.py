"""``sweep`` across processes with ``jax.distributed``: two local CPU processes (a localhost
coordinator, num_processes=2) return bit for bit what one process returns."""

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np

_WORKER = textwrap.dedent(
    """
    import sys
    import jax
    port, pid, n_proc, out_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if n_proc > 1:
        jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=n_proc, process_id=pid)
    import numpy as np
    import jcalib
    F, N = jcalib.forecasters, jcalib.natures
    key = jax.random.key(7)
    # 5 seeds: padded to 6 and split 3 + 3; chunk 100 crosses the 128-round blocks of random bits
    natures = [N.Markov(0.2, 0.3), N.Markov(0.6, 0.1)]
    out = jcalib.core.sweep(F.AlmostOneStepAhead(n_bins=8), natures, 300, key=key, n_seeds=5,
                       record={"summ": "summary", "full": "full"}, chunk=100, progress=False)
    summ, full = out["summ"], out["full"]
    np.savez(out_path, n_proc=jax.process_count(), counts=summ.counts, ones=summ.ones, info=summ.info_counts,
             f=full.forecast, y=full.y)
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _launch(tmp_path):
    """One single-process run and one two-process run, started together."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    # both runs compile the same programs; a low LLVM optimisation level halves compile time
    # and cannot change integer results (it changes no HLO, only code generation)
    env["XLA_FLAGS"] = "--xla_backend_optimization_level=0"
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.dirname(__file__))), env.get("PYTHONPATH", "")])
    port = _free_port()
    runs = [(0, 1, tmp_path / "single.npz"), (0, 2, tmp_path / "p0.npz"), (1, 2, tmp_path / "p1.npz")]
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(port), str(pid), str(n), str(out)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for pid, n, out in runs
    ]
    for p in procs:
        log, _ = p.communicate(timeout=240)
        assert p.returncode == 0, log.decode()[-3000:]
    return [np.load(out) for _, _, out in runs]


def test_two_processes_equal_one_process(tmp_path):
    one, *two = _launch(tmp_path)
    assert int(one["n_proc"]) == 1 and all(int(r["n_proc"]) == 2 for r in two)
    for r in two:  # every process holds the full, gathered result
        for k in ("counts", "ones", "info", "f", "y"):
            assert r[k].shape == one[k].shape, k
            np.testing.assert_array_equal(r[k], one[k])
    assert one["counts"].shape == (2, 5, 9) and one["f"].shape == (2, 5, 300)
    assert one["counts"].sum() == 2 * 5 * 300

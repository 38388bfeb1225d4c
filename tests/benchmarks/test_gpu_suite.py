"""``benchmarks/gpu_suite.py --quick`` (what ``make bench-gpu`` runs at full size on a GPU):
one subprocess run on this machine writes the JSON and the markdown table, every item
measured by the default device's process, the GPU-only flag sets skipped with a note."""

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_suite.py"
ITEMS = ("orca", "aosa", "approachability", "decision", "kernel_audit", "bootstrap", "train_step")


def test_quick_run_writes_every_item(tmp_path):
    out = tmp_path / "suite.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")  # CI's device: the CPU, whatever the machine has
    res = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)], env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(out.read_text())
    meta, records = data["meta"], data["records"]
    assert meta["mode"] == "quick" and meta["workers"]["device"]["platform"] == "cpu"
    assert {"jax", "device_kind", "default_unroll"} <= set(meta["workers"]["device"])
    for item in ITEMS:
        # an item's first cell always runs (the caps only skip later ones)
        first = next(r for r in records if r["worker"] == "device" and r["item"] == item)
        assert first["rate"] > 0 and first["wall_s"] > 0 and first["compile_s"] >= 0, first
    orca = [r for r in records if r["item"] == "orca"]
    assert {(r["worker"], r["size"], r["unroll"]) for r in orca} >= {("device", 1, 1), ("device", 1, 2), ("cpu", 1, 1)}
    assert any("flag sets skipped" in n for n in data["notes"])
    table = out.with_suffix(".md").read_text()
    assert "1-minute load" in table and "jax " in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| item")]
    for item in ITEMS:
        assert any(line.startswith(f"| {item} | device |") for line in rows), item
    assert all(line.count("|") == 11 for line in rows)  # 10 columns in every row, skipped ones too

"""Every Python block of the README, the concepts page, the how-to pages and the tutorial
"Calibrated for whom?" runs as a user would run it: in a fresh interpreter with JAX's default
settings (not the suite's strict promotion)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    for page in ("README.md", "docs/concepts.md", "docs/howto/own_stream.md", "docs/tutorials/calibrated_for_whom.md"):
        for i, code in enumerate(BLOCK.findall((ROOT / page).read_text())):
            yield pytest.param(code, id=f"{page}:{i}")


@pytest.mark.parametrize("code", list(_blocks()))
def test_example_runs(code, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

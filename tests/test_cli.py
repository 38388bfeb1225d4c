"""The demo's command line (its study: test_studies.py)."""

import subprocess
import sys


def test_demo_help():
    out = subprocess.run([sys.executable, "-m", "jcalib.cli", "demo", "--help"], capture_output=True, text=True, check=True)
    assert "--seeds" in out.stdout and "--distance-seeds" in out.stdout

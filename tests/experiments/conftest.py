"""Shared by the experiment tests: a script of ``experiments/`` loaded as a fresh module."""

import importlib.util
import sys
from pathlib import Path

import pytest

EXP = Path(__file__).resolve().parents[2] / "experiments"


@pytest.fixture
def experiment():
    """``experiment(name)`` executes ``experiments/<name>.py`` as a new module and returns it; the
    folder goes on ``sys.path`` once, for the scripts that import their siblings."""

    def load(name: str):
        if str(EXP) not in sys.path:
            sys.path.insert(0, str(EXP))
        spec = importlib.util.spec_from_file_location(name, EXP / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load

# Two entry points for a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test test-all bench bench-gpu docs clean

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed-core: $(VENV)/bin/activate pyproject.toml
	$(PIP) install --quiet -e ".[experiments]"
	touch $@

# mcgrad is a parity peer for its multicalibration metric only (mcgrad.metrics needs NumPy, pandas,
# SciPy, scikit-learn and psutil, all in the test extra); its declared dependencies pull in torch and
# some 3 GB of CUDA wheels through ax-platform, so it is installed without them.
$(VENV)/.installed-test: $(VENV)/bin/activate pyproject.toml
	$(PIP) install --quiet -e ".[test,experiments,data,river,docs]"
	$(PIP) install --quiet --no-deps "mcgrad>=0.1.5"
	touch $@

$(VENV)/.installed-docs: $(VENV)/bin/activate pyproject.toml
	$(PIP) install --quiet -e ".[docs]"
	touch $@

demo: $(VENV)/.installed-core
	$(PY) -m jcalib.cli demo

# The two workers share one persistent compilation cache in build/jax-cache (tests/conftest.py):
# a program one of them compiled is read back by the other and by the next run.
# The workers' segfaults inside XLA's CPU compiler were the process running out of memory
# mappings (one per few compiled programs; tests/conftest.py now drops JAX's caches before the
# cap). A worker that still dies fails the test it was running: those tests, and any real
# failure, run once more in a fresh single process, whose verdict stands. The slowest tests are
# listed so that CI's time can be watched.
test: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 -m "not slow" --durations=25 tests || $(PY) -m pytest -q -m "not slow" --lf --lfnf=none tests

test-all: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 tests

bench: $(VENV)/.installed-test
	$(PY) benchmarks/aosa_throughput.py
	$(PIP) install --quiet -e ".[bench]" && $(PY) benchmarks/aosa_throughput.py --B 1024 --devices 2
	$(PY) benchmarks/decision_calibration.py
	$(PY) benchmarks/kernel_audit.py
	$(PY) benchmarks/approachability_throughput.py
	$(PY) benchmarks/orca_throughput.py
	$(PY) benchmarks/latency.py

# The GPU measurements in one command (capped to fit 8 minutes on one H100, compilation included): the
# default device against the host CPU in the same run, ORCA over B, unroll and XLA flag sets;
# writes results/gpu_suite/gpu_suite.{json,md}. `--quick` is the CI-sized run.
bench-gpu: $(VENV)/.installed-test
	$(PY) benchmarks/gpu_suite.py

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	$(PY) docs/check_offline.py site

clean:
	rm -rf $(VENV) site results .pytest_cache

